"""Notebook parameter defaults agree with config/config.yaml, so that a notebook opened in JupyterLab runs the
default pipeline's settings; and every notebook checks its parameters' types (coloc.params)."""

import json
from pathlib import Path

import pytest
import yaml

from coloc.predict.stage import run_file

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
SIM = CONFIG["simulation"]

# notebook -> (config section, prefix of the parameter names that mirror its keys, how many at least do)
SECTIONS = {
    "00_data": (CONFIG["trace"], "trace_", 6),
    "01_profiling": (CONFIG["profiling"], "", 15),
    "02_features": (CONFIG["features"], "", 1),
    "03_predictors": (CONFIG["predictors"], "", 6),
    "03_predictors_summary": (CONFIG["predictors"], "", 1),
    "04_simulation": (SIM, "", 7),
    "05_scheduling_delay": (CONFIG["scheduling_delay"], "", 11),
}


def parameters(stem: str) -> dict:
    """The defaults of the notebook's `parameters` cell, executed as written."""
    cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"notebooks/{stem}.ipynb: expected one cell tagged 'parameters', found {len(tagged)}"
    namespace: dict = {}
    exec("".join(tagged[0]["source"]), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__") and k in namespace.get("__annotations__", {})}


def notebooks() -> list[str]:
    return sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("stem", sorted(SECTIONS))
def test_defaults_equal_the_config_section(stem):
    section, prefix, at_least = SECTIONS[stem]
    defaults = parameters(stem)
    shared = {name: section[name[len(prefix):]] for name in defaults
              if name.startswith(prefix) and name[len(prefix):] in section}
    # a sweep list of the config (gpus, seeds) against one run's value: checked by the sweep test below
    shared = {k: v for k, v in shared.items() if not (isinstance(v, list) and not isinstance(defaults[k], list))}
    assert len(shared) >= at_least, f"{stem}: only {sorted(shared)} mirror the config"
    differ = {name: (defaults[name], value) for name, value in shared.items() if defaults[name] != value}
    assert not differ, f"notebooks/{stem}.ipynb defaults differ from config/config.yaml: {differ}"


def test_simulation_notebook_defaults_are_a_policy_of_a_default_scenario():
    defaults = parameters("04_simulation")
    assert defaults["scenario"] in SIM["scenarios"]
    assert defaults["scenario_spec"] == SIM["scenario_specs"][defaults["scenario"]]
    assert defaults["policy"] in defaults["scenario_spec"]["policies"]
    protocols = CONFIG["predictors"]["protocols"]
    for kind in ("predictions", "utilization"):  # the files the predictors stage writes for simulation.protocol
        assert defaults[f"{kind}_path"] == "../" + run_file(kind, "gavel", SIM["protocol"], protocols)


def test_figure_notebook_defaults_follow_the_config():
    defaults = parameters("04_simulation_figures")
    assert defaults["scenarios"] == SIM["scenarios"]
    assert defaults["headlines"] == {name: SIM["scenario_specs"][name]["headline"] for name in SIM["scenarios"]}


def test_scheduling_delay_notebook_reads_the_simulation_settings_and_prediction_files():
    defaults = parameters("05_scheduling_delay")
    for key in ("reference_device", "max_jobs_per_gpu", "protocol", "predictor_norm", "predictor_util"):
        assert defaults[key] == SIM[key], key
    protocols = CONFIG["predictors"]["protocols"]
    for kind in ("predictions", "utilization"):
        assert defaults[f"{kind}_path"] == "../" + run_file(kind, "gavel", SIM["protocol"], protocols)


@pytest.mark.parametrize("stem", notebooks())
def test_every_notebook_checks_its_parameter_types(stem):
    cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    code = [("".join(c["source"]), c.get("metadata", {}).get("tags", [])) for c in cells if c["cell_type"] == "code"]
    after = [source for source, tags in code[1:] if "parameters" not in tags]
    assert "parameters" in code[0][1], f"{stem}: the first code cell is not the parameters cell"
    assert "params.check(globals())" in after[0], f"{stem}: the cell after the parameters does not check them"


def test_claims_notebooks_default_to_the_claims_section_and_its_scenarios():
    claims = CONFIG["claims"]
    defaults = parameters("06_claims")
    assert defaults["claims_section"] == claims and defaults["default_protocol"] == SIM["protocol"]
    assert defaults["scenarios"] == {name: group["scenario"] for name, group in claims["groups"].items()}
    specs = {group["scenario"]: SIM["scenario_specs"][group["scenario"]] for group in claims["groups"].values()}
    assert defaults["clusters"] == {name: spec["cluster"] for name, spec in specs.items()}
    assert defaults["pair_predictor_3090"] == specs[claims["groups"]["isacpp-3090"]["scenario"]]["predictor_norm"]
    assert defaults["pairs_paths"] == {"gavel": "../data/processed/pairs.parquet",
                                       "lucid": "../data/processed/lucid/pairs.parquet"}
    assert defaults["headlines"] == {name: float(spec["headline"]) for name, spec in SIM["scenario_specs"].items()}
    mapped = parameters("06_claims_map")
    assert mapped["claims"] == claims
    assert mapped["scenario_specs"] == {g: SIM["scenario_specs"][claims["groups"][g]["scenario"]]
                                        for g in claims["map_groups"]}
    assert mapped["settings"] == {key: SIM[key] for key in mapped["settings"]}
