"""The report's figures. Each `figure_*` function writes its PNG + SVG files into the output
directory and returns a Section: the blocks the report shows under the figure's heading (the
images and captions, or one line saying why the figure was skipped)."""
import math
import os
import textwrap
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from . import doc  # noqa: E402
from .load import CASE_KEY, config_labels, natural_key  # noqa: E402
from .stats import efficiency, efficiency_reference, metg, per_task, summarise  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "schedlab", "font.size": 9, "axes.titlesize": 9})

INTERVAL = "whiskers: min-max over repetitions"


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)
    files: list = field(default_factory=list)

    def skip(self, reason):
        self.blocks.append(doc.Paragraph(f"Skipped: {reason}."))
        return self


class Painter:
    """Shared look of every figure: one colour per scheduler variant, the machine footer, and
    writing PNG + SVG."""

    def __init__(self, results, out_dir):
        self.results = results
        self.out_dir = out_dir
        variants = sorted(results.rows["variant"].unique())
        palette = plt.get_cmap("tab10" if len(variants) <= 10 else "tab20").colors
        self.colors = {v: palette[i % len(palette)] for i, v in enumerate(variants)}
        self.footer = machine_footer(results.files)

    def save(self, fig, name, section, title):
        """Titles, footers and writes the figure; `title` is also the image's alt text."""
        title_lines = textwrap.wrap(title, int(fig.get_figwidth() * 13))
        fig.suptitle("\n".join(title_lines))
        fig.text(0.01, 0.005, self.footer, fontsize=7, color="0.35", ha="left", va="bottom")
        # Room in inches for the footer below and the title above, whatever the figure's height.
        height = fig.get_figheight()
        fig.tight_layout(rect=(0, 0.25 / height, 1, 1 - (0.15 + 0.18 * len(title_lines)) / height))
        for ext in ("png", "svg"):
            metadata = {"Date": None} if ext == "svg" else {}  # stable SVG between runs
            fig.savefig(os.path.join(self.out_dir, f"{name}.{ext}"), dpi=110, metadata=metadata)
        plt.close(fig)
        section.files += [f"{name}.png", f"{name}.svg"]
        section.blocks.append(doc.Figure(f"{name}.png", f"{name}.svg", title))


def machine_footer(files):
    """'machine: cpu model, N cores · date' for each distinct machine in the runs' metadata."""
    parts = []
    for f in files:
        if not f.meta:
            continue
        m = f.meta.get("machine", {})
        cores = m.get("cores", m.get("logical_cpus"))
        text = m.get("cpu_model", "unknown CPU") + (f", {cores} cores" if cores else "")
        date = str(f.meta.get("started_utc", ""))[:10]
        text += f" · {date}" if date else ""
        if text not in parts:
            parts.append(text)
    return "machine: " + ("; ".join(parts) or "unknown (no .meta.json sidecar)")


def at_largest_threads(rows):
    """The rows of each workload configuration at the largest thread count it was run with."""
    largest = rows.groupby(["workload", "workload_params"])["threads"].transform("max")
    return rows[rows["threads"] == largest]


