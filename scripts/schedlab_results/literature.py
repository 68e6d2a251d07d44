"""Beside the literature: schedlab's per-task costs laid beside the field's published tables.

The published figures live in results/published/, one CSV per source (docs/workloads.md, "The field's
benchmarks"), each row one figure with its source, hardware, compiler and date. A published
time cannot be compared with one measured here: the machines differ by years and by tens of
cores. What can agree across machines is a ratio of two runtimes both tables ran.

Comparable rows, first (comparable()): for every pair of runtimes that a source published in
the same benchmark at the same thread count and that both run here (oneTBB, OpenMP, Go,
Boost.Fiber, the elision: the published rows whose `scheduler` names a backend), the same ratio
both ways: here (paired per block, Hodges-Lehmann with its 95% interval) and published, with the
source's hardware, compiler and thread count, and "agrees" or "differs" by AGREE_FACTOR, a rule
fixed before any of these pairs was computed (issue 22 set it for ratios to oneTBB; issue 31
applies the same rule, unchanged, to every pair). A published pair whose thread count is not
stated, or that no run here matches in threads, is listed as not comparable, with why; a source
with no such pair is named once.

The detail, after (the rest of this docstring): for each workload and backend

- the per-task cost here (the median of the repetitions' wall time over tasks run),
- its time relative to `tbb` at the same threads here: the Hodges-Lehmann estimate over the
  blocks in which both ran (paired.py; each block ran both back to back) with its 95% interval,
- beside the published ratio of the same runtime (schedlab's backend named in the CSV's
  `scheduler` column) to the source's oneTBB, at the same benchmark and threads, and how far the
  two ratios are apart.

A ratio agrees when the two are within AGREE_FACTOR of each other. Rows are matched on the
workload and its shape (the parameters that change what a task is, SHAPE_PARAMS), not on its size:
a per-task ratio converges once a tree has a few hundred thousand tasks, so fib(27) here may
stand beside fib(40) there (the note says so). It is not matched across thread counts: a ratio at
64 threads measures how each runtime scales, not what a task costs, so a published figure at
another thread count is shown but not judged (THREADS_NOTE).
"""
import math
import os

import numpy as np
import pandas as pd

from . import doc
from .load import flagged, native, parse_params
from .paired import hodges_lehmann

PUBLISHED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                             "results", "published")
REFERENCE = "tbb"  # the runtime every published task-runtime table has
# Two ratios to oneTBB agree when they are within this factor of each other: the published
# runtimes themselves span 0.2x to 100x oneTBB, and a shape difference between ports (tzcnt's
# and libfork's oneTBB ports run one child inline, schedlab's spawn every child) or another
# compiler or allocator moves a ratio by tens of per cent, not by a factor of two.
AGREE_FACTOR = 2.0
# The parameters that change what a task does (must match); every other workload parameter is
# a size (may differ, and the table says so).
SHAPE_PARAMS = {"fib-go": ("base", "cutoff"), "fib": ("cutoff",), "matmul": ("block", "element"),
                "skynet": (), "nqueens": (), "uts": ("tree",)}
# What a workload's published figures are when they are not times (the row says so).
NOT_TIMES = {"uts": "UTS's published figures are its trees' sizes, which every run checks; no published "
                    "time with oneTBB is in results/published"}
THREADS_NOTE = ("published at {theirs} threads, here {ours}: a ratio at another thread count "
                "measures scaling, not per-task cost; shown, not judged")
TIME_METRICS = ("wall_ms", "wall_us", "us_per_task")
# Which runtime of a published pair is the denominator: the first of these the pair has (the
# sequential program, then oneTBB, the runtime every task-runtime table has).
DENOMINATOR_ORDER = ("elision", "tbb", "openmp", "boost-fiber", "go-runtime")
PUBLISHED_COLUMNS = ["source", "file", "commit", "hardware", "compiler", "date", "benchmark",
                     "workload", "params", "runtime", "scheduler", "threads", "metric", "value",
                     "value_high", "statistic", "note"]


