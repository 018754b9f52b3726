"""The real testbed, then the simulator held against it: one command on this machine's CPU cores or GPUs.

Steps, each kept on disk as it finishes (a rerun with the same ``--out`` redoes only what is missing; a policy's
run that was killed is rerun afresh, its journal kept as ``runs/<policy>.jsonl.killed``):

1. profile the job types on one of the devices, solo and in every pair (coloc.profiler; ``profiling.jsonl``);
2. measure a start and a restart of each job type (stop with a checkpoint, start again from the count;
   ``launches_measured.csv``);
3. run the trace for real under each policy (coloc.testbed.runner; ``runs/<policy>.jsonl``, ``real_jobs.csv``,
   ``segments.csv``, ``launches.csv``);
4. profile the sets of 3 or more jobs the real runs formed on a device (appended to ``profiling.jsonl``);
5. replay the trace in the simulator per policy: ``sim`` (the simulator as it is: work = iterations / profiled
   solo throughput, sets of 3+ as the product of pairs, the measured restart cost), ``sim-measured-sets`` (the
   measured sets of 3+ in place of the product) and ``sim+startup`` (``sim``, each job charged its type's start-up
   measured in step 2);
6. compare (``comparison.csv``, ``per_job.csv``, ``jct_scatter.png``, ``summary.json`` with commit and machine).

    python scripts/testbed.py --config config/testbed.yaml --out results/testbed         # 2 CPU core sets
    python scripts/testbed.py --config config/testbed.yaml --devices cuda:0 --out "$OUT/testbed"   # a GPU host
    python scripts/testbed.py --config config/testbed.yaml --devices cuda:0,1 --mps --out "$OUT/testbed"
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from coloc import devices as device_table
from coloc import plots, policies, profiler
from coloc.profiler import hardware
from coloc.profiler.extrapolation import extrapolation_error
from coloc.plots import testbed as testbed_plots
from coloc.sim.interference import GroundTruth
from coloc.testbed import compare, devices, runner, trace


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="config/testbed.yaml", type=Path)
    p.add_argument("--out", default="results/testbed", type=Path)
    p.add_argument("--devices", help="override testbed.devices (cpu:2, cuda:0, cuda:0,1)")
    p.add_argument("--mps", action="store_true", help="CUDA MPS daemon on (GPU devices)")
    p.add_argument("--n-jobs", type=int, help="override testbed.n_jobs")
    p.add_argument("--policies", nargs="+", help="override testbed.policies")
    return p.parse_args(argv)


def load_config(args) -> dict:
    config = yaml.safe_load(args.config.read_text())["testbed"]
    if args.devices:
        config["devices"] = args.devices
    if args.mps:
        config["mps"] = True
    if args.n_jobs:
        config["n_jobs"] = args.n_jobs
    if args.policies:
        config["policies"] = args.policies
    unknown = [p for p in config["policies"] if p not in policies.names()]
    if unknown:
        raise SystemExit(f"{args.config}: testbed.policies {unknown} are not registered; expected among "
                         f"{policies.names()}")
    return config


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
             f"restart cost {summary['restart_cost_s']:.2f} s.", "",
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


def main(argv=None) -> int:
    args = parse(argv)
    config = load_config(args)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    started, before = time.monotonic(), machine()
    devs = devices.parse(config["devices"])
    name = devs[0].name
    settings = runner.Settings(max_jobs_per_gpu=config["max_jobs_per_gpu"], measure_steps=config["measure_steps"],
                               seed=config["seed"], batch_size=config.get("batch_size"))
    print(f"testbed on {len(devs)} x {name} ({config['devices']}), commit {before['commit']}", flush=True)

    records = profile(config, devs[0], out)
    solo, pairs = profiler.solo_table(records), profiler.pairs_table(records)
    solo = solo[solo["device"] == name]
    pairs = pairs[pairs["device"] == name]
    tput = dict(zip(solo["workload"], solo["throughput"]))
    print(f"profiled: {len(solo)} job types, {len(pairs)} pairs", flush=True)

    launch_path = out / "launches_measured.csv"
    if not launch_path.exists():
        compare.measure_launches(devs[0], config["workloads"], tput, out, settings).to_csv(launch_path, index=False)
    measured = pd.read_csv(launch_path)
    restart_cost = float(measured["lost_s"].clip(lower=0).mean())
    startup = dict(zip(measured["workload"], measured["startup_s"].clip(lower=0)))
    print(f"restart cost {restart_cost:.2f} s (mean over job types), start-up {startup}", flush=True)
    settings = dataclasses.replace(settings, restart_cost_s=restart_cost)  # the view's charge, real runs and replays

    jobs = trace.make(config["workloads"], config["n_jobs"], tput, config["min_s"], config["max_s"], config["seed"])
    preds = compare.predictions(solo, pairs)
    known = runner.profile_of(solo, pairs, name)
    real, segments, launches, run_stats = {}, [], [], {}
    with hardware.mps_daemon(bool(config.get("mps")), profiler.resolve(devs[0].torch_device)) as env:
        settings = dataclasses.replace(settings, env=tuple(env))
        for policy_name in config["policies"]:
            journal_path = out / "runs" / f"{policy_name}.jsonl"
            result = runner.run(jobs, make_policy(policy_name, config), devs, known, preds, journal_path, settings,
                                rerun_killed=True)
            real[policy_name] = result.jobs
            segments.append(result.segments.assign(policy=policy_name))
            launches.append(result.launches.assign(policy=policy_name))
            run_stats[policy_name] = result.stats
            print(f"real {policy_name}: mean JCT {result.jobs['jct'].mean():.2f} s, makespan "
                  f"{result.jobs['finish_time'].max():.2f} s", flush=True)
    segments, launches = pd.concat(segments, ignore_index=True), pd.concat(launches, ignore_index=True)
    pd.concat(real.values(), ignore_index=True).to_csv(out / "real_jobs.csv", index=False)
    segments.to_csv(out / "segments.csv", index=False)
    launches.to_csv(out / "launches.csv", index=False)

    sets = formed_sets(segments)
    if sets:
        records = profile(config, devs[0], out, sets=sets)
    set_table = profiler.sets_table(records) if sets else pd.DataFrame(columns=["device", "workload", "partners",
                                                                               "norm", "feasible"])
    set_table.to_csv(out / "sets.csv", index=False)
    if sets:  # each job of a measured set against the product of its pairs (the simulator's rule)
        extrapolation_error(pairs, set_table).to_csv(out / "extrapolation.csv", index=False)
    cap = config["max_jobs_per_gpu"]
    truths = {"sim": GroundTruth(solo, pairs, name, name="profiled on the testbed's device (product of pairs)"),
              "sim-measured-sets": compare.MeasuredSets(solo, pairs, set_table, name)}
    sims = {variant: {} for variant in ("sim", "sim-measured-sets", "sim+startup")}
    for policy_name in config["policies"]:
        for variant, truth in truths.items():
            sims[variant][policy_name] = compare.replay(jobs, make_policy(policy_name, config), truth, name,
                                                        len(devs), cap, restart_cost, preds)
        sims["sim+startup"][policy_name] = compare.replay(jobs, make_policy(policy_name, config), truths["sim"],
                                                          name, len(devs), cap, restart_cost, preds, startup)
    pd.concat([s.assign(replay=v) for v, by in sims.items() for s in by.values()],
              ignore_index=True).to_csv(out / "sim_jobs.csv", index=False)
    table = compare.table(real, sims)
    table.to_csv(out / "comparison.csv", index=False)
    per_job = pd.concat([compare.per_job(real[p], s).assign(policy=p, replay=v) for v, by in sims.items()
                         for p, s in by.items()], ignore_index=True)
    per_job.to_csv(out / "per_job.csv", index=False)
    fig = testbed_plots.jct_scatter(per_job[per_job["replay"] == "sim"], name, "sim",
                                    "profiled solo and pairs, product of pairs for 3+")
    plots.save(fig, out / "jct_scatter.png")
    summary = {"machine_before": before, "machine_after": machine(), "wall_s": round(time.monotonic() - started, 1),
               "devices": config["devices"], "device": name, "restart_cost_s": restart_cost, "startup_s": startup,
               "sets_formed": ["+".join(s) for s in sets], "prediction_source": compare.SOURCE,
               "disagreements": compare.disagreements(table), "real_run_stats": run_stats, "config": config}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "comparison.md").write_text(markdown(table, summary))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.round(3).to_string(index=False))
    for line in summary["disagreements"]:
        print("ranking differs:", line)
    print(f"done in {summary['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
