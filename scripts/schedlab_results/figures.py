"""The report's numbered figures. Each `figure_*` function answers one question, stated in its
title, draws it with drawing.py's conventions and returns its drawing.Section; figures that
several of them build alike (bar panels per configuration: config_table, panel_figure) are here
with them.

FIGURES is the order the report shows them in, and the only home of their numbers: a heading's
number is its figure's place in that list (draw), so text elsewhere names a figure by its
subject ("the granularity figure"), never by a number that a new figure would make stale.

Rows run under Valgrind's simulator (`simulated` = 1) appear in one place only, the cache
figure's simulated panel: their times are Valgrind's, so no time figure may show them. What the
latency figures compute from a run's latency file is in latency.py."""
import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from . import doc, latency
from .drawing import (INTERVAL, LOG_SPAN, SHORT_INTERVAL, Section, cluster_bars, grid,
                      time_axis, time_unit)
from .load import CASE_KEY, ELISION, SINGLE_THREADED, config_labels, natural_key, parse_params
from .stats import efficiency, efficiency_reference, metg, per_task, summarise


def at_largest_threads(rows):
    """The rows of each workload configuration at the largest thread count it was run with."""
    largest = rows.groupby(["workload", "workload_params"])["threads"].transform("max")
    return rows[rows["threads"] == largest]


def figure_time(p):
    s = Section("Time per task, by scheduler and thread count")
    rows = p.results.rows
    for workload in sorted(rows["workload"].unique()):
        wrows = rows[rows["workload"] == workload]
        configs = sorted(wrows["workload_params"].unique(), key=natural_key)
        per_task_known = "ns_per_task" in wrows and wrows["ns_per_task"].notna().all()
        column = "ns_per_task" if per_task_known else "wall_ns"
        fig, axes = grid(len(configs), 5.4, 3.6)
        for ax, params in zip(axes, configs):
            crows = wrows[wrows["workload_params"] == params]
            table = summarise(crows, column).rename(columns={"variant": "group", "threads": "bar"})
            unit, scale = time_unit(table["centre"])
            threads = sorted(table["bar"].unique())
            shades = plt.get_cmap("viridis")(np.linspace(0.15, 0.85, len(threads)))
            cluster_bars(ax, table, sorted(table["group"].unique()), threads,
                         lambda t: shades[threads.index(t)],
                         lambda t: f"{t} thread" + ("s" if t != 1 else ""), scale=scale)
            ax.set_title(textwrap.fill(f"{workload} {params}".strip(), 60))
            ax.set_ylabel(f"{'time per task' if per_task_known else 'wall time'} ({unit})")
        what = "Time per task" if per_task_known else "Wall time"
        p.save(fig, f"time_{workload}", s, f"{what}: {workload}, every scheduler at each thread count",
               SHORT_INTERVAL)
    s.blocks.append(doc.Paragraph(
        "Time per task is wall time / tasks (wall time where the task count is unknown). "
        f"{INTERVAL}. A log axis where a panel's values span more than {LOG_SPAN}x."))
    return s


def speedup_lines(medians, elision, workload, params):
    """(variant, line style, threads, speedups) for one configuration: solid against the
    variant's own 1-thread median, dashed against the sequential elision's, for variants run at
    >= 2 counts."""
    here = medians[(medians["workload"] == workload) & (medians["workload_params"] == params)]
    reference = elision[(elision["workload"] == workload) & (elision["workload_params"] == params)]
    lines = []
    for variant, vmed in here.groupby("variant"):
        vmed = vmed.sort_values("threads")
        if len(vmed) < 2:
            continue
        one = vmed[vmed["threads"] == 1]
        if not one.empty:
            lines.append((variant, "-", vmed["threads"], one["median"].iloc[0] / vmed["median"]))
        if not reference.empty:
            lines.append((variant, "--", vmed["threads"],
                          reference["median"].iloc[0] / vmed["median"]))
    return lines