def load_published(directory=PUBLISHED_DIR):
    """The published timing figures: every CSV of `directory` with the common columns (the UTS
    tree sizes have another layout and no times). Empty when the directory is missing."""
    frames = []
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".csv"):
                continue
            frame = pd.read_csv(os.path.join(directory, name), dtype=str, keep_default_na=False)
            if list(frame.columns) != PUBLISHED_COLUMNS:
                continue
            frames.append(frame.assign(file_name=name))
    if not frames:
        return pd.DataFrame(columns=PUBLISHED_COLUMNS + ["file_name"])
    published = pd.concat(frames, ignore_index=True)
    published = published[published["metric"].isin(TIME_METRICS)].copy()
    # Per-task times of one source hold the same tasks for every runtime of a benchmark at one
    # size, so their ratios are time ratios; a pair is only formed within one metric.
    published["value"] = pd.to_numeric(published["value"])
    published["threads"] = pd.to_numeric(published["threads"], errors="coerce")
    return published


def shape(workload, params):
    """The (name, value) pairs of a workload's parameters that fix its task shape."""
    keys = SHAPE_PARAMS.get(workload, ())
    values = parse_params(params) if isinstance(params, str) else dict(params)
    return tuple((k, values.get(k, "")) for k in keys)


def published_ratios(published):
    """Each published time relative to oneTBB's in the same source, benchmark and threads:
    a frame of source, benchmark, workload, params, runtime, scheduler, threads, ratio (oneTBB's
    own row gives 1)."""
    out = []
    key = ["source", "benchmark", "threads"]
    for _, group in published.dropna(subset=["threads"]).groupby(key, sort=False):
        reference = group[group["scheduler"] == REFERENCE]
        if reference.empty:
            continue
        tbb_value = float(reference["value"].iloc[0])
        for row in group.itertuples():
            out.append({"source": row.source, "benchmark": row.benchmark, "workload": row.workload,
                        "params": row.params, "runtime": row.runtime, "scheduler": row.scheduler,
                        "threads": int(row.threads), "ratio": float(row.value) / tbb_value,
                        "hardware": row.hardware, "date": row.date})
    return pd.DataFrame(out, columns=["source", "benchmark", "workload", "params", "runtime",
                                      "scheduler", "threads", "ratio", "hardware", "date"])


def _paired(pairs):
    """(estimate, low, high, blocks) of log(time / tbb's time) over these pairs of rows."""
    x = np.log(pairs["wall_ns"].to_numpy(dtype=float) / pairs["wall_ns_tbb"].to_numpy(dtype=float))
    estimate, low, high = hodges_lehmann(x) if len(x) else (math.nan, -math.inf, math.inf)
    return estimate, low, high, len(x)


def measured_ratios(rows):
    """Per case (workload, params, variant, threads): the median ns per task, and the paired
    ratio of its time to tbb's at the same threads in the same blocks, with its interval. Blocks
    where another process took CPU time (`noisy`) are left out while the rest still bound an
    interval; otherwise every block counts and the row is marked `flagged`."""
    rows = native(rows)
    rows = rows.assign(_flagged=flagged(rows).to_numpy())
    block = ["source", "run_id", "block_index", "rep"] if "block_index" in rows else ["source", "run_id", "rep"]
    out = []
    case = ["workload", "workload_params", "variant", "scheduler", "threads"]
    for (workload, params, variant, scheduler, threads), group in rows.groupby(case, sort=True):
        per_task = group["ns_per_task"].median() if "ns_per_task" in group else math.nan
        tbb = rows[(rows["workload"] == workload) & (rows["workload_params"] == params) &
                   (rows["scheduler"] == REFERENCE) & (rows["threads"] == threads)]
        pairs = group.merge(tbb[block + ["wall_ns", "_flagged"]], on=block, suffixes=("", "_tbb"))
        clean = pairs[~(pairs["_flagged"] | pairs["_flagged_tbb"])]
        estimate, low, high, blocks = _paired(clean)
        flagged_used = len(clean) < len(pairs) and (math.isinf(low) or not blocks)
        if flagged_used:
            estimate, low, high, blocks = _paired(pairs)
        out.append({"workload": workload, "params": params, "variant": variant,
                    "scheduler": scheduler, "threads": int(threads), "ns_per_task": per_task,
                    "ratio": math.exp(estimate) if not math.isnan(estimate) else math.nan,
                    "low": math.exp(low), "high": math.exp(high), "blocks": blocks,
                    "flagged": flagged_used})
    return pd.DataFrame(out)


