"""End-to-end tests of scripts/plot and scripts/compare on the fixture in
tests/fixtures/results (run through the real bash entry points, as users do)."""
import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np

from schedlab_results import claims
from schedlab_results.figures import FIGURES
from schedlab_results.load import CASE_KEY, FLAGS
from schedlab_results.metrics import CACHE_SOURCES
from schedlab_results.paired import holm
from schedlab_results.stats import ALPHA, MIN_REPS, format_p, smallest_p

ROOT = Path(__file__).resolve().parents[2]
PLOT = ROOT / "scripts" / "plot"
COMPARE = ROOT / "scripts" / "compare"
FIXTURE = ROOT / "tests" / "fixtures" / "results" / "small.csv"

VERDICT = re.compile(r"^(held|not held|inconclusive|not measured)$")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(tool, *args, env=None):
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True,
                          timeout=240, env=env)


def section(markdown, heading):
    """The text under `## heading` up to the next heading of the same level, with the padding
    tabulate aligns table columns with collapsed to one space ("| a   |" -> "| a |")."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    return re.sub(r"(?<=\S) {2,}(?=\|)|(?<=\|) {2,}(?=\S)", " ", match.group(1)) if match else ""


def table_rows(text):
    """Body rows of the first Markdown table in `text`, split into cells."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines[2:]]


def tables(text):
    """Every Markdown table in `text`, as (header cells, body rows split into cells)."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.splitlines() if ln.startswith("|")]
        if len(lines) >= 2:
            rows = [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines]
            out.append((rows[0], rows[2:]))
    return out


SUMMARY_HEADER = ["#", "Claim", "Part", "Verdict (of configurations)", "Effect [95% interval]",
                  "Control", "Changed after data"]
DETAIL_HEADER = ["Claim", "Part", "Compared", "Configuration", "Effect [95% interval]",
                 "p (Holm)", "Verdict"]


def claims_tables(markdown):
    """The Claims section's summary rows (one per part) and per-configuration rows."""
    found = {tuple(header): rows for header, rows in tables(section(markdown, "Claims"))}
    return found.get(tuple(SUMMARY_HEADER), []), found.get(tuple(DETAIL_HEADER), [])


def part_rows(rows, name):
    """The claims table's rows of part `name`: the one naming it and the configurations after."""
    start = next(i for i, r in enumerate(rows) if r[1] == name)
    end = next((i for i in range(start + 1, len(rows)) if rows[i][1]), len(rows))
    return rows[start:end]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def fixture_rows():
    with open(FIXTURE, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, list(reader)


def fixture_meta():
    return json.loads(FIXTURE.with_suffix(".meta.json").read_text())


def write_sidecar(csv_path, meta=None):
    """`meta` (the fixture's sidecar by default) as csv_path's sidecar: scheduler defaults
    (`parameters`) then come from it, as in a real run, instead of from the rows' most common
    values."""
    Path(csv_path).with_suffix(".meta.json").write_text(json.dumps(meta or fixture_meta()))


# The fixture is measured: what its rows show (times, flagged repetitions, verdicts, which
# cases spread how much) changes each time make_fixture.py records it. A test that asserts on
# such an outcome either computes its expectation from the fixture or first sets the values it
# depends on to known ones, with the helpers below.

def set_column(header, rows, name, values):
    """(header, rows) with column `name` set to `values` (one per row, or one for all): by name
    where the CSV already has the column (a regenerated fixture may), appended where not."""
    values = values if isinstance(values, list) else [values] * len(rows)
    if name not in header:
        return header + [name], [r + [v] for r, v in zip(rows, values)]
    i = header.index(name)
    return header, [r[:i] + [v] + r[i + 1:] for r, v in zip(rows, values)]


def unflagged(header, rows):
    """The rows with no repetition flagged as disturbed (`noisy`: other processes took CPU;
    `slow_cpu`: the speed probe), so that claims and scripts/compare judge every block whatever
    the machine's load was while the fixture was recorded."""
    for flag in FLAGS:
        if flag in header:
            header, rows = set_column(header, rows, flag, "0")
    return header, rows


def flagged_row(header, row):
    """Whether a row is a repetition left out as disturbed (load.FLAGS)."""
    return any(flag in header and row[header.index(flag)] == "1" for flag in FLAGS)


def native_rows(header, rows):
    """The rows that ran natively (not under Valgrind's simulator)."""
    if "simulated" not in header:
        return rows
    i = header.index("simulated")
    return [r for r in rows if r[i] != "1"]


def case_columns(header):
    """The indexes of the case key's columns the CSV has (`build` only in an A/B run)."""
    return [header.index(k) for k in CASE_KEY if k in header]


def case_reps(header, rows):
    """{case key: repetitions} of the native rows not flagged as disturbed, as scripts/compare
    counts cases."""
    columns = case_columns(header)
    reps = {}
    for r in native_rows(header, rows):
        if flagged_row(header, r):
            continue
        key = tuple(r[i] for i in columns)
        reps[key] = reps.get(key, 0) + 1
    return reps


def params(text):
    return dict(item.partition("=")[::2] for item in text.split())


def granularity_references():
    """{workload_params: the scheduler the granularity figure takes T_ref from} for the fixture's loops sweep
    (preset granularity): the elision where the fixture ran it with those parameters (presets
    add it to every block), else serial (runs older than the elision), as
    stats.efficiency_reference chooses."""
    header, rows = fixture_rows()
    col = {name: header.index(name) for name in ("preset", "workload", "workload_params",
                                                 "scheduler")}
    loops = [r for r in rows if r[col["workload"]] == "loops"]
    sweep = {r[col["workload_params"]] for r in loops if r[col["preset"]] == "granularity"}
    ran = {(r[col["workload_params"]], r[col["scheduler"]]) for r in loops}
    return {p: next((s for s in ("elision", "serial") if (p, s) in ran), "own 1-thread")
            for p in sweep}


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="schedlab-plot-test-"))
        self.addCleanup(shutil.rmtree, self.tmp)

    def assert_user_error(self, result, tool, text):
        """Exit status 2 and exactly one line on stderr naming the problem, no traceback."""
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith(f"{tool}: error: "), lines[0])
        self.assertIn(text, lines[0])
        self.assertNotIn("Traceback", result.stderr)


