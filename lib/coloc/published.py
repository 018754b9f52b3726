"""Numbers the papers' authors published, used as facts: never as a policy's input, never as a simulation's truth.

ISACPP's completion times (s) of its 51 testbed jobs under each scheduler, from the authors' plotting script
(self-cream/ISACPP @ 3cd547a, results/main.py, the lists behind Fig. 14). Every job was submitted at once: the
makespan equals the largest completion time under every scheduler. Used to choose the testbed scenario's job
durations by fitting the simulated Volcano baseline to Volcano's published times (`coloc.studies.calibrate`),
never to ISACPP's own.
"""
from __future__ import annotations

ISACPP_COMPLETION_S: dict[str, tuple[float, ...]] = {
    "volcano": (
        104.19, 281.81, 279.77, 520.67, 750.82, 417.41, 468.2, 1334.41, 28.81, 54.83, 61.96, 81.83, 128.81, 35.78,
        239.19, 262.36, 60.65, 72.68, 94.93, 80.1, 134.59, 109.72, 188.23, 205.99, 796.95, 1646.71, 3957.7, 3656.64,
        37.88, 60.09, 87.08, 100.01, 163.69, 48.6, 235.57, 220.55, 62.13, 101.64, 113.32, 142.56, 146.51, 146.66,
        210.77, 213.98, 2877.52, 4861, 237.74, 383.59, 512.67, 843.08, 1071.97),
    "horus": (
        166.82, 194, 416.93, 519.39, 650.39, 414.78, 881.28, 1266.79, 28.84, 72.18, 102.21, 73.72, 103.3, 29.04,
        146.66, 155.48, 43.26, 91.86, 66.57, 81.11, 93.57, 163.29, 163.02, 139.02, 814.01, 1243.72, 4111, 3684.48,
        43.64, 69.21, 117.63, 134.32, 142.24, 33.86, 236.97, 218.12, 48.64, 83.65, 128.65, 124.03, 162.31, 159.2,
        188.47, 143.12, 2863.49, 3898.86, 175.54, 332.3, 193.75, 267.6, 759.3),
    "isacpp": (
        134.33, 192.45, 341.27, 401.43, 458.55, 259.24, 551.18, 960.08, 37.32, 53.65, 79.3, 79.45, 119.99, 29.16,
        167.73, 164.27, 53.23, 59.57, 79.53, 119.84, 101.64, 105.93, 147.95, 150.57, 319.75, 548.78, 3421, 2899.83,
        45.92, 49.79, 72.95, 123.75, 126.96, 42.85, 248.12, 182.52, 42.79, 58.34, 126.59, 82.51, 118.98, 113.92,
        133.88, 179.19, 3271, 3181.01, 92.59, 330.23, 465.62, 670.72, 391.82),
}


def paired_change(policy: str, baseline: str, resamples: int = 10_000, seed: int = 0,
                  level: float = 0.95) -> tuple[float, float, float]:
    """(change %, low, high): the published relative change of mean completion time of ``policy`` against
    ``baseline`` over ISACPP's 51 testbed jobs, with a paired percentile bootstrap interval over the jobs.

    The same job ran under each scheduler, so a resample draws job indices with replacement and takes the ratio of
    the two means over the same jobs. The change is the paper's own number (-23.3% for isacpp vs volcano); the
    interval says how much of it one testbed run of 51 jobs pins down. Same seed, same interval."""
    import numpy as np

    for name in (policy, baseline):
        if name not in ISACPP_COMPLETION_S:
            raise KeyError(f"published completion times: no scheduler {name!r}; have {sorted(ISACPP_COMPLETION_S)}")
    if resamples < 100:
        raise ValueError(f"paired_change: resamples {resamples}; expected at least 100")
    x = np.asarray(ISACPP_COMPLETION_S[policy], dtype=float)
    y = np.asarray(ISACPP_COMPLETION_S[baseline], dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))
    ratios = x[picks].mean(axis=1) / y[picks].mean(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return 100 * (float(x.mean() / y.mean()) - 1), 100 * (float(low) - 1), 100 * (float(high) - 1)
