"""The simulator held against the testbed: the same trace replayed on the tables the profiler measured on the
testbed's device, and the two set side by side.

* Truth of the replay: the profiled solo and pair tables of one of the testbed's devices; where 3 or more jobs
  share a device, either today's product of pairs (`sets: product`) or, where the profiler measured that set
  (the sets the real runs formed), its measured factor (`sets: measured`; the product elsewhere).
* The policies' predictions (the same in the real run and the replay): each pair's normalized throughput
  predicted without that pair (leave one pair out: ridge regression of the log factor on job and co-runner
  effects over the other measured pairs of the device), and each job type's profiled solo utilization (CPU
  or GPU busy share, measured alone) as Horus's utilization. Both are stated in `SOURCE`.
* `restart_cost_s` of the replay: measured on the testbed's device before the runs (:func:`measure_launches`): a
  job stopped with its checkpoint and started again from its count, the seconds lost against training on.
* `startup`: a further replay, `sim+startup`, charges each job its job type's start-up measured there too
  (process start, build, the first step's allocations, in solo seconds).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from coloc.pairs import directed, keyed_mean
from coloc.sim.cluster import ClusterSpec
from coloc.sim.engine import simulate
from coloc.sim.interference import GroundTruth
from coloc.sim.predictions import Predictions

from .devices import Device

SOURCE = ("pair factors: leave-one-pair-out ridge (job and co-runner effects, log space) on the profiled pairs of "
          "the testbed's device; utilization: profiled solo busy share")
RIDGE = 1.0


class MeasuredSets(GroundTruth):
    """The profiled truth, with the measured factor of a set of 3 or more where the profiler measured that set."""

    def __init__(self, solo, pairs, sets: pd.DataFrame, device: str):
        super().__init__(solo, pairs, device, name="profiled on the testbed's device, measured sets of 3+")
        rows = sets[sets["feasible"].astype(bool)] if len(sets) else sets
        self._sets = {}
        for row in rows.itertuples(index=False):
            key = (row.device, row.workload, tuple(sorted(row.partners.split("+"))))
            self._sets.setdefault(key, []).append(float(row.norm))
        self._sets = {k: float(np.mean(v)) for k, v in self._sets.items()}
        self.used_sets: set = set()

    def norm(self, device: str, workload: str, others) -> float:
        if len(others) >= 2:
            key = (device, workload, tuple(sorted(others)))
            if key in self._sets:
                self.used_sets.add(key)
                return self._sets[key]
        return super().norm(device, workload, others)


def out_of_fold_norms(pairs: pd.DataFrame, ridge: float = RIDGE) -> dict[tuple[str, str, str], float]:
    """{(device, job, co-runner): predicted factor}, each pair predicted by a fit on the device's other pairs."""
    rows = directed(pairs[pairs["feasible"].astype(bool)][["device", "workload_a", "workload_b", "norm_a", "norm_b"]])
    truth = keyed_mean(rows, "norm")
    out = {}
    for key in truth:
        device, a, b = key
        pair = {(device, a, b), (device, b, a)}
        train = {k: v for k, v in truth.items() if k[0] == device and k not in pair}
        out[key] = _effects_fit(train, ridge, a, b)
    return out


def _effects_fit(train: dict, ridge: float, a: str, b: str) -> float:
    """exp(mean + u[a] + v[b]) of a ridge fit of log factors on job effects u and co-runner effects v."""
    if not train:
        return 0.5
    terms = sorted({("job", k[1]) for k in train} | {("co", k[2]) for k in train})
    index = {t: i for i, t in enumerate(terms)}
    x = np.zeros((len(train), len(terms)))
    y = np.log(np.clip(np.array(list(train.values())), 1e-3, None))
    for row, (_, job, co) in enumerate(train):
        x[row, index[("job", job)]] = 1.0
        x[row, index[("co", co)]] = 1.0
    mean = y.mean()
    beta = np.linalg.solve(x.T @ x + ridge * np.eye(len(terms)), x.T @ (y - mean))
    value = mean + sum(beta[index[t]] for t in (("job", a), ("co", b)) if t in index)
    return float(min(1.0, math.exp(value)))


def predictions(solo: pd.DataFrame, pairs: pd.DataFrame) -> Predictions:
    """What the predictive policies read, in the real runs and the replays alike (see the module docstring)."""
    column = "gpu_util" if "gpu_util" in solo.columns and solo["gpu_util"].notna().all() else "cpu_util"
    utils = {(r.device, r.workload): min(max(float(getattr(r, column)) / 100.0, 0.0), 1.0)
             for r in solo.itertuples(index=False)}
    return Predictions(out_of_fold_norms(pairs), {}, utils, source=SOURCE)


def replay(trace: pd.DataFrame, policy, truth: GroundTruth, device: str, n_devices: int, cap: int,
           restart_cost_s: float, preds: Predictions | None, startup: dict[str, float] | None = None) -> pd.DataFrame:
    """The simulated jobs table of `trace` under `policy` on `n_devices` of `device`; with `startup`, each job's
    work grows by its type's start-up (solo seconds)."""
    spec = ClusterSpec(((device, n_devices),), gpus_per_node=n_devices, max_jobs_per_gpu=cap)
    work = trace.copy()
    if startup is not None:
        work["duration"] = work["duration"] + work["workload"].map(startup).fillna(0.0)
    jobs = simulate(work[["job_id", "submit_time", "duration", "num_gpus", "workload"]], truth, policy, spec,
                    preds, restart_cost_s).jobs
    return jobs


