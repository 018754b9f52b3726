"""The claims table: verdict rules on hand-made numbers, and the table from small made-up pipeline outputs."""

import numpy as np
import pandas as pd
import pytest

from coloc import claims
from coloc.claims import (
    COLUMNS,
    VERDICTS,
    Claim,
    at_most_verdict,
    change_verdict,
    claims_table,
    paper_claims,
    value_verdict,
)

NAN = float("nan")


@pytest.mark.parametrize("value, low, high, target, expected", [
    (-25.0, -28.0, -22.0, (-30.7, -23.7), "reproduced"),           # interval meets the range
    (-40.0, -45.0, -35.0, (-30.7, -23.7), "reproduced"),           # a larger gain than claimed
    (-10.0, -14.0, -6.0, (-30.7, -23.7), "same direction, smaller"),
    (-10.0, -25.0, 3.0, (-30.7, -23.7), "not reproduced"),         # holds 0, though it also meets the range
    (8.0, 5.0, 11.0, (-16.1, -16.1), "not reproduced"),            # the other direction
    (70.0, 60.0, 80.0, (61.5, 61.5), "reproduced"),                # a gain claimed as an increase
    (30.0, 25.0, 35.0, (61.5, 61.5), "same direction, smaller"),
    (-20.0, NAN, NAN, (-16.1, -16.1), "reproduced"),               # no interval: the value alone
    (-10.0, NAN, NAN, (-16.1, -16.1), "same direction, smaller"),
    (0.0, NAN, NAN, (-16.1, -16.1), "not reproduced"),
])
def test_change_verdict_rules(value, low, high, target, expected):
    assert change_verdict(value, low, high, target) == expected


def test_bound_and_value_verdict_rules():
    assert at_most_verdict(0.20, 0.15, 0.25, 0.154) == "reproduced"
    assert at_most_verdict(0.20, 0.16, 0.25, 0.154) == "not reproduced"
    assert at_most_verdict(0.10, NAN, NAN, 0.154) == "reproduced"
    assert value_verdict(20.0, 18.0, 22.0, 35.4) == "reproduced"     # within a factor of two
    assert value_verdict(0.5, 0.4, 0.6, 35.4) == "not reproduced"    # 70x faster
    assert value_verdict(80.0, 75.0, 85.0, 35.4) == "not reproduced"


def summary_table(seeds=range(5), noise=0.0) -> pd.DataFrame:
    """A made-up simulation summary: fifo, two horus runs and isacpp on both papers' scenarios."""
    rng = np.random.default_rng(0)
    factors = {"fifo": 1.0, "volcano": 1.0, "horus": 1.1, "horus~horus-implied": 0.75, "isacpp": 0.8,
               "isacpp~egat-profiled": 0.7, "isacpp@profiled-pairs": 0.7}
    rows = []
    for scenario, sweep, points in (("philly-contended", "load", (1.0, 2.0)),
                                    ("isacpp-testbed", "interval_s", (0.0, 250.0)),
                                    ("philly-contended-3090", "load", (1.0, 2.0)),
                                    ("isacpp-testbed-3090", "interval_s", (0.0, 250.0))):
        for seed in seeds:
            base = 1000.0 + 100 * seed
            for policy, factor in factors.items():
                for point in points:
                    scale = factor * (1 + noise * rng.standard_normal())
                    gain = 1.5 if (policy.startswith("horus~") and point == 2.0) else 1.2
                    rows.append({"scenario": scenario, "policy": policy, "seed": seed, "sweep": sweep,
                                 "point": point, "makespan": base * scale, "jct_mean": base * scale / 2,
                                 "queue_delay_mean": base * scale / 10,
                                 "effective_throughput": 0.5 * (gain if policy != "fifo" else 1.0),
                                 # nvidia-smi's utilization: Lucid's data only (NaN on Gavel's)
                                 "measured_util_mean": (0.3 * (1.1 if policy != "fifo" else 1.0)
                                                        if scenario.endswith("3090") else NAN),
                                 "measured_util_busy": (0.4 * (1.25 if policy != "fifo" else 1.0)
                                                        if scenario.endswith("3090") else NAN)})
    return pd.DataFrame(rows)


