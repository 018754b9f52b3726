"""Probe protocols (lofo-probe-k, lojo-probe-k), the reference co-runners, matrix completion, the probe table."""

import itertools

import numpy as np
import pandas as pd
import pytest

from coloc.datasets import family_of
from coloc.devices import device_table
from coloc.predict import make_predictor, stage
from coloc.predict.base import Tables, make_queries, predict_pairs
from coloc.predict.evaluate import evaluate, scores_of
from coloc.predict.protocols import PROTOCOLS, folds, probe_pairs, probe_protocol
from coloc.predict.references import PROBE_WINDOW_S, choose_references, log_matrix

NAMES = ["aa-x-b8", "aa-x-b16", "bb-y-b4", "bb-y-b8", "cc-z-b2", "cc-z-b4", "dd-w-b1", "dd-w-b2"]
DEVICES = ["k80", "v100"]


def low_rank_tables(names=NAMES, devices=DEVICES, infeasible=(("bb-y-b8", "cc-z-b2"),), seed=0) -> Tables:
    """Made-up tables whose log normalized throughputs are sensitivity + aggressiveness + a rank-1 term."""
    rng = np.random.default_rng(seed)
    workloads = pd.DataFrame({"workload": names, "family": [family_of(w) for w in names],
                              "batch_size": [int(w.rsplit("-b", 1)[1]) for w in names],
                              "flops_step": rng.uniform(1e9, 1e11, len(names))})
    solo = pd.DataFrame([{"device": d, "workload": w, "throughput": rng.uniform(1, 10)} for d in devices for w in names])
    sens, aggr = rng.uniform(-0.5, 0, len(names)), rng.uniform(-0.5, 0, len(names))
    u, v = rng.normal(0, 0.2, len(names)), rng.normal(0, 0.2, len(names))
    rows = []
    for i_d, d in enumerate(devices):
        log = (sens[:, None] + aggr[None, :] + np.outer(u, v)) * (1 + 0.3 * i_d)
        for (i, a), (j, b) in itertools.combinations_with_replacement(enumerate(names), 2):
            feasible = (a, b) not in infeasible
            na, nb = (np.exp(log[i, j]), np.exp(log[j, i])) if feasible else (np.nan, np.nan)
            rows.append({"device": d, "workload_a": a, "workload_b": b, "tput_a": 1.0, "tput_b": 1.0,
                         "norm_a": na, "norm_b": nb, "feasible": feasible})
    return Tables(workloads, solo, pd.DataFrame(rows), device_table(devices))


def keys(frame):
    return set(zip(frame["device"], frame["workload_a"], frame["workload_b"], strict=True))


def touching(pairs, group, of=family_of):
    return pairs[(pairs["workload_a"].map(of) == group) | (pairs["workload_b"].map(of) == group)]


@pytest.mark.parametrize("base", ["lofo", "lojo"])
def test_zero_probes_is_the_base_protocol(base):
    tables = low_rank_tables()
    plain, probed = folds(tables, base), folds(tables, f"{base}-probe-0")
    assert [f.held_out for f in probed] == [f.held_out for f in plain]
    for a, b in zip(plain, probed, strict=True):
        assert b.protocol == f"{base}-probe-0" and b.references == {}
        assert keys(a.test) == keys(b.test) and keys(a.train.pairs) == keys(b.train.pairs)
        pd.testing.assert_frame_equal(a.train.solo, b.train.solo)


@pytest.mark.parametrize("base,of", [("lofo", family_of), ("lojo", str)])
def test_only_the_probes_of_the_held_out_group_reach_training(base, of):
    tables = low_rank_tables()
    feasible = tables.pairs[tables.pairs["feasible"]]
    for fold in folds(tables, f"{base}-probe-2"):
        group = fold.held_out
        assert set(fold.references) == set(DEVICES)
        for refs in fold.references.values():
            assert len(refs) == 2 and not {of(r) for r in refs} & {group}  # from the training groups only
        trained = touching(fold.train.pairs, group, of)
        expected = touching(tables.pairs, group, of)
        expected = expected[probe_pairs(expected, group, of, fold.references)]
        assert keys(trained) == keys(expected) and len(expected) > 0  # the probes, and nothing else of the group
        assert keys(fold.test) == keys(touching(feasible, group, of)) - keys(expected)  # the group's other pairs
        assert not keys(fold.test) & keys(fold.train.pairs)
        held_jobs = {w for w in tables.workloads["workload"] if of(w) == group}
        assert held_jobs <= set(fold.train.solo["workload"])  # its solo throughputs are given


def test_references_are_nested_and_skip_uninformative_co_runners():
    tables = low_rank_tables()
    pairs = tables.pairs.copy()
    # a co-runner next to which every job runs at the same speed (and that runs the same next to every job)
    flat = pairs["workload_a"].eq("dd-w-b2") | pairs["workload_b"].eq("dd-w-b2")
    pairs.loc[flat, ["norm_a", "norm_b"]] = 0.5
    one, three = choose_references(pairs, "k80", 1), choose_references(pairs, "k80", 3)
    assert len(three) == 3 and three[:1] == one and choose_references(pairs, "k80", 2) == three[:2]
    assert "dd-w-b2" not in three
    assert choose_references(pairs, "k80", 2, candidates=["aa-x-b8", "bb-y-b4"]) in {("aa-x-b8", "bb-y-b4"),
                                                                                   ("bb-y-b4", "aa-x-b8")}
    assert choose_references(pairs, "k80", 0) == () and choose_references(pairs, "p100", 2) == ()
    matrix = log_matrix(pairs, "k80")
    assert matrix.loc["aa-x-b8", "dd-w-b2"] == pytest.approx(np.log(0.5))


