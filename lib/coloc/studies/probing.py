"""New job families in the simulator: the probe scenario (coloc-probe against k).

A scenario where a stated share of the jobs (`new_share`) belong to families the predictor was not
trained on (`new_families`). coloc-probe (coloc.policies.coloc_probe) runs k probes of every such
job before placing it and schedules with probe-informed predictions; this module builds what it
reads and runs it for every k next to coloc-online (no probes; it observes, for free, the factors of the
pairs it runs and refines its predictions from them: coloc.policies.coloc_online), coloc with every family
seen and the oracle (an upper bound). Observe or probe: probing pays GPU time before a new job runs and
learns its pairs next to reference co-runners; observing pays nothing up front but learns only from the
pairs it forms, some of them bad.

What the policy reads for k probes (:func:`probe_predictions`), one row per unordered pair:
* a pair with a job of a new family: the out-of-fold prediction of ``lofo-probe-<k>`` (the predictors
  stage's file; ``lofo-probe-0`` is ``lofo``): a predictor that saw the family only through its probes. In that
  file each job of a pair is predicted in the fold of its own family, so a seen job's prediction next to
  a new one comes from its own family's fold, where the new family was in training (stated, not fixed);
* a probe pair (a new job type next to one of its family's fold's k reference co-runners on a device,
  chosen by coloc.predict.references exactly as the protocol chose them): the measured values. They are
  the only measured pairs the policy sees, and every new job pays for them: the protocol probes a new job on
  every device type of the data, so a job is charged k x `probe_s` x (device types of the pairs table) GPU
  seconds, all on its own GPU (pessimistic for coloc-probe where the cluster has fewer device types);
* a pair with a new family's job that the probe file does not hold (it was a probe of a *seen* family's
  fold there, and the protocol scores such a pair in neither fold): the ``lofo-probe-0`` (``lofo``) prediction, without probes;
* a pair of two seen families: the out-of-fold prediction of a protocol that trained on those families
  (``random5`` by default; its training folds also hold the new families' other pairs, stated).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from coloc.datasets import family_of
from coloc.predict.protocols import derived_seed, probe_pairs, touches
from coloc.predict.references import choose_references
from coloc.sim import metrics, traces
from coloc.sim.cluster import ClusterSpec
from coloc.sim.engine import simulate
from coloc.sim.interference import GroundTruth
from coloc.sim.predictions import Predictions
from coloc.stats import mean_ci, ratio_ci
from coloc.studies.experiment import cluster_workloads, make_policy, truth_name

PRED_KEEP = ["device", "workload_a", "workload_b", "predictor", "seed", "held_out", "pred_norm_a", "pred_norm_b",
             "pred_std_a", "pred_std_b"]


def probe_protocol(k: int) -> str:
    """The predictors stage's protocol whose file holds the new families' predictions after k probes
    (``lofo-probe-0`` is ``lofo``)."""
    return f"lofo-probe-{int(k)}"


def _rows(frame: pd.DataFrame, predictor: str, what: str) -> pd.DataFrame:
    missing = [c for c in PRED_KEEP if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: columns {missing} missing; expected the predictors stage's predictions table")
    rows = frame[frame["predictor"] == predictor]
    if rows.empty:
        raise ValueError(f"{what}: no rows of predictor {predictor!r}; have {sorted(frame['predictor'].unique())}")
    return rows


def _touches_any(frame: pd.DataFrame, families) -> pd.Series:
    return frame["workload_a"].map(family_of).isin(families) | frame["workload_b"].map(family_of).isin(families)


def measured_probes(pairs: pd.DataFrame, new_families, k: int) -> pd.DataFrame:
    """The feasible probe pairs of every new family's job types with their measured normalized throughputs.

    References per family and device as ``lofo-probe-<k>`` chose them: from the pairs that do not
    touch the family (coloc.predict.references.choose_references).
    """
    parts = [pairs.iloc[:0]]
    devices = sorted(pairs["device"].unique())
    for family in sorted(set(new_families)):
        known = pairs[~touches(pairs, family)]
        references = {d: choose_references(known, d, k) for d in devices}
        parts.append(pairs[probe_pairs(pairs, family, family_of, references) & pairs["feasible"].astype(bool)])
    found = pd.concat(parts).drop_duplicates(["device", "workload_a", "workload_b"])
    return pd.DataFrame({"device": found["device"], "workload_a": found["workload_a"],
                         "workload_b": found["workload_b"], "held_out": "probe",
                         "pred_norm_a": found["norm_a"].astype(float), "pred_norm_b": found["norm_b"].astype(float),
                         "pred_std_a": 0.0, "pred_std_b": 0.0}).reset_index(drop=True)


def probe_predictions(probe_preds: pd.DataFrame, seen_preds: pd.DataFrame, pairs: pd.DataFrame, new_families,
                      k: int, predictor: str, no_probe_preds: pd.DataFrame | None = None) -> pd.DataFrame:
    """What coloc-probe reads after k probes (module docstring), for every seed both files hold.

    ``probe_preds``: the ``lofo-probe-<k>`` predictions; ``seen_preds``: those of a
    protocol that trained on the seen families (``random5``); ``pairs``: the measured pairs (only the
    probe pairs are read from it). ``no_probe_preds`` (the ``lofo-probe-0`` file): fills a pair of a new family's
    job that ``probe_preds`` does not hold because it was a probe of a *seen* family's fold there (the
    protocol scores such a pair in neither fold); it is predicted without probes, labelled ``no-probe``.
    """
    new = sorted(set(new_families))
    unknown = sorted(set(new) - set(pairs["workload_a"].map(family_of)) - set(pairs["workload_b"].map(family_of)))
    if unknown:
        raise ValueError(f"probe predictions: new families {unknown} have no pairs; expected families of the data")
    new_rows = _rows(probe_preds, predictor, f"{probe_protocol(k)} predictions")
    seen_rows = _rows(seen_preds, predictor, "seen-family predictions")
    seeds = sorted(set(new_rows["seed"]) & set(seen_rows["seed"]))
    if not seeds:
        raise ValueError(f"probe predictions: no seed in both files ({sorted(set(new_rows['seed']))} and "
                         f"{sorted(set(seen_rows['seed']))})")
    probes = measured_probes(pairs, new, k)
    probe_keys = set(zip(probes["device"], probes["workload_a"], probes["workload_b"], strict=True))
    new_rows = new_rows[_touches_any(new_rows, new)]
    new_rows = new_rows[[key not in probe_keys for key in
                         zip(new_rows["device"], new_rows["workload_a"], new_rows["workload_b"], strict=True)]]
    seen_rows = seen_rows[~_touches_any(seen_rows, new)]
    fill = None
    if no_probe_preds is not None:
        fill = _rows(no_probe_preds, predictor, "no-probe predictions")
        fill = fill[_touches_any(fill, new)].assign(held_out="no-probe")
    parts = []
    for seed in seeds:
        own = new_rows[new_rows["seed"] == seed]
        parts += [own, seen_rows[seen_rows["seed"] == seed], probes.assign(seed=seed, predictor=predictor)]
        if fill is not None:
            have = probe_keys | set(zip(own["device"], own["workload_a"], own["workload_b"], strict=True))
            extra = fill[fill["seed"] == seed]
            parts.append(extra[[key not in have for key in zip(extra["device"], extra["workload_a"], extra["workload_b"], strict=True)]])
    return pd.concat(parts, ignore_index=True)[PRED_KEEP]


def with_new_share(trace: pd.DataFrame, workloads, new_families, share: float, seed: int) -> pd.DataFrame:
    """The trace with job types redrawn: a job belongs to a new family with probability ``share`` (then a job
    type of the new families, uniformly), otherwise a job type of the other families, uniformly."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"new_share {share}: expected a share in [0, 1]")
    names = sorted(workloads)
    new = [w for w in names if family_of(w) in set(new_families)]
    seen = [w for w in names if family_of(w) not in set(new_families)]
    if not new or not seen:
        raise ValueError(f"new families {sorted(new_families)}: {len(new)} job types of them and {len(seen)} of "
                         f"the others among {len(names)}; expected some of each")
    rng = np.random.default_rng(derived_seed(seed, "new-share"))
    is_new = rng.random(len(trace)) < share
    out = trace.copy()
    out["workload"] = np.where(is_new, rng.choice(np.array(new, dtype=object), len(trace)),
                               rng.choice(np.array(seen, dtype=object), len(trace)))
    return out