HEADLINES = {"philly-contended": 2.0, "isacpp-testbed": 250.0, "philly-contended-3090": 2.0,
             "isacpp-testbed-3090": 250.0}
SCENARIOS = {"horus": "philly-contended", "isacpp": "isacpp-testbed", "horus-3090": "philly-contended-3090",
             "isacpp-3090": "isacpp-testbed-3090"}  # each claims group's scenario in these made-up tables
FACTS = {"job_types": {"gavel": 26, "lucid": 56}, "clusters": {"isacpp-testbed": "v100:8,p100:4,k80:4"}}


def scores_tables():
    # the RMSLE claim reads Lucid's (nvidia-smi's measured utilization), not Gavel's achieved-FLOP/s label
    util = pd.DataFrame([{"dataset": dataset, "protocol": protocol, "predictor": "horus", "seed": s,
                          "scope": "overall", "key": "all", "util_source": source, "RMSLE": r * scale}
                         for protocol, scale in (("random5", 1.0), ("lofo", 1.5))
                         for dataset, source, values in (("lucid", "measured", [0.05, 0.07]),
                                                         ("gavel", "achieved", [0.3, 0.32]))
                         for s, r in enumerate(values)])
    pair = pd.DataFrame([{"dataset": "gavel", "protocol": protocol, "predictor": "egat", "seed": 0,
                          "scope": "family", "key": fam, "MAPE": m * scale}
                         for protocol, scale in (("random5", 1.0), ("lofo", 3.0))
                         for fam, m in (("lm", 6.0), ("resnet18", 9.5))])
    delay = pd.DataFrame([{"policy": "isacpp", "queued_jobs": q, "cluster": c, "gpus": g, "seed": s,
                           "decision_s": d * (1 + 0.01 * s)}
                          for q in (20, 100) for c, g, d in (("v100:16", 16, 0.2), ("v100:64", 64, 0.9))
                          for s in range(3)])
    return util, pair, delay