class PlotFixtureTest(unittest.TestCase):
    """One plot of the whole fixture, checked from several sides."""

    @classmethod
    def setUpClass(cls):
        cls.out = Path(tempfile.mkdtemp(prefix="schedlab-plot-test-"))
        cls.result = run(PLOT, FIXTURE, "--out", cls.out)
        report = cls.out / "report.md"
        cls.report = report.read_text() if report.exists() else ""

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out)

    def test_runs_cleanly_and_prints_the_report_path(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        self.assertEqual(self.result.stderr, "")
        self.assertEqual(self.result.stdout.strip().splitlines()[-1],
                         f"report: {self.out / 'report.md'}")

    def test_every_figure_is_a_valid_png_and_svg(self):
        pngs = sorted(self.out.glob("*.png"))
        names = {p.stem for p in pngs}
        for expected in ("time_fib", "time_loops", "speedup_fib", "switches", "traffic",
                         "granularity", "iomix", "claims"):
            self.assertIn(expected, names)
        for png in pngs:
            data = png.read_bytes()
            self.assertEqual(data[:8], PNG_SIGNATURE, png.name)
            self.assertGreater(len(data), 1024, png.name)
            svg = png.with_suffix(".svg")
            self.assertGreater(svg.stat().st_size, 1024, svg.name)
            root = ElementTree.parse(svg).getroot()
            self.assertTrue(root.tag.endswith("svg"), svg.name)
            # Text stays text (svg.fonttype none), so a figure can be edited for a paper.
            self.assertTrue(any(e.tag.endswith("text") for e in root.iter()), svg.name)
            self.assertEqual(png.with_suffix(".pdf").read_bytes()[:5], b"%PDF-", png.name)

    def test_report_has_every_section_and_links_every_figure(self):
        for heading in ("## Machine", "## Counters", "## Figures", "## Claims",
                        "## Medians per case"):
            self.assertIn(f"\n{heading}\n", self.report)
        for png in self.out.glob("*.png"):
            self.assertIn(f"]({png.name})", self.report)
        self.assertIn("cpu_model", section(self.report, "Machine"))
        html = (self.out / "report.html").read_text()
        self.assertIn('<img src="time_fib.png"', html)

    def test_summary_has_one_line_per_part_with_its_verdict_first(self):
        summary, _ = claims_tables(self.report)
        parts = claims.load_criteria().parts
        self.assertEqual([r[2] for r in summary], [p.name for p in parts])  # each once, in order
        self.assertEqual([r[0] for r in summary], [str(i) for i in range(1, len(parts) + 1)])
        for number, claim, part, verdict, effect, control, changed in summary:
            if verdict.startswith("**broken**"):  # its control held: what its interval said follows
                self.assertRegex(verdict, r"^\*\*broken\*\*: .+, but its control held$", part)
                self.assertEqual(control, "**HELD**: part broken", part)
                continue
            self.assertRegex(verdict, r"^\*\*[^*]+\*\*( \(\d+ of \d+\))?$", part)
            self.assertRegex(verdict.strip("*").split(" (")[0].rstrip("*"), VERDICT, part)
            self.assertEqual(effect.startswith("n/a: "), verdict == "**not measured**", part)
            self.assertRegex(control, r"^(not held ✓|inconclusive|not measured|none)$", part)
            self.assertRegex(changed, r"^(\d+ of \d+|never \(of \d+\))$", part)
        self.assertEqual([r[1] for r in summary if r[1]],
                         list(dict.fromkeys(p.claim for p in parts)))
        # The answer comes first: the summary and its forest plot, then the detailed rows.
        claims_text = section(self.report, "Claims")
        self.assertLess(claims_text.index("| Verdict (of"), claims_text.index("](claims.png)"))
        self.assertLess(claims_text.index("](claims.png)"),
                        claims_text.index("\n### Per configuration"))
        self.assertLess(claims_text.index("\n### Per configuration"),
                        claims_text.index("| Compared"))

    def test_detail_table_has_every_part_and_a_row_per_configuration(self):
        _, rows = claims_tables(self.report)
        parts = claims.load_criteria().parts
        self.assertEqual([r[1] for r in rows if r[1]], [p.name for p in parts])
        for claim, part, compared, config, effect, p_value, verdict in rows:
            self.assertTrue(config and effect and p_value, rows)
            if part:
                self.assertTrue(compared, part)
            if config != "no matching rows":
                self.assertRegex(verdict.strip("*"), VERDICT, config)
        # The configuration each measured part's summary line shows is bold, once per part.
        summary, _ = claims_tables(self.report)
        for line in summary:
            bold = [r for r in part_rows(rows, line[2]) if r[6].startswith("**")]
            self.assertEqual(len(bold), 0 if line[3] == "**not measured**" else 1, line)
        header, fixture = fixture_rows()
        sources = [header.index(c) for c, _, _ in CACHE_SOURCES if c in header]
        if not any(r[i] for r in fixture for i in sources):  # no cache counter, no simulator
            cache = next(r for r in summary if r[2] == "cache misses")
            self.assertEqual(cache[3:5], ["**not measured**", "n/a: no matching rows"])

    def test_html_puts_the_summary_beside_the_forest_and_collapses_the_details(self):
        page = (self.out / "report.html").read_text()
        claims_html = page[page.index("<h2>Claims</h2>"):page.index("<h2>Figures</h2>")]
        beside = claims_html.index('<div class="beside">')
        details = claims_html.index("<details>")
        self.assertLess(beside, claims_html.index('class="dataframe compact"'))
        self.assertLess(claims_html.index('<img src="claims.png"'), details)
        self.assertNotIn("<details open", claims_html)  # collapsed until the reader opens it
        inside = claims_html[details:claims_html.index("</details>")]
        self.assertIn("<th>p (Holm)</th>", inside)
        self.assertIn('<img src="claims_by_configuration.png"', inside)
        self.assertEqual(claims_html.count("<th>Verdict (of configurations)</th>"), 1)

    def test_unmeasured_counters_are_reported_with_the_metadata_reason(self):
        counters = section(self.report, "Counters")
        meta = json.loads(FIXTURE.with_suffix(".meta.json").read_text())
        for column, reason in meta["counters"]["unavailable"].items():
            self.assertIn(f"| `{column}` | not measured (empty in every row) | {reason} |",
                          counters)
        self.assertRegex(counters, r"`cpu_ns` \| measured \(\d+ of \d+ rows\)")

    def test_peers_figure_follows_the_sidecar(self):
        # Drawn, naming the peers, where the fixture's sidecar lists them (as `schedlab run`
        # writes one now); skipped with its reason where it predates the list (PlotPeersTest
        # checks both on sidecars it writes itself).
        peers = fixture_meta().get("peers")
        figures = section(self.report, "Figures")
        self.assertEqual((self.out / "peers.png").exists(), bool(peers))
        if peers:
            self.assertIn(f"instead of schedlab's designs: {', '.join(peers)}.", figures)
        else:
            self.assertIn("Skipped: the runs' sidecars do not say which schedulers are peers",
                          figures)

    def test_figures_are_numbered_by_their_place_in_the_figures_list(self):
        # FIGURES is the only home of the numbers: a title that carried its own would
        # show as a second number or a gap here.
        headings = re.findall(r"^### (.*)$", section(self.report, "Figures"), re.M)
        self.assertEqual(len(headings), len(FIGURES))
        for number, (heading, make) in enumerate(zip(headings, FIGURES), 1):
            self.assertRegex(heading, rf"^{number}\. [^\d]", make.__name__)

    def test_granularity_table_has_every_scheduler(self):
        figures = section(self.report, "Figures")
        reference = re.escape(" / ".join(sorted(set(granularity_references().values()))))
        for scheduler in ("central", "fair", "steal-half"):
            self.assertRegex(figures, rf"\| loops \| {scheduler} \| 2 \| {reference} \| "
                                      r"(not reached|(<=)?[\d.]+) \|")


class PlotKnownOutcomeTest(unittest.TestCase):
    """The claims section on the fixture with the values its verdicts rest on set to known ones,
    so that what is checked does not change with what the machine did while the fixture was
    recorded: no repetition flagged (each part is judged on every block the fixture's runs
    give it), and part "steal-half faster" (fair ÷ steal-half, loops one-long and heavy-tail)
    with room to decide (a static split 1.5× off the best), fair exactly as fast as steal-half
    on one-long (not held) and alternately 0.8× and 1.5× its time on heavy-tail (an interval
    around the 1.1× that counts: inconclusive whatever Holm's correction or a noise floor)."""

    HEAVY_TAIL_FACTORS = (0.8, 1.5)

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="schedlab-plot-test-"))
        header, rows = unflagged(*fixture_rows())
        col = {name: header.index(name) for name in
               ("preset", "scheduler", "workload", "workload_params", "threads", "rep", "wall_ns")}
        block = [header.index(c) for c in ("block_index",) if c in header]

        def judged(r):  # the rows of part "steal-half faster"
            return (r[col["workload"]] == "loops" and r[col["preset"]] != "granularity" and
                    params(r[col["workload_params"]]).get("skew") in ("one-long", "heavy-tail"))

        ratio = header.index("round_robin_ratio") if "round_robin_ratio" in header else None
        header, rows = set_column(header, rows, "round_robin_ratio",
                                  ["1.5" if judged(r) else "" if ratio is None else r[ratio]
                                   for r in rows])

        def key(r):
            return tuple(r[i] for i in [col["workload_params"], col["threads"], col["rep"]] + block)
        steal_half = {key(r): float(r[col["wall_ns"]]) for r in rows
                      if judged(r) and r[col["scheduler"]] == "steal-half"}
        idle = header.index("idle_ns") if "idle_ns" in header else None
        for r in rows:
            if not (judged(r) and r[col["scheduler"]] == "fair" and key(r) in steal_half):
                continue
            heavy = params(r[col["workload_params"]])["skew"] == "heavy-tail"
            factor = cls.HEAVY_TAIL_FACTORS[int(r[col["rep"]]) % 2] if heavy else 1.0
            wall = round(steal_half[key(r)] * factor)
            if idle is not None and r[idle]:  # the same idle share as recorded
                r[idle] = str(round(float(r[idle]) * wall / float(r[col["wall_ns"]])))
            r[col["wall_ns"]] = str(wall)
        csv_path = cls.tmp / "known.csv"
        write_csv(csv_path, header, rows)
        write_sidecar(csv_path)
        cls.result = run(PLOT, csv_path, "--out", cls.tmp / "out")
        report = cls.tmp / "out" / "report.md"
        cls.report = report.read_text() if report.exists() else ""

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_runs_cleanly(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)

    def test_summary_shows_the_configuration_that_decided_each_verdict(self):
        # One-long decides "not held", with its own effect, not heavy-tail's.
        summary, detail = claims_tables(self.report)
        line = next(r for r in summary if r[2] == "steal-half faster")
        self.assertEqual(line[3], "**not held** (1 of 2)")
        rows = part_rows(detail, "steal-half faster")
        one_long = next(r for r in rows if re.match(r"loops .*skew=one-long", r[3]))
        self.assertEqual(line[4], one_long[4])
        self.assertEqual(one_long[6], "**not held**")  # bold: the configuration shown above
        self.assertEqual([r[6] for r in rows if r is not one_long], ["inconclusive"])

    def test_each_configuration_of_a_part_shows_its_own_result(self):
        rows = part_rows(claims_tables(self.report)[1], "steal-half faster")
        configs = {params(r[3].split(",")[0].partition(" ")[2])["skew"]: r for r in rows}
        self.assertEqual(set(configs), {"one-long", "heavy-tail"})
        header, fixture = fixture_rows()
        reps = {r[header.index("rep")] for r in fixture
                if r[header.index("workload")] == "loops" and r[header.index("scheduler")] == "fair"
                and "skew=one-long" in r[header.index("workload_params")]}
        for r in configs.values():  # every block judged: none is flagged
            self.assertTrue(r[3].endswith(f", 2 threads ({len(reps)} blocks)"), r[3])
        self.assertEqual(configs["one-long"][4], "1× [1, 1]")  # its own effect, exactly
        self.assertEqual(configs["one-long"][6], "**not held**")
        self.assertRegex(configs["heavy-tail"][4], r"^[\d.]+× \[[\d.]+, [\d.]+\]$")
        self.assertNotEqual(configs["heavy-tail"][4], configs["one-long"][4])
        self.assertEqual(configs["heavy-tail"][6], "inconclusive")

    def test_forest_has_a_panel_per_kind_of_quantity(self):
        # The idle-share difference, the efficiency level and the steal count each get their own
        # axis (the panel titles are text in the SVG); none shares an axis with another.
        svg = (self.tmp / "out" / "claims.svg").read_text()
        for title in ("idle share of processor time: a − b",
                      "efficiency / best possible: level of a",
                      "time ratio a ÷ b, effects &lt; 1.5× (log)",
                      "count ratio a ÷ b, effects ≥ 1.5× (log)"):
            self.assertEqual(svg.count(title), 1, title)
        self.assertIn("6 related tasks spread across cores", svg)  # numbered as the summary


