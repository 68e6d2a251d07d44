# Helpers shared by the command-line tests (tests/cli/*_test.sh); sourced, not run.
# The caller sets SCHEDLAB (the binary) and WORK (a scratch directory) first.
failures=0
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
skip() { echo "skipped: $*"; }

# expect_refused NAME EXIT_CODE REGEX -- ARGS...: exits with EXIT_CODE, stderr is one line
# matching REGEX.
expect_refused() {
  local name="$1" code="$2" regex="$3"
  shift 4
  local err rc
  err="$("$SCHEDLAB" "$@" 2>&1 >/dev/null)"
  rc=$?
  if [ "$rc" != "$code" ]; then fail "$name: exit $rc, expected $code ($err)"; return; fi
  if [ "$(printf '%s\n' "$err" | grep -c .)" != 1 ]; then fail "$name: expected one line, got: $err"; return; fi
  if ! printf '%s' "$err" | grep -Eq -- "$regex"; then fail "$name: '$err' does not match '$regex'"; return; fi
  echo "ok: $name: $err"
}

# True when the binary is built with AddressSanitizer or ThreadSanitizer: they reserve terabytes
# of address space (no `ulimit -v` run can start) and do not run the fiber stack-overflow handler.
# Not grep -q, here or wherever a program's output is piped under pipefail: grep -q exits at the
# first match, and the writer, killed by SIGPIPE, fails the whole pipeline (ldd did, at random).
sanitized() { ldd "$SCHEDLAB" 2>/dev/null | grep -E 'lib(a|t)san' >/dev/null; }

# sidecar_field CSV KEY: a top-level field of CSV's sidecar (NAME.meta.json), or "absent".
sidecar_field() {
  local meta="${1%.csv}.meta.json"
  $PY - "$meta" "$2" <<'PYEOF'
import json, sys
try:
    print(json.load(open(sys.argv[1])).get(sys.argv[2], "absent"))
except FileNotFoundError:
    print("absent")
PYEOF
}

# rows_whole CSV [MIN_ROWS]: the file ends with a newline, every row has the header's number of
# cells and a wall_ns, and there are at least MIN_ROWS rows. Prints the row count.
rows_whole() {
  $PY - "$1" "${2:-0}" <<'PYEOF'
import csv, sys
text = open(sys.argv[1]).read()
assert text == "" or text.endswith("\n"), "the file ends mid-line"
rows = list(csv.reader(text.splitlines()))
header, body = rows[0], rows[1:]
for r in body:
    assert len(r) == len(header), f"a row of {len(r)} cells for {len(header)} columns"
    assert r[header.index("wall_ns")], "a row without wall_ns"
assert len(body) >= int(sys.argv[2]), f"{len(body)} rows, expected at least {sys.argv[2]}"
print(len(body))
PYEOF
}

# expect_failed NAME REGEX CSV -- COMMAND...: COMMAND (a schedlab run writing CSV) exits 1 with
# exactly one `schedlab: error:` line matching REGEX and no crash; the sidecar says failed with
# that same error; every row in the CSV is whole.
expect_failed() {
  local name="$1" regex="$2" csv="$3"
  shift 4
  local err rc line
  err="$("$@" 2>&1 >/dev/null)"
  rc=$?
  line="$(printf '%s\n' "$err" | grep '^schedlab: error: ')"
  if [ "$rc" != 1 ]; then fail "$name: exit $rc, expected 1 ($err)"; return; fi
  if [ "$(printf '%s\n' "$line" | grep -c .)" != 1 ]; then fail "$name: expected one error line, got: $err"; return; fi
  if printf '%s' "$err" | grep -q 'terminate called'; then fail "$name: crashed: $err"; return; fi
  if ! printf '%s' "$line" | grep -Eq -- "$regex"; then fail "$name: '$line' does not match '$regex'"; return; fi
  if [ "$(sidecar_field "$csv" status)" != failed ]; then fail "$name: sidecar status $(sidecar_field "$csv" status)"; return; fi
  if [ "schedlab: error: $(sidecar_field "$csv" error)" != "$line" ]; then
    fail "$name: the sidecar's error differs from stderr's: $(sidecar_field "$csv" error)"; return
  fi
  rows_whole "$csv" >/dev/null || { fail "$name: rows not whole"; return; }
  echo "ok: $name: $line"
}