def test_claims_table_from_made_up_outputs():
    util, pair, delay = scores_tables()
    table = claims_table(paper_claims(SCENARIOS, **FACTS), summary_table(), util, pair, delay, HEADLINES)
    assert list(table.columns) == COLUMNS + claims.SETTING_COLUMNS and len(table) == 30
    assert table["verdict"].isin(VERDICTS).all()
    row = table.set_index("claim")
    # isacpp's jct is 0.8 x volcano's on every seed: -20% exactly (a zero-width interval), inside the published
    # change's paired bootstrap interval [-33.9, -12.0] (its point, -23.3%, is not met)
    vs_volcano = row.loc["lower mean completion time vs Volcano"]
    assert vs_volcano["paper_value"] == "-23.3% [-33.9, -12.0]"
    assert vs_volcano["coloc_value"] == pytest.approx(-20.0) and vs_volcano["ci_low"] == pytest.approx(-20.0, abs=1e-3)
    assert vs_volcano["verdict"] == "reproduced"
    assert "isacpp vs volcano" in vs_volcano["reason"] and "differs from the paper: Gavel's 26 job types" in vs_volcano["reason"]
    assert "isacpp@profiled-pairs: -30% [-30, -30]" in vs_volcano["reason"]  # its other settings quoted beside
    assert "isacpp@random5: policy 'isacpp@random5' was not run" in vs_volcano["reason"]
    vs_horus_jct = row.loc["lower mean completion time vs Horus"]  # 0.8 / 0.75 - 1 = +6.7%
    assert vs_horus_jct["verdict"] == "not reproduced" and vs_horus_jct["paper_value"] == "-16.1% [-25.4, -5.3]"
    finding = row.loc["makespan vs exclusive fifo"]  # not a claim of the paper: coloc's finding
    assert finding["coloc_value"] == pytest.approx(-20.0) and finding["verdict"] == "coloc's finding"
    assert finding["paper_value"] == "not claimed" and ": lower; differs from the paper:" in finding["reason"]
    vs_horus = row.loc["lower makespan vs Horus"]  # 0.8 / 0.75 - 1 = +6.7%: slower than horus
    assert vs_horus["coloc_value"] == pytest.approx(100 * (0.8 / 0.75 - 1), rel=1e-3) and vs_horus["verdict"] == "not reproduced"
    assert "; horus:" in vs_horus["reason"]  # the achieved-label horus is quoted too
    for name in ("Schedtune", "Liquid"):
        assert row.loc[f"lower makespan vs {name}", "verdict"] == "not comparable"
        assert np.isnan(row.loc[f"lower makespan vs {name}", "coloc_value"])
    wait = row.loc["lower job wait time"]
    assert wait["coloc_value"] == pytest.approx(-25.0) and wait["verdict"] == "same direction, smaller"
    # Gavel measured no utilization: effective throughput is another quantity, so not comparable, value beside
    util_row = row.loc["higher GPU utilization (up to)"]  # the best point: load 2 (+50%), not load 1 (+20%)
    assert util_row["coloc_value"] == pytest.approx(50.0) and "load=2" in util_row["reason"]
    assert util_row["verdict"] == "not comparable" and "effective throughput, another quantity" in util_row["reason"]
    # the predictors' claims: coloc's setting under lofo (a new family), the paper's under random5
    rmsle = row.loc["GPU utilization predicted with RMSLE"]
    # geometric means over the two seeds: a positive quantity's interval never reaches below 0
    assert rmsle["coloc_value"] == pytest.approx(0.0887, abs=1e-4) and rmsle["verdict"] == "reproduced"
    assert 0 < rmsle["ci_low"] and rmsle["paper_setting_value"] == pytest.approx(0.05916, abs=1e-4)
    assert rmsle["paper_setting_verdict"] == "reproduced"
    assert "on lucid (lofo" in rmsle["reason"] and "label measured" in rmsle["reason"] and rmsle["decided_by"] == ""
    util.loc[util["dataset"] == "lucid", "util_source"] = "achieved"  # a label of another scale: not comparable
    again = claims_table(paper_claims(SCENARIOS, **FACTS), summary_table(), util, pair, delay, HEADLINES).set_index("claim")
    assert again.loc["GPU utilization predicted with RMSLE", "verdict"] == "not comparable"
    error = row.loc["maximum time-prediction error"]  # lofo: 28.5% > 8.72%; random5: 9.5% > 8.72%
    assert error["coloc_value"] == pytest.approx(28.5) and error["verdict"] == "not reproduced"
    assert error["paper_setting_value"] == pytest.approx(9.5) and error["paper_setting_verdict"] == "not reproduced"
    delay_row = row.loc["scheduling delay at 100 queued jobs"]  # the smallest cluster: 0.2 s
    assert delay_row["coloc_value"] == pytest.approx(0.2 * (1.01 * 1.02) ** (1 / 3), rel=1e-3)  # geometric mean
    assert delay_row["verdict"] == "not comparable" and 0 < delay_row["ci_low"] < delay_row["coloc_value"]
    assert "E-GGAT inference" in delay_row["reason"]  # the quantity differs: said, with coloc's value
    # no claims map given: the paper's setting of a simulated claim is said not to have run
    assert vs_volcano["paper_setting_verdict"] == "" and "not run in the paper's setting" in vs_volcano["paper_setting_reason"]


