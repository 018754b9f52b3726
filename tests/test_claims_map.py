"""The claims map: cells of a group, the policies each cell runs, one run per distinct run, and the verdicts and
"decided by" from a made-up map summary."""

from pathlib import Path

import pandas as pd
import pytest

from coloc import claims, claims_map
from coloc.claims_map import Factor, Group

FACTS = {"job_types": {"gavel": 26}, "clusters": {"isacpp-testbed": "v100:8,p100:4,k80:4"}}  # named in the reasons
ISACPP = Group(name="isacpp", paper="ISACPP", scenario="isacpp-testbed", policies=("isacpp", "volcano", "fifo"),
               factors=(Factor("protocol", "profiled-pairs", "lofo", ("random5",)),
                        Factor("baseline", "volcano", "volcano", ("volcano-firstfit",), role="volcano"),
                        Factor("cap", None, 4)))
HORUS = Group(name="horus", paper="Horus", scenario="philly-contended", policies=("horus~horus-implied", "fifo"),
              factors=(Factor("world", "none", "measured", ("flat:0.2",)), Factor("protocol", "random5", "lofo")))
SPEC = {"trace": {"source": "testbed", "n_jobs": 6}, "cluster": "v100:4", "gpus_per_node": 4, "policies": ["fifo"],
        "seeds": [0, 1], "sweep": {"interval_s": [0, 20]}, "headline": 0}


def test_cells_are_the_paper_setting_each_one_factor_move_and_coloc_setting():
    names = [cell.name for cell in claims_map.cells(ISACPP)]
    # a move to a value equal to the paper's is left out (baseline's coloc value is volcano, the paper's)
    assert names == ["paper", "protocol=lofo", "protocol=random5", "baseline=volcano-firstfit", "cap=4", "coloc"]
    cells = {cell.name: cell for cell in claims_map.cells(ISACPP)}
    assert cells["paper"].setting == {"protocol": "profiled-pairs", "baseline": "volcano", "cap": None}
    assert cells["cap=4"].setting == {"protocol": "profiled-pairs", "baseline": "volcano", "cap": 4}
    assert cells["cap=4"].towards_coloc and not cells["protocol=random5"].towards_coloc
    assert cells["coloc"].setting == {"protocol": "lofo", "baseline": "volcano", "cap": 4}


def test_a_cell_renames_predictive_policies_by_protocol_and_the_baseline_by_its_role():
    paper = claims_map.cells(ISACPP)[0].setting
    assert claims_map.cell_policy("isacpp", ISACPP, paper, "lofo") == "isacpp@profiled-pairs"
    assert claims_map.cell_policy("fifo", ISACPP, paper, "lofo") == "fifo"  # reads no predictions
    # a policy that reads utilization only has no measured-pairs predictions: every job type seen instead
    assert claims_map.cell_policy("horus~horus-implied", ISACPP, paper, "lofo") == "horus~horus-implied@random5"
    firstfit = {**paper, "baseline": "volcano-firstfit"}
    assert claims_map.cell_policy("volcano", ISACPP, firstfit, "lofo") == "volcano-firstfit"
    coloc = {"protocol": "lofo", "baseline": "volcano", "cap": 4}
    assert claims_map.cell_policy("isacpp", ISACPP, coloc, "lofo") == "isacpp"  # the stage's own name
    assert claims_map.cell_policy("isacpp@random5", ISACPP, coloc, "lofo") == "isacpp@random5"  # its own protocol


def test_a_cell_spec_sets_world_cluster_and_cap_and_runs_the_headline_point_only():
    spec = claims_map.cell_spec(SPEC, {"world": "flat:0.2", "cap": None, "cluster": "v100:2,k80:2"})
    assert spec["world"] == "flat:0.2" and spec["max_jobs_per_gpu"] is None and spec["cluster"] == "v100:2,k80:2"
    assert spec["sweep"] == {"interval_s": [0.0]} and SPEC["sweep"] == {"interval_s": [0, 20]}  # a copy