def test_non_probe_labels_of_the_held_out_group_cannot_reach_its_predictions():
    """Shuffling the held-out family's other pair labels changes nothing; changing its probe labels does."""
    tables = low_rank_tables()
    family, protocol = "bb", "lofo-probe-1"
    fold = next(f for f in folds(tables, protocol) if f.held_out == family)
    probes = probe_pairs(tables.pairs, family, family_of, fold.references)
    others = touching(tables.pairs[tables.pairs["feasible"]], family).index.difference(tables.pairs.index[probes])

    def predictions(pairs, name):
        changed = Tables(tables.workloads, tables.solo, pairs, tables.devices)
        f = next(f for f in folds(changed, protocol) if f.held_out == family)
        model = make_predictor(name, 0).fit(f.train, groups="family")
        return predict_pairs(model, f.test, tables)[["pred_norm_a", "pred_norm_b"]].to_numpy()

    shuffled, scaled = tables.pairs.copy(), tables.pairs.copy()
    rng = np.random.default_rng(1)
    for col in ("norm_a", "norm_b"):
        shuffled.loc[others, col] = rng.permutation(shuffled.loc[others, col].to_numpy())
        scaled.loc[probes, col] = scaled.loc[probes, col] * 0.5
    for name in ("completion", "interactions", "mean"):
        base = predictions(tables.pairs, name)
        np.testing.assert_array_equal(predictions(shuffled, name), base, err_msg=name)
        assert not np.allclose(predictions(scaled, name), base), name


def test_evaluation_scores_each_pair_in_its_jobs_own_folds_and_never_a_probe():
    tables = low_rank_tables()
    ev = evaluate(tables, "lofo-probe-2", {"mean": {}}, seeds=[0], progress=False)
    assert not [note for note in ev.skipped if "dropped" in note]  # a probe is not a lost prediction
    all_folds = folds(tables, "lofo-probe-2")
    probed = set().union(*(keys(touching(tables.pairs, f.held_out)[probe_pairs(
        touching(tables.pairs, f.held_out), f.held_out, family_of, f.references)]) for f in all_folds))
    predicted = keys(ev.predictions)
    assert predicted and not predicted & probed
    assert predicted == keys(tables.pairs[tables.pairs["feasible"]]) - probed


def test_completion_recovers_the_entries_of_a_probed_job():
    tables = low_rank_tables()
    fold = next(f for f in folds(tables, "lofo-probe-3") if f.held_out == "cc")
    pred = predict_pairs(make_predictor("completion", 0).fit(fold.train), fold.test, tables)
    mean = predict_pairs(make_predictor("mean", 0).fit(fold.train), fold.test, tables)

    def mape(p):
        return 100 * np.mean(np.abs(np.r_[p["pred_norm_a"], p["pred_norm_b"]] / np.r_[p["norm_a"], p["norm_b"]] - 1))

    assert mape(pred) < 5 < mape(mean)
    several = make_predictor("completion", 0).fit(fold.train).predict(
        make_queries(["k80"] * 3, ["cc-z-b2"] * 3, [("aa-x-b8",), ("dd-w-b1",), ("aa-x-b8", "dd-w-b1")]), tables)
    assert several["pred_norm"].iloc[2] == pytest.approx(several["pred_norm"].iloc[0] * several["pred_norm"].iloc[1])
    assert (several["pred_std"] > 0).all()


def test_completion_refuses_bad_options():
    with pytest.raises(ValueError, match="rank"):
        make_predictor("completion", 0, rank=-1).check_params()
    with pytest.raises(ValueError, match="penalty"):
        make_predictor("completion", 0, penalty=0).check_params()


def test_probe_protocol_names():
    assert probe_protocol("lofo-probe-12") == ("lofo", 12) and probe_protocol("lofo") is None
    assert probe_protocol("xdevice-probe-2") is None
    assert "lojo-probe-5" in PROTOCOLS
    with pytest.raises(KeyError, match="unknown protocol 'lofo-probe'"):
        folds(low_rank_tables(), "lofo-probe")


def test_probe_table_gives_mape_by_k_and_profiling_seconds():
    tables = low_rank_tables()
    frames = []
    for k in (0, 1):
        ev = evaluate(tables, f"lofo-probe-{k}", {"mean": {}, "completion": {}}, seeds=[0, 1], progress=False)
        frames.append(scores_of(ev).assign(dataset="gavel"))
    frames.append(scores_of(evaluate(tables, "lofo", {"mean": {}}, seeds=[0], progress=False)).assign(dataset="gavel"))
    probe = stage.probe_table(pd.concat(frames, ignore_index=True))
    assert set(probe["k"]) == {0, 1} and set(probe["base"]) == {"lofo"}
    assert (probe["profiling_s"] == probe["k"] * PROBE_WINDOW_S).all()
    assert (probe["seeds"] == 2).all()
    table = stage.probe_mape(probe)
    assert list(table.columns) == ["all", *DEVICES]
    assert table.loc[("completion", 1), "all"] < table.loc[("completion", 0), "all"]  # probes help on low-rank data
