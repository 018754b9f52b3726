"""The claims table: each headline claim of Horus and ISACPP next to coloc's measurement of the same comparison.

One row per claim (:data:`COLUMNS`): the paper's words and value; the comparison coloc ran
(``scenario``, ``baseline``, ``metric``); coloc's value with its 95% interval over seeds
(:mod:`coloc.stats`); a ``verdict`` (:data:`VERDICTS`) by the explicit rules below; and the reason.

Units of ``coloc_value`` / ``ci_low`` / ``ci_high``: a relative change in percent for a comparison
of two policies (-16.1 = 16.1% lower than the baseline), else the metric's own unit (RMSLE, MAPE in
%, seconds).

Verdict rules (one function per kind of claim):

* ``change`` (policy X vs baseline Y, paired over seeds, :func:`coloc.stats.ratio_ci`), the paper's
  value a number or a range [lo, hi] whose sign is the claimed direction (:func:`change_verdict`):
  1. the interval holds 0, or the change is in the other direction: **not reproduced**;
  2. the interval meets the paper's value / range, or lies wholly beyond it in the claimed
     direction (a larger gain): **reproduced**;
  3. otherwise (the claimed direction, all of the interval short of the paper's value):
     **same direction, smaller**.
  Without an interval (one seed) the point value takes the interval's place, and the reason says so; an
  unbounded interval (several seeds, Fieller's set unbounded: the baseline's mean not told from zero) holds 0.
* ``at_most`` (an error the paper bounds, e.g. RMSLE 0.154; :func:`at_most_verdict`): **reproduced**
  when the interval's low end (or the value) is at or below the paper's value, else **not reproduced**.
* ``value`` (a quantity the paper reports, e.g. 35.4 s of scheduling delay; :func:`value_verdict`):
  **reproduced** when the interval meets [value / 2, value x 2] (a factor of two: a different
  implementation on different hardware), else **not reproduced**. The scheduling delay is such a value but
  not the same quantity (coloc times the policy's search with predictions looked up; ISACPP's delay also holds
  E-GGAT inference on its testbed): **not comparable**, coloc's value beside it.
* ``finding`` (a comparison the paper does not make, e.g. ISACPP against exclusive fifo): **coloc's finding**,
  with the change and its interval; the reason says whether the interval lies below 0, above it, or holds it.
* A positive quantity over seeds (an error, a time) is given as its geometric mean with the t interval of its
  logs taken back (:func:`coloc.stats.positive_ci`), so its interval never reaches below 0.
* Where the paper's per-job data exist (ISACPP's 51 completion times, :mod:`coloc.published`), the target of a
  ``change`` claim is the published change's paired bootstrap interval over the jobs, not its point: coloc's
  interval meeting that interval is **reproduced**.
* A makespan claim whose runs are pinned by one job (its submission plus exclusive duration at least
  :data:`PINNED_SHARE` of the makespan in every run of both policies) is **not comparable**: such a makespan moves
  with that job, not the policy; the reason says so.
* **not comparable**: the baseline is not implemented in coloc (Schedtune, Liquid), the scenario,
  policy or predictor was not run, or the quantity measured is not the paper's (e.g. an RMSLE of
  another utilization label, or Horus's nvidia-smi utilization against effective throughput on Gavel's data, which
  measured none); the reason says which, and gives coloc's value where there is one.

Every claim is checked in two settings: coloc's (the main columns) and the paper's own as closely as the data allow
(``paper_setting_*``, from the claims map of :mod:`coloc.claims_map` for a simulated claim; under ``protocol``
instead of ``coloc_protocol`` for a predictor claim), and ``decided_by`` names what flips the verdict between them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from coloc import datasets, published
from coloc.stats import positive_ci, ratio_ci

COLUMNS = ["paper", "claim", "paper_value", "scenario", "baseline", "metric", "coloc_value", "ci_low", "ci_high",
           "verdict", "reason"]
VERDICTS = ("reproduced", "same direction, smaller", "not reproduced", "not comparable", "coloc's finding")
KINDS = ("change", "at_most", "value", "finding")
VALUE_FACTOR = 2.0  # a reported quantity is reproduced within this factor either way
PINNED_SHARE = 0.9  # a makespan is pinned by one job when that job alone accounts for this share of it
UNIMPLEMENTED = {"schedtune": "Schedtune", "liquid": "Liquid"}  # baselines of ISACPP that coloc does not implement
SIM_KEYS = ("scenario", "policy", "seed", "point")
SCORE_KEYS = ("dataset", "protocol", "predictor", "seed", "scope", "key")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and the comparison that checks it.

    ``target``: the paper's value in coloc_value's unit, (lo, hi) with lo == hi for a single value.
    ``source``: "sim" (results/sim/summary: ``policy`` vs ``baseline`` on ``metric``), "util_scores" /
    "pair_scores" (the predictors stage's score tables: ``policy`` names the predictor) or "delay"
    (results/sim/scheduling_delay: ``policy`` at ``queued`` jobs). ``point``: "headline" (the
    scenario's headline sweep point) or "best" (the sweep point of the largest change in the claimed
    direction, for an "up to" claim). ``also``: other policies whose change is quoted in the reason.
    """

    paper: str
    claim: str
    paper_value: str
    kind: str
    target: tuple[float, float]
    source: str
    scenario: str
    metric: str
    policy: str
    baseline: str = ""
    point: str = "headline"
    protocol: str = ""
    dataset: str = datasets.DEFAULT  # the predictors stage's dataset of a "util_scores" / "pair_scores" claim
    queued: int = 0
    also: tuple[str, ...] = ()
    also_metrics: tuple[str, ...] = ()  # other metrics of the same comparison quoted in the reason
    differs: str = ""  # what still differs from the paper's setting, said in the reason
    group: str = ""  # the group of simulated claims (GROUPS) whose settings the claims map moves
    coloc_protocol: str = ""  # a predictor claim: the protocol of coloc's setting (``protocol``: the paper's)
    not_same: tuple[str, ...] = ()  # why coloc's quantity is not the paper's (then: not comparable, value beside)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.claim!r}: kind {self.kind!r}; expected one of {KINDS}")
        if self.target[0] > self.target[1]:
            raise ValueError(f"claim {self.claim!r}: target {self.target}; expected (low, high)")


