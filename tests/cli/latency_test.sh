#!/usr/bin/env bash
# Latency from the command line (docs/latency.md): --latency on gives every row of a scheduler
# that records it the delay_* columns, and exactly one delay per task started or resumed; off, or
# a backend that cannot see its tasks become runnable, leaves them empty; go-runtime fills them
# from Go's own histogram; the latency file holds each row's buckets; netmix --load open fills the
# request_* columns; the open loop's parameters are refused where they mean nothing.
# Usage: latency_test.sh PATH/TO/schedlab
set -uo pipefail
SCHEDLAB="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/cli_lib.sh"

small=(--reps 1 --warmup 0)
"$SCHEDLAB" run --scheduler steal-half,fair,central,random-push,serial,go-runtime --workload fib-go --n 10 \
  --threads 1,2 --latency on,off "${small[@]}" --out "$WORK/delay.csv" >/dev/null 2>"$WORK/err" ||
  fail "the delay run failed: $(cat "$WORK/err")"
# Each on row: every delay column filled, one delay per task started (tasks) or resumed
# (suspensions: each suspension ends in one resume), and the latency file's line for it holds
# that many; off rows and serial's (which cannot see a task become runnable) are empty.
# go-runtime's come from Go's histogram (a sample), so only their presence is checked.
if out="$($PY - "$WORK/delay.csv" <<'PYEOF'
import csv, json, sys
path = sys.argv[1]
rows = list(csv.DictReader(open(path)))
lines = [json.loads(l) for l in open(path[:-4] + ".latency.jsonl")]
by_key = {(l["block_index"], l["rep"], l["case"]): l for l in lines}
cols = ["delay_p50_ns", "delay_p90_ns", "delay_p99_ns", "delay_p999_ns", "delay_max_ns", "delay_count"]
seen = set()
for r in rows:
    on = r["latency"] == "on"
    filled = [r[c] != "" for c in cols]
    if not on or r["scheduler"] == "serial":
        assert not any(filled), f"{r['scheduler']} latency={r['latency']}: delay columns filled"
        continue
    assert all(filled), f"{r['scheduler']} threads={r['threads']}: a delay column is empty"
    p = [int(r[c]) for c in cols[:5]]
    assert p == sorted(p), f"{r['scheduler']}: percentiles not in order: {p}"
    line = [l for l in lines if l["scheduler"] == r["scheduler"] and str(l["threads"]) == r["threads"]
            and l["scheduler_params"] == r["scheduler_params"] and l["kind"] == "sched_delay"]
    assert len(line) == 1, f"{r['scheduler']}: {len(line)} latency lines"
    assert sum(b[2] for b in line[0]["buckets"]) == int(r["delay_count"]), "buckets and delay_count differ"
    if r["scheduler"] == "go-runtime":
        assert line[0]["source"] == "go", line[0]["source"]
    else:
        assert line[0]["source"] == "schedlab", line[0]["source"]
        want = int(r["tasks"]) + int(r["suspensions"])
        assert int(r["delay_count"]) == want, f"{r['scheduler']}: {r['delay_count']} delays, {want} starts and resumes"
    seen.add(r["scheduler"])
assert len(lines) == sum(1 for r in rows if r["latency"] == "on" and r["scheduler"] != "serial"), "stray lines"
print(" ".join(sorted(seen)))
PYEOF
)"; then
  echo "ok: --latency on fills the delay columns, one delay per start and resume ($out), off leaves them empty"
  case " $out " in *" go-runtime "*) ;; *) skip "no go-runtime rows (no Go toolchain)";; esac
else
  fail "delay columns: $out"
fi

"$SCHEDLAB" run --scheduler steal-half --workload fib --n 8 "${small[@]}" --out "$WORK/off.csv" >/dev/null 2>&1 ||
  fail "a run without latency failed"
[ -e "$WORK/off.latency.jsonl" ] && fail "a run that records no latency wrote a latency file"
[ "$(sidecar_field "$WORK/off.csv" latency_file)" = absent ] || fail "the sidecar names a latency file nobody wrote"

"$SCHEDLAB" run --scheduler steal-half,fair,elision --workload netmix --load open --conns 3 --requests 4 --iters 100 \
  --rate 20000 --arrivals fixed,poisson "${small[@]}" --out "$WORK/open.csv" >/dev/null 2>"$WORK/err" ||
  fail "the open-loop run failed: $(cat "$WORK/err")"
if out="$($PY - "$WORK/open.csv" <<'PYEOF'
import csv, json, sys
path = sys.argv[1]
rows = list(csv.DictReader(open(path)))
lines = [json.loads(l) for l in open(path[:-4] + ".latency.jsonl") if json.loads(l)["kind"] == "request"]
assert len(rows) == 6 and len(lines) == 6, f"{len(rows)} rows, {len(lines)} request lines"
for r in rows:
    assert r["request_count"] == "12", f"{r['scheduler']}: request_count {r['request_count']}"
    assert float(r["request_rate"]) > 0, r["request_rate"]
    p = [int(r[c]) for c in ("request_p50_ns", "request_p99_ns", "request_max_ns")]
    assert p == sorted(p), p
    assert r["delay_count"] == "", "latency was off"
print(len(rows))
PYEOF
)"; then
  echo "ok: netmix --load open fills the request columns and the latency file ($out rows)"
else
  fail "open-loop columns: $out"
fi

expect_refused "--rate without --load open" 2 "rate and --arrivals apply to --load open" -- \
  run --scheduler steal-half --workload netmix --rate 5000 --out "$WORK/x.csv"
expect_refused "--server-delay-us with --load open" 2 "applies to --load closed" -- \
  run --scheduler steal-half --workload netmix --load open --server-delay-us 100 --out "$WORK/x.csv"
expect_refused "--latency for a scheduler that cannot record it" 2 "latency does not apply" -- \
  run --scheduler serial --workload fib --latency on --out "$WORK/x.csv"
touch "$WORK/taken.latency.jsonl"
expect_refused "an existing latency file" 2 "taken.latency.jsonl already exists" -- \
  run --scheduler steal-half --workload fib --n 5 --latency on --out "$WORK/taken.csv"
[ -e "$WORK/taken.csv" ] && fail "a refused run left its CSV"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all latency command-line checks passed"
