"""Rerun some (scenario, policy, points) of the simulation as the simulate rule runs them, on a finished run's data,
and compare them with that run's other policies.

    python scripts/sim_points.py --run /work/final --out /tmp/points poisson-3090:coloc-online:0.9,1.1 ...
    python scripts/sim_points.py --run /work/final --out /tmp/points --compare

Each item is scenario:policy[:points] (points of the scenario's swept key; all if left out), simulated with this
checkout's code on the run's processed tables and predictions, every seed, the summary rows written to
<out>/<scenario>/<policy>.parquet. `--compare` prints, per scenario point in <out>: fifo's busy share in the run, the
mean JCT (h) of the best other deployable policy of the run, and for each rerun policy its mean JCT in the run and
now, with the paired change against that best other and its 95% interval over seeds (coloc.stats.ratio_ci).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml

from coloc import memory
from coloc.sim import experiment, scenarios
from coloc.stats import ratio_ci

OURS = ("coloc", "coloc-online", "oracle", "coloc-fifo", "coloc-probe")  # not "other deployable" policies


def rerun(run: Path, out: Path, item: str, config: dict) -> pd.DataFrame:
    scenario, policy, *points = item.split(":")
    sim = config["simulation"]
    spec = dict(sim["scenario_specs"][scenario])
    if points:
        spec["sweep"] = {next(iter(spec["sweep"])): [float(p) for p in points[0].split(",")]}
    settings = {key: sim[key] for key in scenarios.SETTINGS}
    dataset = scenarios.dataset_of(spec)
    data = run / "data" / "processed"
    tables = data / "lucid" if dataset == "lucid" else data
    solo, pairs = pd.read_parquet(tables / "solo.parquet"), pd.read_parquet(tables / "pairs.parquet")
    solo, source = memory.with_memory(solo, pd.read_parquet(data / "memory.parquet"))
    trace = pd.read_parquet(data / "trace.parquet") if spec["trace"]["source"] == "philly" else None
    protocol = experiment.protocol_of(policy, scenarios.settings_of(spec, settings)["protocol"])
    files = [data / kind / dataset / f"{protocol}.parquet" for kind in ("predictions", "utilization")]
    paths = [str(f) if f.exists() else "" for f in files]
    summary = scenarios.run_policy(scenario, policy, spec, settings, solo, pairs, trace, *paths,
                                   log=lambda message: None, memory_source=source)["summary"]
    target = out / scenario / f"{policy}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    summary.to_parquet(target)
    return summary


def compare(run: Path, out: Path) -> None:
    before = pd.read_parquet(run / "results" / "sim" / "summary.parquet")
    before = before[~before["policy"].str.contains("@")]
    now = pd.concat([pd.read_parquet(f) for f in sorted(out.glob("*/*.parquet"))])
    for (scenario, point), rows in now.groupby(["scenario", "point"]):
        old = before[(before["scenario"] == scenario) & (before["point"] == point)]
        busy = old.loc[old["policy"] == "fifo", "busy_share"].mean()
        others = old[~old["policy"].isin(OURS)].groupby("policy")["jct_mean"].mean()
        best = others.idxmin()
        base = old[old["policy"] == best].set_index("seed")["jct_mean"]
        line = f"{scenario} {point:g} | fifo busy {busy:.2f} | best other {best} {base.mean() / 3600:.4f} h"
        for policy, mine in rows.groupby("policy"):
            x = mine.set_index("seed")["jct_mean"]
            was = old.loc[old["policy"] == policy, "jct_mean"].mean() / 3600
            change, low, high = ratio_ci(x, base.loc[x.index])
            line += (f" | {policy} {was:.4f} -> {x.mean() / 3600:.4f} h, {100 * change:+.1f}% "
                     f"[{100 * low:+.1f}, {100 * high:+.1f}]")
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a finished run's folder (data/, results/)")
    parser.add_argument("--out", type=Path, required=True, help="where the rerun summaries go")
    parser.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    parser.add_argument("--compare", action="store_true", help="compare what is in --out with the run")
    parser.add_argument("items", nargs="*", help="scenario:policy[:point,point...]")
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    for item in args.items:
        summary = rerun(args.run, args.out, item, config)
        means = summary.groupby("point")["jct_mean"].mean() / 3600
        print(item, " ".join(f"{p:g}: {m:.4f} h" for p, m in means.items()), flush=True)
    if args.compare:
        compare(args.run, args.out)


if __name__ == "__main__":
    main()
