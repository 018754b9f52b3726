"""`coloc probe` (issue 13, item 5): a new job type measured next to k references on the CPU, predicted next to all."""
import numpy as np
import pandas as pd
import pytest

from coloc import cli, profiler
from coloc.predict.references import choose_references

REFERENCE_SET = ["recommendation-ml20m-b512", "squeezenet-cifar10-b32", "shufflenetv2-cifar10-b32"]
NEW = "lm-wikitext2-b5"
TINY = profiler.Settings(device="cpu", threads=1, warmup_s=0.0, warmup_iters=1, window_s=0.3, min_iters=2,
                         timeout_s=60.0, batch_size=1, sample_interval_s=0.05)


@pytest.mark.slow
def test_coloc_probe_on_the_cpu_against_a_small_reference_set(tmp_path):
    records = profiler.run(profiler.plan(REFERENCE_SET, shuffle=False), tmp_path / "ref.jsonl", TINY, progress=False)
    solo, pairs = profiler.solo_table(records), profiler.pairs_table(records)
    solo.to_parquet(tmp_path / "solo.parquet")
    pairs.to_parquet(tmp_path / "pairs.parquet")
    out = tmp_path / "out" / "lm.v1"  # a dot in the prefix stays
    code = cli.main(["probe", NEW, "--device", "cpu", "--solo", str(tmp_path / "solo.parquet"),
                     "--pairs", str(tmp_path / "pairs.parquet"), "--k", "2", "--out", str(out),
                     "--log", str(tmp_path / "probe.jsonl"), "--repeats", "1", "--window-s", "0.3",
                     "--warmup-s", "0", "--threads", "1", "--batch-size", "1", "--quiet"])
    assert code == 0
    table = pd.read_parquet(f"{out}.parquet")
    assert pd.read_csv(f"{out}.csv")["co_runner"].tolist() == table["co_runner"].tolist()
    device = solo["device"].iloc[0]
    references = choose_references(pairs, device, 2)
    assert set(table["co_runner"]) == set(REFERENCE_SET) | {NEW}  # every job type of the reference set, and itself
    assert (table["device"] == device).all() and (table["workload"] == NEW).all()
    assert table["references"].iloc[0] == ",".join(references)
    probes = table[table["probe"]]
    assert sorted(probes["co_runner"]) == sorted(references)  # measured next to exactly the k references
    # measured on a shared, busy CPU: a normalized throughput may exceed 1 by noise, so only its sign is checked
    assert (probes["measured_norm"] > 0).all() and table.loc[~table["probe"], "measured_norm"].isna().all()
    assert (table[["pred_norm", "co_runner_pred_norm"]] > 0).all().all()
    assert np.isfinite(table[["pred_norm", "co_runner_pred_norm"]]).all().all()
    assert (table["pred_std"] > 0).all()  # the predictor's spread
    # the probe log holds the new job solo, each reference solo, and the new job next to each reference
    logged = {tuple(r["workloads"]) for r in profiler.read_log(tmp_path / "probe.jsonl")}
    assert logged == {(NEW,)} | {(r,) for r in references} | {tuple(sorted((NEW, r))) for r in references}


def test_a_model_outside_the_zoo_and_a_device_without_references_are_refused(tmp_path, capsys):
    solo = pd.DataFrame({"device": ["k80"], "workload": ["a"], "throughput": [1.0]})
    pairs = pd.DataFrame({"device": ["k80"], "workload_a": ["a"], "workload_b": ["a"], "tput_a": [0.5],
                          "tput_b": [0.5], "norm_a": [0.5], "norm_b": [0.5], "feasible": [True]})
    solo.to_parquet(tmp_path / "solo.parquet")
    pairs.to_parquet(tmp_path / "pairs.parquet")
    base = ["--device", "cpu", "--solo", str(tmp_path / "solo.parquet"), "--pairs", str(tmp_path / "pairs.parquet"),
            "--log", str(tmp_path / "log.jsonl"), "--out", str(tmp_path / "out")]
    assert cli.main(["probe", "mymodel", *base]) == 1
    assert "model 'mymodel': expected a job type of the zoo" in capsys.readouterr().err
    assert cli.main(["probe", NEW, *base]) == 1
    err = capsys.readouterr().err
    assert "no solo or pair row on device 'cpu:" in err and "they hold ['k80']" in err
    assert not (tmp_path / "log.jsonl").exists()  # refused before measuring anything


def test_the_plan_measures_the_new_job_solo_each_reference_solo_and_each_probe_pair():
    from coloc.probe import plan
    measurements = plan(NEW, REFERENCE_SET[:2], repeats=2)
    sets = [m.workloads for m in measurements]
    expected = {(NEW,), (REFERENCE_SET[0],), (REFERENCE_SET[1],), tuple(sorted((NEW, REFERENCE_SET[0]))),
                tuple(sorted((NEW, REFERENCE_SET[1])))}
    assert len(sets) == 10 and set(sets) == expected and [m.repeat for m in measurements] == [0] * 5 + [1] * 5


def test_predictions_next_to_every_reference_job_type_with_spread_and_the_probes_measured(gavel):
    from coloc.datasets import family_of
    from coloc.probe import predict_new
    solo, pairs = gavel
    new = "transformer-multi30k-b32"
    solo, pairs = solo[solo["device"] == "v100"], pairs[pairs["device"] == "v100"]
    touches_new = (pairs["workload_a"] == new) | (pairs["workload_b"] == new)
    probes = ["lm-wikitext2-b20", "resnet50-imagenet-b16"]
    probe_rows = pairs[touches_new & (pairs["workload_a"].isin(probes) | pairs["workload_b"].isin(probes))]
    known = solo[solo["workload"].map(family_of) != "transformer"]
    ref_pairs = pairs[~pairs["workload_a"].map(family_of).eq("transformer")
                      & ~pairs["workload_b"].map(family_of).eq("transformer")]
    names = sorted(set(known["workload"]) | {new})
    workloads = pd.DataFrame({"workload": names, "family": [family_of(n) for n in names], "batch_size": 1.0})
    table = predict_new(new, "v100", known, ref_pairs, solo[solo["workload"] == new], probe_rows, workloads,
                        predictor="completion")
    assert sorted(table["co_runner"]) == sorted(set(known["workload"]) | {new})
    assert sorted(table.loc[table["probe"], "co_runner"]) == probes
    measured = probe_rows.assign(mine=lambda f: f["norm_a"].where(f["workload_a"] == new, f["norm_b"]))
    got = table.set_index("co_runner").loc[probes, "measured_norm"]
    assert got.tolist() == pytest.approx(measured.set_index(measured["workload_a"].where(
        measured["workload_a"] != new, measured["workload_b"]))["mine"].loc[probes].tolist())
    assert table["pred_norm"].between(0.001, 1.0).all() and (table["pred_std"] > 0).all()
