"""How every figure of the report is drawn: the conventions the numbered figures (figures.py),
the claims' forest plots (forest.py) and the machine timeline (machine.py) share, kept here so
that each is stated once and a change of look reaches every figure.

- Files: PNG (300 dpi), SVG with text kept as text and PDF with TrueType fonts (both editable
  for a paper), written without dates or random ids so that a rerun on the same data gives the
  same SVG (Painter.save).
- Colour: one per scheduler variant, the same in every figure (Painter.colors).
- Every figure carries its title (wrapped, never cut), an optional one-line note and a footer
  naming the machine(s) the runs came from.
- Bars (cluster_bars) are the Hodges-Lehmann estimate over repetitions with its 95% interval,
  the interval the claims use (min-max where 5 or fewer repetitions leave it unbounded); a panel
  whose values span more than LOG_SPAN is drawn on a log scale.
- Times are shown in the unit that suits the panel (ns, µs, ms, s): time_unit, time_axis.

A figure function receives a Painter and fills a Section: the blocks the report shows under the
figure's heading (the images and captions, or one line saying why the figure was skipped)."""
import dataclasses
import math
import os
import textwrap
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from . import doc  # noqa: E402
from .load import native, simulated  # noqa: E402

plt.rcParams.update({
    "svg.hashsalt": "schedlab",  # stable SVG ids between runs
    "svg.fonttype": "none",      # text stays text in the SVG, editable for a paper
    "pdf.fonttype": 42,          # TrueType in the PDF, also editable
    "axes.formatter.useoffset": False,  # no "+1e4" offset text over the titles
    "font.size": 9, "axes.titlesize": 9,
})

INTERVAL = ("bars: Hodges-Lehmann estimate over repetitions; whiskers: its 95% interval, as in "
            "the claims (min-max where 5 or fewer repetitions leave it unbounded)")
SHORT_INTERVAL = "bars: estimate over repetitions; whiskers: 95% interval (as in the claims)"
LOG_SPAN = 30  # values spanning more than this factor get a log axis
DPI = 300
TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)
    files: list = field(default_factory=list)

    def skip(self, reason):
        self.blocks.append(doc.Paragraph(f"Skipped: {reason}."))
        return self


def time_unit(values_ns):
    """(unit, ns per unit) that puts the typical value of a panel between 1 and 1000."""
    finite = [v for v in values_ns if v is not None and math.isfinite(v) and v > 0]
    typical = float(np.median(finite)) if finite else 1.0
    return next(((u, f) for u, f in TIME_UNITS if typical >= f), TIME_UNITS[-1])


def wants_log(values):
    positive = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return len(positive) > 1 and max(positive) / min(positive) > LOG_SPAN


class Painter:
    """Shared look of every figure: one colour per scheduler variant, the machine footer, a
    title that wraps, and writing PNG + SVG + PDF."""

    def __init__(self, results, out_dir):
        # Every figure reads the native rows; the cache figure also the simulated ones.
        self.results = dataclasses.replace(results, rows=native(results.rows))
        self.simulated_rows = results.rows[simulated(results.rows)]
        self.out_dir = out_dir
        variants = sorted(results.rows["variant"].unique())
        palette = plt.get_cmap("tab10" if len(variants) <= 10 else "tab20").colors
        self.colors = {v: palette[i % len(palette)] for i, v in enumerate(variants)}
        self.footer = machine_footer(results.files)

    def save(self, fig, name, section, title, note=""):
        """Titles (wrapped, never cut), footers and writes the figure; `title` is also the
        image's alt text; `note`, one short line under the title (e.g. what was not measured)."""
        title_lines = textwrap.wrap(title, int(fig.get_figwidth() * 12))
        note_lines = textwrap.wrap(note, int(fig.get_figwidth() * 15)) if note else []
        height = fig.get_figheight()
        # fig.text, not suptitle: tight_layout would reserve room for a suptitle a second time.
        fig.text(0.5, 1 - 0.06 / height, "\n".join(title_lines), fontsize=10, ha="center", va="top")
        below_title = 1 - (0.08 + 0.18 * len(title_lines)) / height
        if note_lines:
            fig.text(0.5, below_title, "\n".join(note_lines), ha="center", va="top", fontsize=7.5,
                     color="0.3")
        top = below_title - (0.04 + 0.14 * len(note_lines)) / height
        fig.text(0.01, 0.005, self.footer, fontsize=7, color="0.35", ha="left", va="bottom")
        # Room in inches for the footer below and the title above, whatever the figure's height.
        fig.tight_layout(rect=(0, 0.25 / height, 1, top))
        for ext in ("png", "svg", "pdf"):
            metadata = {"Date": None} if ext == "svg" else {}  # stable SVG between runs
            if ext == "pdf":
                metadata = {"CreationDate": None}
            # bbox "tight": a figure legend placed outside the panels is kept whole.
            fig.savefig(os.path.join(self.out_dir, f"{name}.{ext}"), dpi=DPI, metadata=metadata,
                        bbox_inches="tight", pad_inches=0.1)
        plt.close(fig)
        section.files += [f"{name}.png", f"{name}.svg", f"{name}.pdf"]
        section.blocks.append(doc.Figure(f"{name}.png", f"{name}.svg", f"{name}.pdf", title))


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



