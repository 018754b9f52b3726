"""The probe scenario's notebooks run the default config's settings when opened interactively."""
import json
from pathlib import Path

import yaml

from coloc.predict.stage import run_file
from coloc.studies.probing import probe_protocol

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def parameters(stem: str) -> dict:
    cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    (cell,) = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    namespace: dict = {}
    exec("".join(cell["source"]), namespace)
    return {k: v for k, v in namespace.items() if k in namespace.get("__annotations__", {})}


def test_the_probe_notebook_defaults_are_the_config():
    probing, sim = CONFIG["probing"], CONFIG["simulation"]
    defaults = parameters("04_probe")
    assert defaults["scenario"] == probing["scenario"]
    assert defaults["scenario_spec"] == sim["scenario_specs"][probing["scenario"]]
    for key in ("new_families", "new_share", "probes", "probe_s", "predictor", "seen_protocol"):
        assert defaults[key] == probing[key], key
    for key in ("reference_device", "max_jobs_per_gpu", "restart_cost_s"):
        assert defaults[key] == sim[key], key
    protocols = CONFIG["predictors"]["protocols"]
    assert defaults["probe_paths"] == ["../" + run_file("predictions", "gavel", probe_protocol(k), protocols)
                                       for k in probing["probes"]]
    assert defaults["seen_path"] == "../" + run_file("predictions", "gavel", probing["seen_protocol"], protocols)
    assert parameters("04_probe_figures")["headline"] == sim["scenario_specs"][probing["scenario"]]["headline"]


def test_the_user_data_notebook_reads_a_source_into_its_dataset_folder():
    defaults = parameters("00_user_data")
    assert defaults["solo_out"] == f"../data/processed/user/{defaults['name']}/solo.parquet"
    assert defaults["pairs_out"] == f"../data/processed/user/{defaults['name']}/pairs.parquet"
