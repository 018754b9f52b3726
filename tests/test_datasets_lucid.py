"""Lucid's RTX 3090 measurements: its sources (checksummed), the parser into solo and pairs, its refusals."""
import hashlib
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO

from coloc import sources, workloads
from coloc.datasets import DataError, lucid


@pytest.fixture(scope="module")
def tables(raw_files):
    return lucid.load_lucid(raw_files["lucid_pairs"], raw_files["lucid_solo"])


@pytest.mark.parametrize("name", ["lucid_pairs", "lucid_solo"])
def test_a_changed_byte_stops_the_fetch_with_both_hashes(name, mirror, tmp_path):
    source = sources.sources_from_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))[name]
    copy = tmp_path / "mirror" / source.file
    copy.parent.mkdir(parents=True)
    data = bytearray((mirror / source.file).read_bytes())
    assert hashlib.sha256(data).hexdigest() == source.sha256
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    with pytest.raises(sources.SourceError) as err:
        sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
    assert source.sha256 in str(err.value) and hashlib.sha256(data).hexdigest() in str(err.value)
    assert not (tmp_path / "raw" / source.file).exists()


def test_solo_table_holds_the_66_job_types_with_measured_utilization(tables):
    solo, _ = tables
    assert sorted(solo["workload"]) == workloads.lucid_names()
    assert list(solo.columns) == lucid.SOLO_TABLE and (solo["device"] == "rtx3090").all()
    row = solo.set_index("workload").loc["resnet18-cifar10-b32"]
    assert row["samples_s"] == pytest.approx(1763.905) and row["throughput"] == pytest.approx(1763.905 / 32)
    assert (row["gpu_util"], row["mem_util"], row["mem_bytes"]) == (pytest.approx(58.667), 25.0, 2360.0 * 2**20)
    assert set(solo["lucid_label"]) == {0, 1, 2}


def test_pairs_are_the_1388_measured_ones_as_measured(tables):
    solo, pairs = tables
    assert len(pairs) == 1388 and list(pairs.columns) == lucid.PAIR_TABLE
    assert (pairs["workload_a"] <= pairs["workload_b"]).all() and pairs["feasible"].all()
    assert not pairs.duplicated(["workload_a", "workload_b"]).any()
    norms = pd.concat([pairs["norm_a"], pairs["norm_b"]])
    assert norms.min() == 0.444 and norms.max() == 1.498  # kept as measured (no clipping of the noise above 1)
    assert 0.15 < (norms > 1).mean() < 0.25
    assert ((pairs["workload_a"] == pairs["workload_b"]).sum()) == 56
    tput = solo.set_index("workload")["throughput"]
    assert np.allclose(pairs["tput_a"], pairs["norm_a"] * tput.reindex(pairs["workload_a"]).to_numpy())
    # the first row of the file: MobileNetV3 b32 (0.983) with ResNet-18 b32 (1.034), swapped into a <= b order
    row = pairs.set_index(["workload_a", "workload_b"]).loc[("mobilenetv3-imagenet-b32", "resnet18-cifar10-b32")]
    assert (row["norm_a"], row["norm_b"]) == (0.983, 1.034)
    assert (row["pair_gpu_util"], row["pair_mem_util"], row["pair_mem_bytes"]) == (64.789, 29.461, 5106 * 2**20)
    in_pairs = set(pairs["workload_a"]) | set(pairs["workload_b"])
    assert len(in_pairs) == 56 and not any(w.split("-")[0] in ("bert", "resnet50", "transformer") for w in in_pairs)


def test_unmeasured_pairs_are_absent_rows_not_infeasible_ones(tables):
    solo, pairs = tables
    missing = lucid.unmeasured_pairs(pairs, solo)
    assert len(missing) == 208
    neumf = missing["workload_a"].str.startswith("neumf") ^ missing["workload_b"].str.startswith("neumf")
    assert neumf.all()  # NeuMF with any of the 52 others; NeuMF with NeuMF was measured
    assert (~pairs["feasible"]).sum() == 0


def test_amp_and_batches_follow_lucid(tables):
    solo, _ = tables
    names = set(solo["workload"])
    assert not any(n.startswith(("ppo", "td3", "transformer")) and n.endswith("-amp") for n in names)
    assert {"lm-wikitext2-b64", "lm-wikitext2-b128-amp", "neumf-movielens-b128-amp", "bert-squad-b32-amp"} <= names