HORUS_DIFFERS = ("Gavel's job types and measured pairs replayed on Philly arrivals (a month of one virtual cluster), "
                 "not the month of batch jobs Horus's simulator replays; each job "
                 "type's utilization is predicted from its graph (no nvidia-smi utilization in Gavel: the label is "
                 "implied by the training pairs or achieved FLOP/s), one value per job type, not sampled; job memory "
                 "estimated from the model graph; the truth of a 3-job GPU is the product of its measured pairs")
ISACPP_DIFFERS = ("Gavel's {job_types} job types and measured pairs on {cluster}, not ISACPP's jobs on RTX 3090/4090 "
                  "and Titan Xp; Gavel measured throughput only, so contention is 1 + 2 / predicted factor (memory "
                  "held, PCIe and utilization scaled with speed); durations fitted on the volcano baseline's published"
                  " completion times; sets of 3+ jobs extrapolated as the product of pairs")
HORUS_DIFFERS_3090 = ("Lucid's {job_types} job types and measured pairs on RTX 3090s replayed on Philly arrivals, not "
                      "Horus's testbed; utilization is nvidia-smi's, measured as Horus's was, but one value per job "
                      "type alone and per pair (Lucid's), not sampled over a job's run; the utilization predictor "
                      "learns Lucid's measured solo utilization; at most 2 jobs per GPU (Lucid measured pairs only; "
                      "Horus allows 3); job memory as Lucid measured it")
ISACPP_DIFFERS_3090 = ("Lucid's {job_types} job types and measured pairs on RTX 3090s (their number fitted on the "
                       "volcano baseline's published completion times, the durations the Gavel testbed's fit), not "
                       "ISACPP's jobs on RTX 3090/4090 and Titan Xp; isacpp reads the pair predictions of {predictor},"
                       " not an E-GGAT (none runs on Lucid's data in the default run); contention 1 + 2 / predicted "
                       "factor (no resource predictions on Lucid's data); at most 2 jobs per GPU (Lucid measured pairs"
                       " only)")
"""What still differs from each paper's setting, said in the reasons; {job_types}: the job types of the dataset's
measured pairs (:func:`pair_job_types`), {cluster}: the scenario's cluster (:func:`cluster_text`)."""
RTX3090 = ", RTX 3090"  # the suffix of a claim checked on Lucid's RTX 3090 scenarios
ISACPP_ALSO = ("isacpp~egat-profiled", "isacpp@random5", "isacpp@profiled-pairs")
"""isacpp's other runs quoted beside each ISACPP claim in coloc's setting (where the scenario ran them): the E-GGAT with
measured edges at inference, every job type seen in training, and the measured pairs themselves (ISACPP's
assumption)."""
GROUPS = ("horus", "isacpp", "horus-3090", "isacpp-3090")
"""The groups of simulated claims (``claims.groups`` of the config), each on one scenario."""
GAVEL_UTIL_NOTE = ("Horus's utilization is nvidia-smi's (the share of time a kernel runs); Gavel measured no "
                   "utilization, so coloc's value is effective throughput, another quantity")


def pair_job_types(pairs: pd.DataFrame) -> int:
    """The number of job types in a pairs table (those a scenario on its dataset draws)."""
    return len(set(pairs["workload_a"]) | set(pairs["workload_b"]))


def cluster_text(cluster: str) -> str:
    """A cluster spec as the reasons name it: "v100:8,p100:4,k80:4" -> "16 K80/P100/V100 GPUs"."""
    counts = {}
    for part in cluster.split(","):
        device, _, count = part.strip().partition(":")
        counts[device] = counts.get(device, 0) + int(count)
    return f"{sum(counts.values())} {'/'.join(d.upper() for d in sorted(counts))} GPUs"


def _given(facts: Mapping, key: str, group: str, argument: str):
    """`facts[key]`, or a ValueError naming the group whose reasons need it and the argument that lacks it."""
    if key not in facts:
        raise ValueError(f"claims group {group!r}: paper_claims' {argument} has no {key!r} (has {sorted(facts)}); "
                         f"the group's reasons name it")
    return facts[key]


def horus_sim_claims(scenario: str, policy: str, util_metric: str, differs: str, suffix: str = "",
                     util_also: tuple[str, ...] = (), group: str = "horus", same_util: bool = True) -> list[Claim]:
    """Horus's three simulation claims against fifo on `scenario`; `util_metric`: the summary's utilization,
    `util_also`: other utilization metrics quoted beside it; `same_util`: whether that metric is the quantity Horus
    measured (nvidia-smi's utilization), else the utilization claim is not comparable (coloc's value beside it)."""
    also = tuple(p for p in ("horus", "horus~horus-implied") if p != policy)
    horus = dict(paper="Horus", source="sim", scenario=scenario, policy=policy, baseline="fifo", kind="change",
                 also=also, differs=differs, group=group)
    return [
        Claim(claim=f"higher GPU utilization (up to){suffix}", paper_value="+61.5%", target=(61.5, 61.5),
              metric=util_metric, point="best", also_metrics=util_also,
              not_same=() if same_util else (GAVEL_UTIL_NOTE,), **horus),
        Claim(claim=f"lower makespan{suffix}", paper_value="-23.7 to -30.7%", target=(-30.7, -23.7),
              metric="makespan", **horus),
        Claim(claim=f"lower job wait time{suffix}", paper_value="-68.3%", target=(-68.3, -68.3),
              metric="queue_delay_mean", **horus)]