def figure_speedup(p):
    s = Section("Speedup against threads")
    medians = summarise(p.results.rows, "wall_ns")
    elision = medians[medians["scheduler"] == ELISION]
    parallel = medians[~medians["scheduler"].isin(SINGLE_THREADED)]
    for workload in sorted(parallel["workload"].unique()):
        configs = sorted(parallel.loc[parallel["workload"] == workload, "workload_params"].unique(),
                         key=natural_key)
        panels = [(c, lines) for c in configs
                  if (lines := speedup_lines(parallel, elision, workload, c))]
        if not panels:
            continue
        fig, axes = grid(len(panels), 5.0, 3.6)
        for ax, (params, lines) in zip(axes, panels):
            counts = sorted({t for _, _, threads, _ in lines for t in threads})
            ax.plot([1, counts[-1]], [1, counts[-1]], ":", color="black")
            for variant, style, threads, speedup in lines:
                ax.plot(threads, speedup, style, marker="o", color=p.colors[variant])
            ax.set_title(textwrap.fill(f"{workload} {params}".strip(), 60))
            ax.set_xlabel("threads")
            ax.set_ylabel("speedup (ratio of median wall times)")
            ax.set_xticks(counts)
            ax.grid(alpha=0.3)
            variants = dict.fromkeys(variant for variant, *_ in lines)
            ax.legend(handles=[Patch(color=p.colors[v], label=v) for v in variants], fontsize=6)
        p.save(fig, f"speedup_{workload}", s, f"Speedup: how {workload} scales with threads (solid: "
                                              "vs own 1-thread time; dashed: vs the sequential elision; "
                                              "dotted: ideal)")
    if not s.files:
        return s.skip("no scheduler was run at two or more thread counts on one configuration")
    s.blocks.append(doc.Paragraph(
        "Speedup = reference median wall time / median wall time at N threads; solid lines use "
        "the scheduler's own 1-thread run, dashed lines the sequential elision's run of the same "
        "workload configuration (the program with every spawn a plain call); dotted: ideal. Thread counts above the machine's CPUs are oversubscribed "
        "(the CSV marks them)."))
    return s


def config_table(rows, value, siblings=None):
    """Bars table for a panel: `value` summarised per case at each configuration's largest
    thread count; group = configuration label (naming what differs from the configurations of
    `siblings` too, when given), bar = scheduler variant."""
    rows = at_largest_threads(rows)
    configs = list(zip(rows["workload"], rows["workload_params"]))
    others = [] if siblings is None else list(zip(siblings["workload"], siblings["workload_params"]))
    labels = config_labels(set(configs) | set(others))
    grouped = rows.assign(workload_params=[labels[c] for c in configs])
    return summarise(grouped, value).rename(columns={"workload_params": "group", "variant": "bar"})


def panel_figure(p, section, name, title, panels, missing=()):
    """Horizontal bar panels, one cluster per workload configuration. `panels` holds
    (title, axis label, table); `missing` names what was not measured, said in one short line
    under the title (the reasons are in the report's counters table)."""
    # Each row of two panels is as tall as its longest list of bars.
    slots = [len(t) + 0.8 * t["group"].nunique() for _, _, t in panels]
    heights = [0.8 + 0.16 * max(slots[i:i + 2]) for i in range(0, len(slots), 2)]
    fig, axes = grid(len(panels), 6.5, heights, max_cols=2)
    present = set()
    for ax, (panel_title, label, data) in zip(axes, panels):
        groups = sorted(data["group"].unique(), key=natural_key)
        cluster_bars(ax, data, groups, sorted(data["bar"].unique()), lambda v: p.colors[v],
                     horizontal=True, legend=False)
        present |= set(data["bar"])
        ax.set_title(panel_title)
        ax.set_xlabel(label)
    # One legend for the figure, under the panels rather than over their bars.
    fig.legend(handles=[Patch(color=p.colors[v], label=v) for v in sorted(present)], fontsize=6,
               loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(present)),
               frameon=False)
    note = SHORT_INTERVAL + ("; not measured on this machine: " + ", ".join(missing) +
                             " (reasons: the report's counters table)" if missing else "")
    p.save(fig, name, section, title, note)


