"""The non-classification Gavel job types: Recommendation (ML-20M), A3C (Pong), CycleGAN
(monet2photo). Architectures follow the data README's table."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from .recipe import Recipe, TensorSpec, adam

ML20M_ITEMS = 20_108     # items kept by the usual ML-20M preprocessing (Liang et al. 2018)
ML20M_DENSITY = 0.005    # share of items a synthetic user has interacted with
PONG_ACTIONS, PONG_FRAME = 6, 80
A3C_ROLLOUT = 20         # steps per update, as in the common PyTorch A3C implementations
A3C_GAMMA = 0.99


class DenoisingAutoencoder(nn.Module):
    """Input dropout, Linear(items, 200) with tanh, Linear(200, items)."""

    def __init__(self, items: int = ML20M_ITEMS, hidden: int = 200, dropout: float = 0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encode = nn.Sequential(nn.Linear(items, hidden), nn.Tanh())
        self.decode = nn.Linear(hidden, items)

    def forward(self, x):
        return self.decode(self.encode(self.drop(x)))


def recommendation_recipe(reduced: bool) -> Recipe:
    """Logistic (binary cross-entropy) reconstruction loss per user, Adam."""
    return Recipe(
        task="recommendation",
        model=DenoisingAutoencoder,
        batch=lambda n: (TensorSpec((n, ML20M_ITEMS), "bernoulli", ML20M_DENSITY),),
        forward=lambda model, batch: model(batch[0]),
        criterion=lambda logits, batch: F.binary_cross_entropy_with_logits(
            logits, batch[0], reduction="sum") / logits.shape[0],
        optimizer=adam(1e-3),
    )


class ActorCritic(nn.Module):
    """4 conv + max-pool layers on 1x80x80 frames, LSTMCell(1024, 512), actor and critic heads."""

    def __init__(self, actions: int = PONG_ACTIONS):
        super().__init__()
        def block(cin, cout, kernel, pad):
            return nn.Sequential(nn.Conv2d(cin, cout, kernel, 1, pad), nn.MaxPool2d(2, 2), nn.ReLU())
        self.features = nn.Sequential(block(1, 32, 5, 2), block(32, 32, 5, 1), block(32, 64, 4, 1),
                                      block(64, 64, 3, 1), nn.Flatten())
        self.cell = nn.LSTMCell(1024, 512)
        self.actor = nn.Linear(512, actions)
        self.critic = nn.Linear(512, 1)

    def forward(self, frames):  # frames: (steps, workers, 1, 80, 80), one step at a time
        h = c = frames.new_zeros(frames.shape[1], self.cell.hidden_size)
        logits, values = [], []
        for t in range(frames.shape[0]):
            h, c = self.cell(self.features(frames[t]), (h, c))
            logits.append(self.actor(h))
            values.append(self.critic(h))
        return torch.stack(logits), torch.stack(values).squeeze(-1)


def a3c_loss(outputs, batch) -> torch.Tensor:
    """Advantage actor-critic loss on discounted returns (policy, 0.5 value, 0.01 entropy)."""
    logits, values = outputs
    _, actions, rewards = batch
    returns, running = [], torch.zeros_like(rewards[0])
    for r in reversed(range(rewards.shape[0])):
        running = rewards[r] + A3C_GAMMA * running
        returns.append(running)
    returns = torch.stack(returns[::-1])
    log_probs = torch.log_softmax(logits, -1)
    chosen = log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    advantage = returns - values
    policy = -(chosen * advantage.detach()).sum() - 0.01 * entropy.sum()
    return policy + 0.5 * advantage.pow(2).sum()


def a3c_recipe(reduced: bool) -> Recipe:
    """A3C on Pong: the 4 workers' rollouts stacked as one batch; one update per rollout."""
    steps = 4 if reduced else A3C_ROLLOUT
    return Recipe(
        task="rl",
        model=ActorCritic,
        batch=lambda n: (TensorSpec((steps, n, 1, PONG_FRAME, PONG_FRAME), "uniform"),
                         TensorSpec((steps, n), "int", PONG_ACTIONS),
                         TensorSpec((steps, n), "uniform")),
        forward=lambda model, batch: model(batch[0]),
        criterion=a3c_loss,
        optimizer=adam(1e-4),
        note="frames, actions taken and rewards of a rollout per worker",
    )


class ResidualBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), nn.InstanceNorm2d(dim), nn.ReLU(True),
            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), nn.InstanceNorm2d(dim))

    def forward(self, x):
        return x + self.body(x)