def _write(tmp_path, raw_files, edit_pairs=None, edit_solo=None):
    pairs = pd.read_csv(raw_files["lucid_pairs"], dtype=str, keep_default_na=False)
    solo = pd.read_csv(raw_files["lucid_solo"], dtype=str, keep_default_na=False)
    if edit_pairs:
        pairs = _edited(pairs, edit_pairs)
    if edit_solo:
        solo = _edited(solo, edit_solo)
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    solo.to_csv(tmp_path / "solo.csv", index=False)
    return tmp_path / "pairs.csv", tmp_path / "solo.csv"


def _edited(frame, edit):
    out = edit(frame)  # an edit changes the frame in place (None) or returns the new one
    return frame if out is None else out


def _set(column, row, value):
    def edit(frame):
        frame.loc[row, column] = value
    return edit


@pytest.mark.parametrize("edit_pairs, edit_solo, where, expected", [
    (_set("speed1", 4, "1.7"), None, "pairs.csv: row 6 (line 6 of the file), column 'speed1'", "(0, 1.5]"),
    (_set("speed2", 0, "nan"), None, "row 2 (line 2 of the file), column 'speed2'", "normalized co-located speed"),
    (_set("model1", 3, "AlexNet"), None, "column 'model1': got 'AlexNet'", "one of Lucid's models"),
    (_set("batchsize2", 1, "48"), None, "column 'batchsize2': got '48'", "a batch size (and AMP setting)"),
    (_set("amp1", 2, "yes"), None, "column 'amp1': got 'yes'", "0 or 1"),
    (_set("gpu_num2", 2, "2"), None, "column 'gpu_num2'", "1 (single-GPU jobs)"),
    (_set("gpu_util", 7, "130"), None, "row 9 (line 9 of the file), column 'gpu_util'", "[0, 100] %"),
    (_set("gmem", 7, "-3"), None, "column 'gmem'", "MiB, > 0"),
    (None, _set("speed", 0, "0"), "solo.csv: row 2 (line 2 of the file), column 'speed'", "positive throughput"),
    (None, _set("label", 5, "3"), "column 'label'", "packing class 0, 1 or 2"),
    (None, lambda f: f.drop(index=0), None, None),  # BERT alone: in no pair, nothing refused
    (None, lambda f: f.drop(index=2), "pairs.csv: row", "a job type with a solo row"),
])
def test_bad_input_is_refused_naming_file_row_column_and_expectation(tmp_path, raw_files, edit_pairs, edit_solo,
                                                                     where, expected):
    pairs_path, solo_path = _write(tmp_path, raw_files, edit_pairs, edit_solo)
    if where is None:
        solo, _ = lucid.load_lucid(pairs_path, solo_path)
        assert len(solo) == 65
        return
    with pytest.raises(DataError) as err:
        lucid.load_lucid(pairs_path, solo_path)
    assert where in str(err.value) and expected in str(err.value), str(err.value)


def test_a_repeated_pair_and_missing_columns_are_refused(tmp_path, raw_files):
    def repeat_swapped(frame):
        first = frame.iloc[[0]].copy()
        for c in lucid.JOB_COLUMNS:
            first[f"{c}1"], first[f"{c}2"] = frame.iloc[0][f"{c}2"], frame.iloc[0][f"{c}1"]
        frame.loc[len(frame)] = first.iloc[0]
    with pytest.raises(DataError, match=r"row 1390 .*one row per unordered pair"):
        lucid.load_lucid(*_write(tmp_path, raw_files, repeat_swapped))
    with pytest.raises(DataError, match=r"columns \['gmem'\] missing"):
        lucid.load_lucid(*_write(tmp_path, raw_files, lambda f: f.drop(columns="gmem")))
    shutil.copy(raw_files["lucid_solo"], tmp_path / "s.csv")
    with pytest.raises(DataError, match="no such file"):
        lucid.load_lucid(tmp_path / "none.csv", tmp_path / "s.csv")


def test_the_parsers_measured_batches_are_the_zoos():
    """The parser's own table of Lucid's batch sizes (no model code) names the zoo's Lucid job types exactly."""
    assert lucid.measured_job_types() == workloads.lucid_names()
    assert lucid.AMP_SUFFIX == workloads.AMP_SUFFIX
    for (family, dataset), (plain, amp) in lucid.MEASURED_BATCHES.items():
        entry = workloads.ENTRIES[family, dataset]
        assert (entry.lucid_batches, entry.amp_batches) == (plain, amp), (family, dataset)
