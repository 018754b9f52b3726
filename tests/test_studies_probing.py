"""The probe scenario's inputs: probe pairs, the probe-informed predictions, the new-family share."""
import numpy as np
import pandas as pd
import pytest

from coloc.datasets import family_of
from coloc.studies import probing

KEY = ["device", "workload_a", "workload_b"]


def flat_predictions(pairs: pd.DataFrame, value: float, seeds=(0,)) -> pd.DataFrame:
    """Test helper: every feasible pair predicted `value` (both jobs), for each seed."""
    rows = pairs[pairs["feasible"]][KEY]
    return pd.concat([rows.assign(predictor="p", seed=s, held_out="x", pred_norm_a=value, pred_norm_b=value,
                                  pred_std_a=0.01, pred_std_b=0.01) for s in seeds], ignore_index=True)


def test_every_new_job_type_is_probed_next_to_k_references_of_seen_families(gavel):
    _, pairs = gavel
    probes = probing.measured_probes(pairs, ["lm"], 2)
    measured = pairs.set_index(KEY)
    for (_, workload), part in pd.concat([
            probes.assign(job=probes["workload_a"], ref=probes["workload_b"]),
            probes.assign(job=probes["workload_b"], ref=probes["workload_a"])]).groupby(["device", "job"]):
        if family_of(workload) != "lm":
            continue
        assert part["ref"].nunique() <= 2 and not part["ref"].map(family_of).eq("lm").any()
    assert probes["device"].nunique() == 3
    # the values are the measured ones, with no spread
    got = probes.set_index(KEY)
    assert np.allclose(got["pred_norm_a"], measured.loc[got.index, "norm_a"])
    assert (got[["pred_std_a", "pred_std_b"]] == 0).all().all()


def test_probe_predictions_take_each_pair_from_the_right_source(gavel):
    _, pairs = gavel
    new = ["lm", "a3c"]
    probe_file = flat_predictions(pairs, 0.5, seeds=(0, 1))
    seen_file = flat_predictions(pairs, 0.7, seeds=(0, 1, 2))
    table = probing.probe_predictions(probe_file, seen_file, pairs, new, 2, "p")
    assert sorted(table["seed"].unique()) == [0, 1]
    one = table[table["seed"] == 0]
    assert not one.duplicated(KEY).any()
    feasible = pairs[pairs["feasible"]]
    assert len(one) == len(feasible)  # every feasible pair once
    is_probe = one["held_out"] == "probe"
    new_pair = one["workload_a"].map(family_of).isin(new) | one["workload_b"].map(family_of).isin(new)
    assert (one.loc[new_pair & ~is_probe, "pred_norm_a"] == 0.5).all()
    assert (one.loc[~new_pair, "pred_norm_a"] == 0.7).all()
    assert (is_probe <= new_pair).all() and is_probe.any()  # measured values only for the probes
    probes = probing.measured_probes(pairs, new, 2)
    assert len(probes) == int(is_probe.sum())


def test_k_zero_has_no_probes_and_an_unknown_family_is_named(gavel):
    _, pairs = gavel
    assert probing.measured_probes(pairs, ["lm"], 0).empty
    flat = flat_predictions(pairs, 0.5)
    with pytest.raises(ValueError, match=r"new families \['bert'\]"):
        probing.probe_predictions(flat, flat, pairs, ["bert"], 1, "p")
    with pytest.raises(ValueError, match="no rows of predictor 'q'"):
        probing.probe_predictions(flat, flat, pairs, ["lm"], 1, "q")


def test_a_stated_share_of_jobs_is_drawn_from_the_new_families():
    names = ["lm-a-b1", "lm-a-b2", "resnet18-c-b1", "resnet50-d-b1", "a3c-e-b1"]
    trace = pd.DataFrame({"job_id": range(4000), "workload": "resnet18-c-b1"})
    out = probing.with_new_share(trace, names, ["lm"], 0.3, seed=4)
    new = out["workload"].map(family_of) == "lm"
    assert abs(new.mean() - 0.3) < 0.03
    assert set(out.loc[new, "workload"]) == {"lm-a-b1", "lm-a-b2"}
    assert set(out.loc[~new, "workload"]) == {"resnet18-c-b1", "resnet50-d-b1", "a3c-e-b1"}
    assert out.equals(probing.with_new_share(trace, names, ["lm"], 0.3, seed=4))
    with pytest.raises(ValueError, match="new_share 1.5"):
        probing.with_new_share(trace, names, ["lm"], 1.5, seed=4)


SPEC = {"trace": {"source": "poisson", "n_jobs": 60, "median_duration_s": 600, "duration_sigma": 1.0,
                  "gpu_mix": {"1": 3, "2": 1}},
        "cluster": "v100:4", "gpus_per_node": 4, "policies": ["coloc-probe", "coloc-online", "coloc", "oracle"],
        "seeds": [0],
        "sweep": {"load": [1.5]}, "headline": 1.5}
PROBING = {"new_families": ["lm"], "new_share": 0.4, "probe_s": 30.0, "predictor": "p", "seen_protocol": "random5"}
SHARED = {"reference_device": "v100", "max_jobs_per_gpu": 2, "restart_cost_s": 30.0}


