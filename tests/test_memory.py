"""Per-job peak GPU memory: the estimate, measured values kept, and its agreement with a fit table."""
import math

import pandas as pd
import pytest

from coloc import features, memory, recipe_memory

GIB = 2 ** 30


def test_resnet50_estimate_counts_weights_gradients_momentum_and_activations():
    """ResNet-50 (25.6 M parameters; SGD with momentum in the zoo's ImageNet recipe): weights, gradients and one
    momentum tensor are 3 x 102 MB; with ImageNet batch 32's saved activations the peak is a few GiB (PyTorch
    reports 4-6 GB for ResNet-50 training at batch 32 in fp32)."""
    name = "resnet50-imagenet-b32"
    row = features.extract(name)
    assert 25.5e6 <= row["params"] <= 25.7e6
    assert recipe_memory.recipe_optimizer(name) == ("SGD", 1)
    table = memory.estimate_table(pd.DataFrame([row]), recipe_memory.optimizers([name]))
    got = table.iloc[0]
    assert got["mem_bytes"] == pytest.approx(3 * row["param_bytes"] + row["activation_bytes"] + row["input_bytes"]
                                             + memory.CONTEXT_BYTES)
    assert 2.5 * GIB <= got["mem_bytes"] <= 7 * GIB


def test_optimizer_state_per_parameter():
    import torch
    p = [torch.nn.Parameter(torch.zeros(1))]
    assert recipe_memory.optimizer_slots(torch.optim.SGD(p, lr=0.1)) == ("SGD", 0)
    assert recipe_memory.optimizer_slots(torch.optim.SGD(p, lr=0.1, momentum=0.9)) == ("SGD", 1)
    assert recipe_memory.optimizer_slots(torch.optim.Adam(p)) == ("Adam", 2)
    assert recipe_memory.optimizer_slots(torch.optim.AdamW(p, amsgrad=True)) == ("AdamW", 3)
    with pytest.raises(ValueError, match="Adagrad"):
        recipe_memory.optimizer_slots(torch.optim.Adagrad(p))


def test_a_measured_mem_bytes_is_kept_and_the_estimate_fills_the_rest():
    solo = pd.DataFrame({"device": ["v100", "v100", "k80"], "workload": ["a", "b", "a"],
                         "throughput": [1.0, 1.0, 1.0], "mem_bytes": [3e9, math.nan, math.nan]})
    table = pd.DataFrame({"workload": ["a", "b"], "mem_bytes": [1e9, 2e9]})
    out, source = memory.with_memory(solo, table)
    assert out["mem_bytes"].tolist() == [3e9, 2e9, 1e9]
    assert source.startswith("measured where measured (1 rows), else estimated")
    assert memory.with_memory(solo.drop(columns="mem_bytes"), table)[1] == memory.ESTIMATED
    assert memory.with_memory(solo.iloc[:1], None)[1] == "measured"
    assert memory.with_memory(solo.drop(columns="mem_bytes"), None)[1] == "none"


def test_fit_agreement_on_a_hand_made_case():
    """Device d (10 GiB): a 3 GiB, b 6 GiB, c 8 GiB. Estimated fits: a+a, a+b; not a+c, b+b, b+c, c+c.
    Measured fits: a+a, a+c; so tp 1 (a+a), fn 1 (a+c), fp 1 (a+b), tn 3. Device e lacks c's memory."""
    mem = {("d", "a"): 3 * GIB, ("d", "b"): 6 * GIB, ("d", "c"): 8 * GIB, ("e", "a"): 3 * GIB}
    rows = [("d", "a", "a", True), ("d", "a", "b", False), ("d", "a", "c", True), ("d", "b", "b", False),
            ("d", "b", "c", False), ("d", "c", "c", False), ("e", "a", "a", True), ("e", "a", "c", True)]
    pairs = pd.DataFrame(rows, columns=["device", "workload_a", "workload_b", "feasible"])
    table = memory.fit_agreement(pairs, mem, {"d": 10 * GIB, "e": 10 * GIB}).set_index("device")
    assert table.loc["d", ["tp", "fn", "fp", "tn", "unknown", "pairs"]].tolist() == [1, 1, 1, 3, 0, 6]
    assert table.loc["d", "accuracy"] == pytest.approx(4 / 6)
    assert table.loc["e", ["tp", "unknown", "pairs"]].tolist() == [1, 1, 1]
    assert table.loc["all", ["tp", "fn", "fp", "tn", "unknown", "pairs"]].tolist() == [2, 1, 1, 3, 1, 7]
    # a headroom of 1.5 GiB turns a+b (1 GiB left) and a+a (4 GiB left stays) : a+b no longer fits
    strict = memory.fit_agreement(pairs, mem, {"d": 10 * GIB, "e": 10 * GIB}, headroom=1.5 * GIB).set_index("device")
    assert strict.loc["d", ["tp", "fp", "tn"]].tolist() == [1, 0, 4]