def published_target(policy: str, baseline: str, bootstrap: Mapping) -> tuple[str, tuple[float, float]]:
    """The paper's value of ISACPP's mean completion time against ``baseline`` with its paired bootstrap interval
    over the 51 published jobs (:func:`coloc.published.paired_change`): (text, (low, high))."""
    value, low, high = published.paired_change(policy, baseline, int(bootstrap.get("resamples", 10_000)),
                                               int(bootstrap.get("seed", 0)))
    return f"{value:+.1f}% [{low:+.1f}, {high:+.1f}]", (low, high)


def isacpp_sim_claims(scenario: str, horus_policy: str, differs: str, suffix: str = "", group: str = "isacpp",
                      bootstrap: Mapping | None = None) -> list[Claim]:
    """ISACPP's completion-time and makespan claims on `scenario`: isacpp as coloc runs it (predicted pair slowdowns
    under simulation.protocol), its other runs quoted beside (:data:`ISACPP_ALSO`). Against Horus and Volcano the
    mean completion time's target is the published change's paired bootstrap interval over its 51 jobs (the
    makespan is one job's time: no interval)."""
    other_horus = tuple(p for p in ("horus", "horus~horus-implied") if p != horus_policy)
    names = {horus_policy: "Horus", "volcano": "Volcano", **UNIMPLEMENTED}
    published_names = {horus_policy: "horus", "volcano": "volcano"}
    isacpp = dict(paper="ISACPP", source="sim", scenario=scenario, policy="isacpp", kind="change", differs=differs,
                  group=group)
    rows = []
    for metric, label, values in (("jct_mean", "mean completion time", (-16.1, -23.3, -16.6, -17.3)),
                                  ("makespan", "makespan", (-16.8, -29.6, -26.9, -34.9))):
        for baseline, value in zip((horus_policy, "volcano", "schedtune", "liquid"), values, strict=True):
            text, target = f"{value:+.1f}%", (value, value)
            if metric == "jct_mean" and baseline in published_names:
                text, target = published_target("isacpp", published_names[baseline], bootstrap or {})
            also = ISACPP_ALSO + (other_horus if baseline == horus_policy else ())
            rows.append(Claim(claim=f"lower {label} vs {names[baseline]}{suffix}", paper_value=text, target=target,
                              metric=metric, baseline=baseline, also=also, **isacpp))
        rows.append(Claim(claim=f"{label} vs exclusive fifo{suffix}", paper_value="not claimed", target=(0.0, 0.0),
                          metric=metric, baseline="fifo", also=ISACPP_ALSO, **{**isacpp, "kind": "finding"}))
    return rows


def paper_claims(scenarios: Mapping[str, str], horus_policy: str = "horus~horus-implied",
                 util_protocol: str = "random5", pair_protocol: str = "random5", coloc_protocol: str = "lofo",
                 pair_predictor_3090: str = "the 3090 scenarios' predictor_norm",
                 bootstrap: Mapping | None = None, job_types: Mapping[str, int] | None = None,
                 clusters: Mapping[str, str] | None = None) -> list[Claim]:
    """The papers' headline claims, each with the comparison that checks it, on Gavel's data and again on Lucid's
    RTX 3090 data (claims ending ", RTX 3090").

    ``scenarios``: each group of :data:`GROUPS` -> its scenario ("" or absent leaves the group out; config
    ``claims.groups.<group>.scenario``). ``job_types``: dataset (gavel, lucid) -> the job types of its measured
    pairs (:func:`pair_job_types`), ``clusters``: scenario -> its cluster spec, both said in the reasons (what
    differs from the paper's setting) of the groups that need them. Horus's gains are measured against fifo
    (exclusive GPUs, first come first served) on the contended trace, the regime the paper claims them in: its
    utilization on Gavel's data as effective throughput (Gavel measured none: not comparable, coloc's value beside
    it), on the 3090 as the nvidia-smi utilization Lucid measured (``measured_util_mean``; ``measured_util_busy``
    quoted beside it), like for like with Horus's. A makespan one job pins is refused (the claim's rule). ISACPP's
    are measured on the testbed scenario against the baselines it names: Horus, and Kubernetes/Volcano sharing GPUs
    by memory (``volcano``). Rows "vs exclusive fifo" are coloc's own finding (the paper compares with no exclusive
    scheduler). ``horus_policy``: the horus run the comparisons use (the implied label by default: closer to the
    nvidia-smi utilization Horus measured); the other label's change is quoted in the reason. The predictors' claims
    are checked under ``util_protocol`` / ``pair_protocol`` in the paper's setting (every job type seen in training)
    and under ``coloc_protocol`` in coloc's (a new family).
    """
    unknown = sorted(set(scenarios) - set(GROUPS))
    if unknown:
        raise ValueError(f"claims groups {unknown}: expected some of {list(GROUPS)}")
    job_types, clusters = job_types or {}, clusters or {}
    rows = []
    if scenarios.get("horus"):
        rows += horus_sim_claims(scenarios["horus"], horus_policy, "effective_throughput", HORUS_DIFFERS,
                                 same_util=False)
    if scenarios.get("horus-3090"):
        differs = HORUS_DIFFERS_3090.format(job_types=_given(job_types, "lucid", "horus-3090", "job_types"))
        rows += horus_sim_claims(scenarios["horus-3090"], horus_policy, "measured_util_mean", differs, RTX3090,
                                 ("measured_util_busy",), group="horus-3090")
    rows += [
        # on Lucid's RTX 3090 data: the label Horus used, nvidia-smi's measured GPU utilization of each job alone
        Claim(paper="Horus", claim="GPU utilization predicted with RMSLE", paper_value="0.154", kind="at_most",
              target=(0.154, 0.154), source="util_scores", scenario="predictors lucid", metric="RMSLE",
              policy="horus", protocol=util_protocol, coloc_protocol=coloc_protocol, dataset="lucid"),
    ]
    if scenarios.get("isacpp"):
        cluster = _given(clusters, scenarios["isacpp"], "isacpp", "clusters")
        differs = ISACPP_DIFFERS.format(job_types=_given(job_types, "gavel", "isacpp", "job_types"),
                                        cluster=cluster_text(cluster))
        rows += isacpp_sim_claims(scenarios["isacpp"], horus_policy, differs, bootstrap=bootstrap)
    if scenarios.get("isacpp-3090"):
        rows += isacpp_sim_claims(scenarios["isacpp-3090"], horus_policy,
                                  ISACPP_DIFFERS_3090.format(
                                      predictor=pair_predictor_3090,
                                      job_types=_given(job_types, "lucid", "isacpp-3090", "job_types")), RTX3090,
                                  group="isacpp-3090", bootstrap=bootstrap)
    rows += [
        Claim(paper="ISACPP", claim="maximum time-prediction error", paper_value="8.72%", kind="at_most",
              target=(8.72, 8.72), source="pair_scores", scenario="predictors gavel", metric="max family MAPE (%)",
              policy="egat", protocol=pair_protocol, coloc_protocol=coloc_protocol),
        Claim(paper="ISACPP", claim=f"maximum time-prediction error{RTX3090}", paper_value="8.72%", kind="at_most",
              target=(8.72, 8.72), source="pair_scores", scenario="predictors lucid", metric="max family MAPE (%)",
              policy="egat", protocol=pair_protocol, coloc_protocol=coloc_protocol, dataset="lucid"),
        Claim(paper="ISACPP", claim="scheduling delay at 100 queued jobs", paper_value="35.4 s", kind="value",
              target=(35.4, 35.4), source="delay", scenario="scheduling-delay", metric="decision_s",
              policy="isacpp", queued=100),
    ]
    return rows


