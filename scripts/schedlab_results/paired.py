"""Paired comparisons over blocks.

A block is one repetition of one workload configuration in one run: `schedlab run` measures
repetition i of every case of a configuration before repetition i+1 of any (in a shuffled order
within the repetition), so the variants of a block saw the same phase of the machine. A paired
comparison therefore works on one number per block, e.g. log(time of A / time of B), and never
compares medians taken over different moments.

For the per-block differences x_1..x_n this module gives:
- the Hodges-Lehmann estimate (the median of the Walsh averages (x_i + x_j) / 2, i <= j) with
  its exact 95% interval, the one that inverts the Wilcoxon signed-rank test: for n <= 60 from
  the exact null distribution of the signed-rank statistic, beyond from its normal
  approximation. It needs no resampling, so the same data always give the same interval;
- the signed-rank p-value (scipy.stats.wilcoxon), two-sided or one-sided;
- Holm's step-down correction across every test of a table.

scipy has the test but not the interval (nor the signed-rank quantiles it needs), hence the
small exact computation here.
"""
import math
import warnings
from functools import lru_cache

import numpy as np
from scipy.stats import norm, wilcoxon

LEVEL = 0.95
EXACT_UP_TO = 60  # exact null distribution up to this many blocks; normal approximation beyond


@lru_cache(maxsize=None)
def _signed_rank_cdf(n):
    """P(W+ <= w) for w = 0 .. n(n+1)/2 under the null (each rank's sign a fair coin)."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):  # add rank `rank` with a + or - sign
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return np.cumsum(counts) / 2.0 ** n


def _critical_rank(n, level):
    """The largest c with P(W+ <= c - 1) <= (1 - level) / 2: the interval is the c-th smallest
    to the c-th largest Walsh average. 0 when n is too small for the level."""
    tail = (1.0 - level) / 2.0
    if n > EXACT_UP_TO:
        mean, sd = n * (n + 1) / 4.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        return max(0, int(math.floor(mean + norm.ppf(tail) * sd)))
    cdf = _signed_rank_cdf(n)
    c = 0
    while c < len(cdf) and cdf[c] <= tail:
        c += 1
    return c


def hodges_lehmann(x, level=LEVEL):
    """(estimate, low, high) of the centre of the per-block differences x. The interval is
    (-inf, inf) when there are too few blocks to reach the level (5 or fewer at 95%)."""
    x = np.sort(np.asarray(x, dtype=float))
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return math.nan, -math.inf, math.inf
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2.0)
    estimate = float(np.median(walsh))
    c = _critical_rank(n, level)
    if c == 0:
        return estimate, -math.inf, math.inf
    return estimate, float(walsh[c - 1]), float(walsh[len(walsh) - c])


def signed_rank_p(x, alternative="two-sided"):
    """Wilcoxon signed-rank p-value of the per-block differences: "two-sided", or one-sided
    "greater" (their centre is above 0) or "less"; 1.0 when every difference is 0, NaN without
    data."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return math.nan
    if np.all(x == 0):
        return 1.0
    with warnings.catch_warnings():
        # Ties and zeros make scipy fall back to the normal approximation, and it says so on
        # stderr; the fallback is what we want, the message is noise in a report.
        warnings.simplefilter("ignore", UserWarning)
        return float(wilcoxon(x, zero_method="wilcox", alternative=alternative).pvalue)


def holm(p_values):
    """Holm's step-down adjustment: the family-wise error stays at the level across the whole
    table. NaN entries (no test) stay NaN and do not count as tests."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(len(p), math.nan)
    tested = [k for k in range(len(p)) if not math.isnan(p[k])]
    m = len(tested)
    running = 0.0
    for rank, k in enumerate(sorted(tested, key=lambda k: p[k])):
        running = max(running, min(1.0, (m - rank) * p[k]))
        out[k] = running
    return out.tolist()
