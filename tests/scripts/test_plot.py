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

from schedlab_results import claims

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


SUMMARY_HEADER = ["#", "Claim", "Part", "Verdict (of configurations)", "Effect [95% interval]"]
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
        for number, claim, part, verdict, effect in summary:
            self.assertRegex(verdict, r"^\*\*[^*]+\*\*( \(\d+ of \d+\))?$", part)
            self.assertRegex(verdict.strip("*").split(" (")[0].rstrip("*"), VERDICT, part)
            self.assertEqual(effect.startswith("n/a: "), verdict == "**not measured**", part)
        self.assertEqual([r[1] for r in summary if r[1]],
                         list(dict.fromkeys(p.claim for p in parts)))
        # The answer comes first: the summary and its forest plot, then the detailed rows.
        claims_text = section(self.report, "Claims")
        self.assertLess(claims_text.index("| Verdict (of"), claims_text.index("](claims.png)"))
        self.assertLess(claims_text.index("](claims.png)"),
                        claims_text.index("\n### Per configuration"))
        self.assertLess(claims_text.index("\n### Per configuration"),
                        claims_text.index("| Compared"))

    def test_summary_shows_the_configuration_that_decided_each_verdict(self):
        # In the fixture, steal-half beats fair clearly on heavy-tail loops, not on one-long:
        # one-long decides "not held", with its own effect.
        summary, detail = claims_tables(self.report)
        line = next(r for r in summary if r[2] == "steal-half faster")
        self.assertEqual(line[3], "**not held** (1 of 2)")
        rows = part_rows(detail, "steal-half faster")
        one_long = next(r for r in rows if r[3].startswith("loops skew=one-long"))
        self.assertEqual(line[4], one_long[4])
        self.assertEqual(one_long[6], "**not held**")  # bold: the configuration shown above
        self.assertEqual([r[6] for r in rows if r is not one_long], ["inconclusive"])

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
        l2 = header.index("papi_l2_dcm")
        if not any(r[l2] for r in fixture):  # recorded where no cache counter could be read
            cache = next(r for r in summary if r[2] == "cache misses")
            self.assertEqual(cache[3:], ["**not measured**", "n/a: no matching rows"])

    def test_each_configuration_of_a_part_shows_its_own_result(self):
        rows = part_rows(claims_tables(self.report)[1], "steal-half faster")
        one_long = next(r for r in rows if r[3].startswith("loops skew=one-long, 2 threads (9 blocks"))
        self.assertRegex(one_long[4], r"^[\d.]+× \[[\d.]+, [\d.]+\]$")
        self.assertEqual(one_long[6], "**not held**")
        self.assertTrue(any(r[3].startswith("loops skew=heavy-tail, 2 threads (9 blocks") for r in rows))

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

    def test_forest_has_a_panel_per_kind_of_quantity(self):
        # The idle-share difference, the efficiency level and the steal count each get their own
        # axis (the panel titles are text in the SVG); none shares an axis with another.
        svg = (self.out / "claims.svg").read_text()
        for title in ("idle share of processor time: a − b",
                      "efficiency / best possible: level of a", "tasks stolen per run: level of a",
                      "time ratio a ÷ b, effects &lt; 1.5× (log)",
                      "count ratio a ÷ b, effects ≥ 1.5× (log)"):
            self.assertEqual(svg.count(title), 1, title)
        self.assertIn("6 related tasks spread across cores", svg)  # numbered as the summary

    def test_unmeasured_counters_are_reported_with_the_metadata_reason(self):
        counters = section(self.report, "Counters")
        meta = json.loads(FIXTURE.with_suffix(".meta.json").read_text())
        for column, reason in meta["counters"]["unavailable"].items():
            self.assertIn(f"| `{column}` | not measured (empty in every row) | {reason} |",
                          counters)
        self.assertRegex(counters, r"`cpu_ns` \| measured \(\d+ of \d+ rows\)")

    def test_peers_figure_is_skipped_with_its_reason_for_a_sidecar_older_than_the_peers_list(self):
        # The fixture's sidecar predates `peers`: its tbb and go-runtime rows still plot
        # everywhere else, and the peers figure says why it is missing instead of guessing.
        meta = json.loads(FIXTURE.with_suffix(".meta.json").read_text())
        self.assertNotIn("peers", meta)
        self.assertFalse((self.out / "peers.png").exists())
        self.assertIn("Skipped: the runs' sidecars do not say which schedulers are peers",
                      section(self.report, "Figures"))

    def test_granularity_table_has_every_scheduler(self):
        figures = section(self.report, "Figures")
        for scheduler in ("central", "fair", "steal-half"):
            self.assertRegex(figures, rf"\| loops \| {scheduler} \| 2 \| serial \| "
                                      r"(not reached|(<=)?[\d.]+) \|")


