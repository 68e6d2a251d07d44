"""Latency distributions: each row's buckets from the run's latency file, merged per case.

`schedlab run` writes NAME.latency.jsonl beside NAME.csv (harness/latency_file.hpp): one JSON
line per row and kind (`sched_delay`: the scheduling delays of a scheduler with --latency on, or
Go's /sched/latencies:seconds; `request`: netmix --load open's request latency), each with the
buckets [low_ns, width_ns, count] of its distribution. The CSV's percentile columns come from the
same buckets; this module lets the figures draw the whole distribution without a re-run.

The percentile rule is latency.hpp's (LatencyDistribution::percentile), here for the figures'
many percentiles: the nearest rank (the smallest value with at least q% of the samples at or
below it), each bucket standing for its values by low + width // 2 (low for a bucket of width 1),
never above the exact max when the recorder kept one. schedlab's own buckets put every
percentile within 1/128 of the exact figure; Go's within about 1/32.
"""
import json
import math
import os

import numpy as np

KINDS = ("sched_delay", "request")
# How the figures and the report name each kind.
KIND_LABELS = {"sched_delay": "scheduling delay", "request": "request latency (open loop)"}
# The key that joins a latency line to its CSV row.
ROW_KEY = ("run_id", "block_index", "rep", "scheduler", "scheduler_params", "workload",
           "workload_params", "threads")


def latency_path(csv_path):
    stem = csv_path[:-4] if csv_path.endswith(".csv") else csv_path
    return stem + ".latency.jsonl"


def read_lines(csv_path):
    """The latency file's lines beside `csv_path` as dicts ([] when there is none); a damaged
    line is skipped (the file is appended as the run goes, a line whole or absent)."""
    path = latency_path(csv_path)
    if not os.path.exists(path):
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for text in f:
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("kind") in KINDS and isinstance(line.get("buckets"), list):
                out.append(line)
    return out


class Distribution:
    """Merged buckets {low: [width, count]} and the exact max if every part kept one."""

    def __init__(self):
        self.buckets = {}
        self.max = 0
        self.max_exact = True
        self.count = 0

    def add(self, line):
        for low, width, count in line["buckets"]:
            entry = self.buckets.setdefault(int(low), [int(width), 0])
            entry[1] += int(count)
            self.count += int(count)
        if line.get("max_exact") and line.get("max") is not None:
            self.max = max(self.max, int(line["max"]))
        else:
            self.max_exact = False
        return self

    def _sorted(self):
        return sorted((low, w, c) for low, (w, c) in self.buckets.items() if c > 0)

    @staticmethod
    def _representative(low, width):
        return low if width <= 1 else low + width // 2

    def percentile(self, q):
        """The nearest-rank q-th percentile (0 < q <= 100), NaN when empty."""
        if self.count == 0:
            return math.nan
        rank = min(max(math.ceil(q / 100.0 * self.count), 1), self.count)
        seen = 0
        for low, width, count in self._sorted():
            seen += count
            if seen >= rank:
                v = self._representative(low, width)
                return min(v, self.max) if self.max_exact else v
        return math.nan

    def top(self):
        """The exact max, else the top bucket's representative; NaN when empty."""
        if self.count == 0:
            return math.nan
        if self.max_exact:
            return self.max
        low, width, _ = self._sorted()[-1]
        return self._representative(low, width)

    def curve(self):
        """(percentiles, values): the distribution as the latency figure draws it, from the
        median to the last sample, evenly spaced on the "nines" scale (-log10(1 - q/100))."""
        if self.count == 0:
            return np.array([]), np.array([])
        last = math.log10(self.count)  # the rank just below the max, in nines
        nines = np.linspace(math.log10(2), max(last, math.log10(2)), 200)
        qs = 100.0 * (1.0 - 10.0 ** -nines)
        return qs, np.array([self.percentile(q) for q in qs], dtype=float)


def attach(rows, lines_by_source):
    """Adds to `rows` (a DataFrame of CSV rows with a `source` column) one object column per
    kind, `_sched_delay` and `_request`: the row's latency line (a dict) or None."""
    index = {}
    for source, lines in lines_by_source.items():
        for line in lines:
            key = (source,) + tuple(str(line.get(k, "")) for k in ROW_KEY) + (line["kind"],)
            index[key] = line
    for kind in KINDS:
        keys = zip(rows["source"], *(rows[k].astype(str) if k in rows else [""] * len(rows)
                                     for k in ROW_KEY))
        rows["_" + kind] = [index.get(tuple(str(v) for v in key) + (kind,)) for key in keys]
    return rows


def merged(rows, kind):
    """One Distribution of the `kind` lines of `rows` (the repetitions of a case)."""
    d = Distribution()
    for line in rows["_" + kind]:
        if line is not None:
            d.add(line)
    return d


def sources(rows, kind):
    """Where the `kind` lines of `rows` came from ({"schedlab"}, {"go"}, ...)."""
    return {line.get("source", "") for line in rows["_" + kind] if line is not None}
