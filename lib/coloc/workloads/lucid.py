"""The job types of Lucid's RTX 3090 measurements (Hu et al., ASPLOS 2023) that the rest of the zoo lacks.

Architectures follow the repository's ``workloads/`` folder (S-Lab-System-Group/Lucid), written out in plain
torch from the published descriptions (facts only, no code taken):

* EfficientNet on CIFAR-10: ``EfficientNetB0`` as the pytorch-cifar collection writes it (Lucid's CIFAR models):
  a 3x3 stride-1 stem of 32, seven stages (expansion, width, blocks, stride) (1,16,1,2) (6,24,2,1) (6,40,2,2)
  (6,80,3,2) (6,112,3,1) (6,192,4,2) (6,320,1,2), every block 1x1 expand, 3x3 depthwise, 1x1 project with
  squeeze-excitation to width/16, a projection shortcut where a stride-1 block changes width, a linear head on
  the flattened 320 x 1 x 1 map. Not the published B0 (no 5x5 kernels, no 1280 head): coloc's ``efficientnetb0``
  is that one.
* MobileNetV3 on ImageNet: torchvision's ``mobilenet_v3_small`` (Lucid's ``mlist_imagenet``), 224x224.
* DCGAN on LSUN: the PyTorch DCGAN example at 64x64, nz 100, ngf = ndf = 64; one step is Lucid's: D on real,
  D on fake, G through D (Adam 2e-4, beta1 0.5).
* NeuMF on MovieLens: the NCF model of the NCF reference Lucid uses, on MovieLens-1M (6,040 users, 3,706 items),
  32 predictive factors, 3 MLP layers (MLP embeddings 128 wide, layers 256-128-64-32), GMF and MLP joined by a
  linear layer of 64 -> 1, binary cross-entropy on logits, SGD with momentum (Lucid's benchmark optimizer).
* PPO on LunarLander: stable-baselines3's ``MlpPolicy`` (separate policy and value trunks of 64-64, tanh) on
  8 observations and 4 actions; one step is one minibatch update of the clipped objective plus half the value
  loss (Adam 3e-4, eps 1e-5, gradient clip 0.5).
* TD3 on BipedalWalker: stable-baselines3's ``MlpPolicy`` for TD3 (actor and two critics of 400-300, with their
  target copies, which count in the parameters as they do in the library's policy) on 24 observations and
  4 actions; one step updates both critics on a minibatch and the actor through the first critic (the library
  delays the actor's update to every second step; fused here as CycleGAN's step is). Adam 1e-3.
* PointNet on ShapeNet: the PointNet classifier of the pointnet.pytorch implementation Lucid uses (input
  transform net, no feature transform), 2,500 points, 16 ShapeNet classes, Adam 0.01.
* BERT on SQuAD: BERT-base (uncased vocabulary 30,522) with a span (start, end) head, sequences of 384
  tokens (Lucid's ``max_seq_length``), AdamW 5e-5.

Batches are synthetic, as everywhere in the zoo.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import EncoderLayer
from .recipe import Recipe, TensorSpec, adam, first_input, image_classification, sgd
from .sequence import BERT_VOCAB, bert_init

# ---------------------------------------------------------------------------- EfficientNet (pytorch-cifar)

CIFAR_EFFICIENTNET_STAGES = [  # expansion, width, blocks, stride
    (1, 16, 1, 2), (6, 24, 2, 1), (6, 40, 2, 2), (6, 80, 3, 2), (6, 112, 3, 1), (6, 192, 4, 2), (6, 320, 1, 2)]


class CifarEfficientBlock(nn.Module):
    """Expand, depthwise 3x3, project; squeeze-excitation on the projection; the residual as pytorch-cifar adds it
    (a stride-1 block adds its input, projected where the width changes; a strided block adds its own output)."""

    def __init__(self, cin: int, cout: int, expansion: int, stride: int):
        super().__init__()
        hidden = expansion * cin
        self.stride = stride
        self.expand = nn.Sequential(nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU())
        self.depthwise = nn.Sequential(nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                                       nn.BatchNorm2d(hidden), nn.ReLU())
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
                         if stride == 1 and cin != cout else nn.Identity())
        self.se_reduce = nn.Conv2d(cout, cout // 16, 1)
        self.se_expand = nn.Conv2d(cout // 16, cout, 1)

    def forward(self, x):
        out = self.project(self.depthwise(self.expand(x)))
        residual = self.shortcut(x) if self.stride == 1 else out
        gate = torch.sigmoid(self.se_expand(F.relu(self.se_reduce(F.adaptive_avg_pool2d(out, 1)))))
        return out * gate + residual


def cifar_efficientnet(classes: int = 10) -> nn.Sequential:
    layers, cin = [nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU()], 32
    for expansion, width, blocks, stride in CIFAR_EFFICIENTNET_STAGES:
        for i in range(blocks):
            layers.append(CifarEfficientBlock(cin, width, expansion, stride if i == 0 else 1))
            cin = width
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(cin, classes))


# ---------------------------------------------------------------------------- MobileNetV3-Small (torchvision's)

# input, kernel, expanded, output, squeeze-excite, activation (RE: ReLU, HS: hard swish), stride
MOBILENETV3_SMALL = [
    (16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2), (24, 3, 88, 24, False, "RE", 1),
    (24, 5, 96, 40, True, "HS", 2), (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1), (48, 5, 288, 96, True, "HS", 2),
    (96, 5, 576, 96, True, "HS", 1), (96, 5, 576, 96, True, "HS", 1)]


def divisible(value: float, divisor: int = 8) -> int:
    """The channel rounding of MobileNet: nearest multiple of ``divisor``, at least it and >= 90% of value."""
    out = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * value else out


def _cba(cin, cout, kernel, stride=1, groups=1, act=None) -> nn.Sequential:
    mods = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
    return nn.Sequential(*mods, act()) if act is not None else nn.Sequential(*mods)


class HardSqueezeExcite(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        squeeze = divisible(channels // 4)
        self.reduce, self.expand = nn.Conv2d(channels, squeeze, 1), nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(x, 1)))))


class MobileV3Block(nn.Module):
    def __init__(self, cin, kernel, hidden, cout, se, act, stride):
        super().__init__()
        act = nn.Hardswish if act == "HS" else nn.ReLU
        mods = [_cba(cin, hidden, 1, act=act)] if hidden != cin else []
        mods.append(_cba(hidden, hidden, kernel, stride, hidden, act))
        if se:
            mods.append(HardSqueezeExcite(hidden))
        mods.append(_cba(hidden, cout, 1))
        self.body = nn.Sequential(*mods)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def mobilenet_v3_small(classes: int = 1000) -> nn.Sequential:
    layers = [_cba(3, 16, 3, 2, act=nn.Hardswish)]
    layers += [MobileV3Block(*row) for row in MOBILENETV3_SMALL]
    layers += [_cba(96, 576, 1, act=nn.Hardswish), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, classes)]
    return nn.Sequential(*layers)


# ---------------------------------------------------------------------------- DCGAN (64x64)

DCGAN_NZ, DCGAN_WIDTH = 100, 64


def dcgan_generator(nz: int = DCGAN_NZ, width: int = DCGAN_WIDTH) -> nn.Sequential:
    mods, cin = [], nz
    for i, mult in enumerate((8, 4, 2, 1)):
        mods += [nn.ConvTranspose2d(cin, width * mult, 4, 1 if i == 0 else 2, 0 if i == 0 else 1, bias=False),
                 nn.BatchNorm2d(width * mult), nn.ReLU(True)]
        cin = width * mult
    return nn.Sequential(*mods, nn.ConvTranspose2d(cin, 3, 4, 2, 1, bias=False), nn.Tanh())


def dcgan_discriminator(width: int = DCGAN_WIDTH) -> nn.Sequential:
    mods, cin = [], 3
    for i, mult in enumerate((1, 2, 4, 8)):
        mods.append(nn.Conv2d(cin, width * mult, 4, 2, 1, bias=False))
        if i:
            mods.append(nn.BatchNorm2d(width * mult))
        mods.append(nn.LeakyReLU(0.2, inplace=True))
        cin = width * mult
    return nn.Sequential(*mods, nn.Conv2d(cin, 1, 4, 1, 0, bias=False), nn.Flatten())


class DCGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator, self.discriminator = dcgan_generator(), dcgan_discriminator()

    def forward(self, real, noise):
        fake = self.generator(noise)
        return self.discriminator(real), self.discriminator(fake.detach()), self.discriminator(fake)


def dcgan_loss(outputs, batch) -> torch.Tensor:
    """D: real -> 1, fake -> 0; G: fake -> 1 (binary cross-entropy on logits); summed into one step."""
    d_real, d_fake, g_fake = outputs
    bce = F.binary_cross_entropy_with_logits
    return (bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
            + bce(g_fake, torch.ones_like(g_fake)))


def dcgan_recipe(reduced: bool) -> Recipe:
    return Recipe(
        task="image-generation", model=DCGAN,
        batch=lambda n: (TensorSpec((n, 3, 64, 64)), TensorSpec((n, DCGAN_NZ, 1, 1))),
        forward=lambda model, batch: model(batch[0], batch[1]), criterion=dcgan_loss,
        optimizer=adam(2e-4, betas=(0.5, 0.999)), note="real images, latent noise")


# ---------------------------------------------------------------------------- NeuMF (MovieLens-1M)

ML1M_USERS, ML1M_ITEMS = 6_040, 3_706


class NeuMF(nn.Module):
    """GMF (element-wise product of 32-wide embeddings) and an MLP tower on 128-wide embeddings, joined."""

    def __init__(self, users: int = ML1M_USERS, items: int = ML1M_ITEMS, factors: int = 32, layers: int = 3):
        super().__init__()
        wide = factors * 2 ** (layers - 1)
        self.user_gmf, self.item_gmf = nn.Embedding(users, factors), nn.Embedding(items, factors)
        self.user_mlp, self.item_mlp = nn.Embedding(users, wide), nn.Embedding(items, wide)
        tower, width = [], wide * 2
        for _ in range(layers):
            tower += [nn.Dropout(0.0), nn.Linear(width, width // 2), nn.ReLU()]
            width //= 2
        self.tower = nn.Sequential(*tower)
        self.predict = nn.Linear(factors * 2, 1)

    def forward(self, user, item):
        gmf = self.user_gmf(user) * self.item_gmf(item)
        mlp = self.tower(torch.cat([self.user_mlp(user), self.item_mlp(item)], -1))
        return self.predict(torch.cat([gmf, mlp], -1)).squeeze(-1)


def neumf_recipe(reduced: bool) -> Recipe:
    return Recipe(
        task="recommendation", model=NeuMF,
        batch=lambda n: (TensorSpec((n,), "int", ML1M_USERS), TensorSpec((n,), "int", ML1M_ITEMS),
                         TensorSpec((n,), "bernoulli", 0.2)),
        forward=lambda model, batch: model(batch[0], batch[1]),
        criterion=lambda logits, batch: F.binary_cross_entropy_with_logits(logits, batch[2]),
        optimizer=sgd(0.01, 5e-4), note="user ids, item ids, implicit labels (1 positive : 4 sampled negatives)")


# ---------------------------------------------------------------------------- PPO and TD3 (stable-baselines3)


def mlp(sizes, act=nn.Tanh, out_act=None) -> nn.Sequential:
    mods = []
    for i in range(len(sizes) - 1):
        mods.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            mods.append(act())
    return nn.Sequential(*mods, out_act()) if out_act else nn.Sequential(*mods)


LUNAR_OBS, LUNAR_ACTIONS = 8, 4


class PPOPolicy(nn.Module):
    def __init__(self, obs: int = LUNAR_OBS, actions: int = LUNAR_ACTIONS, hidden: int = 64):
        super().__init__()
        self.pi = mlp([obs, hidden, hidden], out_act=nn.Tanh)
        self.vf = mlp([obs, hidden, hidden], out_act=nn.Tanh)
        self.action_net, self.value_net = nn.Linear(hidden, actions), nn.Linear(hidden, 1)

    def forward(self, obs):
        return self.action_net(self.pi(obs)), self.value_net(self.vf(obs)).squeeze(-1)


def ppo_loss(outputs, batch, clip: float = 0.2) -> torch.Tensor:
    """Clipped surrogate + 0.5 x value loss (stable-baselines3's defaults; entropy coefficient 0)."""
    logits, values = outputs
    _, actions, old_log_prob, advantages, returns = batch
    log_prob = torch.log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(log_prob - old_log_prob)
    surrogate = torch.min(advantages * ratio, advantages * torch.clamp(ratio, 1 - clip, 1 + clip))
    return -surrogate.mean() + 0.5 * F.mse_loss(values, returns)


def ppo_recipe(reduced: bool) -> Recipe:
    return Recipe(
        task="rl", model=PPOPolicy,
        batch=lambda n: (TensorSpec((n, LUNAR_OBS)), TensorSpec((n,), "int", LUNAR_ACTIONS), TensorSpec((n,)),
                         TensorSpec((n,)), TensorSpec((n,))),
        forward=first_input, criterion=ppo_loss, optimizer=adam(3e-4, eps=1e-5), clip_grad_norm=0.5,
        note="observations, actions, their old log-probabilities, advantages, returns (one minibatch)")


WALKER_OBS, WALKER_ACTIONS = 24, 4


class TD3Policy(nn.Module):
    def __init__(self, obs: int = WALKER_OBS, actions: int = WALKER_ACTIONS, hidden=(400, 300)):
        super().__init__()

        def actor():
            return mlp([obs, *hidden, actions], act=nn.ReLU, out_act=nn.Tanh)

        def critic():
            return mlp([obs + actions, *hidden, 1], act=nn.ReLU)

        self.actor, self.critic1, self.critic2 = actor(), critic(), critic()
        self.actor_target, self.critic1_target, self.critic2_target = actor(), critic(), critic()
        for target in (self.actor_target, self.critic1_target, self.critic2_target):
            target.requires_grad_(False)

    def forward(self, obs, actions, rewards, next_obs, dones, gamma: float = 0.99):
        with torch.no_grad():
            next_actions = self.actor_target(next_obs).clamp(-1, 1)
            pair = torch.cat([next_obs, next_actions], -1)
            next_q = torch.min(self.critic1_target(pair), self.critic2_target(pair)).squeeze(-1)
            target = rewards + gamma * (1 - dones) * next_q
        taken = torch.cat([obs, actions], -1)
        q1, q2 = self.critic1(taken).squeeze(-1), self.critic2(taken).squeeze(-1)
        actor_q = self.critic1(torch.cat([obs, self.actor(obs)], -1))
        return q1, q2, target, actor_q


def td3_loss(outputs, batch) -> torch.Tensor:
    q1, q2, target, actor_q = outputs
    return F.mse_loss(q1, target) + F.mse_loss(q2, target) - actor_q.mean()


def td3_recipe(reduced: bool) -> Recipe:
    return Recipe(
        task="rl", model=TD3Policy,
        batch=lambda n: (TensorSpec((n, WALKER_OBS)), TensorSpec((n, WALKER_ACTIONS), "uniform"), TensorSpec((n,)),
                         TensorSpec((n, WALKER_OBS)), TensorSpec((n,), "bernoulli", 0.01)),
        forward=lambda model, batch: model(*batch), criterion=td3_loss, optimizer=adam(1e-3),
        note="replay minibatch: observations, actions, rewards, next observations, episode ends")


# ---------------------------------------------------------------------------- PointNet classifier

SHAPENET_POINTS, SHAPENET_CLASSES = 2_500, 16


def _pointwise(widths) -> nn.Sequential:
    mods = []
    for cin, cout in zip(widths[:-1], widths[1:], strict=True):
        mods += [nn.Conv1d(cin, cout, 1), nn.BatchNorm1d(cout), nn.ReLU()]
    return nn.Sequential(*mods)


def _head(widths, dropout: float = 0.0) -> nn.Sequential:
    mods = []
    for i, (cin, cout) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        mods.append(nn.Linear(cin, cout))
        if i < len(widths) - 2:
            if dropout and i == len(widths) - 3:
                mods.append(nn.Dropout(dropout))
            mods += [nn.BatchNorm1d(cout), nn.ReLU()]
    return nn.Sequential(*mods)


class InputTransform(nn.Module):
    """PointNet's T-Net: a 3x3 transform (added to the identity) predicted from the points."""

    def __init__(self):
        super().__init__()
        self.points, self.head = _pointwise([3, 64, 128, 1024]), _head([1024, 512, 256, 9])
        self.register_buffer("identity", torch.eye(3).flatten(), persistent=False)

    def forward(self, x):
        return (self.head(self.points(x).amax(-1)) + self.identity).view(-1, 3, 3)


class PointNetClassifier(nn.Module):
    def __init__(self, classes: int = SHAPENET_CLASSES):
        super().__init__()
        self.transform = InputTransform()
        self.first = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU())
        self.rest = nn.Sequential(nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
                                  nn.Conv1d(128, 1024, 1), nn.BatchNorm1d(1024))
        self.head = _head([1024, 512, 256, classes], dropout=0.3)

    def forward(self, points):  # points: (n, 3, number of points)
        x = torch.bmm(self.transform(points), points)
        return torch.log_softmax(self.head(self.rest(self.first(x)).amax(-1)), -1)