class PlotPartialDataTest(TempDirTest):
    def test_cache_claim_uses_hardware_counters_when_measured(self):
        header, rows = fixture_rows()
        l2, workload = header.index("papi_l2_dcm"), header.index("workload")
        params = header.index("scheduler_params")
        locality = [r for r in rows if r[workload] == "locality"]
        for r in locality:
            r[l2] = "2000" if "local-order=lifo" in r[params] else "9000"
        csv_path = self.tmp / "cache.csv"
        write_csv(csv_path, header, locality)
        result = run(PLOT, csv_path, "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = (self.tmp / "out" / "report.md").read_text()
        summary, detail = claims_tables(report)
        cache = next(r for r in summary if r[2] == "cache misses")
        self.assertNotEqual(cache[3], "**not measured**")
        self.assertRegex(cache[4], r"^4.5× \[")  # 9000 / 2000
        self.assertEqual(part_rows(detail, "cache misses")[0][3], "locality, 2 threads (9 blocks)")
        self.assertEqual(next(r for r in summary if r[2] == "fair idles more")[3],
                         "**not measured**")

    def test_without_papi_the_simulator_judges_and_both_cache_sources_are_drawn(self):
        header, rows = fixture_rows()
        col = {name: header.index(name) for name in
               ("workload", "scheduler_params", "wall_ns", "threads", "rep")}
        locality = [r for r in rows if r[col["workload"]] == "locality"]
        header = header + ["simulated", "sim_ll_misses", "model_l2_misses"]
        native = [r + ["0", "", "5000"] for r in locality]
        # Simulated repetitions at 1 worker: FIFO misses 3x as often, and Valgrind's times are
        # a thousand times the native ones (they must appear in no median).
        simulated = []
        for r in locality:  # the fixture's locality rows ran at 2 threads
            fifo = "local-order=fifo" in r[col["scheduler_params"]]
            copy = list(r)
            copy[col["threads"]] = "1"
            copy[col["wall_ns"]] = str(int(float(r[col["wall_ns"]]) * 1000))
            simulated.append(copy + ["1", "9000000" if fifo else "3000000", ""])
        write_csv(self.tmp / "sim.csv", header, native + simulated)
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
        # the wall times of its loops sweep are rewritten to known efficiencies.
        header, rows = fixture_rows()
        col = {name: header.index(name) for name in
               ("preset", "workload", "workload_params", "scheduler", "wall_ns")}
        sweep = [r for r in rows
                 if r[col["preset"]] == "granularity" and r[col["workload"]] == "loops"]
        serial = {r[col["workload_params"]]: float(r[col["wall_ns"]])
                  for r in sweep if r[col["scheduler"]] == "serial"}
        finest_first = sorted(serial, key=lambda p: serial[p])
        wanted = dict(zip(finest_first, (0.2, 0.6, 0.9)))
        for r in sweep:
            if r[col["scheduler"]] != "serial":
                params = r[col["workload_params"]]
                r[col["wall_ns"]] = str(round(serial[params] / (2 * wanted[params])))
        write_csv(self.tmp / "metg.csv", header, sweep)
        result = run(PLOT, self.tmp / "metg.csv", "--out", self.tmp / "out")
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = section((self.tmp / "out" / "report.md").read_text(), "Figures")
        self.assertRegex(figures, r"\| loops \| steal-half \| 2 \| serial \| [\d.]+ \|")

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


class CompareTest(TempDirTest):
    def test_fixture_against_itself_shows_no_change(self):
        result = run(COMPARE, FIXTURE, FIXTURE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no significant change", result.stdout)
        self.assertNotRegex(result.stdout, r"\b(faster|slower)$")
        self.assertNotIn("only in", result.stdout)

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
        wall = header.index("wall_ns")
        native = [r + ["0"] for r in rows]
        simulated = [r[:wall] + [str(int(float(r[wall]) * 1000))] + r[wall + 1:] + ["1"] for r in rows]
        write_csv(self.tmp / "old.csv", header + ["simulated"], native)
        write_csv(self.tmp / "new.csv", header + ["simulated"], native + simulated)
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


    def scaled_fixture(self, factor):
        """The fixture with every wall_ns multiplied by factor, written to the temp dir."""
        header, rows = fixture_rows()
        wall = header.index("wall_ns")
        for r in rows:
            r[wall] = str(int(float(r[wall]) * factor))
        path = self.tmp / f"scaled-{factor}.csv"
        write_csv(path, header, rows)
        return path

    def test_a_significant_slowdown_exits_1_and_names_the_cases(self):
        # Twice as slow everywhere: the 9/9 cases that spread less than 2x separate completely (p 4e-4,
        # Holm x50 < 0.05); 3/3 cases cannot reach p < 0.05 and stay "no significant change".
        result = run(COMPARE, FIXTURE, self.scaled_fixture(2))
        self.assertEqual(result.returncode, 1, result.stderr)
        slower = [ln for ln in result.stdout.splitlines() if re.search(r"\bslower$", ln)]
        self.assertTrue(slower, result.stdout)
        for line in slower:
            self.assertIn(" 9/9 ", line)
        self.assertRegex(result.stdout, r"(?m)^\d+ significant regression\(s\) \(exit status 1\)")
        self.assertIn("geometric mean of new/old over 50 cases: 2.000x, +100.0% [+100.0%, +100.0%]",
                      result.stdout)

    def test_min_change_lets_a_smaller_slowdown_pass(self):
        result = run(COMPARE, FIXTURE, self.scaled_fixture(2), "--min-change", "150")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"(?m)slower$")  # still reported, not a regression
        self.assertNotIn("regression", result.stdout)

    def test_a_speedup_exits_0(self):
        result = run(COMPARE, FIXTURE, self.scaled_fixture(0.5))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"(?m)faster$")
        self.assertIn("0.500x, -50.0%", result.stdout)

    def test_json_holds_every_case_the_geometric_mean_and_the_exit_status(self):
        result = run(COMPARE, FIXTURE, self.scaled_fixture(2), "--json")
        self.assertEqual(result.returncode, 1, result.stderr)
        report = json.loads(result.stdout)
        self.assertEqual(report["exit_status"], 1)
        self.assertEqual(len(report["cases"]), 50)
        self.assertAlmostEqual(report["geomean"]["ratio"], 2.0)
        self.assertEqual(report["geomean"]["interval_pct"], [100.0, 100.0])
        regressions = [c for c in report["cases"] if c["regression"]]
        self.assertTrue(regressions)
        for case in regressions:
            self.assertEqual((case["reps_old"], case["reps_new"], case["verdict"]), (9, 9, "slower"))
            self.assertEqual(case["new_median"], 2 * case["old_median"])
            self.assertLess(case["p_holm"], 0.05)
        self.assertEqual(len(report["warnings"]), 1)

    def test_fewer_than_9_repetitions_warn_that_p_cannot_get_small(self):
        result = run(COMPARE, FIXTURE, FIXTURE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("scripts/compare: warning: 37 of 50 cases have fewer than 9 repetitions on a "
                      "side (fewest 3/3): p cannot get small there (at best 0.100), so no change "
                      "can be significant at 0.05", result.stderr)
        # Keep only the fixture's cases with 9 repetitions: no warning.
        cases = json.loads(run(COMPARE, FIXTURE, FIXTURE, "--json").stdout)["cases"]
        keys = ["scheduler", "scheduler_params", "workload", "workload_params", "threads"]
        nine = {tuple(str(c[k]) for k in keys) for c in cases if c["reps_old"] == 9}
        header, rows = fixture_rows()
        columns = [header.index(k) for k in keys]
        write_csv(self.tmp / "nine.csv", header,
                  [r for r in rows if tuple(r[i] for i in columns) in nine])
        result = run(COMPARE, self.tmp / "nine.csv", self.tmp / "nine.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(" 9/9 ", result.stdout)
        self.assertNotIn("warning", result.stderr)


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
