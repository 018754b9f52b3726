"""ISACPP's ablation of its E-GGAT: without GPU features, without hyperparameter features, without model
features, and with 1 to 5 blocks; MAPE per protocol (notebook 03_ablation, on when config predictors.ablation.run).

Each variant is a configured pair predictor (``base`` egat with the configured egat options and one change),
evaluated like every other predictor (:func:`coloc.predict.stage.run_protocol`).
"""

from __future__ import annotations

import pandas as pd

from coloc.predict.registry import RUN_OPTIONS

DROPS = {"gpu": "without GPU features", "hyper": "without hyperparameter features",
         "model": "without model features"}


def variants(egat_options: dict, layers=(1, 2, 3, 4, 5)) -> dict:
    """{name: options} of every variant: the configured egat without each feature group, and with each number
    of blocks (the run options of ``egat_options`` such as seeds are left out: the ablation has its own)."""
    base = {k: v for k, v in egat_options.items() if k not in RUN_OPTIONS}
    out = {f"egat-no-{group}": {**base, "base": "egat", "drop": [group]} for group in DROPS}
    out |= {f"egat-blocks-{n}": {**base, "base": "egat", "layers": int(n)} for n in layers}
    return out


def describe(name: str) -> str:
    """The variant in words, e.g. "without GPU features" or "3 blocks"."""
    if name.startswith("egat-no-"):
        return DROPS[name.removeprefix("egat-no-")]
    n = int(name.removeprefix("egat-blocks-"))
    return f"{n} block" + ("s" if n > 1 else "")


def ablation_table(summary: pd.DataFrame, order) -> pd.DataFrame:
    """MAPE (%) per variant (rows, in ``order``: the names of :func:`variants`) and protocol (columns, in the
    summary's order), mean over seeds (``summary``: :func:`coloc.predict.stage.summary` of the variants' scores)."""
    if summary.empty:
        return pd.DataFrame()
    protocols = list(dict.fromkeys(summary["protocol"]))
    table = summary.pivot_table(index="predictor", columns="protocol", values="MAPE", aggfunc="mean")
    table = table.reindex(index=[n for n in order if n in table.index], columns=protocols)
    table.insert(0, "variant", [describe(n) for n in table.index])
    return table