def test_the_plan_runs_each_distinct_run_once_and_names_every_cell_that_reads_it():
    runs = claims_map.plan([HORUS], {"philly-contended": {**SPEC, "trace": {"source": "philly"}}}, "lofo")
    keys = [(r.policy, r.spec.get("world")) for r in runs]
    assert len(keys) == len(set(keys))
    fifo_none = next(r for r in runs if r.policy == "fifo" and r.spec["world"] == "none")
    # fifo reads no predictions: the paper's cell and the protocol move share its run
    assert fifo_none.cells == (("horus", "paper"), ("horus", "protocol=lofo"))
    horus = {(r.policy, r.spec["world"]) for r in runs if r.policy.startswith("horus")}
    assert horus == {("horus~horus-implied@random5", "none"), ("horus~horus-implied@random5", "measured"),
                     ("horus~horus-implied@random5", "flat:0.2"), ("horus~horus-implied", "none"),
                     ("horus~horus-implied", "measured")}


def test_a_factor_needs_a_known_name_and_the_baseline_a_role():
    with pytest.raises(ValueError, match="claims factor 'seeds'"):
        Factor("seeds", 1, 2)
    with pytest.raises(ValueError, match="needs 'role'"):
        Factor("baseline", "volcano", "volcano")


def map_summary(values: dict) -> pd.DataFrame:
    """Made-up map runs of the isacpp group: {(cell, policy): jct_mean} on three seeds at the headline point."""
    rows = []
    for (cell, policy), jct in values.items():
        for seed in range(3):
            rows.append({"group": "isacpp", "cell": cell, "scenario": "isacpp-testbed", "policy": policy,
                         "seed": seed, "sweep": "interval_s", "point": 0.0, "jct_mean": jct * (1 + 0.1 * seed),
                         "makespan": jct * 3})
    return pd.DataFrame(rows)


def test_the_map_scores_each_cell_and_names_the_factor_that_flips_the_verdict():
    # the paper's setting reproduces -23.3% (isacpp -30%); new job types (lofo) make isacpp slower than volcano
    values = {("paper", "isacpp@profiled-pairs"): 70.0, ("paper", "volcano"): 100.0,
              ("protocol=lofo", "isacpp"): 110.0, ("protocol=lofo", "volcano"): 100.0,
              ("protocol=random5", "isacpp@random5"): 85.0, ("protocol=random5", "volcano"): 100.0,
              ("baseline=volcano-firstfit", "isacpp@profiled-pairs"): 70.0,
              ("baseline=volcano-firstfit", "volcano-firstfit"): 60.0,
              ("cap=4", "isacpp@profiled-pairs"): 72.0, ("cap=4", "volcano"): 100.0,
              ("coloc", "isacpp"): 110.0, ("coloc", "volcano"): 100.0}
    claim = next(c for c in claims.paper_claims({"isacpp": "isacpp-testbed"}, **FACTS)
                 if c.claim == "lower mean completion time vs Volcano")
    table = claims.map_table([claim], map_summary(values), [ISACPP], {"isacpp-testbed": 0.0}, "lofo")
    cells = table.set_index("cell")
    assert list(cells.index) == ["paper", "protocol=lofo", "protocol=random5", "baseline=volcano-firstfit", "cap=4",
                                 "coloc"]
    assert cells.loc["paper", "coloc_value"] == pytest.approx(-30.0) and cells.loc["paper", "verdict"] == "reproduced"
    assert cells.loc["paper", "policy"] == "isacpp@profiled-pairs"
    assert cells.loc["protocol=lofo", "verdict"] == "not reproduced" and cells.loc["protocol=lofo", "flips"]
    assert cells.loc["protocol=random5", "verdict"] == "reproduced"  # -15%, inside [-33.9, -12.0]
    assert cells.loc["baseline=volcano-firstfit", "baseline"] == "volcano-firstfit"
    assert cells.loc["baseline=volcano-firstfit", "verdict"] == "not reproduced"  # a sensitivity, not coloc's move
    assert not cells.loc["cap=4", "flips"]
    assert claims.decided_by(table) == "protocol (not reproduced when protocol is lofo)"
    summary = map_summary({("coloc", "isacpp"): 110.0, ("coloc", "volcano"): 100.0}).drop(columns=["group", "cell"])
    row = claims.claims_table([claim], summary, headlines={"isacpp-testbed": 0.0}, claims_map=table).iloc[0]
    assert row["verdict"] == "not reproduced" and row["paper_setting_verdict"] == "reproduced"
    assert row["paper_setting_value"] == pytest.approx(-30.0)
    assert row["decided_by"] == "protocol (not reproduced when protocol is lofo)"