def agreement(ours, theirs):
    """The rule fixed in advance: two ratios agree when within AGREE_FACTOR of each other."""
    apart = max(ours, theirs) / min(ours, theirs)
    return f"agrees ({apart:.2f}× apart)" if apart <= AGREE_FACTOR else f"differs ({apart:.2f}× apart)"


def _closest(candidates, threads):
    """The candidate rows at these threads, else at the nearest thread count."""
    if candidates.empty:
        return candidates
    same = candidates[candidates["threads"] == threads]
    if len(same):
        return same
    nearest = min(candidates["threads"], key=lambda t: (abs(math.log(t / threads)), t))
    return candidates[candidates["threads"] == nearest]


def _fmt_ratio(r):
    if math.isnan(r):
        return "n/a"
    return f"{r:.2f}×" if r < 10 else f"{r:.0f}×"


def _interval(m):
    if math.isinf(m["low"]) or math.isinf(m["high"]) or m["low"] == 0:
        return f"{_fmt_ratio(m['ratio'])} (no interval: {m['blocks']} blocks)"
    return f"{_fmt_ratio(m['ratio'])} [{m['low']:.2f}, {m['high']:.2f}]"


def _size(params, workload):
    shape_keys = dict(shape(workload, params))
    return " ".join(f"{k}={v}" for k, v in parse_params(params).items() if k not in shape_keys)


def comparison(measured, theirs):
    """The rows of the table: each measured case beside its published counterpart, if any.
    Each row: dict with the cells and `verdict` (agrees / differs / not judged / no figure)."""
    out = []
    for m in measured.to_dict("records"):
        my_shape = shape(m["workload"], m["params"])
        same_shape = theirs[(theirs["workload"] == m["workload"]) &
                            theirs["params"].map(lambda p, w=m["workload"]: shape(w, p) == my_shape)]
        mine = same_shape[same_shape["scheduler"] == m["scheduler"]]
        match = _closest(mine, m["threads"])
        row = dict(m, published="—", source="", verdict="no published figure", note=NOT_TIMES.get(m["workload"], ""))
        if m["scheduler"] == REFERENCE:
            row["verdict"] = "reference"
        if not match.empty and m["scheduler"] != REFERENCE:
            p = match.iloc[0]
            row["published"] = f"{_fmt_ratio(p['ratio'])} ({p['runtime']}, {p['threads']} thr, {p['params']})"
            row["source"] = f"{p['source']}, {p['date']}"
            notes = []
            if p["threads"] != m["threads"]:
                notes.append(THREADS_NOTE.format(theirs=p["threads"], ours=m["threads"]))
                row["verdict"] = "not judged"
            elif math.isnan(m["ratio"]):
                row["verdict"] = "not measured here"
            else:
                row["verdict"] = agreement(m["ratio"], p["ratio"])
            if _size(p["params"], m["workload"]) != _size(m["params"], m["workload"]):
                notes.append(f"size here {_size(m['params'], m['workload']) or 'default'}")
            if m["scheduler"] == "openmp":
                notes.append("published OpenMP is clang's libomp, here GCC's libgomp")
            row["note"] = "; ".join(notes)
        out.append(row)
    return out


