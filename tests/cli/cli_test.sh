#!/usr/bin/env bash
# Behaviour of the schedlab command line, end to end: every bad input listed in docs/reliability.md gets
# one line naming the problem and the fix and a non-zero exit, nothing is overwritten, and the
# outputs (CSV, sidecar, schedtrace lines, trace file, interrupted runs) have the promised shape.
# Usage: cli_test.sh PATH/TO/schedlab
set -uo pipefail
SCHEDLAB="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/cli_lib.sh"

run_small=(run --scheduler steal-half --workload fib --n 10 --reps 1 --warmup 0)
expect_refused "unknown scheduler" 2 "unknown scheduler 'nope': choose one of" -- run --scheduler nope --workload fib --out "$WORK/a.csv"
expect_refused "unknown workload" 2 "unknown workload 'nope': choose one of" -- run --scheduler fair --workload nope --out "$WORK/a.csv"
expect_refused "unknown preset" 2 "unknown preset 'nope'.*choose one of" -- run --preset nope --out "$WORK/a.csv"
expect_refused "unknown counter" 2 "unknown counter 'nope'" -- "${run_small[@]}" --counters nope --out "$WORK/a.csv"
expect_refused "threads 0" 2 "threads 0: out of range; use 1..1024" -- run --scheduler fair --workload fib --threads 0 --out "$WORK/a.csv"
expect_refused "threads 1025" 2 "threads 1025: out of range; use 1..1024" -- run --scheduler fair --workload fib --threads 1025 --out "$WORK/a.csv"
expect_refused "fib n 51" 2 "n 51: out of range for workload fib; use 0..50" -- run --scheduler fair --workload fib --n 51 --out "$WORK/a.csv"
# One name, two meanings: the refusal names the workload whose range it is.
expect_refused "nqueens n 21" 2 "n 21: out of range for workload nqueens; use 1..20" -- run --scheduler fair --workload fib,nqueens --n 21 --out "$WORK/a.csv"
expect_refused "negative size" 2 "file-size -1: out of range" -- run --scheduler fair --workload iomix --file-size -1 --out "$WORK/a.csv"
expect_refused "parameter of no selected item" 2 "does not apply" -- run --scheduler fair --workload fib --capacity 8 --out "$WORK/a.csv"
# Workloads whose tasks wait on each other, refused before the run by a backend that cannot park a task.
if "$SCHEDLAB" list | grep '^  openmp' >/dev/null; then
  expect_refused "openmp pingpong" 2 "scheduler openmp cannot run workload pingpong: openmp cannot park a task.*choose another scheduler \\(.*steal-half" -- run --scheduler steal-half,openmp --workload pingpong --out "$WORK/a.csv"
  expect_refused "openmp lockmix" 2 "scheduler openmp cannot run workload lockmix: openmp cannot park a task" -- run --scheduler openmp --workload lockmix --out "$WORK/a.csv"
fi
expect_refused "serial sieve" 2 "scheduler serial cannot run workload sieve: serial runs each task to its end inside spawn" -- run --scheduler serial --workload sieve --out "$WORK/a.csv"
expect_refused "elision channel" 2 "scheduler elision cannot run workload channel: the sequential elision runs every task as a plain call" -- run --scheduler elision --workload fib,channel --out "$WORK/a.csv"
expect_refused "pingpong no pairs" 2 "pairs 0: out of range for workload pingpong" -- run --scheduler steal-half --workload pingpong --pairs 0 --out "$WORK/a.csv"
expect_refused "preempt typo" 2 "preempt" -- run --scheduler steal-half --workload pingpong --preempt on --out "$WORK/a.csv"
expect_refused "missing output directory" 2 "output directory $WORK/nodir does not exist" -- "${run_small[@]}" --out "$WORK/nodir/a.csv"
touch "$WORK/exists.csv"
expect_refused "existing output file" 2 "already exists; choose another --out" -- "${run_small[@]}" --out "$WORK/exists.csv"
[ -s "$WORK/exists.csv" ] && fail "existing output file was written to"
chmod 0555 "$WORK" 2>/dev/null
if [ "$(id -u)" != 0 ]; then
  expect_refused "unwritable output" 2 "cannot" -- "${run_small[@]}" --out "$WORK/ro.csv"
