"""coloc.datasets: the real files parse to the published counts; every malformed input is named."""

import json

import numpy as np
import pandas as pd
import pytest

from coloc import datasets
from coloc.datasets import DataError

SOLO_COLUMNS = ["device", "workload", "throughput"]
PAIR_COLUMNS = ["device", "workload_a", "workload_b", "tput_a", "tput_b", "norm_a", "norm_b", "feasible"]
TRACE_COLUMNS = ["job_id", "submit_time", "duration", "num_gpus", "workload", "cluster"]


def test_gavel_parses_to_the_published_pair_counts(gavel):
    solo, pairs = gavel
    assert list(solo.columns) == SOLO_COLUMNS and list(pairs.columns) == PAIR_COLUMNS
    assert solo.groupby("device").size().to_dict() == {"k80": 26, "p100": 26, "v100": 26}
    counts = pairs.groupby("device")["feasible"].agg(["size", lambda s: int((~s).sum())])
    assert counts["size"].to_dict() == {"k80": 351, "p100": 351, "v100": 351}
    assert counts.iloc[:, 1].to_dict() == {"k80": 45, "p100": 11, "v100": 21}


def test_gavel_pairs_are_unordered_with_self_pairs_and_normalized(gavel):
    solo, pairs = gavel
    assert (pairs["workload_a"] <= pairs["workload_b"]).all()
    assert not pairs.duplicated(["device", "workload_a", "workload_b"]).any()
    assert (pairs["workload_a"] == pairs["workload_b"]).sum() == 3 * 26
    feasible = pairs[pairs["feasible"]]
    tput = solo.set_index(["device", "workload"])["throughput"]
    expected = feasible["tput_a"].to_numpy() / tput.loc[list(zip(feasible["device"], feasible["workload_a"], strict=True))].to_numpy()
    np.testing.assert_allclose(feasible["norm_a"], expected)
    assert feasible[["norm_a", "norm_b"]].gt(0).all().all() and feasible[["norm_a", "norm_b"]].le(1.0001).all().all()
    assert pairs.loc[~pairs["feasible"], ["norm_a", "norm_b"]].isna().all().all()
    assert {"resnet18-cifar10-b16", "a3c-pong-b4", "cyclegan-monet2photo-b1", "lm-wikitext2-b80"} <= set(solo["workload"])


def test_gavel_workload_ids():
    assert datasets.gavel_workload_id("ResNet-50 (batch size 128)") == "resnet50-imagenet-b128"
    assert datasets.gavel_workload_id("Recommendation (batch size 512)") == "recommendation-ml20m-b512"
    assert datasets.gavel_workload_id("A3C") == "a3c-pong-b4"
    with pytest.raises(KeyError, match="unknown Gavel job type 'VGG-16"):
        datasets.gavel_workload_id("VGG-16 (batch size 32)")


def test_trace_parses_all_82247_jobs(raw_files, gavel):
    solo, _ = gavel
    trace = datasets.trace_from_philly(raw_files["philly_trace"], solo, assign="uniform", seed=0, reference_device="v100")
    assert list(trace.columns) == TRACE_COLUMNS
    assert len(trace) == 82247
    assert trace["submit_time"].iloc[0] == 0 and trace["submit_time"].is_monotonic_increasing
    assert (trace["num_gpus"] == 1).sum() == 76627 and trace["num_gpus"].max() == 128
    assert set(trace["workload"]) == set(solo["workload"].unique())
    assert trace["job_id"].tolist() == list(range(82247))


def test_trace_filters_and_seeded_assignment(raw_files, gavel):
    solo, _ = gavel
    kwargs = dict(assign="uniform", reference_device="v100", clusters=["11cb48"], window=[0, 30 * 86400], max_jobs=500)
    first = datasets.trace_from_philly(raw_files["philly_trace"], solo, seed=3, **kwargs)
    again = datasets.trace_from_philly(raw_files["philly_trace"], solo, seed=3, **kwargs)
    other = datasets.trace_from_philly(raw_files["philly_trace"], solo, seed=4, **kwargs)
    pd.testing.assert_frame_equal(first, again)
    assert not first["workload"].equals(other["workload"])
    assert len(first) <= 500 and set(first["cluster"]) == {"11cb48"}
    assert first["submit_time"].iloc[0] == 0 and first["submit_time"].max() < 30 * 86400