def measured_panels(results, candidates):
    """Splits (title, label, table or None, column) candidates into drawable panels and the
    titles of those with nothing measured."""
    panels, missing = [], []
    for title, label, table, column in candidates:
        if table is not None and not table.empty:
            panels.append((title, label, table))
        else:
            missing.append(title)
    return panels, missing


def figure_cache(p):
    s = Section("Cache misses per task")
    r = p.results
    rows = r.rows
    candidates = []
    for column, title in (("papi_l1_dcm", "L1 data cache misses per task"),
                          ("papi_l2_dcm", "L2 data cache misses per task"),
                          ("papi_l3_tcm", "L3 cache misses per task")):
        table = config_table(rows, per_task(rows, column)) if r.measured(column) else None
        candidates.append((title, "misses per task", table, column))
    without_pmu = not r.measured("papi_l2_dcm")
    if without_pmu:
        candidates += simulated_and_modelled_candidates(p)
    panels, missing = measured_panels(r, candidates)
    if not panels:
        return s.skip("not measured on this machine: " + ", ".join(missing) +
                      " (no hardware cache counters; the counters table says why)")
    panel_figure(p, s, "cache", "Cache misses per task: which scheduler keeps a task's data in "
                                "cache, at each configuration's largest thread count", panels, missing)
    s.blocks.append(doc.Paragraph(
        f"Hardware counts summed over worker threads, divided by tasks. {INTERVAL}."))
    if without_pmu:
        s.blocks.append(doc.Paragraph(
            "Without PAPI's L2 counts: SIMULATED = Valgrind's cache simulator (`--counters sim`), "
            "one thread at a time on one cache hierarchy shared by all threads, exact for the "
            "order of execution at 1 worker; MODELLED = the recorded task footprints replayed "
            "through one LRU cache per worker (`--counters model`), a model, shown at every "
            "thread count; the sidecar gives both geometries."))
    return s


def figure_switches(p):
    s = Section("Context switches per run")
    r = p.results
    rows = r.rows
    if r.measured("perf_context_switches"):
        source, switches = "perf_context_switches (the worker threads)", rows["perf_context_switches"]
    elif r.measured("ru_nvcsw") and r.measured("ru_nivcsw"):
        source, switches = "ru_nvcsw + ru_nivcsw (getrusage, the process)", rows["ru_nvcsw"] + rows["ru_nivcsw"]
    else:
        return s.skip("no context-switch count in these runs (perf events and getrusage both missing)")
    panel_figure(p, s, "switches", "Context switches per run: how often each scheduler goes "
                                   "through the kernel, at the largest thread count",
                 [("context switches per run", "switches per run", config_table(rows, switches))])
    s.blocks.append(doc.Paragraph(f"Counted from {source}. {INTERVAL}."))
    return s


def threads_table(rows, value):
    """Bars table with one group per configuration and thread count (group = label and
    workers, bar = scheduler variant)."""
    configs = list(zip(rows["workload"], rows["workload_params"]))
    labels = config_labels(set(configs))
    grouped = rows.assign(workload_params=[f"{labels[c]} · {t} worker{'s' if t != 1 else ''}"
                                           for c, t in zip(configs, rows["threads"])])
    return summarise(grouped, value).rename(columns={"workload_params": "group", "variant": "bar"})