fi
chmod 0755 "$WORK"
expect_refused "missing I/O directory" 2 "io-dir $WORK/nodir is not a directory" -- run --scheduler fair --workload iomix --io-dir "$WORK/nodir" --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "runs": [{"workload": "fib", "parms": {"n": 5}}]}}' >"$WORK/presets.json"
expect_refused "preset file typo" 2 "unknown key 'parms'" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "runs": [{"workload": "fib", "add_schedulers": ["serial", "steal-half"]}]}}' >"$WORK/presets.json"
expect_refused "preset adds a scheduler twice" 2 "add_schedulers: steal-half is already one of the run's schedulers" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "runs": [{"workload": "fib", "add_schedulers": ["random-push"]}]}}' >"$WORK/presets.json"
expect_refused "preset runs the example" 2 "random-push is the worked example of docs/extending.md, which no preset runs" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "params": {"pin": "on", "n": 7}, "runs": [{"workload": "fib"}, {"workload": "fib", "params": {"pin": "off"}}]}}' >"$WORK/presets.json"
plan="$("$SCHEDLAB" --presets-file "$WORK/presets.json" run --preset p --dry-run 2>&1)"
# The preset's params reach every run; a run's own replace the same key and keep the others
# (pin=off, the default, is left out of a case's name).
if [ "$(printf '%s\n' "$plan" | grep -c '^  steal-half pin=on fib(n=7 ')" = 1 ] &&
   [ "$(printf '%s\n' "$plan" | grep -c '^  steal-half fib(n=7 ')" = 1 ]; then
  echo "ok: a preset's params reach every run, a run's own replace them"
else
  fail "preset params: $plan"
fi
printf '{"p": {"schedulers": ["steal-half"], "params": ["pin"], "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
expect_refused "preset params not an object" 2 "preset 'p': 'params' must be an object" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
# A preset's "recorded" (its last measured wall time, the one home of a preset's time): a
# malformed one is refused by run and list alike; a good one reaches the preset table and the
# dry run, and an estimate is never shown as measured.
printf '{"p": {"schedulers": ["steal-half"], "recorded": {"wall_s": "9 min", "machine": "m", "date": "2026-11-28"}, "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
expect_refused "preset recorded wall_s not a number" 2 "preset 'p': recorded: needs 'wall_s', the measured wall time in whole seconds" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
expect_refused "list --markdown, recorded wall_s not a number" 2 "preset 'p': recorded: needs 'wall_s'" -- --presets-file "$WORK/presets.json" list --markdown presets
printf '{"p": {"schedulers": ["steal-half"], "recorded": {"wall_s": 60, "machine": "m", "date": "28.11.2026"}, "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
expect_refused "preset recorded date" 2 "recorded: date '28.11.2026' is not YYYY-MM-DD" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "recorded": {"wall_s": 60, "date": "2026-11-28"}, "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
expect_refused "preset recorded without machine" 2 "recorded: needs 'machine'" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "recorded": {"wall_s": 60, "machine": "m", "date": "2026-11-28", "cores": 2}, "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
expect_refused "preset recorded typo" 2 "recorded: unknown key 'cores'" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "recorded": {"wall_s": 60, "machine": "m", "date": "2026-11-28", "estimate": "1 min"}, "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
expect_refused "preset recorded measured and estimated" 2 "recorded: an estimate has no wall_s or date" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
expect_refused "list: unknown table" 2 "list --markdown nope: unknown table; choose schedulers, workloads or presets" -- list --markdown nope
printf '{"p": {"description": "d", "reps": 3, "threads": [1, "all"], "schedulers": ["steal-half"], "recorded": {"wall_s": 882, "machine": "a 2-vCPU VM", "date": "2026-11-28", "note": "n"}, "runs": [{"workload": "fib"}]},
 "q": {"description": "e", "schedulers": ["steal-half"], "recorded": {"estimate": "hours", "machine": "2 cores"}, "runs": [{"workload": "fib"}]}}' >"$WORK/presets.json"
table="$("$SCHEDLAB" --presets-file "$WORK/presets.json" list --markdown presets 2>&1)"
want='| preset | what it runs | threads | reps | last recorded wall time |
|---|---|---|---|---|
| `p` | d | 1, all | 3 | 14 min 42 s on a 2-vCPU VM (2026-11-28); n |
| `q` | e | 1 | default | not measured; the authors'"'"' estimate: hours (2 cores) |'
[ "$table" = "$want" ] && echo "ok: list --markdown presets shows the recorded times" || fail "list --markdown presets: got
$table
want
$want"
plan="$("$SCHEDLAB" --presets-file "$WORK/presets.json" run --preset p --dry-run 2>&1)"
printf '%s\n' "$plan" | grep -E '^estimated time: unknown .*; preset p says: d; its last recorded time: 14 min 42 s on a 2-vCPU VM \(2026-11-28\); n$' >/dev/null &&
  echo "ok: the dry run quotes the recorded time as recorded" || fail "dry run and recorded: $plan"