WALL_CLOCK_SOURCES = ("delay",)  # claims whose coloc value is wall-clock time of the machine that ran it


def wall_clock_claims() -> set[str]:
    """The claim texts whose coloc value is wall-clock time (another machine times another value; the verdict
    does not depend on it): ``coloc readme --check`` does not compare those values."""
    return {c.claim for c in paper_claims({}) if c.source in WALL_CLOCK_SOURCES}


# ---------------------------------------------------------------------------- verdict rules


def _interval(value: float, low: float, high: float) -> tuple[float, float, bool]:
    """(low, high, has_interval): the point value stands in for a NaN interval (an infinite one stays)."""
    if not (math.isnan(low) or math.isnan(high)):
        return low, high, True
    return value, value, False


def change_verdict(value: float, low: float, high: float, target: tuple[float, float]) -> str:
    """Verdict of a relative change (rules in the module docstring); target's sign is the claimed direction."""
    sign = math.copysign(1.0, target[0] if target[0] != 0 else target[1])
    lo, hi, _ = _interval(value, low, high)
    lo, hi = sorted((sign * lo, sign * hi))  # in the claimed direction: larger is a larger gain
    t_lo, t_hi = sorted((sign * target[0], sign * target[1]))
    if lo <= 0.0:
        return "not reproduced"
    if hi >= t_lo:
        return "reproduced"  # meets the paper's value or range, or a larger gain
    return "same direction, smaller"


def at_most_verdict(value: float, low: float, high: float, bound: float) -> str:
    """Verdict of an error the paper bounds (rules in the module docstring)."""
    lo, _, _ = _interval(value, low, high)
    return "reproduced" if lo <= bound else "not reproduced"


def value_verdict(value: float, low: float, high: float, target: float, factor: float = VALUE_FACTOR) -> str:
    """Verdict of a reported quantity: the interval meets [target / factor, target x factor]."""
    lo, hi, _ = _interval(value, low, high)
    return "reproduced" if hi >= target / factor and lo <= target * factor else "not reproduced"


def verdict(claim: Claim, value: float, low: float, high: float) -> str:
    """The verdict of ``claim`` for coloc's value and interval."""
    if claim.kind == "change":
        return change_verdict(value, low, high, claim.target)
    if claim.kind == "at_most":
        return at_most_verdict(value, low, high, claim.target[1])
    return value_verdict(value, low, high, claim.target[0])


# ---------------------------------------------------------------------------- measurements


class NotComparable(Exception):
    """The comparison cannot be made from the pipeline's outputs (the message says why)."""


def _require(frame: pd.DataFrame | None, columns, what: str) -> pd.DataFrame:
    if frame is None:
        raise NotComparable(f"{what} is not among the inputs")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: missing columns {missing}; has {list(frame.columns)}")
    return frame


def check_tables(summary=None, util_scores=None, pair_scores=None, delay=None) -> None:
    """Refuse, before any work, a table without the columns its claims read, or with two rows for one key."""
    checks = (("simulation summary", summary, [*SIM_KEYS, "sweep"], SIM_KEYS),
              ("utilization scores", util_scores, [*SCORE_KEYS, "RMSLE", "util_source"], SCORE_KEYS),
              ("predictor scores", pair_scores, [*SCORE_KEYS, "MAPE"], SCORE_KEYS),
              ("scheduling delay", delay, ["policy", "queued_jobs", "cluster", "gpus", "seed", "decision_s"],
               ("policy", "queued_jobs", "cluster", "gpus", "seed")))
    for what, frame, columns, keys in checks:
        if frame is None:
            continue
        _require(frame, columns, what)
        dup = frame.duplicated(list(keys), keep=False)
        if dup.any():
            row = frame[dup].iloc[0]
            raise ValueError(f"{what}: {int(dup.sum())} rows share a key, e.g. "
                             f"{ {k: row[k] for k in keys} }; expected one row per {list(keys)}")