LINES = {"coloc-probe": "coloc-probe k={k}", "coloc-online": "coloc-online, no probes (learns the pairs it runs)",
         "coloc": "coloc, every family seen", "oracle": "oracle (upper bound)"}


def _runs(spec: dict, probing: dict, mixes: dict, seen_preds: pd.DataFrame, seed: int) -> list[tuple]:
    """(label, policy, k, predictions) of each run, from the scenario's policies: ``coloc-probe`` once per k
    (its probe-informed predictions), ``coloc-online`` on what coloc-probe reads with k = 0 (no probe: the new
    families' pairs predicted by ``lofo``), observing for free the pairs it runs, ``coloc`` with every family
    seen (the seen protocol's predictions for all pairs: what probing can at best reach), ``oracle`` (the
    measured pairs, an upper bound)."""
    unknown = [p for p in spec["policies"] if p not in LINES]
    if unknown:
        raise ValueError(f"probe scenario: policies {unknown}; expected among {list(LINES)}")
    predictor, runs = probing["predictor"], []
    for name in spec["policies"]:
        if name == "coloc-probe":
            runs += [(LINES[name].format(k=k), name, k,
                      Predictions.from_frames(mixes[k], None, predictor, None, seed=seed,
                                              source=f"{probe_protocol(k)} + {k} probes, seen: {probing['seen_protocol']}"))
                     for k in sorted(mixes)]
        elif name == "coloc-online":
            runs.append((LINES[name], name, np.nan, Predictions.from_frames(
                mixes[0], None, predictor, None, seed=seed,
                source=f"{probe_protocol(0)}, no probes (observed pairs online), seen: {probing['seen_protocol']}")))
        elif name == "coloc":
            runs.append((LINES[name], name, np.nan, Predictions.from_frames(
                seen_preds, None, predictor, None, source=f"{probing['seen_protocol']} (every family seen)", seed=seed)))
        else:
            runs.append((LINES[name], name, np.nan, None))
    return runs


