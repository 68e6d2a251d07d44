"""The Hodges-Lehmann estimate and exact 95% interval, computed twice: by harness/paired.cpp for
the summary `schedlab run` prints, and by scripts/schedlab_results/paired.py for the report's
claims. Both must state the same numbers for the same blocks, so the two are run on the same
data sets (random, tied, small, around the sizes where the interval's rank changes and where the
exact distribution gives way to the normal one) and compared; the critical rank both rely on is
also checked against a brute-force count of every sign pattern.

The C++ side runs through tests/hodges_lehmann_tool.cpp, whose path tests/scripts/CMakeLists.txt
passes in $HODGES_LEHMANN_TOOL; skipped without it."""
import itertools
import math
import os
import subprocess
import unittest

import numpy as np

from schedlab_results import paired

TOOL = os.environ.get("HODGES_LEHMANN_TOOL", "")
REL = 1e-9  # the two sum and sort the same Walsh averages; only the last bits may differ


def data_sets():
    """(name, values) pairs: every n from 0 to 70 (the interval's rank steps up with n, 5 or
    fewer are unbounded, 60 is the last exact size), then ties, NaNs and awkward scales."""
    rng = np.random.default_rng(34)
    sets = [(f"normal n={n}", rng.normal(0.05, 0.1, n)) for n in range(0, 71)]
    sets += [(f"log-ratios n={n}", np.log(rng.lognormal(0.2, 0.5, n))) for n in (9, 15, 30, 59,
                                                                              60, 61, 100, 150)]
    sets += [
        ("all equal", np.full(12, 0.3)),
        ("all zero", np.zeros(9)),
        ("two values", np.array([1.0, 2.0] * 7)),
        ("small integers, many ties", rng.integers(-2, 3, 25).astype(float)),
        ("ties at 61", rng.integers(0, 4, 61).astype(float)),
        ("one outlier", np.append(rng.normal(0, 1, 10), 1e6)),
        ("huge scale", rng.normal(3e9, 1e8, 17)),
        ("tiny scale", rng.normal(1e-12, 1e-13, 17)),
        ("all negative", -rng.exponential(1.0, 8)),
        ("NaNs among values", np.array([0.1, np.nan, 0.3, -0.2, np.nan, 0.5, 0.05, 0.2, 0.4])),
        ("only NaNs", np.array([np.nan, np.nan])),
        ("six with a NaN (five left: unbounded)", np.array([1, 2, np.nan, 3, 4, 5.0])),
    ]
    return sets


def same(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=REL, abs_tol=0.0)


@unittest.skipUnless(TOOL, "no hodges_lehmann_tool in $HODGES_LEHMANN_TOOL (ctest passes it)")
class HarnessAgreesWithPythonTest(unittest.TestCase):
    def test_same_estimate_and_interval_for_every_data_set(self):
        sets = data_sets()
        # repr keeps every bit of a double, so both sides see the same numbers.
        stdin = "".join(" ".join(repr(float(v)) for v in values) + "\n" for _, values in sets)
        result = subprocess.run([TOOL], input=stdin, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), len(sets))
        for (name, values), line in zip(sets, lines):
            harness = tuple(float(v) for v in line.split())
            python = paired.hodges_lehmann(values)
            with self.subTest(name):
                self.assertTrue(all(map(same, harness, python)),
                                f"harness {harness} vs paired.py {python}")

    def test_unbounded_exactly_up_to_five_blocks(self):
        # The boundary both document: a run summary with 5 blocks must not print an interval.
        result = subprocess.run([TOOL], input="1 2 3 4 5\n1 2 3 4 5 6\n", capture_output=True,
                                text=True, timeout=60)
        five, six = (tuple(float(v) for v in line.split()) for line in result.stdout.splitlines())
        self.assertEqual(five[1:], (-math.inf, math.inf))
        self.assertEqual(six[1:], (1.0, 6.0))


class CriticalRankTest(unittest.TestCase):
    def test_exact_rank_matches_every_sign_pattern_counted(self):
        # The largest c with P(W+ <= c - 1) <= 2.5%, W+ the sum of the ranks given a + sign,
        # counted over all 2^n sign patterns: the definition both implementations compute
        # by a recurrence.
        for n in range(1, 17):
            sums = [sum(r for r, plus in zip(range(1, n + 1), signs) if plus)
                    for signs in itertools.product((False, True), repeat=n)]
            c = 0
            while sum(s <= c for s in sums) / 2 ** n <= 0.025:
                c += 1
            self.assertEqual(paired._critical_rank(n, 0.95), c, n)


if __name__ == "__main__":
    unittest.main()
