"""Score pair predictors under one protocol on a finished run's tables, with the CPU code paths pinned or not.

    python benchmarks/predictor_paths.py --processed data/processed --protocol random5 \
        --models egat egat-selfloops [--seeds 0 1 2] [--fold 0] [--native] [--workers 2]

Each model gets the default config's egat options (``predictors.models.egat`` of config/config.yaml, without its
run options) unless ``--options`` gives a JSON object. Prints the paths in effect, each model's MAPE per seed, its
CPU seconds (fit and predict, summed over folds) and a hash of its predictions: run it twice under different
forced environments (e.g. ``ATEN_CPU_CAPABILITY=avx2``, ``MKL_ENABLE_INSTRUCTIONS=SSE4_2``) to see whether the
predictions are the same bits. ``--native`` keeps the machine's own paths (``COLOC_CPU_PATHS=native``);
``--fold`` scores one fold only (the fold's own test pairs).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

import yaml

from coloc import cpu_paths

REPO = Path(__file__).resolve().parents[1]


def egat_options() -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return {k: v for k, v in config["predictors"]["models"]["egat"].items() if k not in ("seeds", "protocols")}


def digest(predictions) -> str:
    values = predictions.sort_values(["seed", "fold", "device", "workload_a", "workload_b"])
    return hashlib.sha256(values[["pred_norm_a", "pred_norm_b"]].to_numpy().tobytes()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processed", default="data/processed", help="a finished run's data/processed")
    parser.add_argument("--protocol", default="random5")
    parser.add_argument("--models", nargs="+", default=["egat"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--options", type=json.loads, default=None, help="JSON options of every model")
    parser.add_argument("--fold", type=int, default=None, help="only this fold (position in the protocol's folds)")
    parser.add_argument("--native", action="store_true", help="keep the machine's own CPU paths")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if args.native:
        os.environ[cpu_paths.OPT_OUT] = "native"
    print("CPU paths:", cpu_paths.pin())

    import pandas as pd

    from coloc.predict import stage
    from coloc.predict.evaluate import PRED_COLUMNS, Evaluation, _fold_task, scores_of
    from coloc.predict.protocols import folds

    base = Path(args.processed)
    tables = stage.load_tables(base / "workloads.parquet", base / "solo.parquet", base / "pairs.parquet")
    options = egat_options() if args.options is None else args.options
    models = {name: options for name in args.models}
    if args.fold is None:
        run = stage.run_protocol(tables, args.protocol, models, {}, args.seeds, 5, args.workers)
    else:
        frames, timings = [], []
        for seed in args.seeds:
            f, _, t = _fold_task(folds(tables, args.protocol, seed, 5)[args.fold], tables, seed, models)
            frames, timings = frames + f, timings + t
        run = Evaluation(args.protocol, pd.concat(frames, ignore_index=True)[PRED_COLUMNS], pd.DataFrame(),
                         timings=pd.DataFrame(timings))
    overall = scores_of(run).query("scope == 'overall'")
    for name, part in run.predictions.groupby("predictor"):
        mape = overall[overall["predictor"] == name].set_index("seed")["MAPE"].round(3).to_dict()
        cpu = run.timings.loc[run.timings["predictor"] == name, ["fit_s", "predict_s"]].to_numpy().sum()
        print(f"{name}: MAPE by seed {mape}, {cpu:.1f} CPU s, predictions {digest(part)}")


if __name__ == "__main__":
    main()