def _whiskers(r, scale):
    """(estimate, lower error, upper error) of a summary row, scaled; an unbounded interval
    (5 or fewer repetitions) falls back to min-max."""
    low = r["low"] if math.isfinite(r["low"]) else r["min"]
    high = r["high"] if math.isfinite(r["high"]) else r["max"]
    centre = r["centre"] if math.isfinite(r["centre"]) else r["median"]
    return centre / scale, max(0.0, centre - low) / scale, max(0.0, high - centre) / scale


def _tick_labels(ax, positions, labels, horizontal):
    if horizontal:
        ax.set_yticks(positions)
        ax.set_yticklabels([textwrap.fill(str(g), 30) for g in labels], fontsize=7)
        ax.invert_yaxis()  # first group on top
        return
    ax.set_xticks(positions)
    crowded = len(labels) > 4 or max(len(str(g)) for g in labels) > 14
    ax.set_xticklabels([textwrap.fill(str(g), 14) for g in labels], fontsize=7,
                       rotation=30 if crowded else 0, ha="right" if crowded else "center")


def cluster_bars(ax, table, group_order, bar_order, color_of, label_of=str, horizontal=False,
                 scale=1.0, legend=True):
    """Bars of a summarise() table (columns group and bar), one cluster per group holding only
    the bars that group has, so that sparse tables stay compact. Values are divided by `scale`
    (a unit); the value axis turns logarithmic when the bars span more than LOG_SPAN."""
    pos, ticks, values = 0.0, [], []
    for group in group_order:
        part = table[table["group"] == group].set_index("bar")
        start = pos
        for bar in (b for b in bar_order if b in part.index):
            centre, below, above = _whiskers(part.loc[bar], scale)
            values.append(centre)
            draw = ax.barh if horizontal else ax.bar
            err = {"xerr" if horizontal else "yerr": [[below], [above]]}
            draw(pos, centre, 0.9, color=color_of(bar), capsize=2, **err)
            if centre == 0:  # a zero bar is invisible: say it was counted, unlike a gap
                xy = (0, pos) if horizontal else (pos, 0)
                ax.annotate("0", xy, fontsize=6, color=color_of(bar),
                            xytext=(3, 0) if horizontal else (0, 2), textcoords="offset points",
                            va="center" if horizontal else "bottom",
                            ha="left" if horizontal else "center")
            pos += 1
        ticks.append(((start + pos - 1) / 2, group))
        pos += 0.8  # gap between clusters
    positions, labels = zip(*ticks)
    _tick_labels(ax, positions, labels, horizontal)
    if wants_log(values):
        set_scale = ax.set_xscale if horizontal else ax.set_yscale
        if min(values) > 0:
            set_scale("log")
        else:  # a log axis cannot show 0: linear below the smallest positive value
            set_scale("symlog", linthresh=min(v for v in values if v > 0))
    ax.grid(axis="x" if horizontal else "y", alpha=0.3, which="both")
    if legend:
        present = set(table["bar"])
        ax.legend(handles=[Patch(color=color_of(b), label=label_of(b))
                           for b in bar_order if b in present], fontsize=6)


def grid(n, width, heights, max_cols=3):
    """n axes, max_cols to a row; `heights` is one height in inches for every row, or a list
    with one per row."""
    cols = min(max_cols, n)
    rows = math.ceil(n / cols)
    heights = heights if isinstance(heights, list) else [heights] * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, sum(heights) + 0.9), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    return fig, list(axes.flat[:n])


def time_axis(ax, axis="y"):
    """A log time axis labelled in the unit of each decade (1 µs, 10 ms, ...)."""
    def label(v, _):
        unit, scale = next(((u, f) for u, f in TIME_UNITS if v >= f), TIME_UNITS[-1])
        return f"{v / scale:g} {unit}"
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(ticker.FuncFormatter(label))