def test_a_change_in_the_predictors_protocol_that_flips_the_verdict_is_named():
    util, pair, delay = scores_tables()
    pair.loc[pair["protocol"] == "random5", "MAPE"] = [5.0, 8.0]  # every job type seen: within 8.72%
    row = claims_table(paper_claims(SCENARIOS, **FACTS), summary_table(), util, pair, delay, HEADLINES).set_index("claim").loc[
        "maximum time-prediction error"]
    assert row["paper_setting_verdict"] == "reproduced" and row["verdict"] == "not reproduced"
    assert row["decided_by"] == "protocol (not reproduced under lofo)"


def test_a_makespan_pinned_by_one_job_is_refused_with_the_reason():
    summary = summary_table()
    summary["longest_job_s"] = 0.95 * summary["makespan"]  # one job's submit + duration: 95% of every makespan
    row = claims_table(paper_claims(SCENARIOS, **FACTS), summary, headlines=HEADLINES).set_index("claim").loc["lower makespan"]
    assert row["verdict"] == "not comparable" and "makespan pinned by one job" in row["reason"]
    assert "95% or more of the makespan" in row["reason"]
    summary["longest_job_s"] = 0.5 * summary["makespan"]
    row = claims_table(paper_claims(SCENARIOS, **FACTS), summary, headlines=HEADLINES).set_index("claim").loc["lower makespan"]
    assert row["verdict"] == "reproduced"  # horus~horus-implied at 0.75 x fifo: -25%, inside -23.7 to -30.7%


def test_the_published_interval_is_the_same_for_the_same_seed_and_moves_with_it():
    from coloc import published

    first = published.paired_change("isacpp", "volcano", 2000, seed=3)
    assert first == published.paired_change("isacpp", "volcano", 2000, seed=3)
    assert first[0] == pytest.approx(-23.31, abs=0.01)  # the paper's own change, whatever the seed
    other = published.paired_change("isacpp", "volcano", 2000, seed=4)
    assert other[0] == first[0] and other[1:] != first[1:]
    assert first[1] < first[0] < first[2] and -40 < first[1] < -28 and -18 < first[2] < -8
    with pytest.raises(KeyError, match="no scheduler 'liquid'"):
        published.paired_change("isacpp", "liquid")


def test_noisy_seeds_give_an_interval_around_the_change():
    table = claims_table(paper_claims(SCENARIOS, **FACTS), summary_table(seeds=range(20), noise=0.05), headlines=HEADLINES)
    row = table.set_index("claim").loc["lower makespan vs Volcano"]
    assert row["ci_low"] < row["coloc_value"] < row["ci_high"]
    assert row["ci_low"] < -20.0 < row["ci_high"]


def test_a_scenario_or_table_not_run_is_not_comparable_and_says_which():
    summary = summary_table()
    summary = summary[summary["scenario"] != "isacpp-testbed"]
    table = claims_table(paper_claims(SCENARIOS, **FACTS), summary, headlines=HEADLINES).set_index("claim")
    assert table.loc["lower makespan vs Horus", "verdict"] == "not comparable"
    assert "isacpp-testbed" in table.loc["lower makespan vs Horus", "reason"]
    assert table.loc["scheduling delay at 100 queued jobs", "verdict"] == "not comparable"
    assert table.loc["lower makespan", "verdict"] != "not comparable"  # Horus's scenario did run


def test_bad_tables_are_refused_by_name_before_any_work():
    summary = summary_table()
    with pytest.raises(ValueError, match="simulation summary: missing columns \\['seed'\\]"):
        claims_table(paper_claims(SCENARIOS, **FACTS), summary.drop(columns="seed"), headlines=HEADLINES)
    with pytest.raises(ValueError, match="simulation summary: 2 rows share a key"):
        claims_table(paper_claims(SCENARIOS, **FACTS), pd.concat([summary, summary.iloc[:1]]), headlines=HEADLINES)
    with pytest.raises(ValueError, match="no headline point for scenario 'isacpp-testbed'"):
        claims_table(paper_claims(SCENARIOS, **FACTS), summary, headlines={"philly-contended": 2.0, "philly-contended-3090": 2.0})
    with pytest.raises(ValueError, match="kind 'more'"):
        Claim("X", "c", "1", "more", (1, 1), "sim", "s", "m", "p")