def measure_launches(device: Device, workloads, solo_tput: dict[str, float], folder, settings,
                     steps_before: int = 2) -> pd.DataFrame:
    """A start and a restart of each job type alone on `device`, measured before any testbed run.

    `startup_s`: from launching a fresh process to the end of its first step, less one solo step (process start,
    job build, the first step's allocations). The job then trains `steps_before` steps, is stopped (it writes its
    checkpoint) and started again from its count: `lost_s`, from the stop request to the new process's first
    step, less the solo time of the steps done meanwhile (the old process's last step and the new one's first)."""
    from coloc.profiler.worker import JobSpec

    from .process import Process, Run, start_server

    context = start_server(settings.omp_wait_policy)
    rows = []
    for workload in workloads:
        spec = JobSpec(workload=workload, device=device.torch_device, threads=device.threads, cpus=device.cpus,
                       batch_size=settings.batch_size, reduced=settings.reduced, seed=settings.seed,
                       omp_wait_policy=settings.omp_wait_policy)
        step = 1.0 / solo_tput[workload]
        ckpt = f"{folder}/restart-{workload}.pt"
        old = Process(context, Run(spec, 0, 10**9, ckpt))
        try:
            while old.n < steps_before:
                old.conn.poll(60)
                old.read()
            asked, n_asked = time.monotonic(), old.n
            old.stop(settings.stop_timeout_s)
        finally:
            old.close()
        new = Process(context, Run(spec, old.n, old.n + 1, ckpt))
        try:
            while new.ended is None:
                new.conn.poll(60)
                new.read()
        finally:
            new.close()
            Path(ckpt).unlink(missing_ok=True)
        progress = (old.n - n_asked) + 1
        rows.append({"workload": workload, "startup_s": old.first_step - old.launched - step,
                     "lost_s": (new.first_step - asked) - progress * step, "ready_s": old.ready - old.launched,
                     "restart_ready_s": new.ready - new.launched, "stop_s": old.t - asked, "solo_step_s": step})
    return pd.DataFrame(rows)


def per_job(real: pd.DataFrame, sim: pd.DataFrame) -> pd.DataFrame:
    """Real and simulated JCT of every job of one policy, and their ratio simulated / real."""
    both = real[["job_id", "workload", "jct"]].merge(sim[["job_id", "jct"]], on="job_id", suffixes=("_real", "_sim"))
    both["ratio"] = both["jct_sim"] / both["jct_real"]
    return both


def table(real: dict[str, pd.DataFrame], sims: dict[str, dict[str, pd.DataFrame]]) -> pd.DataFrame:
    """Per policy and replay: mean JCT and makespan real and simulated, the mean JCT's error, the per-job ratio's
    median, p10 and p90, and each policy's rank by mean JCT in reality and in the replay (1: least)."""
    rows = []
    for variant, by_policy in sims.items():
        for policy, sim in by_policy.items():
            jobs = per_job(real[policy], sim)
            r_mean, s_mean = float(real[policy]["jct"].mean()), float(sim["jct"].mean())
            r_span = float(real[policy]["finish_time"].max() - real[policy]["submit_time"].min())
            s_span = float(sim["finish_time"].max() - sim["submit_time"].min())
            rows.append({"replay": variant, "policy": policy, "n_jobs": len(jobs), "jct_mean_real": r_mean,
                         "jct_mean_sim": s_mean, "jct_mean_error": s_mean / r_mean - 1.0, "makespan_real": r_span,
                         "makespan_sim": s_span, "makespan_error": s_span / r_span - 1.0,
                         "ratio_median": float(jobs["ratio"].median()), "ratio_p10": float(jobs["ratio"].quantile(.1)),
                         "ratio_p90": float(jobs["ratio"].quantile(.9))})
    out = pd.DataFrame(rows)
    out["rank_real"] = out.groupby("replay")["jct_mean_real"].rank(method="min").astype(int)
    out["rank_sim"] = out.groupby("replay")["jct_mean_sim"].rank(method="min").astype(int)
    return out


def disagreements(comparison: pd.DataFrame) -> list[str]:
    """Pairs of policies the replay orders otherwise than reality (by mean JCT), per replay."""
    out = []
    for variant, rows in comparison.groupby("replay", sort=False):
        rows = rows.reset_index(drop=True)
        for i in range(len(rows)):
            for k in range(i + 1, len(rows)):
                a, b = rows.iloc[i], rows.iloc[k]
                real = np.sign(a["jct_mean_real"] - b["jct_mean_real"])
                sim = np.sign(a["jct_mean_sim"] - b["jct_mean_sim"])
                if real != sim:
                    out.append(f"{variant}: {a['policy']} vs {b['policy']}: real {a['jct_mean_real']:.1f} s vs "
                               f"{b['jct_mean_real']:.1f} s, simulated {a['jct_mean_sim']:.1f} s vs "
                               f"{b['jct_mean_sim']:.1f} s")
    return out
