"""Statistics over repetitions: case summaries, tests, intervals, efficiency and METG."""
import math

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from .load import CASE_KEY
from .paired import hodges_lehmann

# Fewer repetitions than this make a key comparison weak; results are still shown, but marked.
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


def format_p(p):
    if p is None:
        return "n/a"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def change_interval(old, new, level=0.95, resamples=2000, seed=1):
    """Percentile bootstrap interval of the change of the median, in percent. The seed is fixed
    so that the same files always print the same interval. None when a resampled old median is
    0: a change from 0 has no relative size (a counter that read 0, such as fair's steals)."""
    old, new = np.asarray(old, dtype=float), np.asarray(new, dtype=float)
    rng = np.random.default_rng(seed)
    old_medians = np.median(rng.choice(old, size=(resamples, len(old))), axis=1)
    new_medians = np.median(rng.choice(new, size=(resamples, len(new))), axis=1)
    if (old_medians == 0).any():
        return None
    change = (new_medians / old_medians - 1.0) * 100.0
    tail = (1.0 - level) / 2.0 * 100.0
    return float(np.percentile(change, tail)), float(np.percentile(change, 100.0 - tail))


def efficiency(reference_ns, threads, wall_ns):
    """Parallel efficiency T_ref / (threads x T_threads)."""
    return reference_ns / (threads * wall_ns)


def efficiency_reference(medians, scheduler, scheduler_params, workload, workload_params):
    """The time efficiency is measured against, from a table of case medians of wall_ns:
    serial's median for the same workload parameters, else the scheduler's own 1-thread median.
    Returns (ns, "serial" | "own 1-thread") or (None, "") when neither was run."""
    same = (medians["workload"] == workload) & (medians["workload_params"] == workload_params)
    serial = medians[same & (medians["scheduler"] == "serial")]
    if not serial.empty:
        return float(serial["median"].iloc[0]), "serial"
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