def simulated_and_modelled_candidates(p):
    """The cache figure's panels where PAPI's L2 is missing, as measured_panels() candidates:
    the simulator's last-level misses (simulated rows, at their largest thread count) and the
    model's (every thread count)."""
    sim = p.simulated_rows
    sim_values = per_task(sim, "sim_ll_misses")
    # Labelled against the native configurations: the simulated ones usually differ (passes=1).
    sim_table = config_table(sim, sim_values, p.results.rows) if sim_values.notna().any() else None
    rows = p.results.rows
    model_values = per_task(rows, "model_l2_misses")
    measured = rows[model_values.notna()]
    model_table = threads_table(measured, model_values[model_values.notna()]) \
        if not measured.empty else None
    return [("SIMULATED last-level (L2) data misses per task (Valgrind)",
             "simulated misses per task", sim_table, "sim_ll_misses"),
            ("MODELLED L2 misses per task (per-core LRU model)", "modelled misses per task",
             model_table, "model_l2_misses")]


def figure_traffic(p):
    s = Section("Steals, migrations and global-queue traffic per task")
    r = p.results
    parallel = r.rows[~r.rows["scheduler"].isin(SINGLE_THREADED)]  # no queues to count
    if "global_pushes" in parallel and "global_pops" in parallel:
        parallel = parallel.assign(
            global_traffic=parallel["global_pushes"] + parallel["global_pops"])
    candidates = []
    for column, title in (("steals", "steals per task"), ("migrations", "migrations per task"),
                          ("global_traffic", "global-queue pushes + pops per task")):
        values = per_task(parallel, column)
        table = config_table(parallel, values) if values.notna().any() else None
        candidates.append((title, "per task", table, column))
    panels, missing = measured_panels(r, candidates)
    if not panels:
        return s.skip("no scheduler counters (steals, migrations, global_pushes/pops) in the data")
    panel_figure(p, s, "traffic", "Scheduler traffic per task: how much work moves between "
                                  "processors and through shared queues, at the largest thread "
                                  "count", panels, missing)
    s.blocks.append(doc.Paragraph(
        "Counters from the schedulers' own statistics divided by tasks; schedulers that do not "
        f"count them (tbb, go-runtime) have no bar. {INTERVAL}."))
    return s


def granularity_curves(results):
    """For preset "granularity", per (workload, variant) at the workload's largest thread count:
    (threads, reference kinds used, [(granularity µs, efficiency)])."""
    rows = results.rows
    sweep = rows[(rows["preset"] == "granularity") & ~rows["scheduler"].isin(SINGLE_THREADED)]
    if sweep.empty or "tasks" not in sweep:
        return {}
    sweep = sweep[sweep["threads"] == sweep.groupby("workload")["threads"].transform("max")]
    key = CASE_KEY + ["variant"]
    wall = summarise(sweep, "wall_ns")[key + ["median"]].rename(columns={"median": "wall"})
    granularity = summarise(sweep, sweep["wall_ns"] * sweep["threads"] / sweep["tasks"] / 1e3)
    granularity = granularity[key + ["median"]].rename(columns={"median": "granularity"})
    cases = wall.merge(granularity, on=key)
    references = summarise(rows, "wall_ns")  # elision or 1-thread runs may come from any preset
    curves = {}
    for c in cases.itertuples():
        ref, kind = efficiency_reference(references, c.scheduler, c.scheduler_params, c.workload,
                                         c.workload_params)
        if ref is None:
            continue
        threads, kinds, points = curves.setdefault((c.workload, c.variant), (c.threads, set(), []))
        kinds.add(kind)
        points.append((c.granularity, efficiency(ref, c.threads, c.wall)))
    return curves


