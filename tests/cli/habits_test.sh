#!/usr/bin/env bash
# The habits users bring from Google Benchmark, hyperfine and the usual command lines (issue 15):
# schedlab_gbench's CSV output whatever benchmark comes first, --version, a mistyped command
# named, --filter, --dry-run, defaults in --help, the run summary's comparisons.
# Usage: habits_test.sh PATH/TO/schedlab PATH/TO/schedlab_gbench
set -uo pipefail
SCHEDLAB="$(realpath "$1")"
GBENCH="$(realpath "$2")"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/cli_lib.sh"
# ok_if_none_since N NAME: "ok: NAME" when no check failed since the failure count was N.
ok_if_none_since() { [ "$failures" = "$1" ] && echo "ok: $2"; }

# schedlab_gbench --benchmark_out_format=csv with a first benchmark (tbb) that reports fewer
# counters than the next (os-threads): it used to abort (the library's "All counters must be
# present in each run"). Every row whole, tbb's unmeasured counters empty, never 0; times in us.
if "$SCHEDLAB" list | grep '^  tbb:' >/dev/null; then
  "$GBENCH" --benchmark_filter='^sched:(tbb|os-threads)/work:fib/threads:1/' --benchmark_min_time=0.01 \
    --schedlab_param=n=12 --benchmark_out="$WORK/g.csv" --benchmark_out_format=csv >"$WORK/g.out" 2>&1
  rc=$?
  if [ "$rc" != 0 ]; then
    fail "gbench csv, tbb first: exit $rc: $(tail -2 "$WORK/g.out")"
  else
    $PY - "$WORK/g.csv" <<'PYEOF' && echo "ok: gbench csv, tbb first" || fail "gbench csv, tbb first: $(cat "$WORK/g.csv")"
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("name,"))
rows = list(csv.DictReader(lines[start:]))
assert [r["name"].split("/")[0] for r in rows] == ["sched:tbb", "sched:os-threads"], [r["name"] for r in rows]
tbb, os_threads = rows
for r in rows:
    assert r["time_unit"] == "us", r["time_unit"]
    assert float(r["tasks"]) == 233, r["tasks"]  # fib(12): 232 spawned + the root
# A counter the backend does not measure is an empty cell, never 0.
assert tbb["global_pops"] == "" and tbb["steals"] == "", tbb
assert os_threads["global_pops"] != "", os_threads
PYEOF
  fi
else
  skip "gbench csv, tbb first: this build has no tbb"
fi

# --version: the version, the commit, the build type and the compiler (CMake's id and version,
# e.g. GNU 12.2.0); exit 0.
out="$("$SCHEDLAB" --version)"
rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -Eq '^schedlab [0-9]+\.[0-9]+\.[0-9]+$' &&
   printf '%s\n' "$out" | grep -Eq '^commit ([0-9a-f]{40}|unknown)( \(dirty tree\))?$' &&
   printf '%s\n' "$out" | grep -Eq '^build (Release|Debug|RelWithDebInfo|MinSizeRel), [A-Za-z]+ [0-9]+(\.[0-9]+)*, '; then
  echo "ok: --version"
else
  fail "--version: exit $rc: $out"
fi

# A mistyped command is named, with the command meant; one far from every command is not guessed.
expect_refused "typo of run" 2 "unknown command 'runn': did you mean 'run'\\? choose one of list, counters, columns, run;" -- runn --preset quick
expect_refused "no near command" 2 "unknown command 'benchmark': choose one of" -- benchmark

# --help shows every option's default (the values RunRequest holds).
before=$failures
help="$("$SCHEDLAB" run --help)"
for option in '--reps UINT=5 ' '--warmup UINT=1 ' '--threads TEXT=1 ' '--counters TEXT=default ' \
              '--trace-max-events UINT.*=1000000$' 'naming the case \(default: off\)$' '--n TEXT.*\(default: fib-go 27, fib 30, nqueens 12\)$' \
              '--cold TEXT.*\(default: off\)$'; do
  printf '%s\n' "$help" | grep -Eq -- "$option" || fail "--help lacks $option"
done
ok_if_none_since "$before" "--help defaults"

# --dry-run / --list: the cases after --filter, no time made up, nothing written or created.
before=$failures
mkdir "$WORK/cwd"
(cd "$WORK/cwd" && "$SCHEDLAB" run --scheduler fair,steal-half --workload fib --n 10 --threads 1,2 --reps 3 \
   --filter 'threads=2' --dry-run >"$WORK/dry.out" 2>"$WORK/dry.err")