def test_horus_labels_compare_both_horus_runs_at_the_headline_points():
    table = claims.horus_labels(summary_table(), HEADLINES)
    assert set(table["policy"]) == {"fifo", "horus", "horus~horus-implied"} and len(table) == 3 * len(HEADLINES)
    row = table[(table["scenario"] == "isacpp-testbed") & (table["policy"] == "horus")].iloc[0]
    assert row["makespan"] == pytest.approx(1.1 * np.mean([1000.0 + 100 * s for s in range(5)]))


def test_brief_table_writes_each_value_with_its_interval_and_unit():
    util, pair, delay = scores_tables()
    table = claims_table(paper_claims(SCENARIOS, **FACTS), summary_table(), util, pair, delay, HEADLINES)
    short = claims.brief(table).set_index("claim")["coloc_value"]
    assert list(claims.brief(table).columns) == claims.BRIEF_COLUMNS
    assert short["lower mean completion time vs Volcano"] == "-20% [-20, -20]"
    assert short["lower makespan vs Liquid"] == "n/a"
    assert short["maximum time-prediction error"] == "28.5%"  # one seed: no interval
    assert short["scheduling delay at 100 queued jobs"].startswith("0.202 s [")
    assert short["GPU utilization predicted with RMSLE"].startswith("0.0887 [")
    paper = claims.brief(table).set_index("claim")["paper_setting"]
    assert paper["maximum time-prediction error"] == "9.5%" and paper["lower makespan vs Liquid"] == "n/a"


def test_an_unbounded_interval_over_several_seeds_is_not_a_reproduction():
    rows = []
    for seed, (volcano, isacpp) in enumerate([(100.0, 10.0), (2.0, 60.0)]):  # wildly inconsistent seeds
        for policy, value in (("volcano", volcano), ("isacpp", isacpp)):
            rows.append({"scenario": "isacpp-testbed", "policy": policy, "seed": seed, "sweep": "interval_s",
                         "point": 0.0, "makespan": value, "jct_mean": value})
    claim = next(c for c in paper_claims(SCENARIOS, **FACTS) if c.claim == "lower makespan vs Volcano")
    row = claims.claim_row(claim, pd.DataFrame(rows), headlines={"isacpp-testbed": 0.0})
    assert row["coloc_value"] < -16.8  # the point value alone would call it reproduced
    assert row["ci_low"] == -np.inf and row["verdict"] == "not reproduced" and "unbounded" in row["reason"]


def test_every_simulated_claim_has_an_rtx_3090_row_reading_its_measured_utilization():
    util, pair, delay = scores_tables()
    table = claims_table(paper_claims(SCENARIOS, pair_predictor_3090="lgbm-enc", **FACTS), summary_table(), util, pair, delay,
                         HEADLINES).set_index("claim")
    gavel = [c for c in table.index if not c.endswith(claims.RTX3090)]
    on_3090 = [c for c in table.index if c.endswith(claims.RTX3090)]
    sim_rows = table[table["scenario"].isin(["philly-contended", "isacpp-testbed"])].index
    assert all(f"{c}{claims.RTX3090}" in on_3090 for c in sim_rows) and len(on_3090) == len(sim_rows) + 1
    util_3090 = table.loc[f"higher GPU utilization (up to){claims.RTX3090}"]
    # like with like: nvidia-smi's utilization, +10% on every seed at both loads
    assert util_3090["metric"] == "measured_util_mean (change %)" and util_3090["coloc_value"] == pytest.approx(10.0)
    assert util_3090["verdict"] == "same direction, smaller"  # comparable on the 3090: the same quantity
    assert util_3090["scenario"] == "philly-contended-3090" and "Lucid's 56 job types" in util_3090["reason"]
    assert "measured_util_busy: 25% [25, 25]" in util_3090["reason"]  # per busy GPU, quoted beside the cluster's mean
    assert table.loc["higher GPU utilization (up to)", "metric"] == "effective_throughput (change %)"
    isacpp_3090 = table.loc[f"lower makespan vs Volcano{claims.RTX3090}"]
    assert isacpp_3090["coloc_value"] == pytest.approx(-20.0) and "predictions of lgbm-enc" in isacpp_3090["reason"]
    error = table.loc[f"maximum time-prediction error{claims.RTX3090}"]  # no egat scored on lucid here
    assert error["verdict"] == "not comparable" and "on lucid" in error["reason"]
    assert len(gavel) == 16