def _seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def _interval_text(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return " (interval unbounded)"
    return f" [{low:.3g}, {high:.3g}]" if math.isfinite(low) and math.isfinite(high) else " (no interval)"


def _fmt(value: float, low: float, high: float, unit: str = "") -> str:
    return f"{value:.3g}{unit}{_interval_text(low, high)}"


def _policy_runs(summary: pd.DataFrame, scenario: str, policy: str, metric: str) -> pd.DataFrame:
    part = summary[(summary["scenario"] == scenario) & (summary["policy"] == policy)]
    if part.empty:
        ran = sorted(summary.loc[summary["scenario"] == scenario, "policy"].unique())
        if not ran:
            raise NotComparable(f"scenario {scenario!r} was not run (config simulation.scenarios)")
        raise NotComparable(f"policy {policy!r} was not run in scenario {scenario!r} (ran: {ran})")
    if metric not in part.columns:
        raise ValueError(f"simulation summary: no metric column {metric!r}; has {list(part.columns)}")
    if part[metric].isna().all():
        raise NotComparable(f"{metric} of {policy!r} in scenario {scenario!r} is NaN: not measured in its data")
    return part


def sim_change(summary: pd.DataFrame, scenario: str, policy: str, baseline: str, metric: str,
               point: float) -> tuple[float, float, float, int]:
    """(change %, low, high, seeds): ``policy`` vs ``baseline`` on ``metric`` at one sweep point, paired by seed."""
    x = _policy_runs(summary, scenario, policy, metric)
    y = _policy_runs(summary, scenario, baseline, metric)
    x = x[np.isclose(x["point"].astype(float), point)].set_index("seed")[metric].astype(float)
    y = y[np.isclose(y["point"].astype(float), point)].set_index("seed")[metric].astype(float)
    seeds = sorted(set(x.index) & set(y.index))
    if not seeds:
        raise NotComparable(f"{policy} and {baseline} share no seed at point {point:g} of {scenario!r}")
    try:
        change, low, high = ratio_ci(x.loc[seeds], y.loc[seeds])
    except ValueError as err:
        raise NotComparable(f"{policy} vs {baseline} at point {point:g}: {err}") from None
    if len(seeds) > 1 and not (math.isfinite(low) and math.isfinite(high)):
        low, high = -math.inf, math.inf  # Fieller's set is unbounded: the seeds cannot tell the change from any other
    return 100 * change, 100 * low, 100 * high, len(seeds)


def _sweep_name(summary: pd.DataFrame, scenario: str) -> str:
    names = summary.loc[summary["scenario"] == scenario, "sweep"].dropna().unique()
    return str(names[0]) if len(names) else "point"


def measure_sim(claim: Claim, summary: pd.DataFrame | None, headlines: dict) -> tuple[float, float, float, str]:
    """coloc's change for a policy comparison claim, and the reason's account of it."""
    if claim.baseline in UNIMPLEMENTED:
        raise NotComparable(f"coloc does not implement {UNIMPLEMENTED[claim.baseline]}")
    summary = _require(summary, SIM_KEYS, "simulation summary")
    runs = _policy_runs(summary, claim.scenario, claim.policy, claim.metric)
    sweep = _sweep_name(summary, claim.scenario)
    if claim.point == "headline":
        if claim.scenario not in headlines:
            raise ValueError(f"claims: no headline point for scenario {claim.scenario!r}; have {sorted(headlines)}")
        points = [float(headlines[claim.scenario])]
    else:
        points = sorted(runs["point"].astype(float).unique())
    results = {}
    for point in points:
        try:
            results[point] = sim_change(summary, claim.scenario, claim.policy, claim.baseline, claim.metric, point)
        except NotComparable:
            if len(points) == 1:
                raise
    if not results:
        raise NotComparable(f"{claim.policy} vs {claim.baseline}: no sweep point of {claim.scenario!r} compares")
    sign = math.copysign(1.0, claim.target[0])
    point = max(results, key=lambda p: sign * results[p][0])
    value, low, high, seeds = results[point]
    if claim.metric == "makespan":
        _refuse_pinned(summary, claim, point)
    which = "the best" if claim.point == "best" else "the headline"
    reason = (f"{claim.policy} vs {claim.baseline}, {claim.metric}, {which} point {sweep}={point:g}, "
              f"{_seeds(seeds)}: {_fmt(value, low, high, '%')}")
    for other in claim.also:
        try:
            v, lo, hi, _ = sim_change(summary, claim.scenario, other, claim.baseline, claim.metric, point)
            reason += f"; {other}: {_fmt(v, lo, hi, '%')}"
        except NotComparable as err:
            reason += f"; {other}: {err}"
    for metric in claim.also_metrics:
        try:
            _policy_runs(summary, claim.scenario, claim.policy, metric)
            v, lo, hi, _ = sim_change(summary, claim.scenario, claim.policy, claim.baseline, metric, point)
            reason += f"; {metric}: {_fmt(v, lo, hi, '%')}"
        except NotComparable as err:
            reason += f"; {metric}: {err}"
    return value, low, high, reason


def _refuse_pinned(summary: pd.DataFrame, claim: Claim, point: float) -> None:
    """NotComparable when one job pins the makespan of the claim's runs: in every run of the policy and of the
    baseline at `point`, one job's submission plus its exclusive duration (``longest_job_s``) is at least
    :data:`PINNED_SHARE` of the makespan. Such a makespan moves with that job alone, whatever the policy."""
    if "longest_job_s" not in summary.columns:
        return
    runs = summary[(summary["scenario"] == claim.scenario) & summary["policy"].isin([claim.policy, claim.baseline])
                   & np.isclose(summary["point"].astype(float), point)]
    share = (runs["longest_job_s"].astype(float) / runs["makespan"].astype(float))
    if len(share) and float(share.min()) >= PINNED_SHARE:
        raise NotComparable(f"makespan pinned by one job: in every run of {claim.policy} and {claim.baseline} at "
                            f"{_sweep_name(summary, claim.scenario)}={point:g} one job's submission plus its exclusive "
                            f"duration is {100 * float(share.min()):.0f}% or more of the makespan (the rule refuses "
                            f"at {100 * PINNED_SHARE:.0f}%), so the makespan moves with that job, not the policy")


def _scores(frame: pd.DataFrame | None, what: str, claim: Claim, metric: str) -> pd.DataFrame:
    frame = _require(frame, [*SCORE_KEYS, metric], what)
    part = frame[(frame["dataset"] == claim.dataset) & (frame["protocol"] == claim.protocol)
                 & (frame["predictor"] == claim.policy)]
    if part.empty:
        raise NotComparable(f"predictor {claim.policy!r} was not scored on {claim.dataset} under {claim.protocol!r} "
                            f"(config predictors)")
    return part


def measure_util_rmsle(claim: Claim, util_scores: pd.DataFrame | None) -> tuple[float, float, float, str, bool]:
    """Mean RMSLE over seeds of the utilization predictor, and whether its label is measured utilization."""
    part = _scores(util_scores, "utilization scores", claim, "RMSLE")
    overall = part[part["scope"] == "overall"]
    value, low, high = positive_ci(overall["RMSLE"].astype(float))
    sources = ",".join(sorted(set(",".join(overall["util_source"].astype(str)).split(","))))
    reason = (f"{claim.policy} on {claim.dataset} ({claim.protocol}, {_seeds(overall['seed'].nunique())}), label "
              f"{sources}: RMSLE {_fmt(value, low, high)} (geometric mean over seeds, interval on the log scale)")
    return value, low, high, reason, sources == "measured"


def measure_max_error(claim: Claim, pair_scores: pd.DataFrame | None) -> tuple[float, float, float, str]:
    """The largest per-family MAPE of the pair predictor (per seed), mean over seeds."""
    part = _scores(pair_scores, "predictor scores", claim, "MAPE")
    family = part[part["scope"] == "family"]
    if family.empty:
        raise NotComparable(f"predictor {claim.policy!r} has no per-family scores")
    worst = family.groupby("seed")["MAPE"].max().astype(float)
    which = family.loc[family.groupby("seed")["MAPE"].idxmax(), "key"]
    value, low, high = positive_ci(worst)
    data = datasets.get(claim.dataset).title if claim.dataset in datasets.names() else claim.dataset
    reason = (f"{claim.policy} on {data} ({claim.protocol}, {_seeds(len(worst))}): largest per-family MAPE of "
              f"normalized throughput {_fmt(value, low, high, '%')} (family {', '.join(sorted(set(which)))}); "
              f"ISACPP's error is of time per epoch, the inverse of throughput (the same relative error to "
              f"first order)")
    return value, low, high, reason


def measure_delay(claim: Claim, delay: pd.DataFrame | None) -> tuple[float, float, float, str]:
    """Mean decision time over seeds of the policy at ``claim.queued`` queued jobs (the smallest cluster run)."""
    delay = _require(delay, ["policy", "queued_jobs", "cluster", "gpus", "seed", "decision_s"], "scheduling delay")
    part = delay[(delay["policy"] == claim.policy) & (delay["queued_jobs"] == claim.queued)]
    if part.empty:
        raise NotComparable(f"no scheduling-delay run of {claim.policy!r} at {claim.queued} queued jobs")
    gpus = int(part["gpus"].min())
    part = part[part["gpus"] == gpus]
    value, low, high = positive_ci(part["decision_s"].astype(float))
    reason = (f"{claim.policy}, {claim.queued} queued jobs on {part['cluster'].iloc[0]} ({gpus} GPUs), "
              f"{_seeds(part['seed'].nunique())}: geometric mean {_fmt(value, low, high, ' s')} per round (a "
              f"time's interval is taken on the log scale: it never reaches below 0); coloc's time holds the "
              f"policy's search with predictions looked up, ISACPP's also the E-GGAT inference")
    return value, low, high, reason


def claim_row(claim: Claim, summary=None, util_scores=None, pair_scores=None, delay=None,
              headlines: dict | None = None) -> dict:
    """One row of the claims table."""
    row = {"paper": claim.paper, "claim": claim.claim, "paper_value": claim.paper_value, "scenario": claim.scenario,
           "baseline": claim.baseline, "metric": claim.metric, "coloc_value": np.nan, "ci_low": np.nan,
           "ci_high": np.nan}
    if claim.kind in ("change", "finding"):
        row["metric"] = f"{claim.metric} (change %)"
    comparable = True
    try:
        if claim.source == "sim":
            value, low, high, reason = measure_sim(claim, summary, headlines or {})
        elif claim.source == "util_scores":
            value, low, high, reason, comparable = measure_util_rmsle(claim, util_scores)
            if not comparable:
                reason += (f"; Horus's 0.154 is of nvidia-smi utilization, which {claim.dataset} did not measure "
                           "(a label of other scale gives another RMSLE)")
        elif claim.source == "pair_scores":
            value, low, high, reason = measure_max_error(claim, pair_scores)
        elif claim.source == "delay":  # the same name, not the same quantity: not comparable, value given
            value, low, high, reason = measure_delay(claim, delay)
            comparable = False
        else:
            raise ValueError(f"claim {claim.claim!r}: source {claim.source!r}")
    except NotComparable as err:
        return row | {"verdict": "not comparable", "reason": str(err)}
    row |= {"coloc_value": value, "ci_low": low, "ci_high": high}
    if claim.not_same:
        comparable = False
        reason += "; " + "; ".join(claim.not_same)
    if not comparable:
        return row | {"verdict": "not comparable", "reason": reason}
    differs = f"; differs from the paper: {claim.differs}" if claim.differs else ""
    if claim.kind == "finding":
        lo, hi, _ = _interval(value, low, high)
        side = "lower" if hi < 0 else "higher" if lo > 0 else "no difference told (the interval holds 0)"
        return row | {"verdict": "coloc's finding", "reason": f"{reason}: {side}{differs}"}
    if math.isnan(low) or math.isnan(high):
        reason += " (verdict on the value alone)"
    return row | {"verdict": verdict(claim, value, low, high), "reason": reason + differs}


SETTING_COLUMNS = ["paper_setting_value", "paper_setting_low", "paper_setting_high", "paper_setting_verdict",
                   "paper_setting_reason", "decided_by"]
MAP_COLUMNS = ["paper", "claim", "group", "scenario", "cell", "factor", "value", "towards_coloc", "policy", "baseline",
               "metric", "coloc_value", "ci_low", "ci_high", "verdict", "flips", "reason"]


def coloc_setting(claim: Claim) -> Claim:
    """The claim as coloc's setting checks it: a predictor claim under ``coloc_protocol`` (a new family)."""
    return replace(claim, protocol=claim.coloc_protocol) if claim.coloc_protocol else claim


def in_cell(claim: Claim, group, cell, default_protocol: str) -> Claim:
    """The claim's comparison as a cell of the claims map runs it (its policies renamed by the cell's setting)."""
    from coloc.claims_map import cell_policy

    def name(policy: str) -> str:
        return cell_policy(policy, group, cell.setting, default_protocol) if policy else policy
    return replace(claim, policy=name(claim.policy), baseline=name(claim.baseline), also=(), also_metrics=(),
                   point="headline")  # a cell runs the headline point only


def map_table(claims, map_summary: pd.DataFrame, groups, headlines: dict, default_protocol: str) -> pd.DataFrame:
    """The claims map (:data:`MAP_COLUMNS`): each simulated claim of a mapped group in each cell of its group
    (:func:`coloc.claims_map.cells`), with the verdict there and whether it differs from the paper's setting's."""
    from coloc.claims_map import cells

    by_name = {g.name: g for g in groups}
    rows = []
    for claim in claims:
        group = by_name.get(claim.group)
        if claim.source != "sim" or group is None or claim.baseline in UNIMPLEMENTED:
            continue
        paper_verdict = None
        for cell in cells(group):
            part = map_summary[(map_summary["group"] == group.name) & (map_summary["cell"] == cell.name)]
            moved = in_cell(claim, group, cell, default_protocol)
            row = claim_row(moved, part, headlines=headlines)
            paper_verdict = row["verdict"] if cell.name == "paper" else paper_verdict
            rows.append({"paper": claim.paper, "claim": claim.claim, "group": group.name, "scenario": claim.scenario,
                         "cell": cell.name, "factor": cell.factor, "value": cell.value,
                         "towards_coloc": cell.towards_coloc, "policy": moved.policy, "baseline": moved.baseline,
                         "metric": row["metric"], "coloc_value": row["coloc_value"], "ci_low": row["ci_low"],
                         "ci_high": row["ci_high"], "verdict": row["verdict"],
                         "flips": _flips(paper_verdict, row["verdict"]), "reason": row["reason"]})
    table = pd.DataFrame(rows, columns=MAP_COLUMNS)
    return _rounded(table)


def _flips(paper: str | None, verdict: str) -> bool:
    """Whether a cell's verdict differs from the paper's setting's: both verdicts on the paper's value (a "not
    comparable" cell, where the quantity does not exist, e.g. nvidia-smi's utilization in a world of no measured
    pairs, flips nothing)."""
    judged = {"reproduced", "same direction, smaller", "not reproduced"}
    return paper is not None and paper in judged and verdict in judged and verdict != paper


def decided_by(cells: pd.DataFrame) -> str:
    """What flips a claim's verdict between the paper's setting and coloc's, from its rows of the map: the factors
    whose move alone, from the paper's setting to coloc's value, changes the verdict; "the factors together" when
    none alone does but coloc's setting differs; "" when the two settings agree and no move alone flips it."""
    paper = cells[cells["cell"] == "paper"]
    if paper.empty:
        return ""
    flips = cells[cells["towards_coloc"].astype(bool) & cells["flips"].astype(bool)]
    if not flips.empty:
        return "; ".join(f"{r.factor} ({r.verdict} when {r.factor} is {r.value})" for r in flips.itertuples())
    coloc = cells[cells["cell"] == "coloc"]
    if not coloc.empty and bool(coloc["flips"].iloc[0]):
        return "no single factor: the factors together"
    return ""


def claims_table(claims, summary=None, util_scores=None, pair_scores=None, delay=None,
                 headlines: dict | None = None, claims_map: pd.DataFrame | None = None) -> pd.DataFrame:
    """The claims table (:data:`COLUMNS`, then :data:`SETTING_COLUMNS`), one row per claim in order.

    The main columns are coloc's setting: the simulation stage's runs (a scenario it did not run: the claims map's
    ``coloc`` cell), a predictor claim under its ``coloc_protocol``. The paper's setting: the map's ``paper`` cell
    of the claim (``claims_map``: :func:`map_table`), a predictor claim under its ``protocol``; "decided by" from
    the map (:func:`decided_by`), or, for a predictor claim, "protocol" when the two protocols' verdicts differ.
    Missing inputs give "not comparable" rows."""
    check_tables(summary, util_scores, pair_scores, delay)
    rows = []
    for claim in claims:
        cells = claims_map[claims_map["claim"] == claim.claim] if claims_map is not None else pd.DataFrame()
        row = claim_row(coloc_setting(claim), summary, util_scores, pair_scores, delay, headlines)
        if claim.source == "sim" and not cells.empty and row["reason"].startswith("scenario ") and \
                row["reason"].endswith("was not run (config simulation.scenarios)"):
            row = _from_cell(row, cells, "coloc")
        rows.append(row | _paper_setting(claim, cells, util_scores, pair_scores, delay, headlines, row))
    table = pd.DataFrame(rows, columns=COLUMNS + SETTING_COLUMNS)
    return _rounded(table)


def _from_cell(row: dict, cells: pd.DataFrame, cell: str) -> dict:
    found = cells[cells["cell"] == cell]
    if found.empty:
        return row
    hit = found.iloc[0]
    return row | {k: hit[k] for k in ("coloc_value", "ci_low", "ci_high", "verdict")} | {
        "reason": f"claims map, {cell} cell: {hit['reason']}"}


def _paper_setting(claim: Claim, cells: pd.DataFrame, util_scores, pair_scores, delay, headlines,
                   coloc_row: dict) -> dict:
    empty = {"paper_setting_value": np.nan, "paper_setting_low": np.nan, "paper_setting_high": np.nan}
    if claim.source in ("util_scores", "pair_scores") and claim.coloc_protocol:
        paper = claim_row(claim, None, util_scores, pair_scores, delay, headlines)
        flips = paper["verdict"] != coloc_row["verdict"]
        return {"paper_setting_value": paper["coloc_value"], "paper_setting_low": paper["ci_low"],
                "paper_setting_high": paper["ci_high"], "paper_setting_verdict": paper["verdict"],
                "paper_setting_reason": paper["reason"],
                "decided_by": f"protocol ({coloc_row['verdict']} under {claim.coloc_protocol})" if flips else ""}
    found = cells[cells["cell"] == "paper"] if not cells.empty else cells
    if claim.source != "sim" or found.empty:
        why = ("the same comparison in both settings" if claim.source == "delay" else
               "not run in the paper's setting (config claims.groups)")
        return empty | {"paper_setting_verdict": "", "paper_setting_reason": why, "decided_by": ""}
    hit = found.iloc[0]
    return {"paper_setting_value": hit["coloc_value"], "paper_setting_low": hit["ci_low"],
            "paper_setting_high": hit["ci_high"], "paper_setting_verdict": hit["verdict"],
            "paper_setting_reason": hit["reason"], "decided_by": decided_by(cells)}


def _rounded(table: pd.DataFrame) -> pd.DataFrame:
    """Four significant digits of every value column: what the data support."""
    for column in ("coloc_value", "ci_low", "ci_high", "paper_setting_value", "paper_setting_low",
                   "paper_setting_high"):
        if column in table.columns:
            table[column] = [float(f"{v:.4g}") for v in table[column].astype(float)]
    return table


HORUS_RUNS = ("horus", "horus~horus-implied")
HORUS_METRICS = ["jct_mean", "makespan", "queue_delay_mean", "colocated_share", "effective_throughput",
                 "measured_util_mean"]


def horus_labels(summary: pd.DataFrame, headlines: dict, baseline: str = "fifo") -> pd.DataFrame:
    """Horus with each label (achieved compute; implied by the pairs) next to ``baseline``, at each
    scenario's headline point: the mean over seeds of :data:`HORUS_METRICS` (those the summary has)."""
    _require(summary, SIM_KEYS, "simulation summary")
    metrics = [m for m in HORUS_METRICS if m in summary.columns]
    parts = []
    for scenario, point in headlines.items():
        part = summary[(summary["scenario"] == scenario) & np.isclose(summary["point"].astype(float), float(point))
                       & summary["policy"].isin([*HORUS_RUNS, baseline])]
        parts.append(part.groupby(["scenario", "policy"])[metrics].mean().reset_index())
    if not parts:
        return pd.DataFrame(columns=["scenario", "policy", *metrics])
    return pd.concat(parts, ignore_index=True)


BRIEF_COLUMNS = ["paper", "claim", "paper_value", "paper_setting", "paper_setting_verdict", "coloc_value", "verdict",
                 "decided_by"]


BRIEF_HEADERS = {"paper_value": "paper says", "paper_setting": "coloc, paper's setting",
                 "paper_setting_verdict": "verdict there", "coloc_value": "coloc, own setting", "decided_by": "decided by"}
"""The brief table's columns as a reader sees them (the README's claims table and the report's page)."""


def brief(table: pd.DataFrame) -> pd.DataFrame:
    """The claims table for a narrow page: coloc's value in each setting as one text, "value [low, high]" (with % for
    a change), "n/a" where there is none (a lone "-" is a list item in reStructuredText); the comparison and reasons
    are left to the full table."""
    def text(metric: str, value: float, low: float, high: float) -> str:
        if not math.isfinite(value):
            return "n/a"
        interval = _interval_text(low, high).replace(" (no interval)", "")
        if metric.endswith("(change %)"):
            return f"{value:+.3g}%{interval}"
        unit = "%" if metric.endswith("(%)") else " s" if metric.endswith("_s") else ""
        return f"{value:.3g}{unit}{interval}"

    out = table[["paper", "claim", "paper_value", "paper_setting_verdict", "verdict", "decided_by"]].copy()
    out["coloc_value"] = [text(r.metric, r.coloc_value, r.ci_low, r.ci_high) for r in table.itertuples()]
    out["paper_setting"] = [text(r.metric, r.paper_setting_value, r.paper_setting_low, r.paper_setting_high)
                            for r in table.itertuples()]
    return out[BRIEF_COLUMNS].fillna("")


PAGE_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:80em}table{border-collapse:collapse}"
              "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}"
              "th{background:#eee}")


