"""Model-graph features: published values, batch scaling, operator counting, memory-free extraction."""
import pandas as pd
import psutil
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from coloc import features

torch.set_num_threads(1)

# torchvision / paper values: parameters, and forward multiply-accumulates per 224x224 image
PUBLISHED_PARAMS = {"resnet50-imagenet-b16": 25.56e6, "resnet18-cifar10-b16": 11.17e6,
                    "vgg16-imagenet-b16": 138.36e6, "mobilenetv2-imagenet-b16": 3.50e6,
                    "densenet121-imagenet-b16": 7.98e6, "squeezenet-imagenet-b16": 1.25e6}
PUBLISHED_MACS = {"resnet50-imagenet-b16": 4.1e9, "vgg16-imagenet-b16": 15.5e9,
                  "mobilenetv2-imagenet-b16": 0.30e9}


@pytest.fixture(scope="module")
def per_image():
    """Features of the published models at batch 1."""
    return {n: features.extract(n, batch_size=1) for n in PUBLISHED_PARAMS}


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_parameters_match_published_within_1_percent(per_image, name):
    row = per_image[name]
    assert row["params"] == pytest.approx(PUBLISHED_PARAMS[name], rel=0.01)
    assert row["param_bytes"] == 4 * row["params"]


@pytest.mark.parametrize("name", sorted(PUBLISHED_MACS))
def test_forward_macs_match_published_within_5_percent(per_image, name):
    macs = per_image[name]["flops_fwd"] / 2  # FlopCounterMode counts a multiply-add as 2 FLOPs
    assert macs == pytest.approx(PUBLISHED_MACS[name], rel=0.05)


@pytest.mark.parametrize("name", ["resnet50-imagenet-b16", "mobilenetv2-imagenet-b16"])
def test_training_step_costs_about_three_forwards(per_image, name):
    row = per_image[name]
    # backward = gradients of inputs and weights (2x forward), minus the first layer's input gradient
    assert 2.8 < row["flops_step"] / row["flops_fwd"] < 3.0


@pytest.mark.parametrize("conv", [nn.Conv2d(8, 8, 3, padding=1, groups=8),
                                  nn.ConvTranspose2d(8, 8, 3, 2, 1, output_padding=1, groups=4)],
                         ids=["depthwise", "grouped-transposed"])
def test_grouped_convolution_weight_gradient_costs_one_forward(conv):
    """The input needs no gradient, so backward is the weight gradient alone: as costly as forward."""
    conv = conv.to("meta")
    with features.flop_counter() as flops:
        out = conv(torch.empty(4, 8, 16, 16, device="meta"))
        forward = flops.get_total_flops()
        out.sum().backward()
    assert forward > 0 and flops.get_total_flops() == 2 * forward


@pytest.fixture(scope="module")
def lm_rows():
    return [features.extract("lm-wikitext2-b5", batch_size=b) for b in (8, 16, 32)]


@pytest.mark.parametrize("name", ["resnet18-cifar10-b16", "lm-wikitext2-b5"])
def test_features_scale_with_batch_size(name, lm_rows):
    rows = lm_rows if name.startswith("lm") else [features.extract(name, batch_size=b) for b in (8, 16, 32)]
    one, two, four = rows
    assert four["batch_size"] == 32
    for key in ("flops_fwd", "flops_step", "input_bytes"):
        assert four[key] == 2 * two[key] == 4 * one[key], key
    # activations: per-sample tensors plus a few per-channel ones (batch-norm batch statistics)
    act = [r["activation_bytes"] for r in (one, two, four)]
    assert act[2] - act[1] == 2 * (act[1] - act[0])
    assert act[2] == pytest.approx(4 * act[0], rel=1e-3)
    for key in [k for k in one if k.startswith("n_")] + ["params", "param_bytes"]:
        assert four[key] == one[key], key


def test_resnet50_operator_counts(per_image):
    row = per_image["resnet50-imagenet-b16"]
    expected = {"n_conv": 53, "n_norm": 53, "n_relu": 49, "n_linear": 1, "n_add": 16, "n_pool": 2,
                "n_matmul": 0, "n_recurrent": 0, "n_concat": 0}
    assert {k: row[k] for k in expected} == expected
    assert (row["n_conv_coarse"], row["n_linear_coarse"], row["n_activation_coarse"]) == (53, 1, 49)
    coarse = sum(row[f"n_{k}_coarse"] for k in features.COARSE)
    assert coarse == row["n_ops"] == sum(row[f"n_{k}"] for k in features.OP_KINDS)