if "$SCHEDLAB" counters | grep "unavailable" >/dev/null; then
  expect_refused "required counters unavailable" 2 "unavailable on this machine.*drop --require-counters" -- "${run_small[@]}" --require-counters --out "$WORK/a.csv"
fi
# The simulated and modelled back ends: a bad geometry, a geometry for nothing, a preset run's
# counters, and a simulator that is not there.
expect_refused "bad --sim-ll" 2 "sim-ll 1000,3,64: .*use SIZE,ASSOC,LINE" -- "${run_small[@]}" --counters model --sim-ll 1000,3,64 --out "$WORK/a.csv"
expect_refused "--sim-ll without sim or model" 2 "sim-ll applies to simulated or modelled cases" -- "${run_small[@]}" --sim-ll 1M,8,64 --out "$WORK/a.csv"
printf '{"p": {"schedulers": ["steal-half"], "runs": [{"workload": "fib", "counters": "cache"}]}}' >"$WORK/presets.json"
expect_refused "preset run counters" 2 "counters: 'cache' cannot be set per run" -- --presets-file "$WORK/presets.json" run --preset p --out "$WORK/a.csv"
SCHEDLAB_VALGRIND="$WORK/no-valgrind" expect_refused "sim required but missing" 2 "counter sim is unavailable on this machine \\(.*\\); drop --require-counters" -- "${run_small[@]}" --counters sim --require-counters --out "$WORK/a.csv"
err="$(SCHEDLAB_VALGRIND="$WORK/no-valgrind" "$SCHEDLAB" "${run_small[@]}" --counters sim --out "$WORK/a.csv" 2>&1 >/dev/null)"
rc=$?
if [ "$rc" = 2 ] && printf '%s' "$err" | grep -q "skipping simulated rows" && printf '%s' "$err" | grep -q "nothing to run"; then
  echo "ok: sim without valgrind: skipped, nothing to run"
else
  fail "sim without valgrind: exit $rc: $err"
fi
[ -e "$WORK/a.csv" ] && fail "a refused request created its CSV"

# A good run: CSV header and sidecar.
"$SCHEDLAB" run --scheduler fair,steal-half --workload fib --n 12 --threads 1,2 --reps 2 --warmup 0 \
  --out "$WORK/good.csv" --schedtrace 1 --trace "$WORK/trace.json" 2>"$WORK/stderr" >/dev/null || fail "good run failed"
[ "$(wc -l <"$WORK/good.csv")" = 9 ] || fail "good run: expected header + 8 rows"
head -1 "$WORK/good.csv" | grep -q '^run_id,preset,scheduler,workload,threads,rep,block_index,build,scheduler_params,workload_params,' || fail "CSV header"
$PY - "$WORK" <<'PYEOF' || fail "outputs of the good run"
import csv, json, re, sys
work = sys.argv[1]
rows = list(csv.DictReader(open(work + "/good.csv")))
for r in rows:
    assert r["wall_ns"] and float(r["wall_ns"]) > 0
    assert r["tasks_spawned"] == r["tasks_executed"], "spawned != executed"
    if r["scheduler"] == "fair":
        assert r["steals"] == "0", "fair never steals"
    assert int(r["steals"]) <= int(r["steal_attempts"]), "a steal without an attempt"
    assert int(r["tasks_stolen"]) >= int(r["steals"]), "a steal moves at least one task"
    assert r["papi_l2_dcm"] == "" or int(r["papi_l2_dcm"]) >= 0
meta = json.load(open(work + "/good.meta.json"))
assert meta["status"] == "complete" and meta["rows"] == 8
assert "go-runtime" in meta["peers"] and "steal-half" not in meta["peers"], meta["peers"]
for col in meta["counters"]["unavailable"]:
    assert all(r[col] == "" for r in rows), col + " unavailable but written"
