"""The testbed experiment end to end (what `scripts/testbed.py` runs; docs/testbed.md): profile the device, measure
a start and a restart, run the trace for real under each policy, profile the sets of 3+ they formed, replay the
trace in the simulator, compare. Each step's output is kept under `out` as it finishes, so a rerun redoes only
what is missing (the profiler's log, each finished policy's journal); a policy's killed run is rerun afresh.

`config`: the `testbed` section of config/testbed.yaml.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import pandas as pd

from coloc import devices as device_table, plots, policies, profiler
from coloc.plots import testbed as testbed_plots
from coloc.profiler import hardware
from coloc.profiler.extrapolation import extrapolation_error
from coloc.sim.interference import GroundTruth

from . import compare, devices, runner, trace


@dataclasses.dataclass
class Measured:
    """What was measured on the testbed's device before the runs."""

    solo: pd.DataFrame
    pairs: pd.DataFrame
    records: list           # the profiler's log records
    restart_cost_s: float   # mean over job types
    startup_s: dict         # per job type


def run(config: dict, out: Path, say=print) -> tuple[pd.DataFrame, dict]:
    """Every step (see the module docstring); the comparison table and the summary, both also written to `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started, before = time.monotonic(), machine()
    devs = devices.parse(config["devices"])
    settings = runner.Settings(max_jobs_per_gpu=config["max_jobs_per_gpu"], measure_steps=config["measure_steps"],
                               seed=config["seed"], batch_size=config.get("batch_size"))
    say(f"testbed on {len(devs)} x {devs[0].name} ({config['devices']}), commit {before['commit']}")
    measured = measure_device(config, devs[0], out, settings, say)
    settings = dataclasses.replace(settings, restart_cost_s=measured.restart_cost_s)  # the view's charge
    tput = dict(zip(measured.solo["workload"], measured.solo["throughput"], strict=True))
    jobs = trace.make(config["workloads"], config["n_jobs"], tput, config["min_s"], config["max_s"], config["seed"])
    preds = compare.predictions(measured.solo, measured.pairs)
    real, segments, run_stats = real_runs(config, devs, jobs, measured, preds, settings, out, say)
    sets = formed_sets(segments)
    set_table = measure_sets(config, devs[0], measured, sets, out)
    sims = replays(config, devs, jobs, measured, set_table, preds)
    table = write_comparison(real, sims, devs[0].name, out)
    summary = {"machine_before": before, "machine_after": machine(), "wall_s": round(time.monotonic() - started, 1),
               "devices": config["devices"], "device": devs[0].name, "restart_cost_s": measured.restart_cost_s,
               "startup_s": measured.startup_s, "sets_formed": ["+".join(s) for s in sets],
               "prediction_source": compare.SOURCE, "disagreements": compare.disagreements(table),
               "real_run_stats": run_stats, "config": config}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "comparison.md").write_text(markdown(table, summary))
    return table, summary


def measure_device(config: dict, device: devices.Device, out: Path, settings: runner.Settings, say) -> Measured:
    """The job types profiled solo and in pairs on `device`, and a start and a restart of each measured there."""
    records = profile(config, device, out)
    solo, pairs = profiler.solo_table(records), profiler.pairs_table(records)
    solo, pairs = solo[solo["device"] == device.name], pairs[pairs["device"] == device.name]
    say(f"profiled: {len(solo)} job types, {len(pairs)} pairs")
    path = out / "launches_measured.csv"
    if not path.exists():
        tput = dict(zip(solo["workload"], solo["throughput"], strict=True))
        compare.measure_launches(device, config["workloads"], tput, out, settings).to_csv(path, index=False)
    launches = pd.read_csv(path)
    restart = float(launches["lost_s"].clip(lower=0).mean())
    startup = dict(zip(launches["workload"], launches["startup_s"].clip(lower=0), strict=True))
    say(f"restart cost {restart:.2f} s (mean over job types), start-up {startup}")
    return Measured(solo, pairs, records, restart, startup)


def real_runs(config, devs, jobs, measured: Measured, preds, settings, out: Path, say):
    """Each policy's real run (its journal under out/runs/); ({policy: jobs table}, every segment, stats)."""
    known = runner.profile_of(measured.solo, measured.pairs, devs[0].name)
    real, segments, launches, stats = {}, [], [], {}
    with hardware.mps_daemon(bool(config.get("mps")), profiler.resolve(devs[0].torch_device)) as env:
        settings = dataclasses.replace(settings, env=tuple(env))
        for name in config["policies"]:
            result = runner.run(jobs, make_policy(name, config), devs, known, preds, out / "runs" / f"{name}.jsonl",
                                settings, rerun_killed=True)
            real[name], stats[name] = result.jobs, result.stats
            segments.append(result.segments.assign(policy=name))
            launches.append(result.launches.assign(policy=name))
            say(f"real {name}: mean JCT {result.jobs['jct'].mean():.2f} s, makespan "
                f"{result.jobs['finish_time'].max():.2f} s")
    segments = pd.concat(segments, ignore_index=True)
    pd.concat(real.values(), ignore_index=True).to_csv(out / "real_jobs.csv", index=False)
    segments.to_csv(out / "segments.csv", index=False)
    pd.concat(launches, ignore_index=True).to_csv(out / "launches.csv", index=False)
    return real, segments, stats


