"""Small hand-made tables and helpers shared by the simulator and policy tests."""
from __future__ import annotations

import pandas as pd

from coloc.policies.base import Policy
from coloc.sim import GroundTruth, Predictions


def tables(norms: dict[tuple[str, str], tuple[float, float]], tputs: dict[str, float] | None = None,
           device: str = "v100", infeasible: tuple[tuple[str, str], ...] = (), labels: dict[str, int] | None = None):
    """(solo, pairs) for one device; `norms[(a, b)] = (norm_a, norm_b)`, every listed pair feasible; `labels`: each
    job type's Lucid packing label (the solo table's `lucid_label`)."""
    tputs = tputs or {w: 10.0 for pair in norms for w in pair}
    solo = pd.DataFrame({"device": device, "workload": list(tputs), "throughput": list(tputs.values())})
    if labels is not None:
        solo["lucid_label"] = solo["workload"].map(labels)
    rows = []
    for (a, b), (na, nb) in norms.items():
        rows.append({"device": device, "workload_a": a, "workload_b": b, "tput_a": na * tputs[a],
                     "tput_b": nb * tputs[b], "norm_a": na, "norm_b": nb, "feasible": True})
    for a, b in infeasible:
        rows.append({"device": device, "workload_a": a, "workload_b": b, "tput_a": 0.0, "tput_b": 0.0,
                     "norm_a": float("nan"), "norm_b": float("nan"), "feasible": False})
    return solo, pd.DataFrame(rows)


ABC = {("a", "a"): (0.6, 0.6), ("a", "b"): (0.5, 0.8), ("a", "c"): (0.8, 0.9),
       ("b", "b"): (0.7, 0.7), ("b", "c"): (0.4, 0.3), ("c", "c"): (0.9, 0.9)}
ABC_LABELS = {"a": 1, "b": 2, "c": 0}  # Lucid's packing labels: b packs with c only, a with a or c, c with any


def truth_abc(**kwargs) -> GroundTruth:
    solo, pairs = tables(ABC, **{"labels": ABC_LABELS, **kwargs})
    return GroundTruth(solo, pairs, "v100")


def kept_ends(ends, view) -> list[float]:
    """A policies.ends.PredictedEnds' predicted times until each running job ends, at view.now, ascending (read
    again from the view's change log first)."""
    ends.refresh(view)
    return sorted(ends.kept_times(view.now).tolist())


def trace(rows) -> pd.DataFrame:
    """rows of (job_id, submit_time, duration, num_gpus, workload)."""
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "duration", "num_gpus", "workload"])


def predictions(norms: dict[tuple[str, str], tuple[float, float]], stds: dict | None = None,
                utils: dict[str, float] | None = None, device: str = "v100") -> Predictions:
    """Hand-written predictions on one device (symmetric like the predictors' files)."""
    rows = [{"device": device, "workload_a": a, "workload_b": b, "predictor": "hand",
             "pred_norm_a": na, "pred_norm_b": nb,
             "pred_std_a": (stds or {}).get((a, b), (0.0, 0.0))[0],
             "pred_std_b": (stds or {}).get((a, b), (0.0, 0.0))[1]} for (a, b), (na, nb) in norms.items()]
    util = None
    if utils is not None:
        util = pd.DataFrame({"device": device, "workload": list(utils), "predictor": "hand",
                             "util": list(utils.values()), "pred_util": list(utils.values())})
    return Predictions.from_frames(pd.DataFrame(rows), util, "hand", "hand" if utils else None, source="hand")


class Scripted(Policy):
    """Test helper: at each round, places the jobs named in `plan[job_id] = gpus` once they are queued."""

    name = "scripted"

    def __init__(self, plan: dict[int, tuple[int, ...]]):
        self.plan = plan

    def schedule(self, view) -> None:
        for job in list(view.queue):
            if job.job_id in self.plan:
                view.place(job, self.plan[job.job_id])