def resnet_generator(base: int = 64, blocks: int = 9) -> nn.Sequential:
    """CycleGAN generator: 7x7 conv, two stride-2 convs, residual blocks, two transposed convs."""
    mods = [nn.ReflectionPad2d(3), nn.Conv2d(3, base, 7), nn.InstanceNorm2d(base), nn.ReLU(True)]
    for i in range(2):
        c = base * 2 ** i
        mods += [nn.Conv2d(c, 2 * c, 3, 2, 1), nn.InstanceNorm2d(2 * c), nn.ReLU(True)]
    mods += [ResidualBlock(base * 4) for _ in range(blocks)]
    for i in range(2):
        c = base * 4 // 2 ** i
        mods += [nn.ConvTranspose2d(c, c // 2, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(c // 2),
                 nn.ReLU(True)]
    mods += [nn.ReflectionPad2d(3), nn.Conv2d(base, 3, 7), nn.Tanh()]
    return nn.Sequential(*mods)


def patch_discriminator(base: int = 64) -> nn.Sequential:
    """70x70 PatchGAN: 4x4 convs with instance norm and leaky ReLU."""
    mods = [nn.Conv2d(3, base, 4, 2, 1), nn.LeakyReLU(0.2, True)]
    for cin, cout, stride in [(base, 2 * base, 2), (2 * base, 4 * base, 2), (4 * base, 8 * base, 1)]:
        mods += [nn.Conv2d(cin, cout, 4, stride, 1), nn.InstanceNorm2d(cout), nn.LeakyReLU(0.2, True)]
    mods.append(nn.Conv2d(8 * base, 1, 4, 1, 1))
    return nn.Sequential(*mods)


class CycleGAN(nn.Module):
    """Two generators (A->B, B->A) and two discriminators (judging B, judging A)."""

    def __init__(self):
        super().__init__()
        self.g_ab, self.g_ba = resnet_generator(), resnet_generator()
        self.d_b, self.d_a = patch_discriminator(), patch_discriminator()

    def forward(self, real_a, real_b):
        fake_b, fake_a = self.g_ab(real_a), self.g_ba(real_b)
        return {"fake_b": fake_b, "fake_a": fake_a,
                "rec_a": self.g_ba(fake_b), "rec_b": self.g_ab(fake_a),
                "idt_b": self.g_ab(real_b), "idt_a": self.g_ba(real_a),
                # generator's adversarial term: gradients reach the generators only
                "adv_b": _frozen(self.d_b, fake_b), "adv_a": _frozen(self.d_a, fake_a),
                # discriminator terms on real and detached fake images
                "d_real_b": self.d_b(real_b), "d_fake_b": self.d_b(fake_b.detach()),
                "d_real_a": self.d_a(real_a), "d_fake_a": self.d_a(fake_a.detach())}


def _frozen(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    params = {k: v.detach() for k, v in module.named_parameters()}
    return functional_call(module, params, (x,))


def cyclegan_loss(out: dict, batch) -> torch.Tensor:
    """LSGAN adversarial, L1 cycle (x10) and identity (x5) for G; LSGAN for D (halved)."""
    real_a, real_b = batch

    def lsgan(pred, target: float):
        return F.mse_loss(pred, torch.full_like(pred, target))

    gen = (lsgan(out["adv_b"], 1.0) + lsgan(out["adv_a"], 1.0)
           + 10 * (F.l1_loss(out["rec_a"], real_a) + F.l1_loss(out["rec_b"], real_b))
           + 5 * (F.l1_loss(out["idt_b"], real_b) + F.l1_loss(out["idt_a"], real_a)))
    disc = 0.5 * (lsgan(out["d_real_b"], 1.0) + lsgan(out["d_fake_b"], 0.0)
                  + lsgan(out["d_real_a"], 1.0) + lsgan(out["d_fake_a"], 0.0))
    return gen + disc


def cyclegan_recipe(reduced: bool) -> Recipe:
    """One CycleGAN iteration (G and D updates fused into one step, no image pool)."""
    size = 32 if reduced else 256
    return Recipe(
        task="image-to-image",
        model=CycleGAN,
        batch=lambda n: (TensorSpec((n, 3, size, size)), TensorSpec((n, 3, size, size))),
        forward=lambda model, batch: model(batch[0], batch[1]),
        criterion=cyclegan_loss,
        optimizer=adam(2e-4, betas=(0.5, 0.999)),
        note="one image from each domain",
    )
