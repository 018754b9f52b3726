"""Co-located resource use: each job's use of every measured resource next to its co-runners.

ISACPP trains a second E-GGAT for resources (``ggat_prediction_resource``: GPU memory, GPU
utilization, PCIe) and reports the mean and maximum relative error per resource. Here the
published network (:class:`coloc.predict.egat.EGGAT`, same graphs, nodes and cross-fitted
edges) has one output per resource: the job's co-located over solo use (the ratio ISACPP's
score sums); a job's predicted use is that ratio times its solo use (a real scheduler has
profiled it). The job's solo use of each resource is a node feature too.

The resources are the columns the profiler records per job both solo and in pairs: ``R`` in
the solo table with ``R_a`` and ``R_b`` in the pairs table (today ``cpu_util`` and
``mem_bytes``: on a CPU, % of the cores and resident memory; on a GPU, ``mem_bytes`` is the
process's GPU memory). GPU utilization, PCIe traffic and power are sampled per device, not
per job, so a pair gives no per-job label for them. Gavel's tables hold throughputs only:
:func:`measured_resources` raises :class:`NoResources` saying so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from coloc import cpu_paths
from coloc.predict.base import InsufficientData, Tables, pair_queries
from coloc.predict.egat import EGGAT
from coloc.predict.evaluate import VALIDATION_GROUPS
from coloc.predict.inputs import job_frame, lookup
from coloc.predict.protocols import JOB_GROUPS, ProtocolSkipped, folds, group_of

# Per-job resource columns the profiler may record (coloc.profiler.tables), in this order.
RESOURCES = ("cpu_util", "mem_bytes", "gpu_util", "gpu_mem_bytes", "pcie_bytes_s", "power_w")
PREDICTION_COLUMNS = ["dataset", "protocol", "predictor", "seed", "fold", "held_out", "device", "workload", "other",
                      "resource", "solo", "use", "pred_use"]
SCORE_COLUMNS = ["dataset", "protocol", "predictor", "seed", "resource", "mean_error_pct", "max_error_pct", "n"]
# The predictors: the network, and the baseline "mean" (the training fold's mean co-located over solo use of
# the resource, times the job's solo use).
PREDICTORS = ("egat", "mean")


class NoResources(ValueError):
    """These tables have no per-job resource measurements (the message says why)."""


def measured_resources(tables: Tables) -> list[str]:
    """The resources measured per job solo and in pairs (with at least one finite value each)."""
    found = []
    for r in RESOURCES:
        columns = (r in tables.solo.columns and f"{r}_a" in tables.pairs.columns and f"{r}_b" in tables.pairs.columns)
        if columns and np.isfinite(tables.solo[r].astype(float)).any() \
                and np.isfinite(tables.pairs[f"{r}_a"].astype(float)).any():
            found.append(r)
    if not found:
        raise NoResources(f"no per-job resource columns (any of {list(RESOURCES)} in the solo table with _a/_b "
                          f"in the pairs table): solo has {list(tables.solo.columns)}")
    return found


def _solo_use(tables: Tables, resources) -> pd.DataFrame:
    return tables.solo.set_index(["device", "workload"])[list(resources)].astype(float)


def labelled_pairs(tables: Tables, resources) -> pd.DataFrame:
    """The feasible pairs whose jobs have a finite positive use of every resource, solo and co-located."""
    pairs = tables.pairs[tables.pairs["feasible"].astype(bool)].reset_index(drop=True)
    solo = _solo_use(tables, resources)
    ok = np.ones(len(pairs), bool)
    for side in ("a", "b"):
        keys = pd.MultiIndex.from_arrays([pairs["device"], pairs[f"workload_{side}"]])
        alone = solo.reindex(keys).to_numpy(float)
        shared = pairs[[f"{r}_{side}" for r in resources]].to_numpy(float)
        ok &= (np.isfinite(alone) & (alone > 0) & np.isfinite(shared) & (shared > 0)).all(1)
    return pairs[ok].reset_index(drop=True)


class ResourceEGGAT(EGGAT):
    """The published E-GGAT with one output per measured resource: co-located over solo use.

    Not a registered pair predictor (it predicts resources, not throughput); ``fit`` finds the
    resources (``resources_``) in the training tables.
    """

    name = "egat-resources"

    def fit(self, train: Tables, groups: str | None = None) -> "ResourceEGGAT":
        self.resources_ = measured_resources(train)
        return super().fit(train, groups)

    def _training_pairs(self, train: Tables) -> pd.DataFrame:
        return labelled_pairs(train, self.resources_)

    def _targets(self, pairs: pd.DataFrame, train: Tables) -> torch.Tensor:
        solo = _solo_use(train, self.resources_)
        sides = []
        for side in ("a", "b"):
            keys = pd.MultiIndex.from_arrays([pairs["device"], pairs[f"workload_{side}"]])
            shared = pairs[[f"{r}_{side}" for r in self.resources_]].to_numpy(float)
            sides.append(shared / solo.reindex(keys).to_numpy(float))
        return torch.tensor(np.stack(sides, 1), dtype=torch.float32)  # [G, 2, resources]

    def _feature_columns(self, workloads: pd.DataFrame) -> list[str]:
        return super()._feature_columns(workloads) + [f"solo_{r}" for r in self.resources_]

    def _raw_nodes(self, tables: Tables) -> pd.DataFrame:
        graph = [c for c in self.columns_ if not c.startswith("solo_")]
        frame = np.log1p(job_frame(tables)[graph].astype(float))
        solo = np.log1p(_solo_use(tables, self.resources_).clip(lower=0)).add_prefix("solo_")
        return frame.join(solo, how="left")[self.columns_]

    def predict_ratios(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        """Each query's job's co-located over solo use of every resource (columns ``resources_``)."""
        return pd.DataFrame(self._outputs(queries, context).numpy().astype(float).reshape(len(queries), -1),
                            index=queries.index, columns=self.resources_)

    def predict_use(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        """Predicted co-located use: the ratios times the job's solo use in ``context``."""
        solo = lookup(_solo_use(context, self.resources_), queries["device"], queries["workload"], "resources")
        return self.predict_ratios(queries, context) * solo.to_numpy(float)