def figure_granularity(p):
    s = Section("Parallel efficiency against task granularity (METG)")
    curves = granularity_curves(p.results)
    if not curves:
        return s.skip('no rows from preset "granularity" with an elision or 1-thread reference '
                      "(run `schedlab run --preset granularity`)")
    workloads = sorted({w for w, _ in curves})
    fig, axes = grid(len(workloads), 6.0, 4.0)
    table = []
    for ax, workload in zip(axes, workloads):
        mine = {v: c for (w, v), c in sorted(curves.items()) if w == workload}
        for variant, (threads, kinds, points) in mine.items():
            points.sort()
            color = p.colors[variant]
            ax.plot([g for g, _ in points], [e for _, e in points], "-o", color=color,
                    label=variant)
            value, note = metg(points)
            if value is not None:
                ax.axvline(value, color=color, linestyle=":", linewidth=1)
                ax.plot([value], [0.5], marker="D", color=color)
            metg_text = "not reached" if value is None else f"{note}{value:.3g}"
            table.append([workload, variant, str(threads), " / ".join(sorted(kinds)), metg_text])
        ax.axhline(0.5, color="black", linestyle="--", linewidth=0.8, label="50% efficiency")
        ax.set_xscale("log")
        ax.set_xlabel("task granularity: wall time x threads / tasks (µs)")
        ax.set_ylabel("parallel efficiency")
        ax.set_title(f"{workload}, {next(iter(mine.values()))[0]} threads")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    p.save(fig, "granularity", s,
           "Granularity: how small can tasks be before efficiency falls below 50%? (preset "
           "granularity; diamond, dotted: METG(50%))")
    s.blocks.append(doc.Paragraph(
        "Efficiency = T_ref / (threads x median wall time), T_ref = the sequential elision's median "
        "for the same workload parameters (T_S, as TaskBench defines efficiency) if run, else the "
        "scheduler's own 1-thread median. Granularity = "
        "median of wall time x threads / tasks. METG(50%) = smallest granularity reaching 50% "
        "efficiency, interpolated linearly in log granularity; '<=' when the finest task size "
        "run already reaches it."))
    s.blocks.append(doc.Table(["Workload", "Scheduler", "Threads", "Reference", "METG(50%) µs"],
                              table))
    return s


def figure_iomix(p):
    s = Section("Blocking I/O: CPU utilisation and makespan")
    r = p.results
    io = r.rows[r.rows["workload"] == "iomix"]
    if io.empty:
        return s.skip("no iomix rows (run preset io or quick)")
    candidates = [("CPU utilisation = cpu_ns / (wall_ns x threads)", "utilisation",
                   config_table(io, io["cpu_ns"] / (io["wall_ns"] * io["threads"]))
                   if "cpu_ns" in io and io["cpu_ns"].notna().any() else None, "cpu_ns")]
    unit, scale = time_unit(io["wall_ns"])
    makespan = config_table(io, io["wall_ns"] / scale)
    candidates.append(("makespan", f"wall time ({unit})", makespan, "wall_ns"))
    panels, missing = measured_panels(r, candidates)
    panel_figure(p, s, "iomix", "Blocking I/O: do the processors stay busy while tasks wait for "
                                "the disk? iomix hot (cold=off) and cold (cold=on) at the largest "
                                "thread count", panels, missing)
    s.blocks.append(doc.Paragraph(
        "cold=on drops the files from the page cache before each read, so reads block; "
        "steal-half keeps the processor of a thread in a read and its system monitor hands it "
        "to another thread once the read has lasted two rounds (Go's way); [handoff=eager] "
        "hands it over at every read; [handoff=off] keeps it blocked with its thread. "
        f"{INTERVAL}."))
    return s


PEER_WORKLOADS = ("fib-go", "fib")  # the per-task cost workloads the peers figure compares


