"""The zoo covers Lucid's 66 job types: names with an AMP marker, parameter counts of the reference models."""
import math

import pytest
import torch

from coloc import features, workloads

torch.set_num_threads(1)

# Parameter counts of the reference implementations Lucid trains (torchvision, Hugging Face, pytorch-cifar, the
# PyTorch DCGAN example); the others are the arithmetic of their published layer sizes (coloc.workloads.lucid)
REFERENCE_PARAMS = {
    "resnet18-cifar10-b32": 11_173_962,     # pytorch-cifar ResNet18
    "vgg11-cifar10-b32": 9_231_114,         # pytorch-cifar VGG('VGG11')
    "resnet50-imagenet-b32": 25_557_032,    # torchvision resnet50
    "mobilenetv3-imagenet-b32": 2_542_856,  # torchvision mobilenet_v3_small
    "bert-squad-b32": 108_893_186,          # bert-base-uncased with a question-answering head
    "dcgan-lsun-b32": 3_576_704 + 2_765_568,  # DCGAN example: generator + discriminator at 64x64
    # NeuMF on MovieLens-1M: embeddings (6040 + 3706) x (32 + 128), MLP 256-128-64-32, output 64 -> 1
    "neumf-movielens-b64": (6040 + 3706) * (32 + 128) + (256 * 128 + 128) + (128 * 64 + 64) + (64 * 32 + 32) + 65,
    # stable-baselines3 PPO MlpPolicy on LunarLander: two 8-64-64 trunks, 4 action logits, 1 value
    "ppo-lunarlander-b32": 2 * (8 * 64 + 64 + 64 * 64 + 64) + (64 * 4 + 4) + 65,
    # TD3 MlpPolicy on BipedalWalker: actor 24-400-300-4, two critics 28-400-300-1, each with its target copy
    "td3-bipedalwalker-b32": 2 * ((24 * 400 + 400 + 400 * 300 + 300 + 300 * 4 + 4)
                                  + 2 * (28 * 400 + 400 + 400 * 300 + 300 + 301)),
    # PointNet classifier, 16 classes: T-Net 3-64-128-1024 / 512-256-9, features 3-64-128-1024, head 512-256-16
    "pointnet-shapenet-b32": 803_081 + 143_104 + 661_776,
}


@pytest.mark.parametrize("name, expected", sorted(REFERENCE_PARAMS.items()))
def test_parameter_counts_match_the_reference_models(name, expected):
    job = workloads.build(name, device="meta")
    assert sum(p.numel() for p in job.model.parameters()) == expected


def test_coloc_cifar_mobilenetv2_is_within_three_percent_of_pytorch_cifars():
    job = workloads.build("mobilenetv2-cifar10-b32", device="meta")
    assert sum(p.numel() for p in job.model.parameters()) == pytest.approx(2_296_922, rel=0.03)


def test_lucid_names_are_66_and_amp_names_parse():
    names = workloads.lucid_names()
    assert len(names) == 66 and sum(n.endswith("-amp") for n in names) == 29
    spec = workloads.spec("resnet18-cifar10-b32-amp")
    assert (spec.family, spec.dataset, spec.batch_size, spec.amp) == ("resnet18", "cifar10", 32, True)
    assert not workloads.spec("resnet18-cifar10-b32").amp
    for bad in ("ppo-lunarlander-b32-amp", "transformer-multi30k-b32-amp", "resnet18-cifar10-b16-amp"):
        with pytest.raises(KeyError):
            workloads.spec(bad)  # Lucid measured no AMP variant of these
    assert "lm-wikitext2-b64" not in workloads.gavel_names() and len(workloads.gavel_names()) == 26


def test_amp_features_keep_the_graph_and_halve_the_activations():
    table = features.workloads_table(["neumf-movielens-b64", "neumf-movielens-b64-amp", "ppo-lunarlander-b32"])
    plain, amp = (table.set_index("workload").loc[n] for n in ("neumf-movielens-b64", "neumf-movielens-b64-amp"))
    assert (plain["amp"], amp["amp"]) == (0, 1)
    assert amp["activation_bytes"] == plain["activation_bytes"] // 2
    assert (amp["flops_step"], amp["params"], amp["n_ops"]) == (plain["flops_step"], plain["params"], plain["n_ops"])
    assert amp.drop(["amp", "activation_bytes"]).equals(plain.drop(["amp", "activation_bytes"]))


@pytest.mark.parametrize("name", ["dcgan-lsun-b32", "neumf-movielens-b64", "ppo-lunarlander-b32",
                                  "td3-bipedalwalker-b32", "pointnet-shapenet-b32", "efficientnet-cifar10-b32",
                                  "mobilenetv3-imagenet-b32", "bert-squad-b32-amp"])
def test_lucid_models_train_on_cpu(name):
    job = workloads.build(name, batch_size=2, reduced=True)
    trained = [p for p in job.model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in trained]
    assert math.isfinite(job.step())
    assert sum(not torch.equal(a, p) for a, p in zip(before, trained, strict=True)) >= 0.9 * len(trained)