def test_recurrent_layers_and_embeddings_are_counted(lm_rows):
    row = lm_rows[0]
    assert (row["n_recurrent"], row["n_embedding"], row["n_linear"], row["n_dropout"]) == (2, 1, 1, 2)
    assert row["n_conv"] == 0


class Custom(nn.Module):
    """A model the zoo does not know: features come from torch's machinery alone."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gru = nn.GRU(8, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.cell = nn.LSTMCell(32, 4)

    def forward(self, x):
        y = F.gelu(self.conv(x))
        y = torch.cat([y, y * torch.sigmoid(y)], 1)[:, :8]      # cat, mul, sigmoid, getitem
        seq = y.flatten(2).transpose(1, 2)                      # flatten, transpose
        out, _ = self.gru(seq)                                  # 2 layers x 2 directions
        h, _ = self.cell(out[:, -1])                            # getitem, one cell
        mask = torch.ones(h.shape, device=h.device)              # not on the data path
        return torch.softmax(h, -1) + mask                      # softmax, add


def test_operator_counter_on_a_custom_model():
    with torch.device("meta"):
        model = Custom()
        x = torch.empty(2, 3, 4, 4)
    with features.OpCounter(list(model.parameters()) + [x]) as ops:
        model(x)
    assert dict(ops.counts) == {"conv": 1, "gelu": 1, "concat": 1, "mul": 1, "sigmoid": 1,
                                "reshape": 4, "recurrent": 5, "softmax": 1, "add": 1}


def test_activation_bytes_are_distinct_saved_storages_without_parameters_or_inputs():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
        x = torch.empty(11, 5)
    params = list(model.parameters())
    with features.SavedTensors(exclude=params + [x]) as saved:
        model(x)
    # ReLU saves its output, the second linear saves the same tensor: one 11 x 7 float32 storage
    assert saved.nbytes == 11 * 7 * 4


def test_big_batches_need_no_memory():
    rss = psutil.Process().memory_info().rss
    row = features.extract("recommendation-ml20m-b8192")
    assert row["input_bytes"] == 8192 * 20108 * 4          # 659 MB if it were real
    assert row["activation_bytes"] > row["input_bytes"]
    assert psutil.Process().memory_info().rss - rss < 100 * 2**20


def test_workloads_table_contract():
    names = ["squeezenet-cifar10-b128", "a3c-pong-b4", "squeezenet-cifar10-b32"]
    table = features.workloads_table(names)
    assert list(table["workload"]) == sorted(names)
    assert list(table.columns[:5]) == ["workload", "family", "dataset", "task", "batch_size"]
    required = {"flops_fwd", "flops_step", "params", "param_bytes", "activation_bytes", "input_bytes",
                "n_conv_coarse", "n_linear_coarse", "n_activation_coarse", "n_other_coarse"}
    required |= {f"n_{k}" for k in features.OP_KINDS}
    assert required <= set(table.columns)
    assert table.drop(columns=["workload", "family", "dataset", "task"]).ge(0).all().all()
    assert table.set_index("workload").loc["a3c-pong-b4", "n_recurrent"] == 20  # one cell per rollout step
    with pytest.raises(KeyError, match="squeezenet-cifar10-b32"):
        features.workloads_table(["squeezenet-cifar10-b33"])


def test_workloads_table_same_with_workers():
    """Measured in two spawned processes, the table equals the one measured in this process, AMP rows included
    (an AMP job type reuses its FP32 graph, measured by whichever process got it)."""
    names = ["resnet18-cifar10-b32-amp", "squeezenet-cifar10-b32", "resnet18-cifar10-b32"]
    alone = features.workloads_table(names)
    pd.testing.assert_frame_equal(features.workloads_table(names, workers=2), alone)
    assert alone.set_index("workload").loc["resnet18-cifar10-b32-amp", "amp"] == 1
