"""Figures shown apart from the claims: measured, reported, judged by no criterion.

Two kinds, each listed in APART with why it is not a claim:
- retired claims: the three os-threads "switch" parts compared a thread per task with fibers on
  fib-go, which measures creating and ending a thread (~600x a fiber's task), not the seed's
  thread context switch (1,000-1,500 ns against a goroutine switch's fraction of it); the
  ping-pong workload judges that sentence. Their figures stay useful, so they are shown;
- sanity checks, true by the construction of a backend: os-threads runs every task as a thread
  of its own, so its peak of live tasks is a thread per waiting connection by design. A claim
  that cannot come out otherwise is no claim, but a broken backend would show here.

Each figure is per case (workload configuration, variant, threads): the median over the
repetitions the machine did not disturb (`noisy`, `slow_cpu`), and for retired claims the same
ratio the claim computed, paired per block, with its Hodges-Lehmann 95% interval.
"""
import math
from dataclasses import dataclass

import numpy as np

from . import doc
from .load import block_key, flagged, native, parse_params
from .metrics import METRICS
from .paired import hodges_lehmann


@dataclass(frozen=True)
class Apart:
    title: str
    why: str                  # why it is shown apart, not judged
    workload: str
    where: dict               # workload parameter values allowed (as criteria.toml's `where`)
    schedulers: tuple         # the variants shown, at their defaults
    metrics: tuple            # metrics.py names, one column each (median over repetitions)
    ratio_of: tuple = ()      # (a, b) schedulers: a / b per block, with its interval


APART = [
    Apart("A thread per task: os-threads beside fibers and Go (retired from the claims)",
          "retired from the 'switch' claim (issue 31): a thread per task measures creating and "
          "ending a thread, not the seed's thread switch (the ping-pong parts judge that)",
          "fib-go", {}, ("os-threads", "steal-half", "go-runtime"),
          ("per_task", "voluntary_switches_per_task"), ("os-threads", "steal-half")),
    Apart("os-threads: a thread per connection (a sanity check)",
          "true by construction: os-threads runs every task as a thread of its own, so each "
          "waiting connection holds one; a figure far from 1 means the backend or netmix broke",
          "netmix", {"server-delay-us": ["200"]}, ("os-threads",),
          ("live_tasks_per_connection",)),
]


def _default_rows(rows, scheduler):
    """The scheduler's rows at its most common parameters (the variant a preset runs it at)."""
    mine = rows[rows["scheduler"] == scheduler]
    if mine.empty:
        return mine
    return mine[mine["scheduler_params"] == mine["scheduler_params"].mode().iloc[0]]


def _median(rows, metric):
    values = [METRICS[metric].value(r, None) for _, r in rows.iterrows()]
    values = [v for v in values if not math.isnan(v)]
    return float(np.median(values)) if values else math.nan


def _paired_ratio(a_rows, b_rows):
    """Hodges-Lehmann estimate and 95% interval of time a / time b, paired per block."""
    key = block_key(a_rows)
    merged = a_rows.merge(b_rows, on=key, suffixes=("_a", "_b"))
    x = np.log(merged["wall_ns_a"].to_numpy(float) / merged["wall_ns_b"].to_numpy(float))
    if len(x) == 0:
        return None
    return [math.exp(v) if math.isfinite(v) else v for v in hodges_lehmann(x)] + [len(x)]


def _number(v, metric):
    if math.isnan(v):
        return "n/a"
    return f"{v:.3g}" if metric != "per_task" else f"{v:,.0f}"


def figure(spec, rows):
    """The blocks of one APART entry, or [] when these runs have none of its rows."""
    rows = rows[rows["workload"] == spec.workload]
    rows = rows[[all(parse_params(p).get(k, v[0]) in v for k, v in spec.where.items())
                 for p in rows["workload_params"]]] if spec.where else rows
    if rows.empty or not (rows["scheduler"] == spec.schedulers[0]).any():
        return []
    table = []
    for (params, threads), cfg in rows.groupby(["workload_params", "threads"], sort=True):
        sides = {s: _default_rows(cfg, s) for s in spec.schedulers}
        if sides[spec.schedulers[0]].empty:
            continue  # a configuration the figure's subject did not run
        for scheduler, mine in sides.items():
            if mine.empty:
                continue
            cells = [_number(_median(mine, m), m) for m in spec.metrics]
            ratio = ""
            if spec.ratio_of and scheduler == spec.ratio_of[0] and not sides[spec.ratio_of[1]].empty:
                r = _paired_ratio(mine, sides[spec.ratio_of[1]])
                if r is not None:
                    estimate, low, high, n = r
                    ratio = (f"{estimate:.3g}× [{low:.3g}, {high:.3g}] ({n} blocks)"
                             if math.isfinite(low) and math.isfinite(high) and low > 0
                             else f"{estimate:.3g}× (no interval: {n} blocks)")
            table.append([params, str(threads), scheduler, str(len(mine))] + cells +
                         ([ratio] if spec.ratio_of else []))
    if not table:
        return []
    header = ["Workload params", "Threads", "Variant", "Reps"] + \
        [METRICS[m].label + (" (ns)" if m == "per_task" else "") for m in spec.metrics] + \
        ([f"time {spec.ratio_of[0]} / {spec.ratio_of[1]} [95%]"] if spec.ratio_of else [])
    return [doc.Heading(3, spec.title), doc.Paragraph(f"Not a claim: {spec.why}. Medians over "
                                                      "the unflagged repetitions."),
            doc.Table(header, table)]


def blocks(results):
    """The report's section: every APART entry these runs have rows for ([] when none)."""
    rows = native(results.rows)
    rows = rows[~flagged(rows)]
    out = []
    for spec in APART:
        out += figure(spec, rows)
    return out