def field_peers(theirs, measured):
    """The published ratios of the runtimes schedlab does not have, for the benchmarks and
    thread counts measured here: where the field's best stand against oneTBB."""
    lines = []
    seen = set()
    for m in measured.to_dict("records"):
        my_shape = shape(m["workload"], m["params"])
        group = theirs[(theirs["workload"] == m["workload"]) &
                       theirs["params"].map(lambda p, w=m["workload"]: shape(w, p) == my_shape)]
        group = _closest(group, m["threads"])
        if group.empty:
            continue
        p0 = group.iloc[0]
        key = (p0["source"], p0["benchmark"], int(p0["threads"]))
        if key in seen:
            continue
        seen.add(key)
        others = group[group["scheduler"] == ""].sort_values("ratio")
        listed = ", ".join(f"{r.runtime} {_fmt_ratio(r.ratio)}" for r in others.itertuples())
        lines.append(f"{p0['benchmark']} at {key[2]} thread{'s' if key[2] != 1 else ''} "
                     f"({p0['source']}, {p0['hardware']}, {p0['date']}): "
                     f"{listed}")
    return lines


def published_pairs(published):
    """Every pair of runtimes that run here too (a `scheduler` named) published by one source in
    one benchmark, size and metric: a frame of source, benchmark, workload, params, metric, x,
    y (the schedulers: y the denominator, DENOMINATOR_ORDER), threads (NaN where a row does not
    state it, or the two rows' counts differ: then `why` says so), ratio x / y, hardware,
    compiler, date, why ("" when comparable)."""
    out = []
    named = published[published["scheduler"] != ""]
    key = ["source", "benchmark", "params", "metric"]
    for (source, benchmark, params, metric), group in named.groupby(key, sort=False):
        rows = list(group.itertuples())
        for i, first in enumerate(rows):
            for second in rows[i + 1:]:
                if first.scheduler == second.scheduler:
                    continue
                order = {s: k for k, s in enumerate(DENOMINATOR_ORDER)}
                x, y = sorted((first, second), key=lambda r: order.get(r.scheduler, len(order)),
                              reverse=True)
                threads, why = x.threads, ""
                if math.isnan(x.threads) or math.isnan(y.threads):
                    threads, why = math.nan, "thread count not stated"
                elif x.threads != y.threads:
                    continue  # the same pair at one count appears on its own
                out.append({"source": source, "benchmark": benchmark, "workload": x.workload,
                            "params": params, "metric": metric, "x": x.scheduler, "y": y.scheduler,
                            "x_runtime": x.runtime, "y_runtime": y.runtime, "threads": threads,
                            "ratio": float(x.value) / float(y.value), "hardware": x.hardware,
                            "compiler": x.compiler, "date": x.date, "why": why})
    return pd.DataFrame(out, columns=["source", "benchmark", "workload", "params", "metric", "x", "y",
                                      "x_runtime", "y_runtime", "threads", "ratio", "hardware",
                                      "compiler", "date", "why"])


def _variant_rows(rows, scheduler):
    """A backend's rows at the parameters most of its rows use (the variant a preset runs)."""
    mine = rows[rows["scheduler"] == scheduler]
    if mine.empty:
        return mine
    return mine[mine["scheduler_params"] == mine["scheduler_params"].mode().iloc[0]]


def pair_ratio(rows, x, y, threads):
    """(estimate, low, high, blocks) of time x / time y paired per block at `threads`, over the
    blocks where neither was flagged; None when they never ran in the same block."""
    block = ["source", "run_id", "block_index", "rep"] if "block_index" in rows else ["source", "run_id", "rep"]
    a = _variant_rows(rows[rows["threads"] == threads], x)
    b = _variant_rows(rows[rows["threads"] == threads], y)
    pairs = a.merge(b[block + ["wall_ns", "_flagged"]], on=block, suffixes=("", "_y"))
    pairs = pairs[~(pairs["_flagged"] | pairs["_flagged_y"])]
    if pairs.empty:
        return None
    logs = np.log(pairs["wall_ns"].to_numpy(dtype=float) / pairs["wall_ns_y"].to_numpy(dtype=float))
    return (*hodges_lehmann(logs), len(logs))


