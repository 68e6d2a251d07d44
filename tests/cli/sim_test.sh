#!/usr/bin/env bash
# `--counters sim` end to end, under the real Valgrind: the simulator counts exactly the measured
# region (an empty workload counts close to nothing), and on locality at 1 worker FIFO order
# misses at least twice as often per task as LIFO, with the sweep and with the chase, and the
# per-core model's count agrees with the simulator's. Small arrays and a small simulated cache keep
# it to a few seconds per run. Exit 77 (skipped) where the simulator cannot run: no valgrind, or
# a sanitizer build.
# Usage: sim_test.sh PATH/TO/schedlab
set -uo pipefail
SCHEDLAB="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/cli_lib.sh"

if "$SCHEDLAB" counters | grep -A1 "^Simulated cache counters" | grep "unavailable" >/dev/null; then
  echo "skipped: $("$SCHEDLAB" counters | grep -A1 "^Simulated cache counters" | tail -1)"
  exit 77
fi

# column CSV NAME: the values of column NAME, one per row, in order.
column() {
  awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }' "$1"
}
# value CSV SCHEDULER NAME: NAME of the first row of SCHEDULER.
value() {
  paste -d, <(column "$1" scheduler) <(column "$1" "$3") | awk -F, -v s="$2" '$1 == s { print $2; exit }'
}

# 1. The region is exactly the workload: a root that does nothing counts close to nothing.
# (Measured: 213 instructions under serial, about 6000 under the fiber schedulers, which start
# the root on a worker; a fib(18) tree, by comparison, is millions.)
"$SCHEDLAB" run --counters sim --scheduler serial,steal-half --workload fib-go --n 1 --threads 1 --reps 1 \
  --warmup 1 --out "$WORK/empty.csv" >/dev/null 2>"$WORK/empty.err" || fail "empty run failed: $(tail -1 "$WORK/empty.err")"
for s in serial steal-half; do
  ins="$(value "$WORK/empty.csv" "$s" sim_instructions)"
  ll="$(value "$WORK/empty.csv" "$s" sim_ll_misses)"
  [ -n "$ins" ] && [ "$ins" -lt 50000 ] || fail "$s, empty root: $ins simulated instructions, expected < 50000"
  [ -n "$ll" ] && [ "$ll" -lt 100 ] || fail "$s, empty root: $ll simulated LL misses, expected < 100"
  echo "ok: $s, empty root: $ins instructions, $ll LL misses"
done
[ "$(column "$WORK/empty.csv" simulated | sort -u)" = 1 ] || fail "simulated rows are not marked simulated=1"
grep -q '"simulator"' "$WORK/empty.meta.json" || fail "the sidecar has no simulator section"
grep -q '"LL"' "$WORK/empty.meta.json" || fail "the sidecar does not give the simulated geometry"

# 2. Order at 1 worker, with each access pattern. The array is 4 x the simulated LL (256 KiB
# against 64 KiB), leaves are LL / 32, one pass per node. Sweep, worked out by hand (as in
# cache_back_ends_test.cpp): every order pays the initialisation and the two levels above LL, 3
# arrays of misses; LIFO adds half an array, FIFO six (one per level below), so central /
# steal-half is 9 / 3.5 = 2.6. With the issue's first guess, leaves of LL / 8 and two passes per
# node, the common part is 5 arrays and the ratio 9 / 5.5 = 1.6 (measured 1.62): extra passes
# and levels above LL add the same misses under every order. Chase (--access chase): each pass
# walks its region's lines in a seeded random order, which the model replays from the
# footprint's seed; FIFO still misses every level (9 arrays), LIFO a little more than with the
# sweep, since a walk over a region larger than the cache finds only part of what its parent
# left (the model: 3.76 arrays, release build), so central / steal-half is about 2.4.
#
# The simulator sees the declared footprints (the model's count, checked against the count by
# hand in cache_back_ends_test.cpp) plus what the model leaves out: stacks, task objects,
# queues, and the recording itself. Measured in the release build, sweep: 14 (steal-half) and 21
# (central) more misses per task here, against 56 and 145 per task of footprint; the chase's
# walk is its footprint too.
order_at_one_worker() {
  local access="$1" csv="$WORK/$1.csv"
  "$SCHEDLAB" run --counters sim,model --sim-l1 8K,4,64 --sim-ll 64K,8,64 --scheduler central,steal-half \
    --workload locality --access "$access" --bytes 256K --leaf 2K --passes 1 --threads 1 --reps 1 --out "$csv" \
    >/dev/null 2>"$WORK/$access.err" || { fail "$access: locality run failed: $(tail -1 "$WORK/$access.err")"; return; }
  local central lifo tasks s sim model
  central="$(value "$csv" central sim_ll_misses)"
  lifo="$(value "$csv" steal-half sim_ll_misses)"
  tasks="$(value "$csv" central tasks)"
  [ "$tasks" = "$(value "$csv" steal-half tasks)" ] || fail "$access: the two runs executed different task counts"
  if [ -n "$central" ] && [ -n "$lifo" ] && [ "$lifo" -gt 0 ] && [ $((central * 10)) -ge $((lifo * 20)) ]; then
    echo "ok: $access: central (FIFO) $central vs steal-half (LIFO) $lifo simulated LL misses over $tasks tasks each"
  else
    fail "$access: central (FIFO) '$central' vs steal-half (LIFO) '$lifo' simulated LL misses: not at least twice"
  fi
  for s in central steal-half; do
    sim="$(value "$csv" "$s" sim_ll_misses)"
    model="$(value "$csv" "$s" model_l2_misses)"
    awk -v s="$sim" -v m="$model" -v t="$tasks" 'BEGIN { exit !(m > 0 && s >= 0.98 * m && s - m < 40 * t) }' \
      || fail "$access, $s: $sim simulated against $model modelled misses over $tasks tasks: not the footprints plus < 40 a task"
  done
  [ "$(column "$csv" sim_l1d_misses | grep -c .)" = 2 ] || fail "$access: sim_l1d_misses is empty"
}
order_at_one_worker sweep
order_at_one_worker chase

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "sim_test: all checks passed"
