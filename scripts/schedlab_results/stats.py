"""Statistics over repetitions: case summaries, tests, intervals, efficiency and METG."""
import math

import numpy as np
import pandas as pd
from scipy.stats import bootstrap, mannwhitneyu

from .load import CASE_KEY, ELISION
from .paired import hodges_lehmann

# Fewer repetitions a side than this make a comparison weak (scripts/compare warns): p cannot
# get small (smallest_p), least of all after Holm's correction over a table of cases.
MIN_REPS = 9
ALPHA = 0.05


def summarise(rows, value):
    """One row per case: n, median, min, max, quartiles (q1, q3) of `value` (a column or a
    Series aligned to rows), and the Hodges-Lehmann estimate with its 95% interval (centre,
    low, high: the interval the claims use). Missing values are not repetitions: n counts the
    measured ones."""
    values = rows[value] if isinstance(value, str) else value
    frame = rows[CASE_KEY + ["variant"]].assign(_v=values)
    grouped = frame.groupby(CASE_KEY + ["variant"], sort=True)["_v"]
    out = grouped.agg(n="count", median="median", min="min", max="max",
                      q1=lambda v: v.quantile(0.25), q3=lambda v: v.quantile(0.75)).reset_index()
    centres = [hodges_lehmann(v.dropna()) for _, v in grouped]
    out[["centre", "low", "high"]] = pd.DataFrame(centres, index=out.index)
    return out[out["n"] > 0].reset_index(drop=True)


def mwu_p(a, b):
    """Two-sided Mann-Whitney U p-value, or None when a side has no values."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) == 0 or len(b) == 0:
        return None
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def mwu_p_one_sided(a, b, alternative):
    """One-sided Mann-Whitney U p-value that b is stochastically greater ("greater") or less
    ("less") than a; None when a side has no values."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) == 0 or len(b) == 0:
        return None
    return float(mannwhitneyu(b, a, alternative=alternative).pvalue)


def more_repetitions_advice(used, run, needed):
    """What to do when `used` of the `run` repetitions of a case (the rest flagged) are fewer
    than `needed`: more repetitions only where the run had fewer than needed; else the flags
    are the cause, and a quieter machine or replacements (--replace-flagged) the fix."""
    if run < needed:
        return f"run more repetitions (--reps {needed} or more)"
    return (f"{run - used} of its {run} repetitions were flagged (noisy or slow_cpu) and left out: "
            f"rerun on a quiet machine, or with --replace-flagged N to measure flagged repetitions "
            f"again")


def format_p(p):
    if p is None:
        return "n/a"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 1  # fixed, so that the same files always print the same intervals


def _bootstrap_interval(samples, statistic, level):
    """(low, high) of scipy's percentile bootstrap of `statistic` over `samples` (each resampled
    on its own), or None where a resample's statistic is NaN (statistic's way of saying "no
    value", e.g. a change from a median of 0). Deterministic: the seed is fixed."""
    result = bootstrap(samples, statistic, n_resamples=BOOTSTRAP_RESAMPLES, vectorized=True,
                       confidence_level=level, method="percentile",
                       random_state=np.random.default_rng(BOOTSTRAP_SEED))
    low, high = result.confidence_interval
    return None if math.isnan(low) or math.isnan(high) else (float(low), float(high))


def _median_change_percent(old, new, axis=-1):
    """(median(new) / median(old) - 1) x 100 along `axis`; NaN where median(old) is 0."""
    old_median, new_median = np.median(old, axis=axis), np.median(new, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(old_median == 0, np.nan, (new_median / old_median - 1.0) * 100.0)


def change_interval(old, new, level=0.95):
    """Percentile bootstrap interval of the change of the median, in percent (old and new are
    resampled independently). None when a resampled old median is 0: a change from 0 has no
    relative size (a counter that read 0, such as fair's steals), or when a side has fewer than
    two values (the rest flagged): nothing to resample."""
    old, new = np.asarray(old, dtype=float), np.asarray(new, dtype=float)
    if len(old) < 2 or len(new) < 2:
        return None
    return _bootstrap_interval((old, new), _median_change_percent, level)


# A bootstrap over fewer cases than this returns little more than the range of their ratios.
GEOMEAN_MIN_CASES = 5


def geometric_mean_change(ratios, level=0.95):
    """(change, interval) of the geometric mean of per-case ratios new/old, in percent. The
    interval is a percentile bootstrap over the cases: how far the mean moves with the choice of
    cases, not the repetitions' noise (each case's own interval carries that); None with fewer
    than GEOMEAN_MIN_CASES ratios. Ratios must be positive and finite."""
    logs = np.log(np.asarray(ratios, dtype=float))
    change = float((math.exp(logs.mean()) - 1.0) * 100.0)
    if len(logs) < GEOMEAN_MIN_CASES:
        return change, None
    def mean_change(x, axis=-1):
        return (np.exp(np.mean(x, axis=axis)) - 1.0) * 100.0
    return change, _bootstrap_interval((logs,), mean_change, level)


def smallest_p(n_old, n_new):
    """The smallest two-sided Mann-Whitney p that samples of these sizes can give (two samples
    that do not overlap at all): with 3 repetitions a side it is 0.1, so nothing can be
    significant at 0.05."""
    return mwu_p(range(n_old), range(n_old, n_old + n_new))


def efficiency(reference_ns, threads, wall_ns):
    """Parallel efficiency T_ref / (threads x T_threads)."""
    return reference_ns / (threads * wall_ns)


def efficiency_reference(medians, scheduler, scheduler_params, workload, workload_params):
    """The time efficiency is measured against, from a table of case medians of wall_ns: the
    sequential elision's median for the same workload parameters (T_S, as TaskBench defines
    efficiency); in runs recorded before the elision existed, serial's (then called the
    elision); else the scheduler's own 1-thread median. Returns (ns, "elision" | "serial" |
    "own 1-thread"), naming the reference used, or (None, "") when none was run."""
    same = (medians["workload"] == workload) & (medians["workload_params"] == workload_params)
    for reference in (ELISION, "serial"):
        rows = medians[same & (medians["scheduler"] == reference)]
        if not rows.empty:
            return float(rows["median"].iloc[0]), reference
    own = medians[same & (medians["scheduler"] == scheduler) &
                  (medians["scheduler_params"] == scheduler_params) & (medians["threads"] == 1)]
    if not own.empty:
        return float(own["median"].iloc[0]), "own 1-thread"
    return None, ""


def metg(points, threshold=0.5):
    """Minimum effective task granularity: the smallest granularity at which efficiency reaches
    `threshold`. `points` are (granularity, efficiency) pairs; between the last point below and
    the first point at or above the threshold, interpolates linearly in log granularity.
    Returns (granularity, note): note is "" for an interpolated crossing, "<=" when the smallest
    granularity measured already reaches it, and granularity is None when it is never reached."""
    points = sorted(p for p in points if not (math.isnan(p[0]) or math.isnan(p[1])))
    for i, (g, e) in enumerate(points):
        if e < threshold:
            continue
        if i == 0:
            return g, "<="
        g0, e0 = points[i - 1]
        fraction = (threshold - e0) / (e - e0)
        return math.exp(math.log(g0) + fraction * (math.log(g) - math.log(g0))), ""
    return None, ""


def per_task(rows, column):
    """column / tasks per row; NaN where either is unmeasured."""
    if column not in rows or "tasks" not in rows:
        return pd.Series(np.nan, index=rows.index)
    return rows[column] / rows["tasks"].where(rows["tasks"] > 0)