def comparable(rows, pairs):
    """The rows of the comparable table (each a dict) and the published pairs not comparable
    here, with why: one row per published pair and per configuration here of the same workload
    shape in which both runtimes ran at the pair's thread count."""
    rows = native(rows)
    rows = rows.assign(_flagged=flagged(rows).to_numpy())
    judged, missing = [], {}  # missing: (pair, why) -> the published thread counts
    for p in pairs.to_dict("records"):
        where = f"{p['x']} / {p['y']}, {p['benchmark']} ({p['source']})"
        if p["why"]:
            missing.setdefault((where, p["why"]), [])
            continue
        threads = int(p["threads"])
        mine = rows[(rows["workload"] == p["workload"]) &
                    rows["workload_params"].map(lambda q, w=p["workload"]: shape(w, q) == shape(w, p["params"]))]
        found = False
        for params, cfg in mine.groupby("workload_params", sort=True):
            r = pair_ratio(cfg, p["x"], p["y"], threads)
            if r is None:
                continue
            found = True
            estimate, low, high, blocks = r
            ratio = math.exp(estimate)
            notes = []
            if _size(params, p["workload"]) != _size(p["params"], p["workload"]):
                notes.append(f"size here {_size(params, p['workload']) or 'default'}, "
                             f"published {_size(p['params'], p['workload']) or 'default'}")
            if "openmp" in (p["x"], p["y"]):
                notes.append("published OpenMP is clang's libomp, here GCC's libgomp")
            judged.append({"benchmark": p["benchmark"], "params": params, "pair": f"{p['x']} / {p['y']}",
                           "published_runtimes": f"{p['x_runtime']} / {p['y_runtime']}",
                           "threads": threads, "here": ratio, "low": math.exp(low), "high": math.exp(high),
                           "blocks": blocks, "published": p["ratio"], "source": p["source"],
                           "hardware": p["hardware"], "compiler": p["compiler"], "date": p["date"],
                           "verdict": agreement(ratio, p["ratio"]),
                           "note": "; ".join(notes)})
        if not found:
            absent = [s for s in (p["x"], p["y"]) if not (mine["scheduler"] == s).any()]
            ran = sorted(set(mine.loc[mine["scheduler"].isin([p["x"], p["y"]]), "threads"]))
            why = (f"no {p['workload']} run of that shape here" if mine.empty else
                   f"{' and '.join(absent)} not run on it here" if absent else
                   f"not run here at that count (here {', '.join(map(str, ran))})"
                   if threads not in ran else "never in the same block here")
            missing.setdefault((where, why), []).append(threads)
    not_comparable = [f"{where}" + (f" at {', '.join(map(str, counts))} thread{'s' if counts != [1] else ''}"
                                    if counts else "") + f": {why}" for (where, why), counts in missing.items()]
    return judged, not_comparable


def _comparable_cells(r):
    interval = (f"{_fmt_ratio(r['here'])} [{r['low']:.2f}, {r['high']:.2f}]"
                if math.isfinite(r["low"]) and math.isfinite(r["high"]) and r["low"] > 0
                else f"{_fmt_ratio(r['here'])} (no interval: {r['blocks']} blocks)")
    return [f"{r['benchmark']}: here {r['params']}", r["pair"], str(r["threads"]), interval,
            f"{_fmt_ratio(r['published'])} ({r['published_runtimes']})",
            f"{r['source']}, {r['date']}; {r['hardware']}; {r['compiler']}",
            r["verdict"], r["note"]]