def test_gpu_time_rule_gives_long_jobs_the_heavy_workloads(raw_files, gavel):
    solo, _ = gavel
    trace = datasets.trace_from_philly(raw_files["philly_trace"], solo, assign="gpu_time", seed=0,
                                       reference_device="v100", max_jobs=3000)
    cost = 1.0 / solo[solo["device"] == "v100"].set_index("workload")["throughput"]
    gpu_time = trace["duration"] * trace["num_gpus"]
    short = trace.loc[gpu_time <= gpu_time.quantile(0.3), "workload"].map(cost)
    long = trace.loc[gpu_time >= gpu_time.quantile(0.7), "workload"].map(cost)
    assert short.max() <= long.min()


def test_unknown_assignment_rule_and_unknown_cluster(raw_files, gavel):
    solo, _ = gavel
    with pytest.raises(DataError, match="unknown rule 'random'"):
        datasets.trace_from_philly(raw_files["philly_trace"], solo, assign="random", seed=0, reference_device="v100")
    with pytest.raises(DataError, match=r"clusters \['nope'\] not in the trace"):
        datasets.trace_from_philly(raw_files["philly_trace"], solo, assign="uniform", seed=0,
                                   reference_device="v100", clusters=["nope"])


# ------------------------------------------------------------------ malformed Gavel input

def gavel_json(tmp_path, mutate):
    key = lambda name: str((name, 1))  # noqa: E731
    names = ["ResNet-18 (batch size 16)", "LM (batch size 5)"]
    table = {key(a): {"null": 10.0 + i, **{key(b): [5.0 + i, 5.0 + j] for j, b in enumerate(names)}}
             for i, a in enumerate(names)}
    data = {"k80": table}
    mutate(data["k80"], key)
    path = tmp_path / "gavel.json"
    path.write_text(json.dumps(data))
    return path


def test_small_valid_gavel_file(tmp_path):
    solo, pairs = datasets.load_gavel(gavel_json(tmp_path, lambda t, k: None), devices=["k80"])
    assert len(solo) == 2 and len(pairs) == 3 and pairs["feasible"].all()


@pytest.mark.parametrize("mutate, message", [
    (lambda t, k: t[k("LM (batch size 5)")].update({"null": 0}),
     r"k80/\('LM \(batch size 5\)', 1\)/null: solo throughput is 0"),
    (lambda t, k: t[k("LM (batch size 5)")].pop("null"),
     r"k80/\('LM \(batch size 5\)', 1\)/null missing; expected the solo throughput"),
    (lambda t, k: t.update({k("Bogus (batch size 5)"): {"null": 1.0}}),
     r"unknown Gavel job type 'Bogus \(batch size 5\)'"),
    (lambda t, k: t[k("LM (batch size 5)")].update({k("ResNet-18 (batch size 16)"): [1.0, 2.0]}),
     r"LM.*ResNet.* is \[1.0, 2.0\] but its reverse .* is \[5.0, 6.0\]; expected the same pair swapped"),
    (lambda t, k: t[k("LM (batch size 5)")].update({k("LM (batch size 5)"): ["fast", 1.0]}),
     r"pair throughput must be a finite non-negative number, got 'fast'"),
    (lambda t, k: t[k("LM (batch size 5)")].update({"null": float("nan")}),
     r"solo throughput must be a finite non-negative number, got nan"),
    (lambda t, k: t[k("LM (batch size 5)")].update({"null": float("inf")}),  # JSON 'Infinity'
     r"k80/\('LM \(batch size 5\)', 1\)/null: solo throughput must be a finite non-negative number, got inf"),
    (lambda t, k: (t[k("LM (batch size 5)")].update({k("ResNet-18 (batch size 16)"): [float("inf"), 5.0]}),
                   t[k("ResNet-18 (batch size 16)")].update({k("LM (batch size 5)"): [5.0, float("inf")]})),
     r"LM.*ResNet.*: pair throughput must be a finite non-negative number, got inf"),
    (lambda t, k: (t[k("LM (batch size 5)")].update({k("ResNet-18 (batch size 16)"): [55.0, 5.0]}),
                   t[k("ResNet-18 (batch size 16)")].update({k("LM (batch size 5)"): [5.0, 55.0]})),
     r"k80/\('LM.*/\('ResNet.* is \[55.0, 5.0\] against solo \[11.0, 10.0\]: normalized \[5, 0.5\]; "
     r"expected at most 1.5"),
    (lambda t, k: t.update({"('LM (batch size 05)', 1)": t[k("LM (batch size 5)")]}),
     r"keys k80/\('LM \(batch size 5\)', 1\) and k80/\('LM \(batch size 05\)', 1\) are both job type "
     r"lm-wikitext2-b5"),
    (lambda t, k: t.update({"('LM (batch size 5)', 1e400)": {"null": 1.0}}),
     r"key k80/\"\('LM \(batch size 5\)', 1e400\)\" is not a"),
    (lambda t, k: t[k("LM (batch size 5)")].pop(k("ResNet-18 (batch size 16)")),
     r"k80/\('LM \(batch size 5\)', 1\)/\('ResNet-18 \(batch size 16\)', 1\): expected \[throughput of A"),
])
def test_malformed_gavel_input_names_the_key(tmp_path, mutate, message):
    path = gavel_json(tmp_path, mutate)
    with pytest.raises(DataError, match=message) as err:
        datasets.load_gavel(path, devices=["k80"])
    assert str(path) in str(err.value)


