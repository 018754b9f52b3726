"""Users' own measurements as a predictors-stage source: scored, gaps skip predictors by reason."""
import pandas as pd
import pytest

from coloc.datasets import family_of, load_user, save_table
from coloc.devices import close_names, device_row
from coloc.predict import stage

FAMILIES = ("lm", "recommendation")


@pytest.fixture(scope="module")
def user_source(gavel, tmp_path_factory):
    """Test helper: Gavel's V100 pairs of two families written in the user CSV format, normalized values only."""
    _, pairs = gavel
    keep = pairs[(pairs["device"] == "v100") & pairs["workload_a"].map(family_of).isin(FAMILIES)
                 & pairs["workload_b"].map(family_of).isin(FAMILIES)]
    folder = tmp_path_factory.mktemp("user")
    keep[["device", "workload_a", "workload_b", "norm_a", "norm_b"]].to_csv(folder / "pairs.csv", index=False)
    solo, parsed = load_user(folder / "pairs.csv")
    save_table(solo, folder / "solo.parquet")
    save_table(parsed, folder / "pairs.parquet")
    workloads = pd.DataFrame({"workload": sorted(set(keep["workload_a"]) | set(keep["workload_b"]))})
    workloads = workloads.assign(family=workloads["workload"].map(family_of), batch_size=1.0, flops_step=1.0)
    save_table(workloads, folder / "workloads.parquet")
    return folder, keep


def test_a_source_without_solo_scores_the_predictors_that_need_none_and_names_why_others_are_skipped(user_source):
    folder, measured = user_source
    tables = stage.load_tables(folder / "workloads.parquet", folder / "solo.parquet", folder / "pairs.parquet")
    assert len(tables.pairs) == len(measured) and tables.solo.empty  # no pair dropped for want of solo rows
    assert stage.input_gaps(tables) == ["solo throughputs"]
    evaluation = stage.run_protocol(tables, "random5", {"mean": {}, "interactions": {}, "linear": {}},
                                    {"mean": {}}, seeds=[0], k=3)
    assert sorted(evaluation.predictions["predictor"].unique()) == ["interactions", "mean"]
    assert any(s.startswith("linear skipped: this source lacks solo throughputs") for s in evaluation.skipped)
    assert any(s.startswith("mean skipped: this source lacks solo throughputs") for s in evaluation.skipped)  # util
    scores = stage.scores(evaluation, "user-mine")
    overall = scores[scores["scope"] == "overall"].set_index("predictor")["MAPE"]
    assert overall["interactions"] < overall["mean"]  # the source's own structure is learned


def test_user_datasets_have_their_own_folder_and_run_files():
    assert stage.is_user("user-a100") and not stage.is_user("user-") and not stage.is_user("gavel")
    assert stage.dataset_folder("user-a100") == "data/processed/user/a100"
    assert stage.dataset_folder("profiled") == "data/processed/profiled"
    assert stage.run_file("scores", "user-a100", "lofo", ["lofo"]) == "data/processed/predictor_scores/user-a100/lofo.parquet"
    with pytest.raises(ValueError, match="dataset 'mine'; expected one of .* or user-<name>"):
        stage.run_file("scores", "mine", "lofo", ["lofo"])
    assert stage.source_label("user-a100", ["a100"]) == "user data 'a100' (measured, a100)"


def test_an_unknown_device_and_job_types_without_features_are_gaps(user_source):
    folder, _ = user_source
    pairs = pd.read_parquet(folder / "pairs.parquet").assign(device="a100")
    save_table(pairs, folder / "pairs_a100.parquet")
    workloads = pd.read_parquet(folder / "workloads.parquet")
    save_table(workloads[workloads["workload"].str.startswith("lm")], folder / "workloads_lm.parquet")
    tables = stage.load_tables(folder / "workloads_lm.parquet", folder / "solo.parquet", folder / "pairs_a100.parquet")
    gaps = stage.input_gaps(tables)
    assert gaps[0] == "solo throughputs" and "recommendation-ml20m-b1024" in gaps[1]
    # the docs' example device was 'a100', which coloc does not know: the gap blamed missing specifications; it
    # says the name is unknown and which names are close
    assert gaps[2] == ("devices coloc knows, so no specifications: 'a100' is not a device coloc knows (close names: "
                       "a100-40gb, a100-80gb)")
    with pytest.raises(KeyError, match=r"device 'a100' is not a device coloc knows \(close names: a100-40gb, "
                                       r"a100-80gb\); expected one of \["):
        device_row("a100")
    assert close_names("v101") == ["v100"] and close_names("zzz") == []


def test_the_docs_example_names_devices_coloc_knows_and_lists_every_known_name():
    """The docs' example used device 'a100', which coloc does not know."""
    import re
    from pathlib import Path

    from coloc import devices
    text = (Path(__file__).resolve().parents[1] / "docs" / "own-measurements.md").read_text()
    example = text.split("```csv\n", 1)[1].split("```", 1)[0].splitlines()[1:]
    assert example and all(devices.device_row(line.split(",")[0]) for line in example)
    listed = re.search(r"`device`: a name coloc knows \(`coloc.devices`: (.*?), or NVML", text, re.S)[1]
    assert sorted(re.findall(r"`([^`]+)`", listed)) == sorted(devices._GPU_SPECS)
