#!/usr/bin/env bash
# Results that survive faults (issue 13): resource exhaustion, full disks, signals, and the bad
# inputs that once slipped through. Each check carries the ID of its row in docs/reliability.md's
# "Reliability" table, which lists every fault and bad input the command-line tests try and what
# the user sees. Checks that need root (a tmpfs mount, another user's limits) or an
# uninstrumented binary (`ulimit -v`, the stack-overflow handler) say why they skip.
# Usage: reliability_test.sh PATH/TO/schedlab
set -uo pipefail
SCHEDLAB="$(realpath "$1")"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="$(mktemp -d)"
MOUNTS=()
cleanup() {
  for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
source "$(dirname "$0")/cli_lib.sh"
cd "$WORK" || exit 1  # a default --out would land in ./results: here, and checked below

# mount_tmpfs DIR OPTIONS: a small tmpfs at DIR; false where mounting is not allowed.
mount_tmpfs() {
  mkdir -p "$1"
  [ "$(id -u)" = 0 ] && mount -t tmpfs -o "$2" tmpfs "$1" 2>/dev/null || return 1
  MOUNTS+=("$1")
}
# limited 'ulimit ...' ARGS...: schedlab ARGS under a shell resource limit.
limited() {
  local limit="$1"
  shift
  bash -c "$limit && exec \"\$0\" \"\$@\"" "$SCHEDLAB" "$@"
}
# A run that stops mid-tree leaks the tasks it could not finish, by design (runtime.cpp):
# LeakSanitizer must not turn that into another exit status.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
fib=(--workload fib --warmup 0)
one=(--reps 1)

# ---- R1: a worker thread that cannot be created -----------------------------------------------
if sanitized; then
  skip "R1, R2, R10: a sanitizer build cannot start under ulimit -v"
else
  expect_failed "R1 thread limit" "steal-half fib.*threads=200: (cannot start worker thread [0-9]+ of 200: .*EAGAIN|worker thread [0-9]+ of 200 cannot get (its first fiber stack|memory to start)).*use fewer --threads" \
    R1.csv -- limited "ulimit -v 1000000" run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --threads 200 --out R1.csv
  # R1c: the peers' own threads. Boost.Fiber's are ours to start; libgomp calls exit() when it
  # cannot create one; a oneTBB thread's escaped exception is reported the same way (not forced here:
  # TBB starts its workers lazily, and at 200 threads it mostly runs with fewer).
  for peer in boost-fiber openmp; do
    if "$SCHEDLAB" list | grep "^  $peer:" >/dev/null; then
      expect_failed "R1c $peer thread limit" "$peer fib.*threads=200.*use fewer --threads" \
        "R1c-$peer.csv" -- limited "ulimit -v 1000000" run --scheduler "$peer" "${fib[@]}" "${one[@]}" --n 5 --threads 200 --out "R1c-$peer.csv"
    else
      skip "R1c $peer: not in this build"
    fi
  done
  # R2: a fiber stack that cannot be mapped, from a worker thread; the rows of the part before it
  # stay (two parts of a preset run one after the other; a part's own configurations are
  # interleaved, so within one the failing case may come first). The first part's block holds
  # central and the elision every preset adds: two rows; the failing part's elision may have run
  # before central in its block, and keeps its row too.
  printf '{"r2": {"schedulers": ["central"], "threads": [1], "reps": 1, "warmup": 0, "runs": [%s, %s]}}' \
    '{"workload": "fib", "params": {"n": 10}}' '{"workload": "fib", "params": {"n": 25}}' >R2-presets.json
  expect_failed "R2 stack mapping" "central fib\(n=25.*cannot map .*stack.*live tasks" \
    R2.csv -- limited "ulimit -v 300000" --presets-file R2-presets.json run --preset r2 --out R2.csv
  r2_rows="$(rows_whole R2.csv)"
  { [ "$r2_rows" -ge 2 ] && [ "$(grep -c '^[^,]*,[^,]*,central,fib,' R2.csv)" = 1 ]; } ||
    fail "R2: the first part's rows were lost ($r2_rows rows)"
  # R10: a sweep of 200 thread counts (20,100 worker threads if every scheduler lived at once)
  # keeps a bounded set of schedulers alive.
  err="$(limited "ulimit -v 6000000" run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 \
    --threads "$(seq -s, 1 200)" --out R10.csv 2>&1 >/dev/null)" || fail "R10 long sweep under ulimit -v: $err"
  if [ "$(rows_whole R10.csv 2>/dev/null)" = 200 ]; then
    echo "ok: R10 --threads 1..200 under ulimit -v 6000000"
  else
    fail "R10: $(rows_whole R10.csv 2>&1) rows, expected 200: $err"
  fi
fi
# R1b: three schedulers that fit a thread limit one at a time (RLIMIT_NPROC binds non-root only).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 0755 "$WORK"
  mkdir -m 0777 "$WORK/nobody"
  if setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'ulimit -u 400 && exec "$0" "$@"' "$SCHEDLAB" \
      run --scheduler fair,central,steal-half "${fib[@]}" "${one[@]}" --n 5 --threads 150 --out "$WORK/nobody/R1b.csv" \
      >/dev/null 2>"$WORK/R1b.err" && [ "$(rows_whole "$WORK/nobody/R1b.csv")" = 3 ]; then
    echo "ok: R1b three 150-thread schedulers under ulimit -u 400"
  else
    fail "R1b: $(cat "$WORK/R1b.err")"
  fi
else
  skip "R1b: needs root and setpriv to run as another user under ulimit -u"
fi

# ---- R3: a full disk ----------------------------------------------------------------------------
# 256 KiB: room for the sidecar (about 50 KB, most of it the column schema) with the blocks it
# reserves for its last rewrite (metadata.cpp, kRewriteSlack), and for rows until the disk is full.
if mount_tmpfs "$WORK/full" size=256k; then
  expect_failed "R3 disk full mid-run" "cannot write a row to $WORK/full/R3.csv: .*ENOSPC" \
    "$WORK/full/R3.csv" -- "$SCHEDLAB" run --scheduler steal-half "${fib[@]}" --n 5 --reps 2000 --out "$WORK/full/R3.csv"
  ls "$WORK/full" | grep -q 'tmp' && fail "R3: stray files: $(ls "$WORK/full")"
  rm -f "$WORK/full/"*
  head -c 1M /dev/zero >"$WORK/full/filler" 2>/dev/null  # fills it
  expect_refused "R3 disk full at start" 2 "$WORK/full/R3b.csv: .*ENOSPC" -- \
    run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out "$WORK/full/R3b.csv"
  [ "$(ls "$WORK/full")" = filler ] || fail "R3: files left by a refused run: $(ls "$WORK/full")"
  # R6b: the trace file is probed at start too.
  expect_refused "R6 trace on a full disk" 2 "trace file $WORK/full/t.json: .*ENOSPC" -- \
    run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R6b.csv --trace "$WORK/full/t.json"
  [ -e R6b.csv ] && fail "R6: a refused run created its CSV"
  rm -f "$WORK/full/filler"
  "$SCHEDLAB" run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out "$WORK/full/R3b.csv" >/dev/null 2>&1 ||
    fail "R3: the rerun after freeing space was refused"
else
  skip "R3 (tmpfs), R6b: mounting a 256 KiB tmpfs is not allowed here"
fi
# R3c: a file-size limit (EFBIG): the same roll-back, anywhere.
expect_failed "R3c file-size limit" "cannot write a row to R3c.csv: .*EFBIG" R3c.csv -- \
  limited "ulimit -f 200" run --scheduler steal-half "${fib[@]}" --n 5 --reps 2000 --out R3c.csv
ls | grep -q 'tmp' && fail "R3c: stray files: $(ls)"

# ---- R4, R6, R8: outputs that would destroy results --------------------------------------------
expect_refused "R4 trace is the CSV" 2 "--trace R4.csv is the results file" -- \
  run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R4.csv --trace R4.csv
expect_refused "R4 trace is the sidecar" 2 "--trace R4.meta.json is the results file's sidecar" -- \
  run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R4.csv --trace R4.meta.json
touch R4t.json
expect_refused "R4 trace exists" 2 "R4t.json already exists" -- \
  run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R4.csv --trace R4t.json
expect_refused "R6 trace unwritable" 2 "cannot create trace file /proc/R6.json: " -- \
  run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R6.csv --trace /proc/R6.json
echo '{"precious": true}' >R8.meta.json
expect_refused "R8 sidecar exists (--out R8)" 2 "R8.meta.json already exists" -- \
  run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R8
expect_refused "R8 sidecar exists (--out R8.csv)" 2 "R8.meta.json already exists" -- \
  run --scheduler steal-half "${fib[@]}" "${one[@]}" --n 5 --out R8.csv
[ "$(cat R8.meta.json)" = '{"precious": true}' ] || fail "R8: the existing sidecar was replaced"
for f in R4.csv R4.meta.json R6.csv R8 R8.csv; do [ -e "$f" ] && fail "R4-R8: a refused run created $f"; done

# ---- R7, R9, R12: inputs refused before anything is written -------------------------------------
small=(run --scheduler steal-half --workload loops --iters 10 --tasks 4 --reps 1 --warmup 0 --out R7.csv)
expect_refused "R7 --n ''" 2 "^schedlab: error: --n: empty value" -- run --scheduler fair "${fib[@]}" "${one[@]}" --n '' --out R7.csv
expect_refused "R7 --tasks ''" 2 "--tasks: empty value" -- run --scheduler fair --workload loops --tasks '' --out R7.csv
expect_refused "R7 --stack-size ''" 2 "--stack-size: empty value" -- "${small[@]}" --stack-size ''
expect_refused "R7 --skew ''" 2 "--skew: empty value" -- run --scheduler fair --workload loops --skew '' --out R7.csv
expect_refused "R7 --io-dir ''" 2 "--io-dir: empty value" -- run --scheduler fair --workload iomix --io-dir '' --out R7.csv
expect_refused "R7 --trace ''" 2 "--trace: empty value" -- "${small[@]}" --trace ''
expect_refused "R7 --out ''" 2 "--out: empty value" -- run --scheduler fair --workload loops --out ''
expect_refused "R7 --threads 1,,2" 2 "--threads 1,,2: an empty item" -- "${small[@]}" --threads 1,,2
expect_refused "R7 --threads 1," 2 "--threads 1,: an empty item" -- "${small[@]}" --threads 1,
expect_refused "R7 --scheduler fair,,central" 2 "--scheduler fair,,central: an empty item" -- \
  run --scheduler fair,,central --workload loops --out R7.csv
expect_refused "R7 --n 5,,6" 2 "--n 5,,6: an empty item" -- run --scheduler fair "${fib[@]}" "${one[@]}" --n 5,,6 --out R7.csv
expect_refused "R9 --capacity 100" 2 "--capacity: run queue capacity 100 is not a power of two" -- \
  "${small[@]}" --capacity 100
expect_refused "R9 --max-threads below --threads" 2 "--max-threads 1 is below --threads 2" -- \
  "${small[@]}" --threads 2 --max-threads 1
if mount_tmpfs "$WORK/ro" ro,size=16k; then
  expect_refused "R9 read-only --io-dir" 2 "--io-dir $WORK/ro is not writable" -- \
    run --scheduler fair --workload iomix --io-dir "$WORK/ro" --reps 1 --warmup 0 --out R9.csv
elif [ "$(id -u)" != 0 ]; then
  mkdir -m 0555 "$WORK/ro"
  expect_refused "R9 unwritable --io-dir" 2 "--io-dir $WORK/ro is not writable" -- \
    run --scheduler fair --workload iomix --io-dir "$WORK/ro" --reps 1 --warmup 0 --out R9.csv
else
  skip "R9 read-only --io-dir: root may write anywhere and cannot mount a read-only tmpfs here"
fi
# /proc passes access(W_OK) for root, yet no file can be created there; refused for anyone.
expect_refused "R9 --io-dir /proc" 2 "--io-dir /proc is not writable \(cannot create a directory in it: " -- \
  run --scheduler fair --workload iomix --io-dir /proc --reps 1 --warmup 0 --out R9.csv
expect_refused "R12 --presets-file DIR" 2 "presets file $WORK is a directory" -- \
  --presets-file "$WORK" run --preset quick --out R12.csv
expect_refused "R12 schedlab runn" 2 "unknown command 'runn'.*run" -- runn --scheduler fair
expect_refused "R13 --memory-budget 1K" 2 "--memory-budget 1K: out of range" -- "${small[@]}" --memory-budget 1K
# R15: an open-file limit too low for netmix's connections is refused before anything runs.
printf '#!/bin/sh\nulimit -n 64 || exit 99\nexec "%s" "$@"\n' "$SCHEDLAB" > "$WORK/low-nofile"
chmod +x "$WORK/low-nofile"
SCHEDLAB="$WORK/low-nofile" expect_refused "R15 ulimit -n 64, netmix --conns 100" 2 \
  "--conns 100 needs about [0-9]+ open files.*ulimit -n is 64.*raise it \(ulimit -n [0-9]+\) or use fewer --conns" -- \
  run --scheduler steal-half --workload netmix --conns 100 --reps 1 --warmup 0 --out R15.csv
for f in R7.csv R9.csv R9.meta.json R12.csv R15.csv results; do [ -e "$f" ] && fail "R7-R15: a refused run created $f"; done
err="$("$SCHEDLAB" run --scheduler serial "${fib[@]}" "${one[@]}" --n 5 --threads 2 --out R12s.csv 2>&1 >/dev/null)" ||
  fail "R12 serial --threads 2 failed: $err"
if [ "$(printf '%s\n' "$err" | grep -c 'serial runs on one thread')" = 1 ] &&
   [ "$($PY -c 'import csv,sys; print([r["threads"] for r in csv.DictReader(open(sys.argv[1]))])' R12s.csv)" = "['1']" ]; then
  echo "ok: R12 serial --threads 2 says once that it runs one thread"
else
  fail "R12 serial --threads 2: $err"
fi

# ---- R5, R11: signals ---------------------------------------------------------------------------
# gone PID: the process has exited (a zombie waiting for init counts as gone).
gone() { ! [ -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
# start_long NAME [ARGS...]: a run whose repetitions last seconds, in the background ($pid).
start_long() {
  local name="$1"
  shift
  "$SCHEDLAB" run "$@" --reps 50 --warmup 0 --out "$name.csv" >/dev/null 2>"$name.err" &
  pid=$!
  local waited=0
  while ! [ -s "$name.csv" ] && [ "$waited" -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done  # header written
  sleep 1
}
long_loops=(--scheduler steal-half --workload loops --iters 5000000)
start_long R5 "${long_loops[@]}"
kill -INT "$pid"; sleep 0.2; kill -INT "$pid"; wait "$pid"; rc=$?
if [ "$rc" = 130 ] && grep -q 'stopping now' R5.err && [ "$(sidecar_field R5.csv status)" = interrupted ] &&
   rows_whole R5.csv >/dev/null; then
  echo "ok: R5 a second SIGINT stops at once, sidecar interrupted"
else
  fail "R5 second SIGINT: exit $rc, sidecar $(sidecar_field R5.csv status): $(cat R5.err)"
fi
if "$SCHEDLAB" run --scheduler go-runtime --workload fib --n 5 --reps 1 --warmup 0 --out R5go0.csv 2>&1 |
   grep 'skipping go-runtime' >/dev/null; then
  skip "R5 go-runtime child: no Go toolchain"
else
  start_long R5go --scheduler go-runtime --workload loops --iters 20000000
  child="$(pgrep -P "$pid" | head -1)"
  kill -INT "$pid"; sleep 0.2; kill -INT "$pid"; wait "$pid"; rc=$?
  for _ in $(seq 50); do gone "$child" && break; sleep 0.1; done  # SIGKILL, then init reaps it
  if [ -n "$child" ] && gone "$child" && [ "$rc" = 130 ] &&
     [ "$(sidecar_field R5go.csv status)" = interrupted ]; then
    echo "ok: R5 a second SIGINT kills the go-runtime child"
  else
    fail "R5 go-runtime: exit $rc, child '$child' $(kill -0 "$child" 2>/dev/null && echo alive), sidecar $(sidecar_field R5go.csv status)"
    [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
  fi
fi
start_long R11 --scheduler steal-half --workload loops --iters 1000000
kill -HUP "$pid"; wait "$pid"; rc=$?
if [ "$rc" = 130 ] && [ "$(sidecar_field R11.csv status)" = interrupted ] && rows_whole R11.csv >/dev/null; then
  echo "ok: R11 SIGHUP stops like SIGTERM"
else
  fail "R11 SIGHUP: exit $rc, sidecar $(sidecar_field R11.csv status)"
fi
start_long R11s --scheduler steal-half --workload loops --iters 1000000
kill -SEGV "$pid"; wait "$pid"; rc=$?
if [ "$rc" = 139 ] && [ "$(sidecar_field R11s.csv status)" = failed ] &&
   sidecar_field R11s.csv error | grep -q 'SIGSEGV' && rows_whole R11s.csv >/dev/null; then
  echo "ok: R11 an external SIGSEGV ends the run as a crash, sidecar failed"
else
  fail "R11 SIGSEGV: exit $rc, sidecar $(sidecar_field R11s.csv status): $(sidecar_field R11s.csv error)"
fi

# ---- R13: the memory budget; R14: a stack overflow from the command line ------------------------
# in_build NAME: the scheduler is in this build (the TSan build leaves the peers out).
in_build() { "$SCHEDLAB" list | grep "^  $1:" >/dev/null; }
expect_failed "R13 memory budget" "central fib.*memory budget of 8 MiB.*[0-9]+ live tasks.*(--memory-budget|--order lifo)" \
  R13.csv -- "$SCHEDLAB" run --scheduler central "${fib[@]}" "${one[@]}" --n 22 --memory-budget 8M --out R13.csv
# R13b: Boost.Fiber's fibers are charged too (boost-fiber-shared holds every finished fiber's stack
# until its queue runs dry); skynet 10^4 holds ~90 MB of them.
# Not under ASan: the refusal is an exception thrown on a Boost.Fiber stack, and ASan, told of no
# switch to it (Debian's Boost.Context has no sanitizer annotations), gives up on clearing the
# frames each throw and landing pad unwinds, then reports its own frames laid over them.
for bf in boost-fiber boost-fiber-shared; do
  if sanitized; then
    skip "R13b $bf: an exception across a Boost.Fiber stack is beyond ASan without switch annotations"
  elif in_build "$bf"; then
    expect_failed "R13b $bf memory budget" "$bf skynet.*threads=1: memory budget of 8 MiB \(--memory-budget\) reached: [0-9]+ live fibers.*--memory-budget" \
      "R13b-$bf.csv" -- "$SCHEDLAB" run --scheduler "$bf" --workload skynet --leaves 10000 --warmup 0 "${one[@]}" --memory-budget 8M --out "R13b-$bf.csv"
  else
    skip "R13b $bf: not in this build"
  fi
done
if sanitized; then
  skip "R14: the stack-overflow handler is not used under the sanitizers"
else
  expect_failed "R14 stack overflow" "stack overflow in a task of steal-half stack-size=16384 recurse.*--stack-size" R14.csv -- \
    "$SCHEDLAB" run --scheduler steal-half --workload recurse --depth 2000 --stack-size 16K --reps 1 --warmup 0 --out R14.csv
  # R14b: every other backend's tasks: a thread's own stack (tbb's and openmp's threads, an
  # os-threads task thread, the harness thread under serial and the elision) or a Boost.Fiber fiber.
  deep=(--workload recurse --tasks 2 --depth 100000 --reps 1 --warmup 0)
  for peer in tbb openmp; do
    if in_build "$peer"; then
      expect_failed "R14b $peer thread stack" "stack overflow in a task of $peer thread-stack=2097152 recurse\(tasks=2 depth=100000\) threads=2: the thread stack of 2 MiB is too small for this recursion; rerun with a larger --thread-stack \(e.g. --thread-stack 4M\)$" \
        "R14b-$peer.csv" -- "$SCHEDLAB" run --scheduler "$peer" "${deep[@]}" --threads 2 --thread-stack 2M --out "R14b-$peer.csv"
      # The default --thread-stack holds what overflowed oneTBB's and libgomp's own stacks (25 MiB).
      if "$SCHEDLAB" run --scheduler "$peer" "${deep[@]}" --threads 2 --out "R14b-$peer-default.csv" >/dev/null 2>"R14b.err"; then
        echo "ok: R14b $peer: 100000 frames fit the default --thread-stack"
      else
        fail "R14b $peer default --thread-stack: $(cat R14b.err)"
      fi
    else
      skip "R14b $peer: not in this build"
    fi
  done
  expect_failed "R14b os-threads thread stack" "stack overflow in a task of os-threads recurse.*threads=1: the thread stack of 64 KiB is too small for this recursion; rerun with a larger --stack-size \(e.g. --stack-size 256K\)$" \
    R14b-os.csv -- "$SCHEDLAB" run --scheduler os-threads --workload recurse --tasks 2 --depth 2000 --reps 1 --warmup 0 --out R14b-os.csv
  for bf in boost-fiber boost-fiber-shared; do
    if in_build "$bf"; then
      expect_failed "R14b $bf fiber stack" "stack overflow in a task of $bf stack-size=16384 recurse.*threads=2: its fiber stack of 16384 bytes hit the guard page; rerun with a larger --stack-size" \
        "R14b-$bf.csv" -- "$SCHEDLAB" run --scheduler "$bf" --workload recurse --tasks 2 --depth 2000 --threads 2 --stack-size 16K --reps 1 --warmup 0 --out "R14b-$bf.csv"
    fi
  done
  for single in serial elision; do
    expect_failed "R14b $single harness thread" "stack overflow in a task of $single recurse.*: the thread stack of 8 MiB is too small for this recursion; raise the stack limit .*ulimit -s 16384" \
      "R14b-$single.csv" -- limited "ulimit -s 8192" run --scheduler "$single" "${deep[@]}" --out "R14b-$single.csv"
  done
fi
# R16: oneTBB gives all its worker threads one stack size, so two tbb schedulers alive at once
# cannot differ in --thread-stack (found when the block's schedulers are built, before it runs).
if in_build tbb; then
  expect_failed "R16 two tbb thread stacks" "tbb thread-stack=[0-9]+ fib.*: --thread-stack [24]M: a tbb scheduler with --thread-stack [24]M is alive.*run each --thread-stack value in a schedlab run of its own" \
    R16.csv -- "$SCHEDLAB" run --scheduler tbb "${fib[@]}" "${one[@]}" --n 10 --thread-stack 2M,4M --out R16.csv
fi
# ... and libgomp reads OMP_STACKSIZE (GOMP_STACKSIZE) once, giving its threads that instead.
if in_build openmp; then
  OMP_STACKSIZE=1M expect_refused "R16 OMP_STACKSIZE set" 2 \
    "^schedlab: error: OMP_STACKSIZE=1M is set: libgomp gives its threads that stack instead of --thread-stack; unset OMP_STACKSIZE and use --thread-stack$" -- \
    run --scheduler openmp "${fib[@]}" "${one[@]}" --n 10 --out R16b.csv
  [ -e R16b.csv ] && fail "R16: a refused run created its CSV"
fi

if [ "$failures" != 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all reliability checks passed"