def cluster_bars(ax, table, group_order, bar_order, color_of, label_of=str, horizontal=False):
    """Bars of `table` (columns group, bar, median, min, max), one cluster per group holding
    only the bars that group has, so that sparse tables stay compact; whiskers min-max."""
    pos, ticks = 0.0, []
    for group in group_order:
        part = table[table["group"] == group].set_index("bar")
        start = pos
        for bar in (b for b in bar_order if b in part.index):
            r = part.loc[bar]
            err = [[r["median"] - r["min"]], [r["max"] - r["median"]]]
            if horizontal:
                ax.barh(pos, r["median"], 0.9, xerr=err, color=color_of(bar), capsize=2)
            else:
                ax.bar(pos, r["median"], 0.9, yerr=err, color=color_of(bar), capsize=2)
            if r["median"] == 0:  # a zero bar is invisible: say it was counted, unlike a gap
                xy = (0, pos) if horizontal else (pos, 0)
                ax.annotate("0", xy, fontsize=6, color=color_of(bar),
                            xytext=(3, 0) if horizontal else (0, 2), textcoords="offset points",
                            va="center" if horizontal else "bottom",
                            ha="left" if horizontal else "center")
            pos += 1
        ticks.append(((start + pos - 1) / 2, group))
        pos += 0.8  # gap between clusters
    positions, labels = zip(*ticks)
    if horizontal:
        ax.set_yticks(positions)
        ax.set_yticklabels([textwrap.fill(str(g), 30) for g in labels], fontsize=7)
        ax.invert_yaxis()  # first group on top
        ax.grid(axis="x", alpha=0.3)
    else:
        ax.set_xticks(positions)
        ax.set_xticklabels([textwrap.fill(str(g), 16) for g in labels], fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    present = set(table["bar"])
    ax.legend(handles=[Patch(color=color_of(b), label=label_of(b))
                       for b in bar_order if b in present], fontsize=6)


def not_measured(ax, title, reason):
    ax.set_title(title)
    # The report has the whole reason; a panel has room for its start.
    text = "not measured on this machine:\n" + textwrap.fill(textwrap.shorten(reason, 180), 45)
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.3")
    ax.set_xticks([])
    ax.set_yticks([])


def grid(n, width, heights, max_cols=3):
    """n axes, max_cols to a row; `heights` is one height in inches for every row, or a list
    with one per row."""
    cols = min(max_cols, n)
    rows = math.ceil(n / cols)
    heights = heights if isinstance(heights, list) else [heights] * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, sum(heights) + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    return fig, list(axes.flat[:n])


def figure_time(p):
    s = Section("1. Time per task by scheduler and thread count")
    rows = p.results.rows
    for workload in sorted(rows["workload"].unique()):
        wrows = rows[rows["workload"] == workload]
        configs = sorted(wrows["workload_params"].unique(), key=natural_key)
        fig, axes = grid(len(configs), 5.0, 3.4)
        for ax, params in zip(axes, configs):
            crows = wrows[wrows["workload_params"] == params]
            per_task_known = "ns_per_task" in crows and crows["ns_per_task"].notna().all()
            value = crows["ns_per_task"] if per_task_known else crows["wall_ns"] / 1e6
            table = summarise(crows, value).rename(columns={"variant": "group", "threads": "bar"})
            threads = sorted(table["bar"].unique())
            shades = plt.get_cmap("viridis")(np.linspace(0.15, 0.85, len(threads)))
            cluster_bars(ax, table, sorted(table["group"].unique()), threads,
                         lambda t: shades[threads.index(t)],
                         lambda t: f"{t} thread" + ("s" if t != 1 else ""))
            ax.set_title(f"{workload} {params}".strip())
            ax.set_ylabel("ns per task (median)" if per_task_known else "wall time, ms (median)")
        p.save(fig, f"time_{workload}", s,
               f"{workload}: time per scheduler, bars by thread count ({INTERVAL})")
    s.blocks.append(doc.Paragraph(
        "Bars: median over repetitions of ns per task (wall time / tasks; wall time in ms where "
        f"the task count is unknown); {INTERVAL}."))
    return s


def speedup_lines(medians, serial, workload, params):
    """(variant, line style, threads, speedups) for one configuration: solid against the
    variant's own 1-thread median, dashed against serial's, for variants run at >= 2 counts."""
    here = medians[(medians["workload"] == workload) & (medians["workload_params"] == params)]
    ref_serial = serial[(serial["workload"] == workload) & (serial["workload_params"] == params)]
    lines = []
    for variant, vmed in here.groupby("variant"):
        vmed = vmed.sort_values("threads")
        if len(vmed) < 2:
            continue
        one = vmed[vmed["threads"] == 1]
        if not one.empty:
            lines.append((variant, "-", vmed["threads"], one["median"].iloc[0] / vmed["median"]))
        if not ref_serial.empty:
            lines.append((variant, "--", vmed["threads"],
                          ref_serial["median"].iloc[0] / vmed["median"]))
    return lines


def figure_speedup(p):
    s = Section("2. Speedup against threads")
    medians = summarise(p.results.rows, "wall_ns")
    serial = medians[medians["scheduler"] == "serial"]
    parallel = medians[medians["scheduler"] != "serial"]
    for workload in sorted(parallel["workload"].unique()):
        configs = sorted(parallel.loc[parallel["workload"] == workload, "workload_params"].unique(),
                         key=natural_key)
        panels = [(c, lines) for c in configs
                  if (lines := speedup_lines(parallel, serial, workload, c))]
        if not panels:
            continue
        fig, axes = grid(len(panels), 5.0, 3.6)
        for ax, (params, lines) in zip(axes, panels):
            counts = sorted({t for _, _, threads, _ in lines for t in threads})
            ax.plot([1, counts[-1]], [1, counts[-1]], ":", color="black")
            for variant, style, threads, speedup in lines:
                ax.plot(threads, speedup, style, marker="o", color=p.colors[variant])
            ax.set_title(f"{workload} {params}".strip())
            ax.set_xlabel("threads")
            ax.set_ylabel("speedup (median wall time ratio)")
            ax.set_xticks(counts)
            ax.grid(alpha=0.3)
            variants = dict.fromkeys(variant for variant, *_ in lines)
            ax.legend(handles=[Patch(color=p.colors[v], label=v) for v in variants], fontsize=6)
        p.save(fig, f"speedup_{workload}", s, f"{workload}: speedup vs threads (solid: vs own "
                                              "1-thread; dashed: vs serial; dotted: ideal)")
    if not s.files:
        return s.skip("no scheduler was run at two or more thread counts on one configuration")
    s.blocks.append(doc.Paragraph(
        "Speedup = reference median wall time / median wall time at N threads; solid lines use "
        "the scheduler's own 1-thread run, dashed lines serial's run of the same workload "
        "configuration; dotted: ideal."))
    return s


def config_table(rows, value):
    """Bars table for a panel: `value` summarised per case at each configuration's largest
    thread count; group = configuration label, bar = scheduler variant."""
    rows = at_largest_threads(rows)
    configs = list(zip(rows["workload"], rows["workload_params"]))
    labels = config_labels(set(configs))
    grouped = rows.assign(workload_params=[labels[c] for c in configs])
    return summarise(grouped, value).rename(columns={"workload_params": "group", "variant": "bar"})


def panel_figure(p, section, name, title, panels):
    """Horizontal bar panels, one cluster per workload configuration. `panels` holds
    (title, axis label, table) or (title, None, reason it was not measured)."""
    # Each row of two panels is as tall as its longest list of bars; a note needs little room.
    slots = [len(t) + 0.8 * t["group"].nunique() if label is not None else 8
             for _, label, t in panels]
    heights = [0.8 + 0.16 * max(slots[i:i + 2]) for i in range(0, len(slots), 2)]
    fig, axes = grid(len(panels), 6.5, heights, max_cols=2)
    for ax, (panel_title, label, data) in zip(axes, panels):
        if label is None:
            not_measured(ax, panel_title, data)
            continue
        groups = sorted(data["group"].unique(), key=natural_key)
        cluster_bars(ax, data, groups, sorted(data["bar"].unique()), lambda v: p.colors[v],
                     horizontal=True)
        ax.set_title(panel_title)
        ax.set_xlabel(label)
    p.save(fig, name, section, title)


def measured_panel(results, title, label, table, column):
    """A panel entry: the table when it has values, else the reason from the metadata."""
    if table is not None and not table.empty:
        return title, label, table
    return title, None, results.why_unmeasured(column)


def figure_cache(p):
    s = Section("3. Cache misses per task and context switches per run")
    r = p.results
    rows = r.rows
    panels = []
    for column, title in (("papi_l1_dcm", "L1 data cache misses per task"),
                          ("papi_l2_dcm", "L2 data cache misses per task"),
                          ("papi_l3_tcm", "L3 cache misses per task")):
        table = config_table(rows, per_task(rows, column)) if r.measured(column) else None
        panels.append(measured_panel(r, title, "misses per task (median)", table, column))
    if r.measured("perf_context_switches"):
        source, switches = "perf_context_switches", rows["perf_context_switches"]
    elif r.measured("ru_nvcsw") and r.measured("ru_nivcsw"):
        source, switches = "ru_nvcsw + ru_nivcsw (getrusage)", rows["ru_nvcsw"] + rows["ru_nivcsw"]
    else:
        source, switches = "", None
    panels.append(measured_panel(r, "context switches per run", "switches per run (median)",
                                 None if switches is None else config_table(rows, switches),
                                 "perf_context_switches"))
    panel_figure(p, s, "cache_switches",
                 f"Cache misses per task and context switches per run at each configuration's "
                 f"largest thread count ({INTERVAL})", panels)
    s.blocks.append(doc.Paragraph(
        "PAPI counts summed over worker threads, divided by tasks; context switches from "
        f"{source or 'nowhere (not measured)'}. Medians over repetitions; {INTERVAL}."))
    return s


def figure_traffic(p):
    s = Section("4. Steals, migrations and global-queue traffic per task")
    r = p.results
    parallel = r.rows[r.rows["scheduler"] != "serial"]  # serial has no queues to count
    if "global_pushes" in parallel and "global_pops" in parallel:
        parallel = parallel.assign(
            global_traffic=parallel["global_pushes"] + parallel["global_pops"])
    panels = []
    for column, csv_column, title in (("steals", "steals", "steals per task"),
                                      ("migrations", "migrations", "migrations per task"),
                                      ("global_traffic", "global_pushes",
                                       "global-queue pushes + pops per task")):
        values = per_task(parallel, column)
        table = config_table(parallel, values) if values.notna().any() else None
        panels.append(measured_panel(r, title, "per task (median)", table, csv_column))
    if all(label is None for _, label, _ in panels):
        return s.skip("no scheduler counters (steals, migrations, global_pushes/pops) in the data")
    panel_figure(p, s, "traffic", f"Scheduler traffic per task at each configuration's largest "
                                  f"thread count ({INTERVAL})", panels)
    s.blocks.append(doc.Paragraph(
        "Counters from the schedulers' own statistics divided by tasks; schedulers that do not "
        f"count them (tbb, go-runtime) have no bar. {INTERVAL}."))
    return s


def granularity_curves(results):
    """For preset "granularity", per (workload, variant) at the workload's largest thread count:
    (threads, reference kinds used, [(granularity µs, efficiency)])."""
    rows = results.rows
    sweep = rows[(rows["preset"] == "granularity") & (rows["scheduler"] != "serial")]
    if sweep.empty or "tasks" not in sweep:
        return {}
    sweep = sweep[sweep["threads"] == sweep.groupby("workload")["threads"].transform("max")]
    key = CASE_KEY + ["variant"]
    wall = summarise(sweep, "wall_ns")[key + ["median"]].rename(columns={"median": "wall"})
    granularity = summarise(sweep, sweep["wall_ns"] * sweep["threads"] / sweep["tasks"] / 1e3)
    granularity = granularity[key + ["median"]].rename(columns={"median": "granularity"})
    cases = wall.merge(granularity, on=key)
    references = summarise(rows, "wall_ns")  # serial or 1-thread runs may come from any preset
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
    s = Section("5. Parallel efficiency against task granularity (METG)")
    curves = granularity_curves(p.results)
    if not curves:
        return s.skip('no rows from preset "granularity" with a serial or 1-thread reference '
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
           "Efficiency vs task granularity, preset granularity (diamond, dotted: METG(50%))")
    s.blocks.append(doc.Paragraph(
        "Efficiency = T_ref / (threads x median wall time), T_ref = serial's median for the same "
        "workload parameters if run, else the scheduler's own 1-thread median. Granularity = "
        "median of wall time x threads / tasks. METG(50%) = smallest granularity reaching 50% "
        "efficiency, interpolated linearly in log granularity; '<=' when the finest task size "
        "run already reaches it."))
    s.blocks.append(doc.Table(["Workload", "Scheduler", "Threads", "Reference", "METG(50%) µs"],
                              table))
    return s


def figure_iomix(p):
    s = Section("6. iomix: CPU utilisation and makespan")
    r = p.results
    io = r.rows[r.rows["workload"] == "iomix"]
    if io.empty:
        return s.skip("no iomix rows (run preset io or quick)")
    utilisation = (config_table(io, io["cpu_ns"] / (io["wall_ns"] * io["threads"]))
                   if "cpu_ns" in io and io["cpu_ns"].notna().any() else None)
    panels = [measured_panel(r, "CPU utilisation = cpu_ns / (wall_ns x threads)",
                             "utilisation (median)", utilisation, "cpu_ns"),
              ("makespan", "wall time, ms (median)", config_table(io, io["wall_ns"] / 1e6))]
    panel_figure(p, s, "iomix", f"iomix at the largest thread count: hot (cold=off) vs cold "
                                f"(cold=on) files ({INTERVAL})", panels)
    s.blocks.append(doc.Paragraph(
        "cold=on drops the files from the page cache before each run, so reads block; "
        "steal-half [handoff=off] keeps the processor while its thread blocks. "
        f"Medians over repetitions; {INTERVAL}."))
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
        speedups = []
        for variant, vmed in medians.groupby("variant"):
            one = vmed[vmed["threads"] == 1]
            for _, r in vmed[vmed["threads"] > 1].iterrows():
                if not one.empty:
                    ratio = one["median"].iloc[0] / r["median"]
                    speedups.append({"group": variant, "bar": r["threads"], "median": ratio,
                                     "min": ratio, "max": ratio})
        out.append((f"{workload} {params}".strip(), cost, pd.DataFrame(speedups)))
    return out


def figure_peers(p):
    s = Section("7. Peers: per-task cost and speedup on fib-go and fib")
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
            not_measured(ax_speed, f"{label}: speedup", "no variant was run at 1 and at 2 or more threads")
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


FIGURES = [figure_time, figure_speedup, figure_cache, figure_traffic, figure_granularity,
           figure_iomix, figure_peers]


def draw_all(results, out_dir):
    painter = Painter(results, out_dir)
    return [make(painter) for make in FIGURES]
