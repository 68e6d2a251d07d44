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

    def test_claims_table_has_every_part_and_a_row_per_configuration(self):
        rows = table_rows(section(self.report, "Claims"))
        parts = claims.load_criteria().parts
        self.assertEqual([r[1] for r in rows if r[1]], [p.name for p in parts])
        for claim, part, part_verdict, compared, config, effect, p_value, verdict, left_out in rows:
            self.assertTrue(config and effect and p_value, rows)
            if part:
                self.assertRegex(part_verdict.strip("*"), VERDICT, part)
                self.assertTrue(part_verdict.startswith("**"), part)
                self.assertTrue(compared and left_out, part)
            if config != "no matching rows":
                self.assertRegex(verdict, VERDICT, config)
        header, fixture = fixture_rows()
        l2 = header.index("papi_l2_dcm")
        if not any(r[l2] for r in fixture):  # recorded where no cache counter could be read
            self.assertEqual(part_rows(rows, "cache misses")[0][2], "**not measured**")

    def test_each_configuration_of_a_part_shows_its_own_result(self):
        # In the fixture, steal-half beats fair clearly on heavy-tail loops, not on one-long.
        rows = part_rows(table_rows(section(self.report, "Claims")), "steal-half faster")
        self.assertEqual(rows[0][2], "**not held**")
        one_long = next(r for r in rows if r[4].startswith("loops skew=one-long, 2 threads (9 blocks"))
        self.assertRegex(one_long[5], r"^[\d.]+× \[[\d.]+, [\d.]+\]$")
        self.assertEqual(one_long[7], "not held")
        self.assertTrue(any(r[4].startswith("loops skew=heavy-tail, 2 threads (9 blocks") for r in rows))

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
        rows = table_rows(section(report, "Claims"))
        cache = part_rows(rows, "cache misses")
        self.assertNotEqual(cache[0][2], "**not measured**")
        self.assertEqual(cache[0][4], "locality, 2 threads (9 blocks)")
        self.assertRegex(cache[0][5], r"^4.5× \[")  # 9000 / 2000
        self.assertEqual(part_rows(rows, "fair idles more")[0][2], "**not measured**")

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
        cache = part_rows(table_rows(section(report, "Claims")), "cache misses")
        self.assertEqual(cache[0][2], "**held (simulated L2, 1 worker)**")
        self.assertRegex(cache[0][4], r"^locality, 1 thread \(\d+ blocks\)$")
        self.assertRegex(cache[0][5], r"^3× \[")
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
        self.assertEqual(len(table_rows(section(report, "Claims"))),
                         len(claims.load_criteria().parts))


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


    def scaled_fixture(self, factor, case_factor=None):
        """The fixture with every wall_ns multiplied by factor, and the first case with 9
        repetitions (steal-half fib n=18 at 2 threads) by case_factor, written to the temp
        dir; returns (path, that case's name as scripts/compare prints it)."""
        header, rows = fixture_rows()
        wall, scheduler, workload, threads = (header.index(c) for c in ("wall_ns", "scheduler", "workload", "threads"))
        params = header.index("workload_params")
        one = ("steal-half", "fib", "2")
        for r in rows:
            scale = factor
            if case_factor is not None and (r[scheduler], r[workload], r[threads]) == one:
                scale = case_factor
            r[wall] = str(int(float(r[wall]) * scale))
        path = self.tmp / f"scaled-{factor}-{case_factor}.csv"
        write_csv(path, header, rows)
        name = next(f"steal-half | fib {r[params]} | 2 threads" for r in rows
                    if (r[scheduler], r[workload], r[threads]) == one)
        return path, name

    def test_a_uniform_slowdown_is_drift_not_a_regression(self):
        # Twice as slow everywhere: from two runs alone that is the machine as much as the code.
        path, _ = self.scaled_fixture(2)
        result = run(COMPARE, FIXTURE, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("geometric mean of new/old over 50 cases: 2.000x, +100.0% [+100.0%, +100.0%]",
                      result.stdout)
        self.assertRegex(result.stdout, r"drift between the runs: \[\+0\.0%, \+100\.0%\]")
        self.assertNotRegex(result.stdout, r"(?m)(faster|slower)$")

    def test_a_case_slower_beyond_the_drift_exits_1_and_names_it(self):
        # Every case 5% slower (drift), one 3 times slower: that one alone is a regression.
        path, name = self.scaled_fixture(1.05, 3.0)
        result = run(COMPARE, FIXTURE, path)
        self.assertEqual(result.returncode, 1, result.stderr)
        slower = [ln for ln in result.stdout.splitlines() if re.search(r"\bslower$", ln)]
        self.assertEqual(len(slower), 1, result.stdout)
        self.assertTrue(slower[0].startswith(name), slower[0])
        self.assertIn(" 9/9 ", slower[0])
        self.assertRegex(result.stdout, r"(?m)^1 case\(s\) slower beyond the drift \(exit status 1\): " + re.escape(name))

    def test_min_change_lets_a_smaller_slowdown_pass(self):
        path, _ = self.scaled_fixture(1.05, 3.0)
        result = run(COMPARE, FIXTURE, path, "--min-change", "250")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"(?m)slower$")  # still reported, not a regression
        self.assertNotIn("exit status 1", result.stdout)

    def test_a_speedup_beyond_the_drift_exits_0(self):
        path, name = self.scaled_fixture(1.0, 0.3)
        result = run(COMPARE, FIXTURE, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        faster = [ln for ln in result.stdout.splitlines() if re.search(r"\bfaster$", ln)]
        self.assertEqual(len(faster), 1, result.stdout)
        self.assertTrue(faster[0].startswith(name), faster[0])

    def test_json_holds_every_case_the_drift_and_the_exit_status(self):
        path, name = self.scaled_fixture(1.05, 3.0)
        result = run(COMPARE, FIXTURE, path, "--json")
        self.assertEqual(result.returncode, 1, result.stderr)
        report = json.loads(result.stdout)
        self.assertEqual((report["mode"], report["exit_status"]), ("two runs", 1))
        self.assertEqual(len(report["cases"]), 50)
        low, high = report["drift"]["band_pct"]
        self.assertLessEqual(low, 0.0)
        self.assertGreaterEqual(high, 5.0)
        self.assertLess(high, 100.0)
        regressions = [c for c in report["cases"] if c["regression"]]
        self.assertEqual([c["case"] for c in regressions], [name])
        self.assertEqual(regressions[0]["verdict"], "slower")
        self.assertLess(regressions[0]["p_holm"], 0.05)
        self.assertEqual(len(report["warnings"]), 1)

    def test_flagged_repetitions_are_left_out(self):
        header, rows = fixture_rows()
        noisy = header.index("noisy") if "noisy" in header else None
        if noisy is None:
            header = header + ["noisy"]
            rows = [r + ["0"] for r in rows]
            noisy = len(header) - 1
        rows[0][noisy] = "1"
        write_csv(self.tmp / "flagged.csv", header, rows)
        result = run(COMPARE, FIXTURE, self.tmp / "flagged.csv", "--json")
        self.assertEqual(json.loads(result.stdout)["flagged_reps"], 1)

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


class AbCompareTest(TempDirTest):
    """scripts/compare RUN.csv on an A/B run (schedlab run --against): each case's B / A
    against the run's A/A noise floor."""

    def ab_csv(self, b_factor, name="ab.csv"):
        """Two cases (fib at 1 and 2 threads), 12 blocks each, builds A, A2 and B: A2 within
        +-2% of A, B at b_factor (a dict by threads) times A with the same noise."""
        header, rows = fixture_rows()
        template = next(r for r in rows if r[header.index("scheduler")] == "steal-half")
        # Identification columns, before the parameters (as schedlab writes them).
        at = header.index("scheduler_params")
        header = header[:at] + ["block_index", "build"] + header[at:]
        template = template[:at] + ["", ""] + template[at:]
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

    def test_one_csv_that_is_not_an_ab_run_is_refused(self):
        self.assert_user_error(run(COMPARE, FIXTURE), "scripts/compare", "not an A/B run")


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