line = re.compile(r"^SCHED \d+ms: (gomaxprocs=\d+ idleprocs=\d+ threads=\d+ spinningthreads=\d+ runqueue=\d+ \[(\d+( \d+)*)?\]|\S+ does not expose its queues)$")
sched = [l for l in open(work + "/stderr") if l.startswith("SCHED")]
assert sched, "no schedtrace line"
assert all(line.match(l.rstrip("\n")) for l in sched), [l for l in sched if not line.match(l.rstrip())][:3]
# Every SCHED line follows a header naming its case, one of the four run.
cases = {f"{s} fib(n=12 cutoff=0) threads={t}" for s in ("fair", "steal-half") for t in (1, 2)}
traced = [l.rstrip("\n") for l in open(work + "/stderr") if l.startswith(("SCHED", "schedtrace case: "))]
assert traced[0].startswith("schedtrace case: "), traced[:2]
headers = {l[len("schedtrace case: "):] for l in traced if l.startswith("schedtrace case: ")}
assert headers <= cases, headers - cases
trace = json.load(open(work + "/trace.json"))
names = {(e["pid"], e["args"]["name"]) for e in trace["traceEvents"] if e["ph"] == "M"}
assert len({p for p, _ in names}) == 4, names  # one process per case
assert any(n == "worker 1" for _, n in names)
assert any(e["name"] == "task" and e["ph"] == "X" for e in trace["traceEvents"])
# Times are from the first traced run's start: never negative, never centuries (a slice that
# began before its run used to wrap around).
spans = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in trace["traceEvents"] if e["ph"] != "M"]
assert all(0 <= begin <= end < 600e6 for begin, end in spans), [s for s in spans if not 0 <= s[0] <= s[1] < 600e6][:3]
PYEOF

# Interleaving: repetition i of every configuration of a part before repetition i+1 of any, each
# configuration's cases back to back; the speed probe's columns in every row and its figures in
# the sidecar.
"$SCHEDLAB" run --scheduler fair,steal-half --workload fib --n 10,11,12 --threads 1,2 --reps 3 --warmup 0 \
  --pin on --out "$WORK/inter.csv" >/dev/null 2>&1 || fail "interleaved run failed"
$PY - "$WORK" <<'PYEOF' || fail "interleaved run: order or probe"
import csv, json, sys
work = sys.argv[1]
rows = list(csv.DictReader(open(work + "/inter.csv")))
order = [(int(r["rep"]), int(r["block_index"])) for r in rows]
reps = [rep for rep, _ in order]
assert reps == sorted(reps), f"a repetition began before the one before it ended: {reps}"
assert {b for _, b in order} == {0, 1, 2}, order
# within a repetition, one block's rows are contiguous
for rep in range(3):
    blocks = [b for r, b in order if r == rep]
    runs = [b for i, b in enumerate(blocks) if i == 0 or blocks[i - 1] != b]
    assert len(runs) == 3, f"rep {rep}: blocks interleaved within a repetition: {blocks}"
for r in rows:
    assert r["slow_cpu"] in ("0", "1") and float(r["probe_change"]) >= 1 and float(r["probe_spread"]) >= 1, r
    # A pinned 1-thread row is judged on its one CPU: no spread between CPUs, nothing run at once.
    if r["threads"] == "1":
        assert float(r["probe_spread"]) == 1 and r["probe_together"] == "", r
    assert float(r["started_unix_s"]) > 1.6e9
meta = json.load(open(work + "/inter.meta.json"))
probe = meta["speed_probe"]
assert probe["block_repetitions"] == 9 and probe["cost_ns_per_block_repetition"] > 0, probe
assert meta["interleaving"]["split"] == [], meta["interleaving"]
assert meta["replacements"]["max_per_block"] == 0 and meta["replacements"]["blocks"] == {}, meta["replacements"]
assert meta["replacements"]["waits"]["rounds"] == 0, meta["replacements"]
PYEOF
# Replacements: with a busy loop per CPU competing (other processes' CPU time flags a row
# `noisy`), each block earns one extra repetition per flagged one, up to --replace-flagged, within
# the run's budget: the replacements and the waits for a steady machine before them take at most
# a share of the time the planned repetitions took (the budget holds whatever the machine does;
# what it cannot replace is named in `unreplaced`). Each repetition of a block lasts ~0.05 s, long
# enough for /proc/stat's 10 ms ticks to see the loop.
busy=()
for _ in $(seq "$(nproc)"); do
  ( while :; do :; done ) &
  busy+=($!)
done
"$SCHEDLAB" run --scheduler steal-half --workload loops --tasks 4 --iters 12500000,12500001 --reps 8 --warmup 0 \
  --replace-flagged 2 --out "$WORK/replace.csv" >/dev/null 2>&1 || fail "replacement run failed"