def blocks(results, directory=PUBLISHED_DIR):
    """The report's section, or [] when these runs have none of the field's workloads (the ones
    SHAPE_PARAMS names) or no published figures to set beside them: the comparable rows first,
    judged; the published pairs that are not comparable, and the sources with none, said once;
    then, collapsed, every case's cost and ratio to oneTBB beside the published ratios."""
    published = load_published(directory)
    rows = results.rows
    rows = rows[rows["workload"].isin(set(SHAPE_PARAMS))] if len(published) else rows.iloc[0:0]
    if rows.empty:
        return []
    judged, not_comparable = comparable(rows, published_pairs(published))
    agree = sum(r["verdict"].startswith("agrees") for r in judged)
    out = [doc.Paragraph(
        "Every runtime that runs both here and in a published source (oneTBB, OpenMP, Go, "
        "Boost.Fiber, the sequential elision), as the same ratio both ways: here (paired per "
        "block, Hodges-Lehmann estimate with its 95% interval) and published, at the same thread "
        "count, with the source's hardware and compiler. The rule, fixed before these pairs "
        f"were computed: two ratios agree when they are within {AGREE_FACTOR:g}× of each other "
        "(machines years and tens of cores apart, other compilers and allocators, ports that run "
        "a child inline move a ratio by tens of per cent, not by a factor of two), else they "
        f"differ. Judged: {len(judged)} rows, {agree} agree.")]
    if judged:
        out.append(doc.Table(["Benchmark", "Ratio", "Threads", "Here [95%]", "Published",
                              "Source; hardware; compiler", "Verdict", "Note"],
                             [_comparable_cells(r) for r in judged]))
    with_pairs = set(published_pairs(published)["source"])
    without = sorted(set(published["source"]) - with_pairs)
    said = []
    if not_comparable:
        said.append("Published pairs not comparable here: " + "; ".join(not_comparable) + ".")
    if without:
        said.append("Nothing comparable in " + "; ".join(without) + ": of the runtimes that run "
                    "here, each publishes one at most in a benchmark (a ratio needs two).")
    out += [doc.Paragraph(text) for text in said]
    detail = _detail_blocks(rows, published)
    if detail:
        out.append(doc.Details(3, "Every case beside the published ratios to oneTBB (detail)", detail))
    return out


def _detail_blocks(rows, published):
    """Every case's cost per task and time relative to oneTBB here, beside the published ratio of
    the same runtime to oneTBB, and the field's other runtimes; [] without tbb rows."""
    if REFERENCE not in set(rows["scheduler"]):
        return []
    measured = measured_ratios(rows)
    theirs = published_ratios(published)
    table = comparison(measured, theirs)
    cells = [[r["workload"], r["params"], r["variant"], str(r["threads"]),
              "n/a" if math.isnan(r["ns_per_task"]) else f"{r['ns_per_task']:.1f}",
              "1 (reference)" if r["scheduler"] == REFERENCE else _interval(r),
              r["published"], r["verdict"] + (" (flagged blocks)" if r["flagged"] else ""),
              "; ".join(filter(None, [r["source"], r["note"]]))]
             for r in table]
    judged = [r for r in table if r["verdict"].startswith(("agrees", "differs"))]
    agree = sum(r["verdict"].startswith("agrees") for r in judged)
    out = [doc.Paragraph(
               "Per-task cost here, and the time relative to oneTBB (`tbb`) at the same threads "
               "(Hodges-Lehmann estimate over the blocks in which both ran, 95% interval), beside "
               "the published ratio of the same runtime to oneTBB in the same benchmark "
               "(`results/published/`). A published figure at another thread count is shown but "
               f"not judged. Judged here: {len(judged)} rows, {agree} agree (the same rows are in the "
               "comparable table above where the source published both runtimes)."),
           doc.Table(["Workload", "Params here", "Backend", "Threads", "ns/task here",
                      "× oneTBB here [95%]", "Published × oneTBB", "Verdict", "Source; note"], cells)]
    peers = field_peers(theirs, measured)
    if peers:
        out += [doc.Paragraph("The published runtimes schedlab does not run, relative to oneTBB "
                              "in the same table (nearest thread count to these runs'):"),
                doc.Bullets(peers)]
    return out
