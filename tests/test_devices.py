"""The device table: vendor specs, NVML name mapping, the local CPU row."""

import math
import os

import pytest

from coloc import devices


def test_gavel_gpus_have_vendor_specs():
    table = devices.gpu_table().set_index("name")
    assert {"k80", "p100", "v100", "t4", "a100-40gb", "h100-sxm", "h200"} <= set(table.index)
    assert table.loc["v100", "peak_flops"] == pytest.approx(15.7e12)
    assert table.loc["v100", "tensor_cores"] == 640 and table.loc["v100", "sms"] == 80
    assert table.loc["k80", "tensor_cores"] == 0 and table.loc["k80", "peak_tensor_flops"] == 0
    assert table.loc["p100", "mem_bandwidth"] == pytest.approx(732e9)
    numeric = table[list(devices.NUMERIC)]
    assert (numeric.drop(columns=["peak_tensor_flops", "tensor_cores"]) > 0).all().all()
    # newer GPUs are faster than the older ones on every compute column
    assert (table.loc["h100-sxm", ["peak_flops", "sms", "cuda_cores"]] > table.loc["v100", ["peak_flops", "sms", "cuda_cores"]]).all()


@pytest.mark.parametrize("nvml, row", [
    ("Tesla V100-SXM2-16GB", "v100"), ("tesla k80", "k80"), ("Tesla P100-PCIE-16GB", "p100"),
    ("NVIDIA H200", "h200"), ("nvidia h100 80gb hbm3", "h100-sxm"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
])
def test_nvml_names_map_to_rows_and_keep_their_name(nvml, row):
    got = devices.device_row(nvml.lower())
    ref = devices.device_row(row)
    assert got["name"] == nvml.lower()
    assert got["peak_flops"] == ref["peak_flops"] and got["mem_bandwidth"] == ref["mem_bandwidth"]
    assert devices.canonical_gpu(nvml) == row


def test_unknown_device_names_the_known_ones():
    with pytest.raises(KeyError, match=r"device 'voodoo 5' is not a device coloc knows \(no close name\); expected "
                                       r"one of .*v100"):
        devices.device_row("voodoo 5")


def test_local_cpu_name_and_its_row_from_psutil():
    name = devices.local_cpu_name(2)
    assert name.startswith("cpu:") and name.endswith(" x2")
    row = devices.device_row(name)
    assert row["kind"] == "cpu" and row["cuda_cores"] == 2 and row["tensor_cores"] == 0
    assert row["memory_bytes"] > 2**28 and 1 <= row["sms"] <= 2
    assert math.isnan(row["peak_flops"]) or row["peak_flops"] > 1e9
    assert devices.local_cpu_name() == f"cpu:{devices.local_cpu_model()} x{os.cpu_count()}"


def test_other_cpu_model_gets_threads_but_no_estimates():
    row = devices.device_row("cpu:Some Other CPU 9000 x16")
    assert row["cuda_cores"] == 16 and row["kind"] == "cpu"
    assert math.isnan(row["peak_flops"]) and math.isnan(row["mem_bandwidth"])


def test_device_table_keeps_order_and_drops_duplicates():
    table = devices.device_table(["v100", "k80", "v100"])
    assert list(table["name"]) == ["v100", "k80"]
    assert list(table.columns) == list(devices.COLUMNS)