def test_gavel_missing_device_and_bad_json(tmp_path):
    path = gavel_json(tmp_path, lambda t, k: None)
    with pytest.raises(DataError, match=r"device key 'v100' missing; expected one of \['k80'\]"):
        datasets.load_gavel(path, devices=["v100"])
    path.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        datasets.load_gavel(path)


# ------------------------------------------------------------------ malformed Philly input

GOOD_CSV = ("timestamp,duration,num_gpus,gpu_time,cluster\n"
            "2017-10-09 07:01:55,66.0,1,66.0,a\n"
            "2017-10-09 06:13:03,2951.0,2,5902.0,b\n")


def write_csv(tmp_path, text):
    path = tmp_path / "philly.csv"
    path.write_text(text)
    return path


def test_small_valid_philly_file(tmp_path):
    trace = datasets.load_philly(write_csv(tmp_path, GOOD_CSV), ["w1", "w2"], seed=0)
    assert trace["submit_time"].tolist() == [0.0, 2932.0]
    assert trace["cluster"].tolist() == ["b", "a"] and trace["num_gpus"].tolist() == [2, 1]


@pytest.mark.parametrize("text, message", [
    (GOOD_CSV.replace("duration", "runtime"), r"columns \['duration'\] missing; expected .* found .*'runtime'"),
    (GOOD_CSV.replace(",66.0,1,", ",fast,1,"), r"row 2 .*column 'duration': got 'fast', expected a finite number"),
    (GOOD_CSV.replace(",2951.0,2,", ",-5,2,"), r"row 3 .*column 'duration': got '-5', expected a positive number"),
    (GOOD_CSV.replace(",2951.0,2,", ",0,2,"), r"row 3 .*column 'duration': got '0', expected a positive number"),
    (GOOD_CSV.replace(",1,66.0,", ",NaN,66.0,"), r"row 2 .*column 'num_gpus': got 'NaN', expected a finite number"),
    (GOOD_CSV.replace(",1,66.0,", ",1.5,66.0,"), r"row 2 .*column 'num_gpus': got '1.5', expected a whole number"),
    (GOOD_CSV.replace("2017-10-09 07:01:55", "yesterday"), r"row 2 .*column 'timestamp': got 'yesterday'"),
    (GOOD_CSV.replace(",66.0,a", ",,a"), r"row 2 .*column 'gpu_time': got '', expected a finite number"),
    (GOOD_CSV.replace(",1,66.0,", ",1e30,66.0,"), r"row 2 .*column 'num_gpus': got '1e30', expected at most 9007199254740992"),
])
def test_malformed_philly_input_names_row_and_column(tmp_path, text, message):
    path = write_csv(tmp_path, text)
    with pytest.raises(DataError, match=message) as err:
        datasets.load_philly(path, ["w1"])
    assert str(path) in str(err.value)


def test_binary_files_name_the_file(tmp_path):
    """Bytes that are not UTF-8 text: a DataError naming the file (was a bare UnicodeDecodeError)."""
    binary = bytes(range(256)) * 4
    csv_path, json_path = tmp_path / "philly.csv", tmp_path / "gavel.json"
    csv_path.write_bytes(GOOD_CSV.encode() + binary)
    json_path.write_bytes(b'{"k80": "' + binary + b'"}')
    with pytest.raises(DataError, match=f"{csv_path}: not a readable UTF-8 CSV"):
        datasets.load_philly(csv_path, ["w1"])
    with pytest.raises(DataError, match=f"{json_path}: not valid JSON text"):
        datasets.load_gavel(json_path, devices=["k80"])


def test_repeated_json_key_is_refused(tmp_path):
    """json.load keeps the last of two equal keys without a word; the parser names the key instead."""
    path = gavel_json(tmp_path, lambda t, k: None)
    text = path.read_text()
    path.write_text(text.replace('"null": 10.0,', '"null": 10.0, "null": 99.0,', 1))
    with pytest.raises(DataError, match=f"{path}: key 'null' appears more than once in one object"):
        datasets.load_gavel(path, devices=["k80"])