def peer_tables(rows, peers):
    """For each fib configuration some peer ran: (label, cost table, speedup table), both shaped
    for cluster_bars (group = variant, bar = threads). Cost: ns per task; speedup: the
    variant's own 1-thread median over its median at each larger thread count."""
    fib = rows[rows["workload"].isin(PEER_WORKLOADS) & rows["ns_per_task"].notna()]
    out = []
    for (workload, params), crows in fib.groupby(["workload", "workload_params"], sort=True):
        if not crows["scheduler"].isin(peers).any():
            continue
        cost = summarise(crows, "ns_per_task").rename(columns={"variant": "group", "threads": "bar"})
        medians = summarise(crows, "wall_ns")
        # speedup_lines without an elision reference gives only the own-1-thread lines. One ratio
        # of medians per bar: no interval and no Hodges-Lehmann centre (cluster_bars falls back
        # to the median and to min/max).
        speedups = [{"group": variant, "bar": t, "median": ratio, "centre": math.nan,
                     "min": ratio, "max": ratio, "low": math.nan, "high": math.nan}
                    for variant, _, threads, ratios in speedup_lines(medians, medians.iloc[0:0],
                                                                     workload, params)
                    for t, ratio in zip(threads, ratios) if t > 1]
        out.append((f"{workload} {params}".strip(), cost, pd.DataFrame(speedups)))
    return out


def figure_peers(p):
    s = Section("Peers: per-task cost and speedup on fib-go and fib")
    peers = p.results.peers()
    if not peers:
        return s.skip("the runs' sidecars do not say which schedulers are peers (a `schedlab run` "
                      "that predates the peers list)")
    tables = peer_tables(p.results.rows, peers)
    if not tables:
        return s.skip(f"no {' or '.join(PEER_WORKLOADS)} rows of a peer ({', '.join(peers)}) with "
                      "a known task count")
    fig, axes = grid(2 * len(tables), 6.0, 3.8, max_cols=2)
    variants = lambda t: sorted(t["group"].unique(),  # noqa: E731  (schedlab's designs first)
                                key=lambda v: (v.split(" ")[0] in peers, v))
    for (label, cost, speedup), (ax_cost, ax_speed) in zip(tables, zip(axes[::2], axes[1::2])):
        threads = sorted(cost["bar"].unique())
        shades = plt.get_cmap("viridis")(np.linspace(0.15, 0.85, len(threads)))
        peer_label = lambda v: v + (" (peer)" if v.split(" ")[0] in peers else "")  # noqa: E731
        cluster_bars(ax_cost, cost, variants(cost), threads, lambda t: shades[threads.index(t)],
                     lambda t: f"{t} thread" + ("s" if t != 1 else ""))
        ax_cost.set_xticklabels([textwrap.fill(peer_label(v), 16) for v in variants(cost)],
                                fontsize=7)
        ax_cost.set_yscale("log")
        ax_cost.set_ylabel("ns per task (median, log scale)")
        ax_cost.set_title(f"{label}: cost per task")
        if speedup.empty:
            ax_speed.set_title(f"{label}: speedup")
            ax_speed.text(0.5, 0.5, "no variant was run at 1 and at 2 or more threads",
                          ha="center", va="center", fontsize=8, transform=ax_speed.transAxes)
            ax_speed.set_axis_off()
            continue
        counts = sorted(speedup["bar"].unique())
        cluster_bars(ax_speed, speedup, variants(speedup), counts,
                     lambda t: shades[threads.index(t)] if t in threads else "0.5",
                     lambda t: f"{t} threads vs 1")
        ax_speed.set_xticklabels([textwrap.fill(peer_label(v), 16) for v in variants(speedup)],
                                 fontsize=7)
        for t in counts:
            ax_speed.axhline(t, color="black", linestyle=":", linewidth=0.8)
        ax_speed.set_ylabel("speedup over own 1 thread (median)")
        ax_speed.set_title(f"{label}: speedup")
    p.save(fig, "peers", s, f"Per-task cost (log scale) and speedup of every scheduler next to the "
                            f"peers ({INTERVAL} on cost; dotted: ideal speedup)")
    s.blocks.append(doc.Paragraph(
        f"Peers (marked) are the runtimes a user would pick instead of schedlab's designs: "
        f"{', '.join(peers)}. Cost: median wall time / tasks over repetitions, {INTERVAL}. "
        "Speedup: the variant's own 1-thread median over its median at the larger thread count; "
        "compare variants measured in the same run (the same blocks)."))
    return s