def test_a_utilization_not_measured_is_not_comparable():
    summary = summary_table()
    summary["measured_util_mean"] = NAN  # as on Gavel's data
    table = claims_table(paper_claims(SCENARIOS, **FACTS), summary, headlines=HEADLINES).set_index("claim")
    row = table.loc[f"higher GPU utilization (up to){claims.RTX3090}"]
    assert row["verdict"] == "not comparable" and "not measured" in row["reason"]


def test_the_claims_page_is_the_short_table_escaped_from_its_first_row():
    """results/claims.html, the report's page of claims: a heading, then every row of the short table in order."""
    from coloc.claims import page
    brief = pd.DataFrame([{"paper": "Horus", "claim": "lower makespan <b>&", "paper_value": "-23.7%",
                           "coloc_value": "+1.26% [0.847, 1.68]", "verdict": "not reproduced"},
                          {"paper": "ISACPP", "claim": "scheduling delay at 100 queued jobs", "paper_value": "35.4 s",
                           "coloc_value": "n/a", "verdict": "not comparable"}])
    text = page(brief)
    assert text.startswith("<!DOCTYPE html>") and "<h1>Claims of the papers against coloc's measurements</h1>" in text
    assert text.index("<td>Horus</td>") < text.index("<td>ISACPP</td>") and text.count("<tr") == 3
    assert "<td>lower makespan &lt;b&gt;&amp;</td>" in text and "<b>&" not in text
    assert "<th>coloc, own setting</th>" in text and "<td>+1.26% [0.847, 1.68]</td>" in text


def test_the_reasons_name_the_job_types_and_cluster_they_are_given():
    claims_ = paper_claims(SCENARIOS, job_types={"gavel": 7, "lucid": 9}, clusters={"isacpp-testbed": "k80:2,v100:3"})
    differs = {c.group: c.differs for c in claims_ if c.group}
    assert differs["isacpp"].startswith("Gavel's 7 job types and measured pairs on 5 K80/V100 GPUs, not ISACPP's")
    assert differs["horus-3090"].startswith("Lucid's 9 job types and measured pairs on RTX 3090s")
    assert differs["isacpp-3090"].startswith("Lucid's 9 job types")
    assert claims.cluster_text("v100:8,p100:4,k80:4") == "16 K80/P100/V100 GPUs"
    assert claims.pair_job_types(pd.DataFrame({"workload_a": ["a", "a", "b"], "workload_b": ["a", "c", "b"]})) == 3


def test_a_fact_the_reasons_need_is_refused_when_missing():
    with pytest.raises(ValueError, match=r"claims group 'isacpp': paper_claims' clusters has no 'isacpp-testbed'"):
        paper_claims({"isacpp": "isacpp-testbed"}, job_types={"gavel": 26})
    with pytest.raises(ValueError, match=r"claims group 'horus-3090': paper_claims' job_types has no 'lucid'"):
        paper_claims({"horus-3090": "philly-contended-3090"})
    assert [c.claim for c in paper_claims({}) if c.source == "sim"] == []  # no group: no fact needed