def measure_sets(config: dict, device: devices.Device, measured: Measured, sets, out: Path) -> pd.DataFrame:
    """The sets of 3+ the runs formed, profiled on `device`, each job's factor against the product of its pairs."""
    if not sets:
        table = pd.DataFrame(columns=["device", "set", "workload", "partners", "norm", "feasible"])
    else:
        table = profiler.sets_table(profile(config, device, out, sets=sets))
        extrapolation_error(measured.pairs, table).to_csv(out / "extrapolation.csv", index=False)
    table.to_csv(out / "sets.csv", index=False)
    return table


def replays(config, devs, jobs, measured: Measured, set_table, preds) -> dict[str, dict[str, pd.DataFrame]]:
    """{replay: {policy: simulated jobs table}}: `sim`, `sim-measured-sets`, `sim+startup` (docs/testbed.md)."""
    name, cap = devs[0].name, config["max_jobs_per_gpu"]
    product = GroundTruth(measured.solo, measured.pairs, name, name="profiled on the testbed's device")
    truths = {"sim": (product, None),
              "sim-measured-sets": (compare.MeasuredSets(measured.solo, measured.pairs, set_table, name), None),
              "sim+startup": (product, measured.startup_s)}
    return {variant: {policy: compare.replay(jobs, make_policy(policy, config), truth, name, len(devs), cap,
                                             measured.restart_cost_s, preds, startup)
                      for policy in config["policies"]}
            for variant, (truth, startup) in truths.items()}


def write_comparison(real, sims, device: str, out: Path) -> pd.DataFrame:
    """The replays' jobs, the comparison table, the per-job ratios and the scatter figure, written to `out`."""
    pd.concat([s.assign(replay=v) for v, by in sims.items() for s in by.values()],
              ignore_index=True).to_csv(out / "sim_jobs.csv", index=False)
    table = compare.table(real, sims)
    table.to_csv(out / "comparison.csv", index=False)
    per_job = pd.concat([compare.per_job(real[p], s).assign(policy=p, replay=v) for v, by in sims.items()
                         for p, s in by.items()], ignore_index=True)
    per_job.to_csv(out / "per_job.csv", index=False)
    fig = testbed_plots.jct_scatter(per_job[per_job["replay"] == "sim"], device, "sim",
                                    "profiled solo and pairs, product of pairs for 3+")
    plots.save(fig, out / "jct_scatter.png")
    return table


def profile(config: dict, device: devices.Device, out: Path, sets=()) -> list[dict]:
    p = config["profiling"]
    settings = profiler.Settings(device=device.torch_device, cpus=device.cpus, threads=device.threads,
                                 warmup_s=p["warmup_s"], window_s=p["window_s"], min_iters=p["min_iters"],
                                 timeout_s=p["timeout_s"], mps=bool(config.get("mps")), seed=config["seed"],
                                 batch_size=config.get("batch_size"))
    plan = profiler.plan(config["workloads"], repeats=p["repeats"], set_sizes=(2,), seed=config["seed"], sets=sets)
    return profiler.run(plan, out / "profiling.jsonl", settings, progress=False)


def make_policy(name: str, config: dict):
    made = policies.get(name, **(config.get("policy_params") or {}).get(name, {}))
    made.name = name
    return made


def formed_sets(segments: pd.DataFrame) -> list[list[str]]:
    """The sets of 3 or more jobs the real runs held on a device."""
    found = set()
    for row in segments.itertuples(index=False):
        others = [w for w in str(row.co_runners).split("+") if w]
        if len(others) >= 2:
            found.add(tuple(sorted([row.workload, *others])))
    return [list(s) for s in sorted(found)]


def machine() -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True).stdout.strip())
    return {"commit": commit + ("-dirty" if dirty else ""), "host": platform.node(),
            "cpu": device_table.local_cpu_model(), "cores": os.cpu_count(), "load_average": os.getloadavg(),
            "python": platform.python_version()}


def markdown(table: pd.DataFrame, summary: dict) -> str:
    """The comparison as a Markdown table for docs/testbed.md, headed by the command's commit and machine."""
    before, after = summary["machine_before"], summary["machine_after"]
    lines = [f"`python scripts/testbed.py` at commit {before['commit']} on {before['host']} ({before['cpu']}, "
             f"{before['cores']} cores), devices {summary['devices']} ({summary['device']}); load average "
             f"{before['load_average'][0]:.2f} before, {after['load_average'][0]:.2f} after; {summary['wall_s']} s; "
             f"restart cost {summary['restart_cost_s']:.2f} s. World of the replays: measured (the profiled tables of "
             f"the device); predictions: {summary['prediction_source']}.", "",
             "| replay | policy | jobs | mean JCT real (s) | sim (s) | error | makespan real (s) | sim (s) | error | "
             "ratio median | p10 | p90 | rank real | rank sim |", "|" + "---|" * 14]
    for r in table.itertuples(index=False):
        lines.append(f"| {r.replay} | {r.policy} | {r.n_jobs} | {r.jct_mean_real:.2f} | {r.jct_mean_sim:.2f} | "
                     f"{r.jct_mean_error:+.1%} | {r.makespan_real:.2f} | {r.makespan_sim:.2f} | "
                     f"{r.makespan_error:+.1%} | {r.ratio_median:.3f} | {r.ratio_p10:.3f} | {r.ratio_p90:.3f} | "
                     f"{r.rank_real} | {r.rank_sim} |")
    lines += ["", "Rankings that differ:" if summary["disagreements"] else "The rankings agree in every replay."]
    lines += [f"* {line}" for line in summary["disagreements"]]
    return "\n".join(lines) + "\n"
