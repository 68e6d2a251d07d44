"""The claims' forest plots, which the report shows in its Claims section rather than among the
numbered figures: one line per claim part beside the summary table (figure_claims), and one per
configuration beside the detailed rows (figure_claims_by_configuration).

They draw claims.py's results, not rows: each line is a part's Hodges-Lehmann estimate over
blocks with its exact 95% interval, coloured by its verdict, against the smallest effect that
counts. Kept apart from figures.py because their axes follow the claims' quantities (ratios of
times or counts on log axes, a metric's differences and levels on linear ones: quantity) and
change with criteria.toml, not with the runs' columns. The file conventions are drawing.py's."""
import math
import textwrap
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.patches import Patch

from . import claims, doc
from .drawing import Section
from .metrics import METRICS

VERDICT_COLOURS = {"held": "tab:green", "not held": "tab:red", "inconclusive": "tab:gray"}

# Ratio parts whose smallest effect that counts is under this factor get a finer panel than
# those whose is at least this: on one log axis, 1.05x beside 2x thresholds is a few pixels.
COARSE_RATIO = 1.5
# A ratio panel's axis reaches at most this power of its largest threshold either side of 1:
# room to see an interval against its threshold, without a 2000x migration ratio squeezing a
# 1.1x time ratio into a few pixels.
WINDOW_POWER = 4


def quantity(part):
    """The forest panel a part's effect is drawn in: one per kind of quantity, so that each is
    read on an axis of its own. Ratios of times and ratios of counts (log axes, 1 = no
    difference), each split by the size of their smallest effect that counts (COARSE_RATIO);
    each metric's differences and levels (linear axes): an idle share's difference of 0.25,
    an efficiency of 0.9 and 130 steals per run cannot share one axis."""
    if part.kind in ("ratio", "growth"):
        return ("ratio", METRICS[part.metric].timed, 1 + part.min_effect >= COARSE_RATIO)
    return (part.kind, part.metric)


def _panel_label(key):
    if key[0] == "ratio":
        _, timed, coarse = key
        return (f"{'time' if timed else 'count'} ratio a ÷ b, effects "
                f"{'≥' if coarse else '<'} {COARSE_RATIO:g}× (log)")
    kind, metric = key
    return f"{METRICS[metric].label}: " + ("a − b" if kind == "difference" else "level of a")


def _ratio_window(entries):
    """(low, high) of a ratio panel's axis: the data and every threshold band, padded, within
    WINDOW_POWER powers of the largest threshold."""
    largest = max(math.exp(part.threshold) for _, part, _ in entries)
    values = [math.exp(v) for _, _, r in entries for v in (r.low, r.high, r.estimate)
              if math.isfinite(v)]
    low = max(min(values + [1 / largest]) / 1.05, largest ** -WINDOW_POWER)
    high = min(max(values + [largest]) * 1.05, largest ** WINDOW_POWER)
    return low, high


def forest_panels(entries):
    """{quantity: entries}: ratios of times, then of counts (finer before coarser), then
    differences and levels in the order the entries first show them."""
    panels = {}
    for entry in entries:
        panels.setdefault(quantity(entry[1]), []).append(entry)
    rank = {("ratio", True, False): 0, ("ratio", True, True): 1, ("ratio", False, False): 2,
            ("ratio", False, True): 3}
    return dict(sorted(panels.items(), key=lambda item: rank.get(item[0], 4)))


class ClaimFigures(NamedTuple):
    """The claims' forest plots, which the report shows in its Claims section: one line per
    part beside the summary, one per configuration with the detailed rows."""
    by_part: Section
    by_configuration: Section


NO_DIFFERENCE = {"ratio": 1.0, "difference": 0.0}  # a level has no "no difference" line


def _forest_figure(p, s, name, entries, width, title, table, fontsize):
    panels = forest_panels(entries)
    rows = sum(len(e) for e in panels.values())
    # Inches: 0.15 a row, 0.4 a panel for its title and axis, 1.1 for title, legend and footer.
    fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                             figsize=(width, 1.1 + 0.15 * rows + 0.4 * len(panels)),
                             gridspec_kw={"height_ratios": [len(e) + 1.5 for e in panels.values()]})
    for ax, (key, group) in zip(axes.flat, panels.items()):
        _forest(ax, group, _ratio_window(group) if key[0] == "ratio" else None, fontsize)
        if key[0] in NO_DIFFERENCE:
            ax.axvline(NO_DIFFERENCE[key[0]], color="0.6", linewidth=0.6, zorder=0)
        ax.set_title(_panel_label(key), loc="left", fontsize=fontsize + 0.5)
    fig.legend(handles=[Patch(color=c, label=v) for v, c in VERDICT_COLOURS.items()] +
               [Patch(color="black", label="tick: smallest effect that counts")], fontsize=6,
               loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False)
    noise = ""
    if table.noise.measured:
        noise = (f"widest noise floor (A/A time ratio, {table.noise.family}): "
                 f"{math.exp(table.noise.estimate):.2f} "
                 f"[{math.exp(table.noise.low):.2f}, {math.exp(table.noise.high):.2f}]")
    p.save(fig, name, s, title, noise)
    s.blocks.append(doc.Paragraph(
        "Forest plot: Hodges-Lehmann estimates over blocks with their exact 95% intervals; "
        "colour: the verdict; tick: the smallest effect that counts (two ticks: the band of an "
        "equivalence or non-inferiority part); grey line: no difference. One panel per kind of "
        "quantity; a ratio panel ends where its effects are decided, and an interval beyond "
        "ends in an arrow, its estimate written at the edge. A growth part's ratio is its ratio "
        "at the most threads over its ratio at 1 thread. Unbounded intervals (5 or fewer "
        "blocks) are not drawn."))
    return s


