"""Every preset, shrunk to a tiny size, run by the real binary and read by scripts/plot: each
claim part the preset exists for is judged (its verdict is not "not measured"), and so is its
negative control (the preset runs the control's configuration too), and its noise floor is
found. A preset whose rows its own claims cannot select (the locality preset once
pinned every case, and every part came out "not measured") fails here.

The presets are harness/presets.json with every size shrunk (shrink()) and 2 repetitions (none
replacing flagged ones), so the verdicts themselves mean nothing: this is about which rows reach
which part. For the same reason the flags a busy machine sets (`noisy`, `slow_cpu`) are cleared
before plotting: on a shared CI machine they would leave out whole configurations. Needs the
schedlab binary in $SCHEDLAB (tests/scripts/CMakeLists.txt passes it); skipped without it.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from schedlab_results import claims

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "harness" / "presets.json"
PLOT = ROOT / "scripts" / "plot"
SCHEDLAB = os.environ.get("SCHEDLAB", "")

# What each preset exists for: its claim parts, as (claim, part name); None for every part but
# those the machine may lack the counters for and the latency preset's (EXCEPT). The A/A noise
# floor is every preset's.
ALL = None
LATENCY_PARTS = {
    ("spinning-wait", "spinning off: a readied task waits longer, median (2 threads)"),
    ("spinning-wait", "spinning off: a readied task waits longer, p99 (2 threads)"),
    ("spinning-wait", "spinning off, the readied task in the queue (--runnext off): median (2 threads)"),
    ("preemption", "without preemption the longest wait is a whole run of the other (1 thread)"),
    ("preemption", "with preemption the longest wait stays within 3 time slices of 10 ms (1 thread)"),
    ("poller-latency", "without the poller the p99 request latency doubles (open loop, 1 thread)")}
# PAPI's L2 or the simulator: the quick and full presets have neither; and the parts judged on
# scheduling delays, which quick leaves unrecorded (--latency on costs ~140 ns a task: docs/latency.md).
EXCEPT = {("lifo", "cache misses")} | LATENCY_PARTS
PARTS = {
    "quick": ALL,
    "full": {("fair-idle", "fair idles more"), ("fair-idle", "steal-half faster"),
             ("central", "related tasks spread across cores"),
             ("lifo", "fewer live tasks"), ("lifo", "time (locality)"),
             ("steal", "efficiency near the best possible"), ("steal", "steals did it"),
             ("handoff", "faster with cold reads"),
             ("concurrency", "CPU-bound loops gain nothing on one core"),
             ("concurrency", "I/O-bound work gains on one core"),
             ("handoff", "a call that does not block costs nothing (against the elision, 1 thread)"),
             ("handoff", "a call that does not block costs nothing (against no hand-off)")},
    "locality": {("lifo", "fewer live tasks"), ("lifo", "time (locality)"), ("lifo", "cache misses")},
    "io": {("handoff", "faster with cold reads"),
           ("handoff", "a call that does not block costs nothing (against the elision, 1 thread)"),
           ("handoff", "a call that does not block costs nothing (against no hand-off)"),
           ("netpoll-threads", "the poller's waits hold no thread"),
           ("netpoll-threads", "--netpoll off: waits hold threads beyond the poller's bound"),
           ("netpoll-p", "faster than a thread per wait (1 thread)"),
           ("netpoll-p", "Go's own poller, against a thread per wait (1 thread)"),
           ("concurrency", "I/O-bound work gains on one core")},
    "latency": LATENCY_PARTS,
    "io-socket-st": set(),  # tzcnt's io_socket_st shape: no claim, but its A/A control's noise floor
    "granularity": set(),  # a task-size sweep: no claim, but its A/A control's noise floor
    "field": set(),  # the field's benchmarks, for the table beside the literature: no claim
    "field-large": set(),
}
# Parts that need Go (go-runtime rows), and the simulator (Valgrind), when the machine lacks them.
NEEDS_GO = {("switch", "Go's own goroutines: a round trip costs a fraction of os-threads' (1 thread)"),
            ("netpoll-p", "Go's own poller, against a thread per wait (1 thread)")}
NEEDS_SIM = {("lifo", "cache misses")}


def shrink(params, workload):
    """The run's parameters at a tiny size: fewer recursion levels, shorter loops, smaller arrays;
    the task counts stay (whether the root's queue overflows decides which parts a configuration
    may judge), and so do the task-length shapes (they decide a fair split's room)."""
    p = dict(params)
    if "n" in p and workload in ("fib-go", "fib"):
        p["n"] = 12 if workload == "fib-go" else 13
    if workload == "nqueens":
        p["n"] = 7
    if workload == "skynet":
        p["leaves"] = 1000
    if workload == "uts":
        p["tree"] = ["mini-T1", "mini-T3"] if isinstance(p.get("tree"), list) else "mini-T1"
    if workload == "netmix":
        p.update({"requests": 5, "iters": min(int(p.get("iters", 0)), 1000)})
    if workload in ("loops", "iomix"):
        iters = p.get("iters", 1000000)
        p["iters"] = [max(10, int(i) // 1000) for i in iters] if isinstance(iters, list) else max(10, int(iters) // 1000)
    if workload == "locality":
        p.update({"bytes": "256K", "leaf": "16K"})
    if workload == "matmul":
        p.update({"dim": 64, "block": 16})
    if workload == "pingpong":
        p["rounds"] = min(int(p.get("rounds", 10000)), 200)
        if "hog-iters" in p:
            p["hog-iters"] = min(int(p["hog-iters"]), 200000)
    if workload == "wakeup":
        p["rounds"] = min(int(p.get("rounds", 500)), 20)
    if workload == "lockmix":
        p.update({"ops": 20, "hold": 200, "between": 20})
    return p


def tiny_presets(path):
    presets = json.loads(PRESETS.read_text())
    for preset in presets.values():
        for r in preset["runs"]:
            r["params"] = shrink(r.get("params", {}), r["workload"])
    path.write_text(json.dumps(presets))
    return list(presets)


def quiet_copy(src, dst):
    """The CSV with its `noisy` and `slow_cpu` cells cleared, and its sidecar (and latency file)
    beside it."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    for name in ("noisy", "slow_cpu"):
        if name in rows[0]:
            i = rows[0].index(name)
            for r in rows[1:]:
                r[i] = "0"
    with open(dst, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    shutil.copy(str(src)[:-4] + ".meta.json", str(dst)[:-4] + ".meta.json")
    if os.path.exists(str(src)[:-4] + ".latency.jsonl"):
        shutil.copy(str(src)[:-4] + ".latency.jsonl", str(dst)[:-4] + ".latency.jsonl")


class EveryPresetRecordsItsTime(unittest.TestCase):
    """A preset's time lives in its "recorded" field alone (docs/presets.md shows it): a preset
    without one would send a reader back to guessing, or to prose that goes stale."""

    def test_every_preset_records_a_measured_time_or_says_it_is_an_estimate(self):
        for name, preset in json.loads(PRESETS.read_text()).items():
            with self.subTest(preset=name):
                recorded = preset.get("recorded")
                self.assertIsInstance(recorded, dict, f"{name}: no 'recorded' in {PRESETS}")
                if "estimate" in recorded:
                    self.assertNotIn("wall_s", recorded)
                else:
                    self.assertGreater(recorded.get("wall_s", 0), 0)
                    self.assertRegex(recorded.get("date", ""), r"^\d{4}-\d{2}-\d{2}$")
                    self.assertTrue(recorded.get("machine"))

    def test_no_description_states_a_run_time(self):
        # The time went from the descriptions into "recorded"; one creeping back would disagree
        # with it sooner or later.
        for name, preset in json.loads(PRESETS.read_text()).items():
            with self.subTest(preset=name):
                self.assertNotRegex(preset.get("description", ""),
                                    r"(?i)\b(about|~)\s*[0-9.-]+\s*(min|minutes|hours?)\b|\bhours on\b|an hour")


@unittest.skipUnless(SCHEDLAB and os.access(SCHEDLAB, os.X_OK), "no schedlab binary in $SCHEDLAB")
class EveryPresetJudgesWhatItExistsFor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="schedlab-presets-test-"))
        cls.names = tiny_presets(cls.tmp / "presets.json")
        counters = subprocess.run([SCHEDLAB, "counters"], capture_output=True, text=True).stdout
        cls.simulator = "Simulated cache counters" in counters and \
            "unavailable" not in counters.split("Simulated cache counters", 1)[1].splitlines()[1]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_presets_json_has_no_preset_this_test_does_not_know(self):
        self.assertEqual(sorted(self.names), sorted(PARTS))

    def test_schedlab_list_marks_the_example(self):
        # An example (docs/extending.md's random-push) is run by every test but by no preset or
        # claim; loading a preset refuses one (presets.cpp, tests/cli/cli_test.sh), and this
        # checks that the entry still says it is one.
        listing = subprocess.run([SCHEDLAB, "list"], capture_output=True, text=True, check=True).stdout
        examples = set(re.findall(r"^\s+(\S+): example\b", listing, re.M))
        self.assertIn("random-push", examples, "schedlab list no longer marks the example")

    def judge(self, preset):
        out = self.tmp / preset
        csv_path = self.tmp / f"{preset}.csv"
        run = subprocess.run([SCHEDLAB, "--presets-file", str(self.tmp / "presets.json"), "run", "--preset",
                              preset, "--reps", "2", "--warmup", "0", "--replace-flagged", "0",
                              "--out", str(csv_path)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        quiet_copy(csv_path, self.tmp / f"{preset}-quiet.csv")
        plot = subprocess.run([str(PLOT), str(self.tmp / f"{preset}-quiet.csv"), "--out", str(out)],
                              capture_output=True, text=True)
        self.assertEqual(plot.returncode, 0, plot.stderr[-2000:])
        with open(out / "claims.json") as f:
            table = json.load(f)
        with open(csv_path) as f:
            go = any(r["scheduler"] == "go-runtime" for r in csv.DictReader(f))
        return table, go

    def check(self, preset):
        table, go = self.judge(preset)
        self.assertTrue(table["noise_floor"]["measured"], f"{preset}: no noise floor")
        every = {(p.claim, p.name) for p in claims.load_criteria().parts}
        wanted = (every - EXCEPT) if PARTS[preset] is ALL else set(PARTS[preset])
        if not go:
            wanted -= NEEDS_GO
        if not self.simulator:
            wanted -= NEEDS_SIM
        verdicts = {(p["claim"], p["name"]): p["verdict"] for p in table["parts"]}
        unjudged = {part: (verdicts.get(part), next((p["left_out"] for p in table["parts"]
                                                     if (p["claim"], p["name"]) == part), None))
                    for part in wanted if verdicts.get(part) in (None, claims.NOT_MEASURED)}
        self.assertEqual(unjudged, {}, f"{preset}: parts it exists for came out not measured")
        controls = {(p["claim"], p["name"]): p["control"] for p in table["parts"]}
        uncontrolled = {part: controls.get(part) and (controls[part]["compared"], controls[part]["left_out"])
                        for part in wanted
                        if not controls.get(part) or controls[part]["verdict"] == claims.NOT_MEASURED}
        self.assertEqual(uncontrolled, {}, f"{preset}: controls of parts it exists for came out not measured")

    # One test per preset, test_NAME (dashes as underscores), made from PARTS below the class:
    # ctest runs each as its own entry (tests/scripts/CMakeLists.txt, names from presets.json),
    # and the first test above fails when presets.json and PARTS disagree.

for _preset in PARTS:
    setattr(EveryPresetJudgesWhatItExistsFor, "test_" + _preset.replace("-", "_"),
            lambda self, preset=_preset: self.check(preset))


if __name__ == "__main__":
    unittest.main()