# ---- latency (latency.py: each row's distribution from the run's latency file) ---------------

NINES_TICKS = (50, 90, 99, 99.9, 99.99, 99.999, 99.9999)


def nines(q):
    """The "nines" scale of a percentile: -log10(1 - q/100), so p90, p99, p99.9 sit 1 apart."""
    return -np.log10(1.0 - np.asarray(q, dtype=float) / 100.0)


def _rows_with(rows, kind):
    """The rows that carry a `kind` distribution (every repetition, flagged ones too, as in every
    figure: the flags decide what the claims judge)."""
    column = "_" + kind
    if column not in rows:
        return rows.iloc[0:0]
    return rows[rows[column].notna()]


def _case_panels(rows):
    """(title, rows) per workload configuration and thread count, in natural order."""
    labels = config_labels(set(zip(rows["workload"], rows["workload_params"])))
    panels = []
    for (workload, params, threads), part in rows.groupby(["workload", "workload_params", "threads"]):
        panels.append(((natural_key(params), threads),
                       f"{labels[(workload, params)]}, {threads} thread{'s' if threads != 1 else ''}", part))
    return [(title, part) for _, title, part in sorted(panels, key=lambda x: x[0])]


def figure_latency(p):
    """Per workload and kind of latency: the whole distribution of each scheduler variant
    (merged over its repetitions), percentile on the nines scale against time on a
    log scale; Go's own histogram in the same axes."""
    s = Section("Latency: how long a runnable task waits, and how long a request takes")
    for kind in latency.KINDS:
        rows = _rows_with(p.results.rows, kind)
        for workload in sorted(rows["workload"].unique()):
            panels = _case_panels(rows[rows["workload"] == workload])
            fig, axes = grid(len(panels), 4.6, 3.3)
            present = {}
            for ax, (title, part) in zip(axes, panels):
                top = 0.0
                for variant, vrows in sorted(part.groupby("variant"), key=lambda x: x[0]):
                    d = latency.merged(vrows, kind)
                    qs, values = d.curve()
                    if not len(qs):
                        continue
                    go = latency.sources(vrows, kind) == {"go"}
                    ax.plot(nines(qs), np.maximum(values, 1.0), color=p.colors[variant],
                            linestyle="--" if go else "-", linewidth=1.1)
                    ax.plot([nines(qs[-1])], [max(d.top(), 1.0)], "o", markersize=2.5, color=p.colors[variant])
                    present[variant] = go
                    top = max(top, float(nines(qs[-1])))
                ticks = [t for t in NINES_TICKS if nines(t) <= top + 0.05] or [50]
                ax.set_xticks(nines(ticks))
                ax.set_xticklabels([f"p{t:g}" for t in ticks], fontsize=7)
                time_axis(ax)
                ax.grid(alpha=0.3, which="both")
                ax.set_title(textwrap.fill(title, 50), fontsize=8)
                ax.set_ylabel(latency.KIND_LABELS[kind])
            if not present:
                plt.close(fig)
                continue
            fig.legend(handles=[Patch(color=p.colors[v], label=v + (" (Go's own histogram, dashed)" if go else ""))
                                for v, go in sorted(present.items())], fontsize=6, loc="upper center",
                       bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(present)), frameon=False)
            p.save(fig, f"latency_{kind}_{workload}", s,
                   f"{latency.KIND_LABELS[kind].capitalize()}, {workload}: the whole distribution of each "
                   "scheduler, percentile on a nines scale", "dot: the largest; 0 ns drawn at 1 ns")
    if not s.files:
        return s.skip("no run recorded a latency (--latency on, or netmix --load open)")
    s.blocks.append(doc.Paragraph(
        "Each line merges a variant's repetitions into one distribution and "
        "draws its nearest-rank percentiles from the median to the last sample; the nines scale "
        "spaces p90, p99 and p99.9 evenly, so the tail is as wide as the body. Scheduling delay: "
        "from a task becoming runnable to its first instruction on a worker (schedlab's record "
        "every such event, within 1/128; go-runtime's, dashed, are Go's own "
        "/sched/latencies:seconds, a 1-in-8 sample, within about 1/32, and count a return from a "
        "system call on the goroutine's own P as 0 ns). Request latency: netmix --load open, from "
        "each request's intended send time on the generator's schedule to its reply."))
    return s