rc=$?
if [ "$rc" != 0 ]; then fail "dry run: exit $rc: $(cat "$WORK/dry.err")"; fi
[ -z "$(ls -A "$WORK/cwd")" ] || fail "dry run created $(ls -A "$WORK/cwd")"
grep -Eq '^  fair fib\(n=10 cutoff=0\) threads=2 +tasks/run 89$' "$WORK/dry.out" || fail "dry run: fair's line: $(cat "$WORK/dry.out")"
grep -Eq '^  steal-half fib\(n=10 cutoff=0\) threads=2 +tasks/run 89$' "$WORK/dry.out" || fail "dry run: steal-half's line"
[ "$(grep -c 'threads=1' "$WORK/dry.out")" = 0 ] || fail "dry run: --filter let threads=1 through"
grep -q '^2 cases x 3 repetitions = 6 measured runs' "$WORK/dry.out" || fail "dry run: the count line: $(cat "$WORK/dry.out")"
grep -q '^estimated time: unknown' "$WORK/dry.out" || fail "dry run: made up a time"
"$SCHEDLAB" run --scheduler fair --workload fib --list --out "$WORK/list.csv" >/dev/null 2>&1 || fail "--list: exit $?"
[ -e "$WORK/list.csv" ] && fail "--list wrote its --out"
ok_if_none_since "$before" "dry run"

# --filter with --preset selects within the preset; a filter matching nothing, or no regex, is refused.
"$SCHEDLAB" run --preset quick --filter '^steal-half pin=on spinning=off ' --dry-run >"$WORK/preset.out" 2>/dev/null ||
  fail "preset filter: exit $?"
cases="$(grep -c '^  ' "$WORK/preset.out")"
if [ "$cases" -gt 0 ] && [ "$(grep '^  ' "$WORK/preset.out" | grep -vc '^  steal-half pin=on spinning=off ')" = 0 ]; then
  echo "ok: preset filter: $cases cases"
else
  fail "preset filter: $(cat "$WORK/preset.out")"
fi
# A build without oneTBB (the TSan build): presets skip it with a note, a request for it names why.
if ! "$SCHEDLAB" list | grep '^  tbb:' >/dev/null; then
  grep -q 'skipping tbb: this build has no oneTBB' <("$SCHEDLAB" run --preset quick --dry-run 2>&1) ||
    fail "a preset naming tbb in a build without it: no note"
  expect_refused "tbb in a build without it" 2 "scheduler 'tbb' is not available: this build has no oneTBB" -- \
    run --scheduler tbb --workload fib --out "$WORK/t.csv"
fi
expect_refused "filter matching nothing" 2 "--filter 'nope' matches none of the 2 cases; see their names with --dry-run" -- \
  run --scheduler fair,steal-half --workload fib --filter nope --out "$WORK/f.csv"
expect_refused "filter not a regex" 2 "--filter '\\(' is not a regular expression" -- \
  run --scheduler fair --workload fib --filter '(' --out "$WORK/f.csv"
[ -e "$WORK/f.csv" ] && fail "a refused filter created its CSV"

# A filtered run writes only the matching cases; the summary compares them with steal-half,
before=$failures
# paired by repetition, with an interval once there are 6 repetitions or more.
"$SCHEDLAB" run --scheduler fair,steal-half,central --workload fib --n 12 --threads 1,2 --reps 6 --warmup 0 \
  --filter 'threads=2' --out "$WORK/run.csv" >"$WORK/run.out" 2>/dev/null || fail "filtered run: exit $?"
$PY - "$WORK/run.csv" <<'PYEOF' || fail "filtered run: rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 18 and {r["threads"] for r in rows} == {"2"}, [(r["scheduler"], r["threads"]) for r in rows]
PYEOF
for pattern in '^fib\(n=12 cutoff=0\), 2 threads:$' \
               '^  (fair ran [0-9.]+× \[[0-9.]+, [0-9.]+\] faster than steal-half|steal-half ran [0-9.]+× \[[0-9.]+, [0-9.]+\] faster than fair)' \
               '^  (central ran .* faster than steal-half|steal-half ran .* faster than central)'; do
  grep -Eq -- "$pattern" "$WORK/run.out" || fail "summary lacks '$pattern': $(cat "$WORK/run.out")"
done
[ "$(grep -c 'faster than' "$WORK/run.out")" = 2 ] || fail "summary: expected 2 comparisons"
"$SCHEDLAB" run --scheduler fair,steal-half --workload fib --n 10 --reps 2 --warmup 0 --out "$WORK/two.csv" \
  >"$WORK/two.out" 2>/dev/null || fail "two reps: exit $?"
grep -q '^no intervals: 2 repetitions cannot give a 95% interval' "$WORK/two.out" || fail "two reps: no note on intervals"
grep -Eq 'ran [0-9.]+× faster than' "$WORK/two.out" || fail "two reps: no estimate without interval"
ok_if_none_since "$before" "summary comparisons"

if [ "$failures" != 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all habits checks passed"
