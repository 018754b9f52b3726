"""coloc.params: notebook parameters are checked against their declared types; outputs appear all or none."""

import re
from pathlib import Path
from typing import Optional

import pandas as pd
import pytest

from coloc import params
from coloc.datasets import save_table


def namespace(**values):
    annotations = {"seed": int, "load": float, "names": str | list[str], "window": Optional[list],
                   "spec": dict, "flag": bool}
    return {"__annotations__": annotations, **values}


def test_values_of_the_declared_types_pass():
    params.check(namespace(seed=3, load=2, names=["a", "b"], window=None, spec={"n": 1}, flag=False))
    params.check(namespace(seed=3, load=2.5, names="all", window=[0, 10], spec={}, flag=True))


@pytest.mark.parametrize("name, value", [("seed", "3"), ("seed", True), ("seed", 1.5), ("load", "4.0"),
                                         ("names", [1, 2]), ("window", "0,10"), ("spec", []), ("flag", 1)])
def test_a_value_of_another_type_is_refused_naming_the_parameter(name, value):
    good = dict(seed=3, load=2.0, names="all", window=None, spec={}, flag=False)
    with pytest.raises(params.ParameterError, match=re.escape(f"{name} = {value!r} is not ")):
        params.check(namespace(**(good | {name: value})))


def test_outputs_appear_only_on_commit(tmp_path):
    outputs = params.Outputs()
    table = pd.DataFrame({"x": [1, 2]})
    save_table(table, outputs(tmp_path / "a.parquet"))
    save_table(table, outputs(tmp_path / "sub" / "b.parquet"))
    assert not (tmp_path / "a.parquet").exists() and not (tmp_path / "sub" / "b.parquet").exists()
    assert sorted(outputs.commit()) == [tmp_path / "a.parquet", tmp_path / "sub" / "b.parquet"]
    assert pd.read_parquet(tmp_path / "sub" / "b.parquet").equals(table)
    assert not list(tmp_path.rglob(".partial-*"))


def test_two_writers_of_the_same_outputs_stage_them_under_names_of_their_own(tmp_path):
    """A fixed staging name let two runs of one notebook write into the same file; each writer has its own now."""
    first, second = params.Outputs(), params.Outputs()
    staged = [first(tmp_path / "a.parquet"), second(tmp_path / "a.parquet")]
    assert staged[0] != staged[1] and all(p.name.endswith("-a.parquet") and p.name.startswith(".partial-")
                                          for p in staged)
    save_table(pd.DataFrame({"x": [1]}), staged[0])
    save_table(pd.DataFrame({"x": [2]}), staged[1])
    first.commit()
    assert pd.read_parquet(tmp_path / "a.parquet")["x"].tolist() == [1]
    second.commit()
    assert pd.read_parquet(tmp_path / "a.parquet")["x"].tolist() == [2]
    assert not list(tmp_path.rglob(".partial-*"))


def test_commit_refuses_an_output_that_was_never_written(tmp_path):
    outputs = params.Outputs()
    save_table(pd.DataFrame({"x": [1]}), outputs(tmp_path / "a.parquet"))
    outputs(tmp_path / "b.parquet")
    with pytest.raises(FileNotFoundError, match="b.parquet"):
        outputs.commit()
    assert not (tmp_path / "a.parquet").exists()


@pytest.mark.slow
def test_a_notebook_names_a_wrong_parameter_and_a_failed_run_leaves_no_output(tmp_path, raw_files):
    """00_data run by papermill outside Snakemake: a wrong type is named at once; a run that fails half-way
    (the trace file is missing, after the Gavel tables and a figure were made) leaves none of its outputs."""
    import papermill

    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "00_data.ipynb"
    outputs = {name: str(tmp_path / "out" / file) for name, file in (
        ("solo_path", "solo.parquet"), ("pairs_path", "pairs.parquet"), ("trace_path", "trace.parquet"),
        ("heatmap_path", "heat.png"), ("trace_figure_path", "trace.png"))}
    run = dict(gavel_path=str(raw_files["gavel_throughputs"]), philly_path=str(tmp_path / "missing.csv"), **outputs)
    with pytest.raises(papermill.PapermillExecutionError, match=r"trace_seed = 'zero' is not int"):
        papermill.execute_notebook(str(notebook), str(tmp_path / "typed.ipynb"), kernel_name="python3",
                                   parameters=run | {"trace_seed": "zero"}, progress_bar=False)
    with pytest.raises(papermill.PapermillExecutionError, match="missing.csv"):
        papermill.execute_notebook(str(notebook), str(tmp_path / "failed.ipynb"), kernel_name="python3",
                                   parameters=run, progress_bar=False)
    assert len(list((tmp_path / "out").glob(".partial-*-solo.parquet"))) == 1  # the run did get that far
    assert not [p for p in outputs.values() if Path(p).exists()]
