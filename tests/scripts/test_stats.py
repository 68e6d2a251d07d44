"""Unit tests of the pieces of schedlab_results that decide numbers and verdicts."""
import math
import unittest

import pandas as pd

from schedlab_results.claims import combine
from schedlab_results.load import _variant_labels, config_labels, natural_key
from schedlab_results.stats import (change_interval, efficiency_reference, geometric_mean_change,
                                    metg, mwu_p, smallest_p)


class MetgTest(unittest.TestCase):
    def test_interpolates_in_log_granularity(self):
        value, note = metg([(1.0, 0.2), (100.0, 0.8)])
        self.assertEqual(note, "")
        self.assertAlmostEqual(value, 10.0)  # halfway in log between 1 and 100

    def test_first_crossing_counts_even_if_the_curve_dips_later(self):
        value, _ = metg([(1.0, 0.4), (2.0, 0.6), (4.0, 0.45), (8.0, 0.9)])
        self.assertLess(value, 2.0)

    def test_finest_point_already_efficient(self):
        self.assertEqual(metg([(3.0, 0.7), (30.0, 0.9)]), (3.0, "<="))

    def test_not_reached(self):
        self.assertEqual(metg([(1.0, 0.1), (10.0, 0.3)]), (None, ""))

    def test_ignores_unmeasured_points(self):
        value, _ = metg([(1.0, math.nan), (10.0, 0.6)])
        self.assertEqual(value, 10.0)


class TestsAndIntervalsTest(unittest.TestCase):
    def test_mwu_separated_samples(self):
        self.assertLess(mwu_p(range(9), range(10, 19)), 0.05)

    def test_mwu_ignores_unmeasured_and_needs_both_sides(self):
        self.assertIsNone(mwu_p([math.nan], [1.0, 2.0]))

    def test_change_interval_of_identical_samples_contains_zero(self):
        low, high = change_interval([10, 11, 12, 13], [10, 11, 12, 13])
        self.assertLessEqual(low, 0.0)
        self.assertGreaterEqual(high, 0.0)

    def test_change_interval_of_a_halving(self):
        low, high = change_interval([100.0] * 5, [50.0] * 5)
        self.assertAlmostEqual(low, -50.0)
        self.assertAlmostEqual(high, -50.0)

    def test_change_interval_is_the_same_every_time(self):
        old, new = [10, 12, 11, 15, 9], [13, 12, 14, 18, 11]
        self.assertEqual(change_interval(old, new), change_interval(old, new))

    def test_geometric_mean_of_reciprocal_ratios_is_no_change(self):
        change, interval = geometric_mean_change([2.0, 0.5, 2.0, 0.5, 1.0])
        self.assertAlmostEqual(change, 0.0)
        low, high = interval
        self.assertLess(low, 0.0)
        self.assertGreater(high, 0.0)

    def test_geometric_mean_of_few_cases_has_no_interval(self):
        change, interval = geometric_mean_change([1.1, 1.1])
        self.assertAlmostEqual(change, 10.0)
        self.assertIsNone(interval)

    def test_smallest_p_of_three_repetitions_cannot_reach_five_percent(self):
        self.assertAlmostEqual(smallest_p(3, 3), 0.1)  # 2 / C(6, 3)
        self.assertLess(smallest_p(9, 9), 0.001)

    def test_change_interval_from_a_median_of_zero_is_none(self):
        # Resamples of [0, 0, 1] have a median of 0 most of the time: no relative change.
        self.assertIsNone(change_interval([0.0, 0.0, 1.0], [5.0, 6.0, 7.0]))


class EfficiencyReferenceTest(unittest.TestCase):
    MEDIANS = pd.DataFrame([
        {"scheduler": "elision", "scheduler_params": "", "workload": "loops",
         "workload_params": "iters=10", "threads": 1, "median": 100.0},
        {"scheduler": "fair", "scheduler_params": "a=1", "workload": "loops",
         "workload_params": "iters=10", "threads": 1, "median": 120.0},
        {"scheduler": "fair", "scheduler_params": "a=1", "workload": "loops",
         "workload_params": "iters=20", "threads": 1, "median": 220.0},
    ])

    def test_elision_preferred(self):
        self.assertEqual(efficiency_reference(self.MEDIANS, "fair", "a=1", "loops", "iters=10"),
                         (100.0, "elision"))

    def test_serial_in_runs_that_predate_the_elision(self):
        older = self.MEDIANS.assign(scheduler=self.MEDIANS["scheduler"].replace("elision", "serial"))
        self.assertEqual(efficiency_reference(older, "fair", "a=1", "loops", "iters=10"),
                         (100.0, "serial"))

    def test_own_one_thread_run_otherwise(self):
        self.assertEqual(efficiency_reference(self.MEDIANS, "fair", "a=1", "loops", "iters=20"),
                         (220.0, "own 1-thread"))

    def test_none(self):
        self.assertEqual(efficiency_reference(self.MEDIANS, "central", "", "loops", "iters=20"),
                         (None, ""))


class VerdictTest(unittest.TestCase):
    def test_held_only_if_held_in_every_configuration(self):
        self.assertEqual(combine(["held", "held"]), "held")
        self.assertEqual(combine(["held", "inconclusive"]), "inconclusive")

    def test_not_held_anywhere_is_not_held(self):
        self.assertEqual(combine(["held", "not held", "inconclusive"]), "not held")

    def test_configurations_without_data_do_not_count(self):
        self.assertEqual(combine(["held", "not measured"]), "held")
        self.assertEqual(combine(["not measured"]), "not measured")
        self.assertEqual(combine([]), "not measured")


class LabelsTest(unittest.TestCase):
    def test_variant_names_only_what_differs_from_the_usual_configuration(self):
        rows = pd.DataFrame({"scheduler": ["steal-half"] * 4 + ["fair"],
                             "scheduler_params": ["order=lifo handoff=on"] * 2 +
                                                 ["order=fifo handoff=on", "order=lifo handoff=off",
                                                  "order=lifo"]})
        self.assertEqual(_variant_labels(rows),
                         ["steal-half", "steal-half", "steal-half [order=fifo]",
                          "steal-half [handoff=off]", "fair"])

    def test_config_labels_name_the_varying_parameters(self):
        labels = config_labels([("fib", "n=20 cutoff=8"), ("fib", "n=20 cutoff=14"),
                                ("loops", "tasks=64 skew=uniform")])
        self.assertEqual(labels[("fib", "n=20 cutoff=8")], "fib cutoff=8")
        self.assertEqual(labels[("loops", "tasks=64 skew=uniform")], "loops")

    def test_natural_order(self):
        self.assertEqual(sorted(["cutoff=14", "cutoff=8"], key=natural_key),
                         ["cutoff=8", "cutoff=14"])


if __name__ == "__main__":
    unittest.main()
