"""Measure a co-location dataset on this machine's GPU with coloc's profiler, and record its provenance.

One short run for a GPU machine: six zoo job types from five families, each solo and in every
pair (self-pairs included: 21 pairs), three repeats, NVML metrics sampled while the jobs train. The same
code runs on the CPU (``--device cpu``), which is how it is tested.

Writes, under ``--out``:
* ``measurements.jsonl``: the profiler's append-only log, one record per measurement as it finishes
  (a rerun with the same ``--out`` measures only what the log lacks);
* ``solo``, ``pairs``, ``jobs`` tables (Parquet and CSV) in the contracts of ARCHITECTURE.md, rewritten
  after every round of repeats, so a run cut short still leaves the tables of its finished rounds;
* ``provenance.json``: GPU name, driver, CUDA and torch versions, date, host, the exact settings.

    python scripts/gpu_dataset.py --out "$OUT/h200"              # about 8 minutes on one GPU
    python scripts/gpu_dataset.py --device cpu --out /tmp/cpu --workloads resnet18-cifar10-b16 \
        squeezenet-cifar10-b32 --repeats 1 --window-s 0.5
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

from coloc import datasets, profiler

# Gavel job types (so the V100's numbers can be set beside them), five families, light to heavy.
WORKLOADS = ["resnet50-imagenet-b32", "resnet18-cifar10-b64", "transformer-multi30k-b64", "lm-wikitext2-b20",
             "recommendation-ml20m-b2048", "cyclegan-monet2photo-b1"]


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="folder for the log, the tables and provenance.json")
    p.add_argument("--device", default="cuda", help="cuda, cuda:N, cpu or auto (default: cuda)")
    p.add_argument("--workloads", nargs="+", default=WORKLOADS, help="zoo job types (coloc.workloads.names())")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup-s", type=float, default=1.0)
    p.add_argument("--window-s", type=float, default=2.0)
    p.add_argument("--timeout-s", type=float, default=90.0)
    p.add_argument("--mps", action="store_true", help="run with the CUDA MPS daemon on")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def versions(device: profiler.Device) -> dict:
    """What measured: device, driver, CUDA, torch, host, date."""
    import torch

    out = {"device": device.name, "torch_device": device.torch_device, "device_note": device.note,
           "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
           "host": platform.node(), "platform": platform.platform(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if device.kind == "gpu":
        index = int(device.torch_device.split(":")[1])
        props = torch.cuda.get_device_properties(index)
        out.update(gpu_name=props.name, gpu_memory_bytes=int(props.total_memory),
                   compute_capability=f"{props.major}.{props.minor}", cudnn=torch.backends.cudnn.version())
        try:
            import pynvml

            pynvml.nvmlInit()
            driver = pynvml.nvmlSystemGetDriverVersion()
            out["driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
        except Exception as exc:  # noqa: BLE001 - NVML missing or failing: say so in the record
            out["driver"] = f"unknown (NVML: {type(exc).__name__}: {exc})"
    return out


def write_tables(records: list[dict], out: Path) -> dict:
    """The solo, pairs and jobs tables of the records so far, as Parquet and CSV; their row counts."""
    solo = profiler.solo_table(records)
    tables = {"solo": solo, "pairs": profiler.pairs_table(records, solo), "jobs": profiler.jobs_table(records)}
    for name, table in tables.items():
        datasets.save_table(table, out / f"{name}.parquet")
        table.to_csv(out / f"{name}.csv", index=False)
    return {name: len(table) for name, table in tables.items()}


def main(argv=None) -> int:
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = profiler.Settings(device=args.device, warmup_s=args.warmup_s, window_s=args.window_s,
                                 timeout_s=args.timeout_s, mps=args.mps, seed=args.seed)
    device = profiler.resolve(args.device)
    plan = profiler.plan(args.workloads, repeats=args.repeats, set_sizes=(2,), seed=args.seed)
    provenance = {**versions(device), "command": [sys.executable, *sys.argv],
                  "workloads": args.workloads, "repeats": args.repeats, "settings": asdict(settings),
                  "measurements_planned": len(plan), "rounds_done": 0, "wall_s": None}
    log, started = args.out / "measurements.jsonl", time.monotonic()
    records: list[dict] = []
    for repeat in range(args.repeats):  # one round at a time: its tables are on disk before the next starts
        records += profiler.run([m for m in plan if m.repeat == repeat], log, settings)
        rows = write_tables(records, args.out)
        provenance.update(rounds_done=repeat + 1, rows=rows, wall_s=round(time.monotonic() - started, 1))
        (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str) + "\n")
        print(f"round {repeat + 1}/{args.repeats}: {rows} after {provenance['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