def run_point(spec: dict, probing: dict, shared: dict, solo: pd.DataFrame, pairs: pd.DataFrame,
              mixes: dict, seen_preds: pd.DataFrame, seed: int, load: float,
              trace_table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One seed and load of the probe scenario: the runs of :func:`_runs` on one trace.

    ``spec``: the scenario (config ``simulation.scenario_specs.<name>``: trace, cluster, gpus_per_node);
    ``probing``: config ``probing`` (new_families, new_share, probe_s, predictor); ``shared``: the
    simulation section's reference_device, max_jobs_per_gpu, restart_cost_s, world (the scenario's own ``world``
    wins); ``mixes``: k -> the table of
    :func:`probe_predictions`. Returns (jobs, summary) with one summary row per run.
    """
    world = spec.get("world", shared.get("world", "measured"))
    truth = GroundTruth(solo, pairs, shared["reference_device"], name=truth_name("gavel", world), world=world)
    cap = shared["max_jobs_per_gpu"]  # (None: no cap but memory)
    cluster = ClusterSpec.parse(spec["cluster"], gpus_per_node=int(spec["gpus_per_node"]),
                                max_jobs_per_gpu=None if cap is None else int(cap))
    devices = [d for d, _ in cluster.devices]
    reference = shared["reference_device"]
    families = spec["trace"].get("families") or None
    workloads = [w for w in cluster_workloads(truth, cluster, reference)
                 if families is None or family_of(w) in families]
    cost = pd.Series({w: 1.0 / truth.solo_tput(reference, w) for w in workloads})
    trace = traces.build(spec["trace"], trace_table, workloads, seed, load, cluster.total_gpus, cost)
    new = list(probing["new_families"])
    trace = with_new_share(trace, workloads, new, float(probing["new_share"]), seed)
    runs = _runs(spec, probing, mixes, seen_preds, seed)
    probe_devices = int(pairs["device"].nunique())  # the protocol probes a new job on each (module docstring)
    jobs, rows = [], []
    oracle_source = "ORACLE: measured pairs" if world == "measured" else f"ORACLE: {truth.name}"
    for label, name, k, predictions in runs:
        if predictions is not None:
            for device in devices:
                predictions.require_pairs(truth, device, trace["workload"].unique())
        params = {"probes": int(k), "probe_s": float(probing["probe_s"]) * probe_devices, "new_families": new} \
            if name == "coloc-probe" else {}
        policy = make_policy(name, truth, params)
        result = simulate(trace, truth, policy, cluster, predictions, float(shared["restart_cost_s"]), seed)
        keys = {"policy": label, "k": k, "seed": seed, "load": load, "world": world}
        jobs.append(result.jobs.assign(**keys, new_family=result.jobs["workload"].map(family_of).isin(new)))
        rows.append({**keys, "kind": policy.kind, "cluster": spec["cluster"], "gpus": cluster.total_gpus,
                     "new_families": ",".join(sorted(new)), "new_share": float(probing["new_share"]),
                     "new_jobs": float(trace["workload"].map(family_of).isin(new).mean()),
                     "probe_s": float(probing["probe_s"]), "probe_devices": probe_devices,
                     "probe_gpu_s": float(result.stats.get("probe_gpu_s", 0.0)),
                     "predictor": probing["predictor"] if predictions is not None else "measured pairs",
                     "prediction_source": predictions.source if predictions is not None else oracle_source,
                     **metrics.summarize(result, cluster.total_gpus)})
    return pd.concat(jobs, ignore_index=True), pd.DataFrame(rows)


def jct_against_k(summary: pd.DataFrame) -> pd.DataFrame:
    """Per policy line, k and load: mean JCT (s) over seeds with its 95% interval, and the paired change of
    mean JCT against coloc without probes (coloc-probe k=0, same seeds) with Fieller's 95% interval
    (coloc.stats.ratio_ci). NaN k: the lines without probes."""
    rows = []
    for (policy, k, load), part in summary.groupby(["policy", "k", "load"], dropna=False):
        base = summary[(summary["k"] == 0) & (summary["load"] == load)].set_index("seed")["jct_mean"]
        mine = part.set_index("seed")["jct_mean"]
        mean, low, high = mean_ci(mine.to_numpy(float))
        change = ratio_ci(mine, base) if not base.empty else (np.nan, np.nan, np.nan)
        rows.append({"policy": policy, "k": k, "load": load, "jct_mean": mean, "jct_low": low, "jct_high": high,
                     "change_vs_k0": change[0], "change_low": change[1], "change_high": change[2],
                     "seeds": part["seed"].nunique(), "probe_gpu_s": float(part["probe_gpu_s"].mean())})
    return pd.DataFrame(rows)

def run_scenario(spec: dict, probing: dict, shared: dict, solo: pd.DataFrame, pairs: pd.DataFrame,
                 probe_files: dict, seen_file, trace_table: pd.DataFrame | None = None,
                 progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every seed and load of the probe scenario (its sweep must be over ``load``): (jobs, summary).

    ``probe_files``: k -> the predictors stage's ``lofo-probe-<k>`` file;
    ``seen_file``: its file of ``probing.seen_protocol``.
    """
    (key, points), = spec["sweep"].items()
    if key != "load":
        raise ValueError(f"probe scenario: sweep over {key!r}; expected a sweep over 'load'")
    if 0 not in probe_files:
        raise ValueError(f"probe scenario: probes {sorted(probe_files)}; expected k = 0 among them (coloc without "
                         f"probes, and the predictions of the pairs the probe files do not score)")
    seen, no_probe = pd.read_parquet(seen_file), pd.read_parquet(probe_files[0])
    mixes = {int(k): probe_predictions(pd.read_parquet(path), seen, pairs, probing["new_families"], int(k),
                                       probing["predictor"], no_probe) for k, path in probe_files.items()}
    jobs, rows = [], []
    runs = [(int(seed), float(load)) for seed in spec["seeds"] for load in points]
    for seed, load in tqdm(runs, desc="probe scenario", disable=not progress):
        part_jobs, part_rows = run_point(spec, probing, shared, solo, pairs, mixes, seen, seed, load, trace_table)
        jobs.append(part_jobs)
        rows.append(part_rows)
    return pd.concat(jobs, ignore_index=True), pd.concat(rows, ignore_index=True)


def figure_title(summary: pd.DataFrame, load: float) -> str:
    """Data source, cluster, new families and their share, predictor and protocols, probe window, seeds."""
    rows = summary[summary["load"] == load]
    if rows.empty:
        raise ValueError(f"probe scenario summary: no runs at load {load}; have {sorted(summary['load'].unique())}")
    first = rows.iloc[0]
    predicted = rows[rows["predictor"] != "measured pairs"]
    predictor = predicted["predictor"].iloc[0] if not predicted.empty else "none"
    return (f"truth: Gavel measured pairs; cluster {first['cluster']}, load {load:g}, {first['n_jobs']} jobs; "
            f"{first['new_share']:.0%} of jobs from {first['new_families']} (held out of training; "
            f"drawn: {rows['new_jobs'].mean():.1%})\npredictor {predictor}: new families lofo-probe-<k> (k = 0: lofo), "
            f"seen families out-of-fold; probes of {first['probe_s']:g} s on {first['probe_devices']} device types; mean of {rows['seed'].nunique()} seeds, "
            f"95% CI")