def figure_claims(p, table):
    """A forest plot of the claims summary: each part's deciding configuration
    (claims.deciding), its estimate and 95% interval, and the smallest effect that counts."""
    s = Section("Claim effects by part")
    # Numbered as the summary's lines, the names shortened: the figure sits beside the summary,
    # and narrow enough to be read there.
    entries = [(f"{i} {textwrap.shorten(pr.part.name, 36, placeholder='…')}", pr.part, r)
               for i, pr in enumerate(table.parts, 1)
               if (r := claims.deciding(pr)) is not None and r.n > 0]
    if not entries:
        return s.skip("no claim part had data")
    # 5.2 inches wide: beside the summary at 1366 pixels, as tall as the first screen allows,
    # it is shown about 1:1, so that 7 points are about 9 pixels.
    return _forest_figure(p, s, "claims", entries, 5.2, "Claims: each part's deciding effect, "
                          "95% interval and smallest effect that counts", table, fontsize=7)


def figure_claims_by_configuration(p, table):
    """The same forest plot with every configuration of every part."""
    s = Section("Claim effects by configuration")
    # Whole labels: configurations of one part often differ only at the end of theirs.
    entries = [(f"{pr.part.name} · {r.config} · {r.threads} thr", pr.part, r)
               for pr in table.parts for r in pr.configs if r.n > 0]
    if not entries:
        return s.skip("no claim part had data")
    return _forest_figure(p, s, "claims_by_configuration", entries, 11,
                          "Claim effects: each part's estimate per configuration with its 95% "
                          "interval, against the smallest effect that counts", table, fontsize=6)



def _forest(ax, entries, window=None, fontsize=6.0):
    """One claims panel: (label, part, result) entries, estimate and interval on the part's own
    scale (ratios back from logs), coloured by verdict, with the smallest effect as a tick.
    `window` (low, high), for a log ratio axis: what lies beyond is drawn to the edge, ending in
    an arrow, and an estimate beyond it is written there."""
    for y, (_, part, r) in enumerate(entries):
        to_scale = math.exp if part.kind in ("ratio", "growth") else (lambda v: v)
        colour = VERDICT_COLOURS.get(r.verdict, "black")
        low = to_scale(r.low) if math.isfinite(r.low) else np.nan
        high = to_scale(r.high) if math.isfinite(r.high) else np.nan
        estimate = to_scale(r.estimate)
        if window:
            edge_low, edge_high = window
            for value, edge, arrow in ((low, edge_low, "<"), (high, edge_high, ">")):
                if (value < edge) if arrow == "<" else (value > edge):
                    ax.plot([edge], [y], arrow, color=colour, markersize=4, clip_on=False)
            low, high = np.clip([low, high], edge_low, edge_high)
            if not edge_low <= estimate <= edge_high:
                right = estimate > edge_high
                ax.annotate(f"{estimate:.3g}×", (edge_high if right else edge_low, y),
                            xytext=(-6 if right else 6, 0), textcoords="offset points",
                            ha="right" if right else "left", va="center", fontsize=fontsize - 0.5,
                            color=colour, bbox={"boxstyle": "square,pad=0.1", "fc": "white",
                                                "ec": "none"})
        ax.plot([low, high], [y, y], color=colour, linewidth=2)
        if not window or window[0] <= estimate <= window[1]:
            ax.plot([estimate], [y], "o", color=colour, markersize=3)
        threshold = to_scale(part.threshold)
        ax.plot([threshold], [y], "|", color="black", markersize=9)
        if part.expect in ("equivalent", "noninferior"):  # the other edge of the band
            ax.plot([to_scale(-part.threshold)], [y], "|", color="black", markersize=9)
    ax.set_yticks(range(len(entries)))
    ax.set_yticklabels([label for label, _, _ in entries], fontsize=fontsize)
    ax.set_ylim(len(entries) - 0.5, -0.5)  # first entry on top
    if window:
        ax.set_xscale("log")
        ax.set_xlim(*window)
        _ratio_ticks(ax)
    ax.tick_params(axis="x", which="both", labelsize=fontsize)
    ax.grid(axis="x", alpha=0.3, which="both")


# Tick values a ratio axis may show: round numbers a reader can place, 1 and the usual
# smallest effects (1.05, 1.1, 1.25, 1.5, 2) among them.
RATIO_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25,
               1.5, 2, 3, 4, 5, 10, 20, 50, 100)


def _ratio_ticks(ax):
    """Plain numbers on a log ratio axis ("1.25", not "1.25 x 10^0"): RATIO_TICKS within the
    axis, from 1 outwards, none closer to the last kept than a seventh of the axis."""
    low, high = ax.get_xlim()
    gap = math.log(high / low) / 7
    kept = []
    for side in ([t for t in RATIO_TICKS if t >= 1], sorted((t for t in RATIO_TICKS if t < 1),
                                                             reverse=True)):
        last = 1.0
        for t in side:
            if low <= t <= high and (t == 1 or abs(math.log(t / last)) >= gap):
                kept.append(t)
                last = t
    ax.xaxis.set_major_locator(ticker.FixedLocator(sorted(kept)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(ticker.NullLocator())