def test_every_job_of_a_new_family_pays_k_probes_and_the_lines_are_labelled(gavel):
    solo, pairs = gavel
    seen = flat_predictions(pairs, 0.7)
    mixes = {k: probing.probe_predictions(flat_predictions(pairs, 0.5), seen, pairs, ["lm"], k, "p") for k in (0, 2)}
    jobs, summary = probing.run_point(SPEC, PROBING, SHARED, solo, pairs, mixes, seen, seed=0, load=1.5)
    online = "coloc-online, no probes (learns the pairs it runs)"
    assert list(summary["policy"]) == ["coloc-probe k=0", "coloc-probe k=2", online, "coloc, every family seen",
                                       "oracle (upper bound)"]
    assert list(summary["kind"]) == ["predictive", "predictive", "predictive", "predictive", "oracle"]
    assert summary.set_index("policy").loc[online, "prediction_source"].startswith("lofo-probe-0, no probes")
    run = jobs[jobs["policy"] == "coloc-probe k=2"]
    new_gpus = int(run.loc[run["new_family"], "num_gpus"].sum())
    assert 0 < new_gpus and summary["probe_gpu_s"].tolist() == [0.0, 2 * 30.0 * 3 * new_gpus, 0.0, 0.0, 0.0]  # 3 device types
    assert summary["new_jobs"].iloc[0] == pytest.approx(run["new_family"].mean())
    table = probing.jct_against_k(summary)
    assert set(table["k"].dropna()) == {0, 2} and (table["seeds"] == 1).all()


def test_a_new_family_pair_the_probe_file_lacks_is_filled_without_probes(gavel):
    _, pairs = gavel
    probe_file = flat_predictions(pairs, 0.5)
    lacking = probe_file["workload_a"].eq("lm-wikitext2-b5") & probe_file["workload_b"].str.startswith("resnet50")
    assert lacking.any()
    table = probing.probe_predictions(probe_file[~lacking], flat_predictions(pairs, 0.7), pairs, ["resnet50"], 2, "p",
                                      no_probe_preds=flat_predictions(pairs, 0.6))
    assert not table.duplicated(KEY).any() and len(table) == int(pairs["feasible"].sum())
    filled = table[table["held_out"] == "no-probe"]
    probes = set(zip(*(probing.measured_probes(pairs, ["resnet50"], 2)[c] for c in KEY), strict=True))
    expected = {k for k in zip(*(probe_file.loc[lacking, c] for c in KEY), strict=True)} - probes
    assert set(zip(*(filled[c] for c in KEY), strict=True)) == expected and (filled["pred_norm_a"] == 0.6).all()
    without = probing.probe_predictions(probe_file[~lacking], flat_predictions(pairs, 0.7), pairs, ["resnet50"], 2, "p")
    assert len(without) == len(table) - len(filled)


def test_jct_against_k_pairs_each_line_with_coloc_without_probes_over_the_same_seeds():
    rows = [(policy, k, seed, jct) for policy, k, factor in (("coloc-probe k=0", 0.0, 1.0), ("coloc-probe k=1", 1.0, 0.9),
                                                              ("oracle (upper bound)", np.nan, 0.8))
            for seed, jct in zip((0, 1, 2), (1000.0 * factor, 1100.0 * factor, 1200.0 * factor), strict=True)]
    summary = pd.DataFrame(rows, columns=["policy", "k", "seed", "jct_mean"]).assign(load=1.0, probe_gpu_s=0.0)
    table = probing.jct_against_k(summary).set_index("policy")
    assert table.loc["coloc-probe k=1", "jct_mean"] == pytest.approx(990.0)
    assert table.loc["coloc-probe k=1", ["change_vs_k0", "change_low", "change_high"]].tolist() == \
        pytest.approx([-0.1, -0.1, -0.1])  # every seed 10% lower: the paired interval is that point
    assert table.loc["oracle (upper bound)", "change_vs_k0"] == pytest.approx(-0.2)
    assert np.isnan(table.loc["oracle (upper bound)", "k"])


def test_the_probe_scenarios_world_shapes_its_runs_and_is_named(gavel):
    solo, pairs = gavel
    seen = flat_predictions(pairs, 0.7)
    mixes = {0: probing.probe_predictions(flat_predictions(pairs, 0.5), seen, pairs, ["lm"], 0, "p")}
    runs = {world: probing.run_point({**SPEC, "world": world}, PROBING, SHARED, solo, pairs, mixes, seen, seed=0,
                                     load=1.5) for world in ("measured", "none")}
    for world, (jobs, summary) in runs.items():
        assert set(summary["world"]) == {world} and set(jobs["world"]) == {world}
    oracle = {world: summary.set_index("policy").loc["oracle (upper bound)"] for world, (_, summary) in runs.items()}
    assert oracle["measured"]["prediction_source"] == "ORACLE: measured pairs"
    assert oracle["none"]["prediction_source"] == "ORACLE: none: sharing free (Gavel's memory fit)"
    assert oracle["none"]["jct_mean"] < oracle["measured"]["jct_mean"]  # the same jobs, sharing free