def page(brief_table: pd.DataFrame) -> str:
    """The claims table (:func:`brief`) as a page of its own for the report (``results/claims.html``): a heading,
    what the columns are, and the table from its first row. A page of its own opens at its top and scrolls in the
    report; the report's front page (one screen, centred) only points here."""
    import html

    table = brief_table.rename(columns=BRIEF_HEADERS)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Claims</title>"
            f"<style>{PAGE_STYLE}</style></head><body>\n"
            "<h1>Claims of the papers against coloc's measurements</h1>\n"
            f"<p>{html.escape(PAGE_INTRO)}</p>\n"
            + table.to_html(index=False, escape=True, border=0)
            + "\n</body></html>\n")


PAGE_INTRO = ("One row per headline claim of Horus (Yeung et al., TPDS 2022) and ISACPP (Liu et al., TPDS 2025): the "
              "paper's value (with its paired bootstrap interval where the published per-job times give one), coloc's "
              "value in the paper's setting and in its own (new job families, the measured world), each with its 95% "
              "interval over seeds (relative changes in percent of the baseline) and its verdict (reproduced, same "
              "direction, smaller, not reproduced, not comparable, or coloc's finding) by the rules of "
              "lib/coloc/claims.py, and the factor whose move alone flips the verdict between the two settings "
              "(the claims map, results/claims_map.csv). The comparisons and the reasons are in results/claims.csv "
              "(this category).")