kill "${busy[@]}"
wait "${busy[@]}" 2>/dev/null
$PY - "$WORK" <<'PYEOF' || fail "replacement run: extra repetitions within the budget"
import csv, json, sys
work = sys.argv[1]
rows = list(csv.DictReader(open(work + "/replace.csv")))
meta = json.load(open(work + "/replace.meta.json"))["replacements"]
assert meta["max_per_block"] == 2 and 0 < meta["budget_share"] < 1, meta
blocks = {r["block_index"] for r in rows}
assert len(blocks) == 2, blocks
(group,) = meta["groups"]
# The budget holds: one steady-window and probe of overshoot at most.
assert group["used_s"] <= group["budget_s"] + 0.5, group
assert abs(group["budget_s"] - meta["budget_share"] * group["planned_s"]) < 1e-6, group
flagged_any = 0
for b in blocks:
    mine = [r for r in rows if r["block_index"] == b]
    reps = sorted(int(r["rep"]) for r in mine)
    extra = len(reps) - 8
    assert reps == list(range(8 + extra)), f"block {b}: repetitions {reps}"
    flagged = sum(r["noisy"] == "1" or r["slow_cpu"] == "1" for r in mine)
    flagged_any += flagged
    assert 0 <= extra <= 2 and (extra == 0 or flagged > 0), (b, extra, flagged)
    assert meta["blocks"].get(b, 0) == extra, (b, extra, meta["blocks"])
    # Every flagged repetition was replaced, or is named as left unreplaced.
    assert meta["unreplaced"].get(b, 0) == max(0, flagged - extra), (b, flagged, extra, meta["unreplaced"])
    if not group["spent"] and extra < 2:
        assert flagged == extra, f"block {b}: budget left, {flagged} flagged, {extra} replaced"
assert flagged_any > 0, "a busy loop on every CPU flagged no row"
# The machine stayed busy: every round ran after the longest wait it was allowed.
waits = meta["waits"]
assert waits["rounds"] >= 1 and waits["still_unsteady"] == waits["rounds"], waits
PYEOF
# A part whose configurations would hold more than 256 worker threads together is split into
# groups that fit, and the sidecar says so.
"$SCHEDLAB" run --scheduler steal-half --workload fib --n 8,9 --threads 150 --reps 2 --warmup 0 \
  --out "$WORK/split.csv" >/dev/null 2>&1 || fail "split run failed"
$PY - "$WORK" <<'PYEOF' || fail "split run: sidecar"
import json, sys
split = json.load(open(sys.argv[1] + "/split.meta.json"))["interleaving"]["split"]
assert split == [{"blocks": [[0], [1]], "why": "their schedulers would hold more than 256 worker threads together"}], split
PYEOF

# The summary table compares every case with the fastest peer at its thread count.
peer=$("$SCHEDLAB" list | grep -oE '^  (openmp|tbb|boost-fiber):' | head -1 | tr -d ' :')
"$SCHEDLAB" run --scheduler "steal-half${peer:+,$peer}" --workload fib --n 10 --reps 1 --warmup 0 \
  --out "$WORK/peer.csv" >"$WORK/peer.out" 2>/dev/null || fail "peer run failed"
grep -q 'vs best peer' "$WORK/peer.out" || fail "summary table has no 'vs best peer' column"
if [ -n "$peer" ]; then
  grep -qE "^fib\(.*steal-half .* [0-9.]+ \($peer\)( +[a-z,]+)?$" "$WORK/peer.out" || fail "steal-half row not compared with $peer"
fi

# SIGINT: completed rows kept, no partial line, sidecar says interrupted, exit 130.
"$SCHEDLAB" run --scheduler steal-half --workload loops --iters 200000 --reps 1000 --warmup 0 --out "$WORK/int.csv" >/dev/null 2>&1 &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] || fail "interrupted run exit $rc, expected 130"
$PY - "$WORK" <<'PYEOF' || fail "interrupted run outputs"
import csv, json, sys
work = sys.argv[1]
text = open(work + "/int.csv").read()
assert text.endswith("\n"), "partial last line"
rows = list(csv.DictReader(open(work + "/int.csv")))
assert 0 < len(rows) < 1000, len(rows)
assert json.load(open(work + "/int.meta.json"))["status"] == "interrupted"
PYEOF

if [ "$failures" != 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all CLI checks passed"
