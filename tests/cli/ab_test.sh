#!/usr/bin/env bash
# Comparing builds without false alarms (issue 24), end to end with the real binary and
# scripts/compare:
#   1. two separate runs of the same build: scripts/compare exits 0 (it judges cases against the
#      drift between the runs, not against no change);
#   2. an A/B run of the build against itself (`--against` the same binary): no case outside the
#      run's A/A noise floor, exit 0;
#   3. an A/B run against a build slowed on purpose (the served child's test hook,
#      SCHEDLAB_SERVE_TEST_DELAY_NS_PER_TASK, through a wrapper script): the slowed cases are
#      found slower beyond the noise floor, exit 1;
#   4. a binary that does not serve A/B runs is refused before anything is written (exit 2).
# Small cases and a dozen repetitions: a few seconds each. The flags a busy machine sets
# (`noisy`, `slow_cpu`) are cleared in copies of the A/B CSVs before judging them: this test is
# about the A/B machinery, and on a shared CI machine most blocks would otherwise be left out and
# nothing judged. Exit 77 (skipped) without a python3 that scripts/compare can use.
# Usage: ab_test.sh PATH/TO/schedlab
set -uo pipefail
SCHEDLAB="$1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! PY="$("$ROOT/scripts/python" --which 2>/dev/null)"; then
  echo "skipped: no python3 with matplotlib, pandas and scipy (see scripts/python)"
  exit 77
fi

CASES=(--scheduler steal-half,central --workload fib,loops --n 18 --tasks 100 --iters 50000 --threads 1,2 --reps 12)

# quiet CSV OUT: CSV with its noisy and slow_cpu cells set to 0, and its sidecar copied beside.
quiet() {
  "$PY" - "$1" "$2" <<'PYEOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
header = rows[0]
for name in ("noisy", "slow_cpu"):
    if name in header:
        i = header.index(name)
        for r in rows[1:]:
            r[i] = "0"
csv.writer(open(sys.argv[2], "w", newline="")).writerows(rows)
PYEOF
  cp "${1%.csv}.meta.json" "${2%.csv}.meta.json"
}

# 1. Two runs of one build.
for run in 1 2; do
  "$SCHEDLAB" run "${CASES[@]}" --out "$WORK/same-$run.csv" >/dev/null 2>"$WORK/same-$run.err" \
    || fail "run $run failed: $(tail -1 "$WORK/same-$run.err")"
done
"$ROOT/scripts/compare" "$WORK/same-1.csv" "$WORK/same-2.csv" >"$WORK/same.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q "cannot separate the machine's drift" "$WORK/same.out"; then
  echo "ok: two runs of one build: exit 0 ($(grep '^drift between' "$WORK/same.out" | cut -c1-60)...)"
else
  fail "two runs of one build: exit $rc: $(tail -5 "$WORK/same.out")"
fi

# 2. A/B of the build against itself.
"$SCHEDLAB" run "${CASES[@]}" --against "$SCHEDLAB" --out "$WORK/self.csv" >"$WORK/self.sum" 2>"$WORK/self.err" \
  || fail "A/B run against itself failed: $(tail -1 "$WORK/self.err")"
builds="$("$PY" -c "import csv,sys; print(' '.join(sorted({r['build'] for r in csv.DictReader(open(sys.argv[1]))})))" "$WORK/self.csv")"
[ "$builds" = "A A2 B" ] || fail "A/B rows name builds '$builds', expected 'A A2 B'"
grep -q '"ab"' "$WORK/self.meta.json" || fail "the A/B run's sidecar has no ab section"
grep -q "build=B" "$WORK/self.sum" || fail "the summary names no build B case"
quiet "$WORK/self.csv" "$WORK/self-quiet.csv"
"$ROOT/scripts/compare" "$WORK/self-quiet.csv" >"$WORK/self.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && ! grep -Eq '\]\s+(slower|faster)$' "$WORK/self.out" && grep -q "^noise floor: within" "$WORK/self.out"; then
  echo "ok: A/B against itself: no case outside the noise floor ($(grep '^noise floor' "$WORK/self.out" | cut -c1-50)...)"
else
  fail "A/B against itself: exit $rc: $(cat "$WORK/self.out")"
fi

# 3. A/B against a build slowed on purpose: 5 µs more per task (fib(18) runs 4181 tasks).
printf '#!/bin/sh\nSCHEDLAB_SERVE_TEST_DELAY_NS_PER_TASK=5000 exec "%s" "$@"\n' "$SCHEDLAB" >"$WORK/slowed"
chmod +x "$WORK/slowed"
"$SCHEDLAB" run "${CASES[@]}" --against "$WORK/slowed" --out "$WORK/slowed.csv" >/dev/null 2>"$WORK/slowed.err" \
  || fail "A/B run against the slowed build failed: $(tail -1 "$WORK/slowed.err")"
quiet "$WORK/slowed.csv" "$WORK/slowed-quiet.csv"
"$ROOT/scripts/compare" "$WORK/slowed-quiet.csv" >"$WORK/slowed.out" 2>&1
rc=$?
found="$(grep -cE "^[a-z-]+ \| fib .*slower$" "$WORK/slowed.out")"
if [ "$rc" = 1 ] && [ "$found" = 4 ]; then
  echo "ok: A/B against the slowed build: exit 1, all 4 fib cases slower beyond the noise floor"
else
  fail "A/B against the slowed build: exit $rc, $found of 4 fib cases found slower: $(cat "$WORK/slowed.out")"
fi

# 4. A binary that does not serve.
err="$("$SCHEDLAB" run --scheduler steal-half --workload fib --n 10 --against /bin/true --out "$WORK/none.csv" 2>&1 >/dev/null)"
rc=$?
if [ "$rc" = 2 ] && [ ! -e "$WORK/none.csv" ] && printf '%s' "$err" | grep -q "does not serve A/B runs"; then
  echo "ok: a binary that does not serve: $err"
else
  fail "a binary that does not serve: exit $rc: $err"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "ab_test: all checks passed"
