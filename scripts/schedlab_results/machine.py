"""What the machine did while a run measured: the sidecar's `machine_timeline` (its episodes, found
by harness/machine_timeline.cpp: this module only shows them) and the timeline file it names
(NAME.machine.json: every probe and block repetition), as sentences at the top of the report's
Claims and as a figure in its Machine section.

A reader of a claims table needs to know the machine the numbers came from, said as what it was
("CPU 1 ran 1.52x slower than CPU 0 from 14:02:11 to 14:12:40 UTC"), not as a count of flags.
"""
import json
import math
import os

import matplotlib.pyplot as plt
import numpy as np

from . import doc
from .load import flagged, native

# Above this share of flagged rows, most parts lose most of their blocks: said first.
BUSY_SHARE = 0.5


def sidecar_timelines(results):
    """(run label, the sidecar's machine_timeline) of each run whose sidecar has one."""
    return [(f.label, f.meta["machine_timeline"]) for f in results.files
            if isinstance(f.meta.get("machine_timeline"), dict)]


def timelines(results):
    """(run label, the timeline file's content) of each run whose sidecar names a file that can
    be read (beside its CSV)."""
    out = []
    for f in results.files:
        said = f.meta.get("machine_timeline")
        if not isinstance(said, dict) or not said.get("file"):
            continue
        try:
            with open(os.path.join(os.path.dirname(f.csv_path), said["file"]), encoding="utf-8") as timeline:
                out.append((f.label, json.load(timeline)))
        except (OSError, ValueError):
            continue
    return out


def episode_lines(results):
    """The episodes worth a line (the sidecar lists those of at least `shown_blocks` block
    repetitions, the rule the summary of `schedlab run` follows), per run, and how many shorter
    ones there were."""
    lines, shorter = [], 0
    several = len(results.files) > 1
    for label, said in sidecar_timelines(results):
        lines += [(f"{label}: " if several else "") + str(e.get("text", "")) for e in said.get("episodes", [])]
        shorter += int(said.get("shorter_episodes", 0))
    return lines, shorter


def claims_note(results):
    """One paragraph at the top of the Claims: what the machine did (its episodes), where the
    figure is, and, if most rows were flagged, that most parts lost their blocks to it."""
    rows = native(results.rows)
    share = float(flagged(rows).mean()) if len(rows) else 0.0
    head = (f"**The machine was disturbed**: {share:.0%} of the rows were flagged and are left out, so "
            "many parts below lost most of their blocks. " if share > BUSY_SHARE else "")
    if not sidecar_timelines(results):
        return [doc.Paragraph(head + "What disturbed it is in the flagged rows' list below.")] if head else []
    lines, shorter = episode_lines(results)
    if not lines and not shorter:
        return [doc.Paragraph(head + "The machine: its CPUs ran at equal speed, at once, with no CPU "
                              "changing speed during a block repetition and no other process taking "
                              "more than a tenth of one (section Machine has the timeline).")]
    if not lines:
        return [doc.Paragraph(head + f"The machine: only {shorter} short episodes of fewer block repetitions "
                              "than the sidecar's shown_blocks (section Machine has the timeline).")]
    if shorter:
        lines.append(f"and {shorter} shorter episodes (section Machine has the timeline)")
    return [doc.Paragraph(head + "What the machine did while these numbers were measured (the speed "
                          "probe and /proc/stat, per CPU):"), doc.Bullets(lines)]


def figure(results, painter, section):
    """Each CPU's speed over the run (the speed probe's time for the same spin, relative to the
    fastest CPU when the run started: 1 as fast, 0.5 half as fast), the spins at once, other
    processes' share of each CPU, and the block repetitions with flagged rows marked."""
    runs = timelines(results)
    if not runs:
        return section.skip("no machine timeline file beside the runs (runs older than it, or a sidecar "
                            "saying why it could not be written)")
    fig, axes = plt.subplots(2 * len(runs), 1, figsize=(7.0, 4.2 * len(runs)), squeeze=False)
    for k, (label, t) in enumerate(runs):
        speed_ax, other_ax = axes[2 * k][0], axes[2 * k + 1][0]
        probes, blocks, cpus = t.get("probes", {}), t.get("blocks", {}), t.get("cpus", [])
        times = np.array([math.nan if v is None else v for v in probes.get("unix_s", [])], dtype=float)
        if not len(times):
            speed_ax.text(0.5, 0.5, "no probes recorded", ha="center", transform=speed_ax.transAxes)
            continue
        start = np.nanmin(times)
        span = np.nanmax(times) - start
        unit, scale = ("minutes", 60.0) if span > 120 else ("seconds", 1.0)
        ns = [np.array([math.nan if v is None else v for v in per], dtype=float) for per in probes.get("ns", [])]
        # The first probes are the calibration, taken when the run started: the reference speed.
        reference = np.nanmin([np.nanmedian(per[:5]) for per in ns]) if ns else math.nan
        minutes = (times - start) / scale
        for cpu, per in zip(cpus, ns):
            speed_ax.plot(minutes, reference / per, lw=0.6, label=f"CPU {cpu} alone")
        together = np.array([math.nan if v is None else v for v in probes.get("together_ns", [])], dtype=float)
        if len(together) == len(times) and np.isfinite(together).any():
            slowest = np.nanmax(np.vstack(ns), axis=0)
            speed_ax.plot(minutes, slowest / together, lw=0.6, color="0.4", ls=":",
                          label="at once (slowest alone / spins at once)")
        b_times = (np.array(blocks.get("unix_s", []), dtype=float) - start) / scale
        slow = np.array(blocks.get("slow_rows", []), dtype=float) > 0
        noisy = np.array(blocks.get("noisy_rows", []), dtype=float) > 0
        speed_ax.set_ylim(0, max(1.3, speed_ax.get_ylim()[1]))
        if slow.any():
            speed_ax.plot(b_times[slow], np.full(slow.sum(), 0.02), "|", color="tab:red", ms=8,
                          label="block with rows flagged slow_cpu")
        speed_ax.set_ylabel("speed against the\nfastest CPU at start")
        speed_ax.set_title(label, fontsize=8)
        speed_ax.legend(fontsize=6, loc="best", ncol=2, framealpha=0.8)
        other_ax.sharex(speed_ax)
        for cpu, share in zip(cpus, blocks.get("other_share", [])):
            values = np.array([math.nan if v is None else v for v in share], dtype=float)
            other_ax.plot(b_times, 100 * values, lw=0.6, label=f"CPU {cpu}")
        if noisy.any():
            other_ax.plot(b_times[noisy], np.zeros(noisy.sum()), "|", color="tab:orange", ms=8,
                          label="block with rows flagged noisy")
        other_ax.set_ylim(-3, 103)
        other_ax.set_ylabel("other processes'\n% of the CPU")
        other_ax.set_xlabel(f"{unit} since the run started")
        other_ax.legend(fontsize=6, loc="best", ncol=3, framealpha=0.8)
    painter.save(fig, "machine", section,
                 "What the machine did: each CPU's speed (the same spin, against the fastest CPU at the "
                 "start) and other processes' share of each CPU over the run, flagged blocks marked")
    return section


def section(results, painter, section_):
    """The Machine section's timeline: the figure, then every episode the sidecars list."""
    figure(results, painter, section_)
    lines, shorter = episode_lines(results)
    if lines:
        section_.blocks += [doc.Paragraph("Episodes (consecutive block repetitions in one state):"),
                            doc.Bullets(lines)]
    if shorter:
        section_.blocks.append(doc.Paragraph(f"And {shorter} shorter episodes (the sidecar's machine_timeline "
                                             "lists them)."))
    return section_