def _rate_sweeps(rows):
    """{(workload, the params but the rate, threads): rows} for the open-loop configurations
    run at two or more rates."""
    sweeps = {}
    for (workload, params, threads), part in rows.groupby(["workload", "workload_params", "threads"]):
        rest = " ".join(f"{k}={v}" for k, v in parse_params(params).items() if k != "rate")
        sweeps.setdefault((workload, rest, threads), []).append(part)
    return {k: pd.concat(v) for k, v in sweeps.items() if len(v) >= 2}


def figure_latency_throughput(p):
    """The rate sweep: each variant's request latency (p50 dashed, p99 solid, merged over its
    repetitions at each offered rate) against the throughput it achieved."""
    s = Section("Latency against throughput: the open-loop rate sweep")
    sweeps = _rate_sweeps(_rows_with(p.results.rows, "request"))
    if not sweeps:
        return s.skip("no open-loop configuration (netmix --load open) was run at two or more --rate values")
    keys = sorted(sweeps, key=lambda k: (k[0], natural_key(k[1]), k[2]))
    fig, axes = grid(len(keys), 4.8, 3.4)
    present = set()
    for ax, key in zip(axes, keys):
        for variant, vrows in sorted(sweeps[key].groupby("variant"), key=lambda x: x[0]):
            points = []
            for params, case in vrows.groupby("workload_params"):
                d = latency.merged(case, "request")
                points.append((float(case["request_rate"].median()), d.percentile(50), d.percentile(99)))
            points.sort()
            x, p50, p99 = (np.array(v, dtype=float) for v in zip(*points))
            ax.plot(x, p99, "-o", markersize=3, color=p.colors[variant])
            ax.plot(x, p50, "--", marker=".", color=p.colors[variant], alpha=0.7)
            present.add(variant)
        time_axis(ax)
        ax.set_xlabel("throughput achieved (requests/s)")
        ax.set_ylabel("request latency")
        ax.grid(alpha=0.3, which="both")
        workload, rest, threads = key
        ax.set_title(textwrap.fill(f"{workload} {rest}, {threads} thread{'s' if threads != 1 else ''}", 50),
                     fontsize=8)
    fig.legend(handles=[Patch(color=p.colors[v], label=v) for v in sorted(present)], fontsize=6,
               loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(present)), frameon=False)
    p.save(fig, "latency_throughput", s, "Request latency against throughput: each offered --rate's "
           "p99 (solid) and p50 (dashed) at the rate achieved")
    s.blocks.append(doc.Paragraph(
        "One point per offered --rate: x, the median over repetitions of the replies per second "
        "achieved (request_rate); y, the percentiles of the repetitions' latencies merged. A server "
        "that keeps up stays on the offered rate with a flat latency; past its capacity the "
        "achieved rate stops growing while the latency, counted from each request's intended send "
        "time, climbs (the latency-throughput curve of a server benchmark)."))
    return s



# The report's order of the figures, and so their numbers (see the module's docstring).
FIGURES = [figure_time, figure_speedup, figure_cache, figure_switches, figure_traffic,
           figure_granularity, figure_iomix, figure_peers, figure_latency, figure_latency_throughput]


def draw(painter):
    """Every figure's Section, in FIGURES order, its heading numbered by its place there."""
    sections = []
    for number, make in enumerate(FIGURES, 1):
        section = make(painter)
        section.title = f"{number}. {section.title}"
        sections.append(section)
    return sections
