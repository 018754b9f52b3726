"""`coloc probe`: a new job type measured next to k references on the CPU, predicted next to all."""
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coloc import cli, profiler
from coloc.predict.references import choose_references
from coloc.profiler import sweep

REFERENCE_SET = ["recommendation-ml20m-b512", "squeezenet-cifar10-b32", "shufflenetv2-cifar10-b32"]
NEW = "lm-wikitext2-b5"
TINY = profiler.Settings(device="cpu", threads=1, warmup_s=0.0, warmup_iters=1, window_s=0.3, min_iters=2,
                         timeout_s=60.0, batch_size=1, sample_interval_s=0.05)


USER_MODEL = "user_models.tiny:make"  # tests/user_models/tiny.py, importable with tests/ on PYTHONPATH
TESTS = Path(__file__).resolve().parent
FLAGS = ["--device", "cpu", "--k", "2", "--repeats", "1", "--window-s", "0.3", "--warmup-s", "0", "--threads", "1",
         "--batch-size", "1", "--quiet"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The small reference set measured on this CPU: (solo, pairs, folder with solo.parquet and pairs.parquet)."""
    folder = tmp_path_factory.mktemp("reference")
    records = profiler.run(profiler.plan(REFERENCE_SET, shuffle=False), folder / "ref.jsonl", TINY, progress=False)
    solo, pairs = profiler.solo_table(records), profiler.pairs_table(records)
    solo.to_parquet(folder / "solo.parquet")
    pairs.to_parquet(folder / "pairs.parquet")
    return solo, pairs, folder


@pytest.mark.slow
def test_coloc_probe_on_the_cpu_against_a_small_reference_set(tmp_path, reference):
    solo, pairs, folder = reference
    (tmp_path / "solo.parquet").write_bytes((folder / "solo.parquet").read_bytes())
    (tmp_path / "pairs.parquet").write_bytes((folder / "pairs.parquet").read_bytes())
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


@pytest.mark.slow
def test_coloc_probe_of_a_users_own_model_by_its_import_path(tmp_path, reference):
    """`coloc probe package.module:function` as a user runs it: a new process, the module on PYTHONPATH."""
    solo, pairs, folder = reference
    out, log = tmp_path / "mine", tmp_path / "probe.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "coloc.cli", "probe", USER_MODEL, "--solo", str(folder / "solo.parquet"),
               "--pairs", str(folder / "pairs.parquet"), "--out", str(out), "--log", str(log), *FLAGS]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    device = solo["device"].iloc[0]
    references = choose_references(pairs, device, 2)
    assert done.stdout.startswith(f"{USER_MODEL} on {device}: probed next to {','.join(references)}")
    table = pd.read_parquet(f"{out}.parquet")
    assert pd.read_csv(f"{out}.csv")["co_runner"].tolist() == table["co_runner"].tolist()
    # one row per job type of the reference set, and the model next to itself; the path is the model's name
    assert sorted(table["co_runner"]) == sorted(REFERENCE_SET + [USER_MODEL])
    assert (table["workload"] == USER_MODEL).all() and (table["device"] == device).all()
    probes = table[table["probe"]]
    assert sorted(probes["co_runner"]) == sorted(references)
    assert (probes["measured_norm"] > 0).all() and (probes["co_runner_measured_norm"] > 0).all()
    assert table.loc[~table["probe"], "measured_norm"].isna().all()
    assert np.isfinite(table[["pred_norm", "co_runner_pred_norm"]]).all().all() and (table["pred_std"] > 0).all()
    # the profiler's worker processes imported and trained the user's model: its solo and probe records
    records = profiler.read_log(log)
    logged = {tuple(r["workloads"]) for r in records}
    assert logged == {(USER_MODEL,)} | {(r,) for r in references} | {tuple(sorted((USER_MODEL, r))) for r in references}
    mine = profiler.solo_table(records).set_index("workload").loc[USER_MODEL]
    assert mine["device"] == device and mine["throughput"] > 0


def test_a_users_model_that_cannot_be_had_is_refused_before_measuring(tmp_path, capsys):
    """Bad path, missing function, wrong return: a message naming the path, and nothing measured."""
    base = ["--device", "cpu", "--solo", str(tmp_path / "solo.parquet"), "--log", str(tmp_path / "log.jsonl"),
            "--out", str(tmp_path / "out")]
    pd.DataFrame({"device": ["cpu"], "workload": ["a"], "throughput": [1.0]}).to_parquet(tmp_path / "solo.parquet")
    pd.DataFrame({"device": ["cpu"], "workload_a": ["a"], "workload_b": ["a"], "tput_a": [0.5], "tput_b": [0.5],
                  "norm_a": [0.5], "norm_b": [0.5], "feasible": [True]}).to_parquet(tmp_path / "pairs.parquet")
    base += ["--pairs", str(tmp_path / "pairs.parquet")]
    cases = {"user_models.absent:make": "user model 'user_models.absent:make': cannot import module "
                                        "'user_models.absent' (ModuleNotFoundError",
             "user_models.tiny:missing": "user model 'user_models.tiny:missing': module 'user_models.tiny' (",
             "user_models.tiny:wrong_return": "user model 'user_models.tiny:wrong_return': returned a Linear; "
                                              "expected (model, batch) or (model, batch, loss_fn)",
             "my-model": "model 'my-model': expected a job type of the zoo (coloc.workloads.names()) or your own "
                         "model's import path package.module:function"}
    for model, message in cases.items():
        assert cli.main(["probe", model, *base]) == 1
        assert message in capsys.readouterr().err
    assert not (tmp_path / "log.jsonl").exists() and not (tmp_path / "out.csv").exists()


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


# ---------------------------------------------------------------------------- refused up front, bounded, keyed by the model

def tiny_tables(tmp_path) -> list[str]:
    pd.DataFrame({"device": ["cpu"], "workload": ["a"], "throughput": [1.0]}).to_parquet(tmp_path / "solo.parquet")
    pd.DataFrame({"device": ["cpu"], "workload_a": ["a"], "workload_b": ["a"], "tput_a": [0.5], "tput_b": [0.5],
                  "norm_a": [0.5], "norm_b": [0.5], "feasible": [True]}).to_parquet(tmp_path / "pairs.parquet")
    return ["--device", "cpu", "--solo", str(tmp_path / "solo.parquet"), "--pairs", str(tmp_path / "pairs.parquet"),
            "--log", str(tmp_path / "log.jsonl"), "--out", str(tmp_path / "out")]


@pytest.mark.parametrize("flags, message", [
    (["--k", "-1"], "coloc probe: --k -1: expected an integer >= 1\n"),
    (["--repeats", "0"], "coloc probe: --repeats 0: expected an integer >= 1\n"),
    (["--timeout-s", "nan"], "coloc probe: --timeout-s nan: expected a number of seconds > 0\n"),
    (["--window-s", "0"], "coloc probe: --window-s 0.0: expected a number of seconds > 0\n"),
    (["--seed", "-3"], "coloc probe: --seed -3: expected an integer >= 0 and at most 4294967295\n"),
    (["--predictor", "nosuch"], "coloc probe: predictor 'nosuch' (--predictor): expected one of the pair predictors ["),
])
def test_an_option_out_of_range_or_an_unknown_predictor_is_refused_in_one_line_before_measuring(
        tmp_path, capsys, flags, message):
    assert cli.main(["probe", NEW, *tiny_tables(tmp_path), *flags]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err and '"' not in err, err
    assert not (tmp_path / "log.jsonl").exists()


def test_building_a_user_model_is_bounded_by_the_timeout(tmp_path, capsys, monkeypatch):
    (tmp_path / "hang_builder.py").write_text("import time\n\ndef make():\n    time.sleep(600)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    started = time.monotonic()
    assert cli.main(["probe", "hang_builder:make", *tiny_tables(tmp_path), "--timeout-s", "1"]) == 1
    assert time.monotonic() - started < 30
    assert ("user model 'hang_builder:make': building it on the meta device took longer than timeout_s = 1 s"
            in capsys.readouterr().err)
    assert not (tmp_path / "log.jsonl").exists()


def test_an_edited_user_model_gets_new_log_keys_and_so_is_measured_afresh(tmp_path, monkeypatch):
    """The log key was the import path and the settings: an edited model (100x the parameters) read the old
    model's records back. Its fingerprint (source and shapes) is now in the key; a zoo set's key is unchanged."""
    source = "import torch\nfrom torch import nn\n\ndef make():\n    return nn.Linear(8, {n}), torch.randn(2, 8)\n"
    module = tmp_path / "edited_model.py"
    module.write_text(source.format(n=4))
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "edited_model:make"
    before = sweep.check([name, NEW])
    module.write_text(source.format(n=400))
    after = sweep.check([name])
    assert set(before) == {name} and before != after
    device, m = profiler.resolve("cpu"), sweep.Measurement(tuple(sorted((name, NEW))), 0)
    assert sweep.key(m, device, 1, TINY, before) != sweep.key(m, device, 1, TINY, after)
    zoo = sweep.Measurement((NEW,), 0)
    assert sweep.key(zoo, device, 1, TINY, before) == sweep.key(zoo, device, 1, TINY)


def test_a_user_model_that_never_ran_fails_the_probe_and_says_which_measurements_failed_and_why(tmp_path):
    """A model whose forward asks for 4 TiB ran out of memory solo and next to its reference: the probe exited 0
    with predictions from a row without a throughput. It now exits 1 naming each failed measurement."""
    device = profiler.resolve("cpu").name  # reference tables of the small set (numbers made up: only inputs here)
    names = sorted(REFERENCE_SET)
    pairs = pd.DataFrame([{"device": device, "workload_a": a, "workload_b": b, "tput_a": 6.0 + i, "tput_b": 5.0 + j,
                           "norm_a": 0.6, "norm_b": 0.5, "feasible": True}
                          for i, a in enumerate(names) for j, b in enumerate(names) if a <= b])
    solo = pd.DataFrame({"device": device, "workload": names, "throughput": [10.0, 12.0, 14.0]})
    solo.to_parquet(tmp_path / "solo.parquet")
    pairs.to_parquet(tmp_path / "pairs.parquet")
    reference, = choose_references(pairs, device, 1)
    model, out, log = "user_models.tiny:too_big", tmp_path / "out", tmp_path / "probe.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    flags = [*FLAGS[:FLAGS.index("--k")], "--k", "1", *FLAGS[FLAGS.index("--k") + 2:]]
    command = [sys.executable, "-m", "coloc.cli", "probe", model, "--solo", str(tmp_path / "solo.parquet"),
               "--pairs", str(tmp_path / "pairs.parquet"), "--out", str(out), "--log", str(log), *flags]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    err = done.stderr.strip().splitlines()[-1]
    assert err.startswith(f"coloc probe: model '{model}': the probe has no finite solo throughput and no measured "
                          f"pair, so nothing to predict from; failed measurements: "), err
    pair = " + ".join(sorted([model, reference]))
    for what in (model, pair):
        assert f"{what} (repeat 0): out_of_memory, RuntimeError: " in err and "can't allocate memory" in err
    assert f"{reference} (repeat 0)" not in err  # the reference ran: it is not named as failed
    assert err.endswith(f"(the log {log})")
    assert not Path(f"{out}.csv").exists() and not Path(f"{out}.parquet").exists()


def test_a_probe_whose_solo_ran_but_no_pair_was_measured_fails():
    """The second condition alone: a finite solo throughput, every pair out of memory."""
    from coloc.probe import ProbeError, check_measured
    solo = pd.DataFrame({"device": ["cpu"] * 2, "workload": ["new", "ref"], "throughput": [5.0, 7.0]})
    pairs = pd.DataFrame({"device": ["cpu"], "workload_a": ["new"], "workload_b": ["ref"], "tput_a": [0.0],
                          "tput_b": [0.0], "norm_a": [np.nan], "norm_b": [np.nan], "feasible": [False]})
    records = [{"workloads": ["new", "ref"], "repeat": 0, "outcome": "out_of_memory", "feasible": False,
                "error": "RuntimeError: CUDA out of memory.\nmore"}]
    with pytest.raises(ProbeError) as refused:
        check_measured("new", records, solo, pairs, "log.jsonl")
    assert str(refused.value) == ("model 'new': the probe has no measured pair, so nothing to predict from; failed "
                                  "measurements: new + ref (repeat 0): out_of_memory, RuntimeError: CUDA out of "
                                  "memory. (the log log.jsonl)")
    check_measured("new", [], solo, pairs.assign(tput_a=2.0, tput_b=3.0, norm_a=0.4, norm_b=0.43, feasible=True),
                   "log.jsonl")  # one measured pair: passes
