#!/usr/bin/env bash
# A machine whose kernel does not describe its caches in sysfs (a Firecracker guest has no
# /sys/devices/system/cpu/cpu0/cache/; there scripts/test failed and `scripts/bench locality`
# refused to run). With sysfs's description hidden (SCHEDLAB_SYSFS_ROOT, metadata.hpp) the
# caches come from CPUID, or, where it gives nothing plausible, from a stated assumption: the
# default presets' locality and matmul cases run, and the sidecar and `schedlab counters` say
# where each size came from. Small sizes: a few seconds.
# Usage: hidden_caches_test.sh PATH/TO/schedlab
set -uo pipefail
SCHEDLAB="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/cli_lib.sh"

export SCHEDLAB_SYSFS_ROOT="$WORK/no-sysfs"
mkdir -p "$SCHEDLAB_SYSFS_ROOT"

"$SCHEDLAB" counters >"$WORK/counters.out" 2>&1 || fail "schedlab counters failed: $(tail -1 "$WORK/counters.out")"
grep -E "^ +D1 .* from (CPUID|assumed)" "$WORK/counters.out" >/dev/null ||
  fail "counters: D1 not from CPUID or the assumption: $(grep -E '^ +D1' "$WORK/counters.out")"
grep -q "from sysfs" "$WORK/counters.out" && fail "counters: a size from the hidden sysfs"

# Locality sized from the caches (--bytes auto) and the per-core model: what the locality and
# quick presets run. A plan first (sizes from CPUID or the assumption), then a small run.
"$SCHEDLAB" run --scheduler steal-half --workload locality --access chase --threads 1 --dry-run >/dev/null 2>"$WORK/plan.err" ||
  fail "locality with auto sizes refused: $(tail -1 "$WORK/plan.err")"
"$SCHEDLAB" run --scheduler steal-half,central --workload locality --bytes 1M --leaf 64K --threads 1 --reps 1 \
  --warmup 0 --counters model --out "$WORK/model.csv" >/dev/null 2>"$WORK/model.err" ||
  fail "modelled locality run failed: $(tail -1 "$WORK/model.err")"
"$PY" - "$WORK" <<'PYEOF' || fail "sidecar: cache sources"
import csv, json, sys
work = sys.argv[1]
meta = json.load(open(work + "/model.meta.json"))
caches = meta["machine"]["caches"]
for level in ("l1d", "l2", "l3"):
    entry = caches[level]
    assert "unknown" in entry or not entry["from"].startswith("sysfs"), (level, entry)
model = meta["cache_model"]
assert not model["from"].startswith("sysfs"), model
rows = list(csv.DictReader(open(work + "/model.csv")))
assert len(rows) == 2 and all(r["model_l2_misses"] for r in rows), rows
PYEOF

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "ok: caches from CPUID or the assumption with sysfs hidden: $(grep -E '^ +LL' "$WORK/counters.out" | sed 's/^ *//')"