def pointnet_recipe(reduced: bool) -> Recipe:
    points = 64 if reduced else SHAPENET_POINTS
    return Recipe(
        task="point-cloud-classification", model=PointNetClassifier,
        batch=lambda n: (TensorSpec((n, 3, points)), TensorSpec((n,), "int", SHAPENET_CLASSES)),
        forward=first_input, criterion=lambda out, batch: F.nll_loss(out, batch[1]), optimizer=adam(0.01))


# ---------------------------------------------------------------------------- BERT-base on SQuAD

SQUAD_LENGTH = 384


class BertSpans(nn.Module):
    """BERT-base encoder (12 x 768, 12 heads, GELU) with the question-answering head (start and end logits)."""

    def __init__(self, vocab=BERT_VOCAB, dim=768, layers=12, heads=12, d_inner=3072, max_len=512, dropout=0.1):
        super().__init__()
        self.words, self.positions = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.segments = nn.Embedding(2, dim)
        self.embed_norm, self.drop = nn.LayerNorm(dim, eps=1e-12), nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, d_inner, dropout, nn.GELU, 1e-12) for _ in range(layers))
        self.spans = nn.Linear(dim, 2)
        self.apply(bert_init)

    def forward(self, tokens, segments):
        x = self.drop(self.embed_norm(self.words(tokens) + self.positions.weight[:tokens.shape[1]]
                                      + self.segments(segments)))
        for layer in self.layers:
            x = layer(x)
        return self.spans(x)


def bert_squad_recipe(reduced: bool) -> Recipe:
    length = 8 if reduced else SQUAD_LENGTH

    def criterion(logits, batch):
        start, end = logits.unbind(-1)
        return (F.cross_entropy(start, batch[2]) + F.cross_entropy(end, batch[3])) / 2

    return Recipe(
        task="question-answering", model=BertSpans,
        batch=lambda n: (TensorSpec((n, length), "int", BERT_VOCAB), TensorSpec((n, length), "int", 2),
                         TensorSpec((n,), "int", length), TensorSpec((n,), "int", length)),
        forward=lambda model, batch: model(batch[0], batch[1]), criterion=criterion,
        optimizer=adam(5e-5, decoupled=True), note="tokens, segment ids, answer start and end positions")


def cifar_recipe(model) -> Recipe:
    return image_classification(model, 32, 10, 5e-4)