class PlotPartialDataTest(TempDirTest):
    def test_cache_claim_uses_hardware_counters_when_measured(self):
        # Known counts, every block judged (none flagged), and the sidecar's scheduler defaults
        # (half of the locality rows are LIFO and half FIFO: the rows alone do not say which
        # order is steal-half's default).
        header, rows = unflagged(*fixture_rows())
        l2, workload = header.index("papi_l2_dcm"), header.index("workload")
        scheduler_params = header.index("scheduler_params")
        locality = [r for r in native_rows(header, rows) if r[workload] == "locality"]
        for r in locality:
            r[l2] = "2000" if "local-order=lifo" in r[scheduler_params] else "9000"
        csv_path = self.tmp / "cache.csv"
        write_csv(csv_path, header, locality)
        write_sidecar(csv_path)
        result = run(PLOT, csv_path, "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = (self.tmp / "out" / "report.md").read_text()
        summary, detail = claims_tables(report)
        cache = next(r for r in summary if r[2] == "cache misses")
        self.assertNotEqual(cache[3], "**not measured**")
        self.assertRegex(cache[4], r"^4.5× \[")  # 9000 / 2000
        blocks = len({r[header.index("rep")] for r in locality})
        self.assertEqual(part_rows(detail, "cache misses")[0][3],
                         f"locality, 2 threads ({blocks} blocks)")
        self.assertEqual(next(r for r in summary if r[2] == "fair idles more")[3],
                         "**not measured**")

    def test_without_papi_the_simulator_judges_and_both_cache_sources_are_drawn(self):
        header, rows = fixture_rows()
        col = {name: header.index(name) for name in
               ("workload", "scheduler_params", "wall_ns", "threads", "rep")}
        native = [r for r in native_rows(header, rows) if r[col["workload"]] == "locality"]
        # Simulated repetitions at 1 worker: FIFO misses 3x as often, and Valgrind's times are
        # a thousand times the native ones (they must appear in no median).
        simulated = []
        for r in native:  # the fixture's locality rows ran at 2 threads
            copy = list(r)
            copy[col["threads"]] = "1"
            copy[col["wall_ns"]] = str(int(float(r[col["wall_ns"]]) * 1000))
            simulated.append(copy)
        fifo = ["local-order=fifo" in r[col["scheduler_params"]] for r in native]
        n = len(native)
        # Set by name: the fixture may have these columns already (empty on this machine).
        header, rows = set_column(header, native + simulated, "simulated", ["0"] * n + ["1"] * n)
        header, rows = set_column(header, rows, "sim_ll_misses",
                                  [""] * n + ["9000000" if f else "3000000" for f in fifo])
        header, rows = set_column(header, rows, "model_l2_misses", ["5000"] * n + [""] * n)
        write_csv(self.tmp / "sim.csv", header, rows)
        write_sidecar(self.tmp / "sim.csv")  # steal-half's default order: see the test above
        result = run(PLOT, self.tmp / "sim.csv", "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = (self.tmp / "out" / "report.md").read_text()
        summary, detail = claims_tables(report)
        cache = next(r for r in summary if r[2] == "cache misses")
        self.assertEqual(cache[3], "**held (simulated L2, 1 worker)**")
        self.assertRegex(cache[4], r"^3× \[")
        self.assertRegex(part_rows(detail, "cache misses")[0][3], r"^locality, 1 thread \(\d+ blocks\)$")
        self.assertIn("SIMULATED", section(report, "Figures"))
        self.assertIn("MODELLED", section(report, "Figures"))
        slowest_native = max(float(r[col["wall_ns"]]) for r in native) / 1e6
        medians = table_rows(section(report, "Medians per case"))
        self.assertTrue(medians)
        self.assertTrue(all(float(m[5]) <= slowest_native for m in medians),
                        "a simulated time reached the medians")

    def test_metg_is_interpolated_where_efficiency_crosses_half(self):
        # The fixture's own efficiencies depend on the machine's load when it was recorded, so
        # the wall times of its loops sweep are rewritten to known efficiencies: the reference's
        # (T_ref: the elision, or serial in older fixtures) to one time per task size, every
        # other scheduler's to 0.2, 0.6 and 0.9 of it from the finest task size up.
        header, rows = fixture_rows()
        col = {name: header.index(name) for name in
               ("preset", "workload", "workload_params", "scheduler", "threads", "wall_ns",
                "tasks")}
        sweep = [r for r in rows
                 if r[col["preset"]] == "granularity" and r[col["workload"]] == "loops"]
        references = granularity_references()
        self.assertEqual(set(references.values()) - {"elision", "serial"}, set())
        finest_first = sorted(references, key=lambda p: int(params(p)["iters"]))
        reference_ns = dict(zip(finest_first, (1e4, 3e5, 1e7)))
        wanted = dict(zip(finest_first, (0.2, 0.6, 0.9)))
        granularity = {}  # steal-half's, in µs
        for r in sweep:
            p, scheduler = r[col["workload_params"]], r[col["scheduler"]]
            if scheduler == references[p]:
                r[col["wall_ns"]] = str(round(reference_ns[p]))
            elif scheduler not in ("elision", "serial"):
                threads = int(r[col["threads"]])
                r[col["wall_ns"]] = str(round(reference_ns[p] / (threads * wanted[p])))
                if scheduler == "steal-half":  # wall time x threads / tasks
                    granularity[p] = (float(r[col["wall_ns"]]) * threads /
                                      float(r[col["tasks"]]) / 1e3)
        write_csv(self.tmp / "metg.csv", header, sweep)
        result = run(PLOT, self.tmp / "metg.csv", "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = section((self.tmp / "out" / "report.md").read_text(), "Figures")
        # 50% lies 3/4 of the way from 0.2 to 0.6, in log granularity.
        finest, next_size = (granularity[p] for p in finest_first[:2])
        metg = finest * (next_size / finest) ** 0.75
        reference = " / ".join(sorted(set(references.values())))
        self.assertIn(f"| loops | steal-half | 2 | {reference} | {metg:.3g} |", figures)

    def test_old_csv_without_counters_or_sidecar(self):
        header, rows = fixture_rows()
        keep = header.index("ns_per_task") + 1
        fib = [r[:keep] for r in rows if r[header.index("workload")] == "fib"]
        csv_path = self.tmp / "old.csv"
        write_csv(csv_path, header[:keep], fib)
        result = run(PLOT, csv_path, "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = (self.tmp / "out" / "report.md").read_text()
        self.assertIn("Skipped: no iomix rows", report)
        self.assertIn("Skipped: the runs' sidecars do not say which schedulers are peers", report)
        self.assertIn("absent from the CSV", section(report, "Counters"))
        self.assertIn("no .meta.json sidecar", report)
        self.assertEqual(len(claims_tables(report)[0]), len(claims.load_criteria().parts))


class PlotPeersTest(TempDirTest):
    def test_peers_figure_names_the_peers_from_the_sidecar(self):
        # The fixture with a sidecar that names its peers, as `schedlab run` writes one now.
        shutil.copy(FIXTURE, self.tmp / "peers.csv")
        meta = json.loads(FIXTURE.with_suffix(".meta.json").read_text())
        meta["peers"] = ["tbb", "go-runtime"]
        (self.tmp / "peers.meta.json").write_text(json.dumps(meta))
        result = run(PLOT, self.tmp / "peers.csv", "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        png = (self.tmp / "out" / "peers.png").read_bytes()
        self.assertEqual(png[:8], PNG_SIGNATURE)
        figures = section((self.tmp / "out" / "report.md").read_text(), "Figures")
        self.assertIn("instead of schedlab's designs: tbb, go-runtime.", figures)

    def test_peers_figure_is_skipped_with_its_reason_for_a_sidecar_older_than_the_peers_list(self):
        # The fixture's fib and fib-go rows, the peers' among them, with its sidecar as runs
        # wrote it before the peers list: those rows still plot everywhere else, and the peers
        # figure says why it is missing instead of guessing.
        header, rows = fixture_rows()
        workload, scheduler = header.index("workload"), header.index("scheduler")
        fib = [r for r in rows if r[workload] in ("fib", "fib-go")]
        write_csv(self.tmp / "old.csv", header, fib)
        meta = fixture_meta()
        meta.pop("peers", None)
        write_sidecar(self.tmp / "old.csv", meta)
        result = run(PLOT, self.tmp / "old.csv", "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse((self.tmp / "out" / "peers.png").exists())
        report = (self.tmp / "out" / "report.md").read_text()
        self.assertIn("Skipped: the runs' sidecars do not say which schedulers are peers",
                      section(report, "Figures"))
        self.assertTrue((self.tmp / "out" / "time_fib.png").exists())
        plotted = {m[0].split(" [")[0] for m in table_rows(section(report, "Medians per case"))}
        self.assertEqual(plotted, {r[scheduler] for r in fib})


class CompareTest(TempDirTest):
    def test_fixture_against_itself_shows_no_change(self):
        result = run(COMPARE, FIXTURE, FIXTURE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("within the drift", result.stdout)
        self.assertNotRegex(result.stdout, r"\b(faster|slower)$")
        self.assertNotIn("only in", result.stdout)
        self.assertIn("two separate runs cannot separate the machine's drift from a change of the code",
                      result.stdout)

    def test_lists_cases_present_in_one_file_only(self):
        header, rows = fixture_rows()
        workload = header.index("workload")
        write_csv(self.tmp / "fib.csv", header, [r for r in rows if r[workload] == "fib"])
        result = run(COMPARE, FIXTURE, self.tmp / "fib.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("only in OLD", result.stdout)
        self.assertNotIn("only in NEW", result.stdout)

    def test_simulated_repetitions_are_not_compared_with_native_ones(self):
        # NEW holds the fixture's rows plus simulated copies of them, a thousand times slower
        # (Valgrind's times): its times must be the fixture's own.
        header, rows = fixture_rows()
        native = native_rows(header, rows)
        wall = header.index("wall_ns")
        simulated = [r[:wall] + [str(int(float(r[wall]) * 1000))] + r[wall + 1:] for r in native]
        # Set by name: the fixture may have the column already.
        header, rows = set_column(header, native + simulated, "simulated",
                                  ["0"] * len(native) + ["1"] * len(simulated))
        write_csv(self.tmp / "old.csv", header, rows[:len(native)])
        write_csv(self.tmp / "new.csv", header, rows)
        result = run(COMPARE, self.tmp / "old.csv", self.tmp / "new.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(" 9/9 ", result.stdout)  # the same repetitions on both sides
        self.assertNotIn("/18 ", result.stdout)
        self.assertNotRegex(result.stdout, r"(?m)(faster|slower)\s*$")

    def test_no_case_in_both_files_is_one_line_and_status_2(self):
        header, rows = fixture_rows()
        workload = header.index("workload")
        write_csv(self.tmp / "fib.csv", header, [r for r in rows if r[workload] == "fib"])
        write_csv(self.tmp / "loops.csv", header, [r for r in rows if r[workload] == "loops"])
        self.assert_user_error(run(COMPARE, self.tmp / "fib.csv", self.tmp / "loops.csv"),
                               "scripts/compare", "no case is also in")

    def test_bad_input_is_one_line_and_status_2(self):
        write_csv(self.tmp / "bad.csv", ["scheduler", "wall_ns"], [["fair", "1"]])
        self.assert_user_error(run(COMPARE, self.tmp / "bad.csv", FIXTURE), "scripts/compare",
                               "missing required column(s) run_id")

    def test_a_text_metric_is_one_line_and_status_2(self):
        self.assert_user_error(run(COMPARE, FIXTURE, FIXTURE, "--metric", "scheduler"),
                               "scripts/compare", "column scheduler is not numeric")

    def test_a_median_of_zero_has_no_relative_change(self):
        # Every repetition of one case counted 0 steals: its change is "n/a", not a traceback.
        header, rows = fixture_rows()
        steals, scheduler = header.index("steals"), header.index("scheduler")
        for r in rows:
            if r[scheduler] == "fair":
                r[steals] = "0"
        write_csv(self.tmp / "zero.csv", header, rows)
        result = run(COMPARE, self.tmp / "zero.csv", self.tmp / "zero.csv", "--metric", "steals")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        fair = [line for line in result.stdout.splitlines() if line.startswith("fair")]
        self.assertTrue(fair, result.stdout)
        for line in fair:
            self.assertRegex(line, r"\bn/a \(median 0\)\s+n/a\s")


    # Whether a change lies beyond the drift between two runs depends on how much each case's
    # repetitions spread and on how many cases the correction spans. The fixture's spreads are
    # the machine's load when it was recorded, so these tests set the times first.

    def known_times(self):
        """The fixture's native rows with known wall times: each case's repetitions at about its
        first recorded time x 1.00, 1.01, 1.02, ... (even numbers of ns, so that halving is
        exact). They spread by less than 2x: twice as slow separates every case completely."""
        header, rows = unflagged(*fixture_rows())
        rows = native_rows(header, rows)
        wall, columns = header.index("wall_ns"), case_columns(header)
        unit, seen = {}, {}
        for r in rows:
            key = tuple(r[i] for i in columns)
            unit.setdefault(key, max(1, round(float(r[wall]) / 200)))
            seen[key] = seen.get(key, -1) + 1
            r[wall] = str(2 * unit[key] * (100 + seen[key]))
        return header, rows

    def scaled_pair(self, factor, case_factor=None):
        """OLD: known_times(); NEW: the same with every wall time x factor, and the case with the
        most repetitions (9 in the fixture) x case_factor when given. Returns (old, new, that
        case's name as scripts/compare prints it, {case key: repetitions})."""
        header, rows = self.known_times()
        reps = case_reps(header, rows)
        target = max(reps, key=lambda k: (reps[k], k))
        wall, columns = header.index("wall_ns"), case_columns(header)
        scaled = []
        for r in rows:
            scale = case_factor if case_factor is not None and tuple(r[i] for i in columns) == target else factor
            scaled.append(r[:wall] + [str(int(int(r[wall]) * scale))] + r[wall + 1:])
        old, new = self.tmp / "old.csv", self.tmp / "new.csv"
        write_csv(old, header, rows)
        write_csv(new, header, scaled)
        cases = json.loads(run(COMPARE, old, old, "--json").stdout)["cases"]
        present = [k for k in CASE_KEY if k in header]
        name = next(c["case"] for c in cases if tuple(str(c[k]) for k in present) == target)
        return old, new, name, reps

    def test_a_uniform_slowdown_is_drift_not_a_regression(self):
        # Twice as slow everywhere: from two runs alone that is the machine as much as the code.
        old, new, _, reps = self.scaled_pair(2)
        result = run(COMPARE, old, new)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"geometric mean of new/old over {len(reps)} cases: 2.000x, +100.0% "
                      "[+100.0%, +100.0%]", result.stdout)
        self.assertRegex(result.stdout, r"drift between the runs: \[\+0\.0%, \+100\.0%\]")
        self.assertNotRegex(result.stdout, r"(?m)(faster|slower)$")

    def test_a_case_slower_beyond_the_drift_exits_1_and_names_it(self):
        # Every case 5% slower (drift), one 3 times slower: that one alone is a regression.
        old, new, name, reps = self.scaled_pair(1.05, 3.0)
        result = run(COMPARE, old, new)
        self.assertEqual(result.returncode, 1, result.stderr)
        slower = [ln for ln in result.stdout.splitlines() if re.search(r"\bslower$", ln)]
        self.assertEqual(len(slower), 1, result.stdout)
        self.assertTrue(slower[0].startswith(name), slower[0])
        most = max(reps.values())
        self.assertIn(f" {most}/{most} ", slower[0])
        self.assertRegex(result.stdout, r"(?m)^1 case\(s\) slower beyond the drift \(exit status 1\): " + re.escape(name))

    def test_min_change_lets_a_smaller_slowdown_pass(self):
        old, new, _, _ = self.scaled_pair(1.05, 3.0)
        result = run(COMPARE, old, new, "--min-change", "250")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"(?m)slower$")  # still reported, not a regression
        self.assertNotIn("exit status 1", result.stdout)

    def test_a_speedup_beyond_the_drift_exits_0(self):
        old, new, name, _ = self.scaled_pair(1.0, 0.3)
        result = run(COMPARE, old, new)
        self.assertEqual(result.returncode, 0, result.stderr)
        faster = [ln for ln in result.stdout.splitlines() if re.search(r"\bfaster$", ln)]
        self.assertEqual(len(faster), 1, result.stdout)
        self.assertTrue(faster[0].startswith(name), faster[0])

    def test_json_holds_every_case_the_drift_and_the_exit_status(self):
        old, new, name, reps = self.scaled_pair(1.05, 3.0)
        result = run(COMPARE, old, new, "--json")
        self.assertEqual(result.returncode, 1, result.stderr)
        report = json.loads(result.stdout)
        self.assertEqual((report["mode"], report["exit_status"]), ("two runs", 1))
        self.assertEqual(len(report["cases"]), len(reps))
        low, high = report["drift"]["band_pct"]
        self.assertLessEqual(low, 0.0)
        self.assertGreaterEqual(high, 5.0)
        self.assertLess(high, 100.0)
        regressions = [c for c in report["cases"] if c["regression"]]
        self.assertEqual([c["case"] for c in regressions], [name])
        self.assertEqual(regressions[0]["verdict"], "slower")
        self.assertLess(regressions[0]["p_holm"], 0.05)
        few = any(n < MIN_REPS for n in reps.values())
        self.assertEqual(len(report["warnings"]), 1 if few else 0)

    def test_flagged_repetitions_are_left_out(self):
        # The fixture with no repetition flagged, then one flagged `noisy` and one `slow_cpu`.
        header, rows = unflagged(*fixture_rows())
        write_csv(self.tmp / "clean.csv", header, rows)
        header, rows = set_column(header, rows, "noisy", ["1"] + ["0"] * (len(rows) - 1))
        header, rows = set_column(header, rows, "slow_cpu", ["0", "1"] + ["0"] * (len(rows) - 2))
        write_csv(self.tmp / "flagged.csv", header, rows)
        result = run(COMPARE, self.tmp / "clean.csv", self.tmp / "flagged.csv", "--json")
        self.assertEqual(json.loads(result.stdout)["flagged_reps"], 2)

    def test_fewer_than_9_repetitions_warn_that_p_cannot_get_small(self):
        result = run(COMPARE, FIXTURE, FIXTURE)
        self.assertEqual(result.returncode, 0, result.stderr)
        reps = case_reps(*fixture_rows())
        few = [n for n in reps.values() if n < MIN_REPS]
        self.assertTrue(few, "the fixture has no case with fewer than 9 repetitions")
        floor = smallest_p(min(few), min(few))
        consequence = ("no change can be significant at 0.05" if floor >= ALPHA else
                       "only the largest changes can be significant")
        self.assertIn(f"scripts/compare: warning: {len(few)} of {len(reps)} cases have fewer "
                      f"than 9 unflagged repetitions on a side (fewest {min(few)}/{min(few)}): p "
                      f"cannot get small there (at best {format_p(floor)}), so {consequence}; "
                      f"run more repetitions (--reps 9 or more)", result.stderr)
        # Keep only the fixture's cases with 9 repetitions: no warning.
        cases = json.loads(run(COMPARE, FIXTURE, FIXTURE, "--json").stdout)["cases"]
        header, rows = fixture_rows()
        present = [k for k in CASE_KEY if k in header]
        nine = {tuple(str(c[k]) for k in present) for c in cases if c["reps_old"] == 9}
        columns = case_columns(header)
        write_csv(self.tmp / "nine.csv", header,
                  [r for r in rows if tuple(r[i] for i in columns) in nine])
        result = run(COMPARE, self.tmp / "nine.csv", self.tmp / "nine.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(" 9/9 ", result.stdout)
        self.assertNotIn("warning", result.stderr)


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


class CompareTwoRunsPlantedTest(TempDirTest):
    """scripts/compare of two separate runs, on runs whose changes are known: 40 cases of 15
    repetitions with 2% noise; NEW drifted by 4% as a whole (the machine between two runs), and
    a 10% regression planted on 5 of the cases on top of it. The 5 are reported slower and
    nothing else is; the drift alone is not a regression."""

    CASES, REPS, PLANTED = 40, 15, (3, 11, 19, 27, 35)

    def runs(self, drift, regression):
        rng = np.random.default_rng(17)
        header = ["run_id", "preset", "scheduler", "workload", "threads", "rep", "scheduler_params",
                  "workload_params", "wall_ns"]
        old, new = [], []
        for case in range(self.CASES):
            base = 1e6 * (1 + case / 7)
            factor = drift * (regression if case in self.PLANTED else 1.0)
            for rep in range(self.REPS):
                ident = ["r", "", "steal-half", "loops", "2", str(rep), "", f"tasks={case + 1}"]
                old.append(ident + [str(int(base * rng.lognormal(0, 0.02)))])
                new.append(ident + [str(int(base * factor * rng.lognormal(0, 0.02)))])
        write_csv(self.tmp / "old.csv", header, old)
        write_csv(self.tmp / "new.csv", header, new)
        return json.loads(run(COMPARE, self.tmp / "old.csv", self.tmp / "new.csv", "--json").stdout)

    def test_a_10_percent_regression_on_a_subset_is_reported_beyond_the_drift(self):
        report = self.runs(drift=1.04, regression=1.10)
        slower = sorted(int(c["workload_params"].split("=")[1]) - 1 for c in report["cases"]
                        if c["verdict"] == "slower")
        self.assertEqual(slower, list(self.PLANTED))
        self.assertEqual(report["exit_status"], 1)
        for c in report["cases"]:
            if c["verdict"] == "slower":
                self.assertGreater(c["interval_pct"][0], 8.0, c)  # ~+14.4%: 10% on top of 4%

    def test_the_same_drift_of_every_case_is_not_a_regression(self):
        report = self.runs(drift=1.04, regression=1.0)
        self.assertEqual({c["verdict"] for c in report["cases"]}, {"within the drift"})
        self.assertEqual(report["exit_status"], 0)
        self.assertAlmostEqual(report["geomean"]["change_pct"], 4.0, delta=1.0)

    def test_runs_whose_every_repetition_was_flagged_judge_nothing_and_exit_3(self):
        # Not "no case in common" (bad input, 2): the cases are the same, the machine was busy.
        self.runs(drift=1.0, regression=1.0)
        for name in ("old.csv", "new.csv"):
            header, rows = read_csv(self.tmp / name)
            header, rows = set_column(header, rows, "noisy", ["1"] * len(rows))
            write_csv(self.tmp / name, header, rows)
        result = run(COMPARE, self.tmp / "old.csv", self.tmp / "new.csv")
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn(f"nothing was judged: none of the {self.CASES} cases could be", result.stderr)
        self.assertIn("not judged, every repetition of a side flagged (40)", result.stdout)

    def test_too_few_cases_to_see_the_drift_judge_nothing_and_exit_3(self):
        self.runs(drift=1.0, regression=1.0)
        for name in ("old.csv", "new.csv"):
            header, rows = read_csv(self.tmp / name)
            write_csv(self.tmp / name, header, [r for r in rows if r[7] in ("tasks=1", "tasks=2")])
        result = run(COMPARE, self.tmp / "old.csv", self.tmp / "new.csv")
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn("nothing was judged: none of the 2 cases could be (fewer than 5 cases", result.stderr)


class AbCompareTest(TempDirTest):
    """scripts/compare RUN.csv on an A/B run (schedlab run --against): each case's B / A
    against the run's A/A noise floor."""

    def ab_csv(self, b_factor, name="ab.csv"):
        """Two cases (fib at 1 and 2 threads), 12 blocks each, builds A, A2 and B: A2 within
        +-2% of A, B at b_factor (a dict by threads) times A with the same noise."""
        header, rows = unflagged(*fixture_rows())
        template = next(r for r in rows if r[header.index("scheduler")] == "steal-half")
        # Identification columns, before the parameters (as schedlab writes them), where the
        # fixture has not got them.
        for column in ("block_index", "build"):
            if column not in header:
                at = header.index("scheduler_params")
                header = header[:at] + [column] + header[at:]
                template = template[:at] + [""] + template[at:]
        cells = {c: header.index(c) for c in ("wall_ns", "rep", "threads", "build", "block_index")}
        out, noise = [], [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0]
        for threads in (1, 2):
            for rep in range(12):
                for build, factor in (("A", 1.0), ("A2", noise[(rep + 3) % 12]), ("B", b_factor[threads] * noise[rep])):
                    r = list(template)
                    r[cells["threads"]], r[cells["rep"]], r[cells["build"]] = str(threads), str(rep), build
                    r[cells["block_index"]] = "0"
                    r[cells["wall_ns"]] = str(int(1e6 * (1 + rep % 3 / 10) * factor))
                    out.append(r)
        write_csv(self.tmp / name, header, out)
        return self.tmp / name

    def test_a_build_against_itself_has_no_case_outside_the_noise_floor(self):
        result = run(COMPARE, self.ab_csv({1: 1.0, 2: 1.0}))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(len(re.findall(r"within the noise floor$", result.stdout, re.M)), 2, result.stdout)

    def test_a_slower_build_is_found_and_exits_1(self):
        result = run(COMPARE, self.ab_csv({1: 1.0, 2: 1.5}), "--json")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        report = json.loads(result.stdout)
        self.assertEqual(report["mode"], "A/B run")
        self.assertEqual([(c["threads"], c["verdict"]) for c in report["cases"]],
                         [(1, "within the noise floor"), (2, "slower")])
        self.assertLess(report["noise_floor"]["factor"], 1.03)

    def test_a_planted_10_percent_on_one_case_is_found_there_only(self):
        # B 10% slower at 2 threads only (the path a knob slowed), unchanged at 1 thread; the
        # builds' blocks spread by +-2% like the A/A control's.
        result = run(COMPARE, self.ab_csv({1: 1.0, 2: 1.10}), "--json")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        cases = json.loads(result.stdout)["cases"]
        self.assertEqual([(c["threads"], c["verdict"]) for c in cases],
                         [(1, "within the noise floor"), (2, "slower")])
        ratio, low, high = cases[1]["b_over_a"]
        self.assertAlmostEqual(ratio, 1.10, delta=0.02)
        self.assertGreater(low, 1.05)

    def test_one_csv_that_is_not_an_ab_run_is_refused(self):
        self.assert_user_error(run(COMPARE, FIXTURE), "scripts/compare", "not an A/B run")

    def flag_blocks(self, path, flagged_reps):
        """The A/B CSV with every row of the repetitions in `flagged_reps` flagged noisy."""
        header, rows = read_csv(path)
        header, rows = set_column(header, rows, "noisy",
                                  ["1" if int(r[header.index("rep")]) in flagged_reps else "0" for r in rows])
        write_csv(path, header, rows)
        return path

    def test_a_run_that_judged_nothing_exits_3_and_says_so(self):
        # Every block flagged: no case has 6 unflagged blocks. Not a pass, and not a regression.
        path = self.flag_blocks(self.ab_csv({1: 1.0, 2: 1.5}), set(range(12)))
        result = run(COMPARE, path)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn("nothing was judged: none of the 2 cases", result.stdout)
        self.assertIn("exit status 3, not a pass", result.stderr)
        self.assertEqual(json.loads(run(COMPARE, path, "--json").stdout)["exit_status"], 3)

    def test_advice_names_the_flags_when_the_run_had_repetitions_enough(self):
        # 12 repetitions, 7 flagged: "--reps 9 or more" would be wrong advice to such a run.
        path = self.flag_blocks(self.ab_csv({1: 1.0, 2: 1.0}), {0, 1, 2, 3, 4, 5, 6})
        result = run(COMPARE, path)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertNotIn("--reps", result.stderr)
        self.assertIn("7 of its 12 repetitions were flagged (noisy or slow_cpu) and left out", result.stderr)
        self.assertIn("--replace-flagged", result.stderr)


class PlotErrorTest(TempDirTest):
    def test_missing_columns(self):
        write_csv(self.tmp / "bad.csv", ["scheduler", "workload", "wall_ns"],
                  [["fair", "fib", "1"]])
        self.assert_user_error(run(PLOT, self.tmp / "bad.csv", "--out", self.tmp / "out"),
                               "scripts/plot", "missing required column(s) run_id")

    def test_empty_file(self):
        (self.tmp / "empty.csv").write_text("")
        self.assert_user_error(run(PLOT, self.tmp / "empty.csv", "--out", self.tmp / "out"),
                               "scripts/plot", "empty file")

    def test_header_only(self):
        header, _ = fixture_rows()
        write_csv(self.tmp / "header.csv", header, [])
        self.assert_user_error(run(PLOT, self.tmp / "header.csv", "--out", self.tmp / "out"),
                               "scripts/plot", "no rows")

    def test_a_column_named_twice(self):
        header, rows = fixture_rows()
        write_csv(self.tmp / "twice.csv", header + ["wall_ns"], [r + [r[header.index("wall_ns")]] for r in rows])
        self.assert_user_error(run(PLOT, self.tmp / "twice.csv", "--out", self.tmp / "out"),
                               "scripts/plot", "names column(s) wall_ns more than once")

    def test_row_with_wrong_cell_count(self):
        header, rows = fixture_rows()
        write_csv(self.tmp / "short.csv", header, [rows[0], rows[1][:5]])
        self.assert_user_error(run(PLOT, self.tmp / "short.csv", "--out", self.tmp / "out"),
                               "scripts/plot", "line 3 has 5 cells")

    def test_unreadable_file(self):
        self.assert_user_error(run(PLOT, self.tmp / "missing.csv", "--out", self.tmp / "out"),
                               "scripts/plot", "cannot read")

    def test_no_suitable_python_is_one_clear_line(self):
        env = {**os.environ, "SCHEDLAB_PYTHON": "/bin/false"}
        result = run(PLOT, FIXTURE, "--out", self.tmp / "out", env=env)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(),
                         "scripts/plot: needs python3 with matplotlib, pandas, scipy and "
                         "tabulate; install: apt-get install python3-matplotlib python3-pandas "
                         "python3-scipy python3-tabulate")


if __name__ == "__main__":
    unittest.main()