def test_when_no_single_move_flips_the_verdict_the_factors_together_are_named():
    values = {("paper", "isacpp@profiled-pairs"): 70.0, ("paper", "volcano"): 100.0,
              ("protocol=lofo", "isacpp"): 80.0, ("protocol=lofo", "volcano"): 100.0,
              ("protocol=random5", "isacpp@random5"): 80.0, ("protocol=random5", "volcano"): 100.0,
              ("baseline=volcano-firstfit", "isacpp@profiled-pairs"): 70.0,
              ("baseline=volcano-firstfit", "volcano-firstfit"): 100.0,
              ("cap=4", "isacpp@profiled-pairs"): 80.0, ("cap=4", "volcano"): 100.0,
              ("coloc", "isacpp"): 104.0, ("coloc", "volcano"): 100.0}
    claim = next(c for c in claims.paper_claims({"isacpp": "isacpp-testbed"}, **FACTS)
                 if c.claim == "lower mean completion time vs Volcano")
    table = claims.map_table([claim], map_summary(values), [ISACPP], {"isacpp-testbed": 0.0}, "lofo")
    assert claims.decided_by(table) == "no single factor: the factors together"
    unchanged = {**values, ("coloc", "isacpp"): 80.0}
    table = claims.map_table([claim], map_summary(unchanged), [ISACPP], {"isacpp-testbed": 0.0}, "lofo")
    assert claims.decided_by(table) == ""


@pytest.mark.slow
def test_the_ci_runs_map_has_every_cell_and_its_coloc_cell_is_the_simulation_stages_own_run(ci_run):
    """In the CI run, the claims map ran each mapped group's cells; coloc's cell repeats the simulate rule's runs of
    that scenario at its headline point to the bit (the same runner, spec and inputs), and the paper's cell differs
    where its factors do (ISACPP reading the measured pairs)."""
    import yaml

    repo = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    ci = yaml.safe_load((repo / "config" / "ci.yaml").read_text())
    mapped = pd.read_parquet(ci_run / "results" / "claims" / "map_summary.parquet")
    assert set(mapped["group"]) == set(ci["claims"]["map_groups"])
    for name in ci["claims"]["map_groups"]:
        group = claims_map.group_from_config(name, {**config["claims"]["groups"][name], **ci["claims"]["groups"].get(name, {})})
        assert set(mapped.loc[mapped["group"] == name, "cell"]) == {c.name for c in claims_map.cells(group)}
    summary = pd.read_parquet(ci_run / "results" / "sim" / "summary.parquet")
    point = float(ci["simulation"]["scenario_specs"]["isacpp-testbed"]["headline"])
    for policy in ("isacpp", "volcano", "fifo"):
        stage = summary[(summary["scenario"] == "isacpp-testbed") & (summary["policy"] == policy)
                        & (summary["point"] == point)].set_index("seed")["jct_mean"]
        cell = mapped[(mapped["group"] == "isacpp") & (mapped["cell"] == "coloc") & (mapped["policy"] == policy)]
        assert len(stage) > 0 and cell.set_index("seed")["jct_mean"].sort_index().tolist() == stage.sort_index().tolist()
    paper = mapped[(mapped["group"] == "isacpp") & (mapped["cell"] == "paper")]
    assert set(paper["policy"]) >= {"isacpp@profiled-pairs", "volcano"}
    assert paper.loc[paper["policy"] == "isacpp@profiled-pairs", "prediction_source"].str.contains(
        "the paper's assumption").all()
    claims_table = pd.read_csv(ci_run / "results" / "claims_map.csv")
    assert {"paper", "coloc"} <= set(claims_table["cell"]) and claims_table["verdict"].isin(claims.VERDICTS).all()