def evaluate_resources(tables: Tables, dataset: str, protocol: str, seeds, k: int = 5, options: dict | None = None,
                       notes: list | None = None) -> pd.DataFrame:
    """Out-of-fold predicted co-located use of every measured resource (PREDICTION_COLUMNS), one row per
    job of each labelled test pair and resource. Under lofo / lojo each job is predicted in the fold that
    held out its own group. Raises :class:`NoResources` (no resource columns) or
    :class:`coloc.predict.protocols.ProtocolSkipped`; a fold too small to fit is left out with a line in ``notes``.
    """
    notes = [] if notes is None else notes
    cpu_paths.warn_unless_fixed("the resource E-GGAT's fits")
    resources = measured_resources(tables)
    labelled = labelled_pairs(tables, resources)
    own = group_of(JOB_GROUPS[protocol]) if protocol in JOB_GROUPS else None
    solo = _solo_use(tables, resources)
    frames = []
    for seed in seeds:
        for fold in folds(tables.with_pairs(labelled), protocol, seed, k):
            model = ResourceEGGAT(seed=seed, **(options or {}))
            try:
                model.fit(fold.train, groups=VALIDATION_GROUPS[protocol])
            except InsufficientData as err:
                notes.append(f"{dataset} {protocol} seed {seed} fold {fold.held_out}: skipped ({err})")
                continue
            queries = pair_queries(fold.test)
            alone = lookup(solo, queries["device"], queries["workload"], "resources")[model.resources_]
            ratios = model._targets(model._training_pairs(fold.train), fold.train).reshape(-1, len(model.resources_))
            guesses = {"egat": model.predict_use(queries, tables),
                       "mean": alone * ratios.mean(0).numpy().astype(float)}
            for name, guess in guesses.items():
                for r in model.resources_:
                    frame = pd.DataFrame({
                        "dataset": dataset, "protocol": protocol, "predictor": name, "seed": seed,
                        "fold": fold.fold, "held_out": fold.held_out, "device": queries["device"].to_numpy(),
                        "workload": queries["workload"].to_numpy(), "other": [c[0] for c in queries["co_runners"]],
                        "resource": r, "solo": alone[r].to_numpy(float), "pred_use": guess[r].to_numpy(float),
                        "use": np.r_[fold.test[f"{r}_a"].to_numpy(float), fold.test[f"{r}_b"].to_numpy(float)]})
                    frames.append(frame if own is None else frame[frame["workload"].map(own) == fold.held_out])
    if not frames:
        return pd.DataFrame(columns=PREDICTION_COLUMNS)
    return pd.concat(frames, ignore_index=True)[PREDICTION_COLUMNS]


def resource_scores(predictions: pd.DataFrame) -> pd.DataFrame:
    """ISACPP's metrics per dataset, protocol, seed and resource: mean and maximum relative error (%)."""
    if predictions.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    error = (predictions["pred_use"] - predictions["use"]).abs() / predictions["use"] * 100
    grouped = predictions.assign(error=error).groupby(["dataset", "protocol", "predictor", "seed", "resource"],
                                                                sort=True)["error"]
    out = grouped.agg(mean_error_pct="mean", max_error_pct="max", n="size").reset_index()
    return out[SCORE_COLUMNS]


def resource_summary(scores: pd.DataFrame, skipped: dict | None = None) -> pd.DataFrame:
    """Mean over seeds of each (dataset, protocol, resource)'s errors (max: the largest), and one row per
    skipped dataset or protocol with its reason (``skipped``: {(dataset, protocol): reason})."""
    keys = ["dataset", "protocol", "resource", "predictor"]
    out = scores.groupby(keys, sort=True).agg(mean_error_pct=("mean_error_pct", "mean"),
                                              max_error_pct=("max_error_pct", "max"), seeds=("seed", "nunique"),
                                              n=("n", "mean")).reset_index()
    out["skipped"] = ""
    rows = [{"dataset": d, "protocol": p, "resource": "", "predictor": "", "skipped": why} for (d, p), why in (skipped or {}).items()]
    return pd.concat([out, pd.DataFrame(rows, columns=out.columns)], ignore_index=True) if rows else out


def run_resources(tables: dict, protocols, seeds, k: int = 5, options: dict | None = None):
    """Every dataset ({name: Tables}) under every protocol: (predictions, {(dataset, protocol): reason skipped}).

    A dataset without resource columns is skipped for every protocol, a protocol that does not apply to
    a dataset (e.g. xdevice on one device) for that dataset, and a fold too small to fit is noted.
    """
    frames, skipped = [], {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: a second thread costs more than it gives on shared cores
    try:
        for dataset, data in tables.items():
            _run_dataset(dataset, data, protocols, seeds, k, options, frames, skipped)
    finally:
        torch.set_num_threads(threads)
    frames = [f for f in frames if not f.empty]
    predictions = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PREDICTION_COLUMNS)
    return predictions, skipped


def _run_dataset(dataset, data, protocols, seeds, k, options, frames: list, skipped: dict) -> None:
    for protocol in protocols:
        notes = []
        try:
            frames.append(evaluate_resources(data, dataset, protocol, seeds, k, options, notes))
        except (NoResources, ProtocolSkipped) as err:
            skipped[dataset, protocol] = str(err)
        if notes:
            skipped[dataset, f"{protocol} (folds)"] = "; ".join(notes)
