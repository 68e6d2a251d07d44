#!/usr/bin/env bash
# docs/extending.md's promise, kept by a test: a new scheduler or workload is a new folder and
# nothing else. In a copy of the source tree this adds two throwaway components made only by
# copying a folder and renaming inside it (schedulers/random_push as throwaway_push, a policy;
# workloads/recurse as throwaway_recurse), builds, and checks with no other edit that each is
#   1. listed by `schedlab list` and in the generated docs tables (`schedlab list --markdown`);
#   2. run by the conformance tests: the scheduler tests, the policy contract's and the workload
#      tests each run cases of them, and they pass;
#   3. runnable from the command line (`schedlab run`, one small case of each together).
# A build of the whole tree: 5-10 minutes on 2 cores, so it is not part of scripts/test (label
# `extending`, left out of the test presets); run it with
#   ctest --test-dir build/debug -L extending --output-on-failure
# Usage: throwaway_component_test.sh SOURCE_DIR
set -uo pipefail
ROOT="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The tree as git has it (tracked and untracked-not-ignored files): no build outputs.
mkdir "$WORK/src"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$WORK/src") || {
  echo "FAIL: cannot copy the source tree"; exit 1; }

# copy_renamed FROM TO: folder FROM copied as TO, every spelling of its name renamed inside.
copy_renamed() {
  local from="$1" to="$2" from_dash="${1//_/-}" to_dash="${2//_/-}"
  local from_camel to_camel
  from_camel="$(sed -E 's/(^|_)([a-z])/\U\2/g' <<<"$from")"
  to_camel="$(sed -E 's/(^|_)([a-z])/\U\2/g' <<<"$to")"
  mkdir "$WORK/src/$3/$to"
  for f in "$WORK/src/$3/$from"/*; do
    local name
    name="$(basename "$f")"
    # One pass, so that a replacement is never renamed again ("recurse" is its own dashed form):
    # the quoted name (the entry's, the CLI's) dashed, identifiers and paths with underscores.
    FROM="$from" TO="$to" FROM_DASH="$from_dash" TO_DASH="$to_dash" FROM_CAMEL="$from_camel" TO_CAMEL="$to_camel" \
      perl -pe 's/("\Q$ENV{FROM_DASH}\E")|(\Q$ENV{FROM_CAMEL}\E)|(\Q$ENV{FROM}\E)|(\Q$ENV{FROM_DASH}\E)/
                  defined $1 ? "\"$ENV{TO_DASH}\"" : defined $2 ? $ENV{TO_CAMEL} : defined $3 ? $ENV{TO} : $ENV{TO_DASH}/ge' \
      "$f" >"$WORK/src/$3/$to/${name//$from/$to}"
  done
}
copy_renamed random_push throwaway_push schedulers
copy_renamed recurse throwaway_recurse workloads
[ -f "$WORK/src/schedulers/throwaway_push/throwaway_push.cpp" ] || fail "the scheduler folder was not made"

# The same configuration as the debug preset, in the copy, and only what the checks need.
BUILD="$WORK/src/build/debug"
cmake --preset debug -S "$WORK/src" >"$WORK/configure.log" 2>&1 || { tail -20 "$WORK/configure.log"; exit 1; }
cmake --build "$BUILD" -j2 --target schedlab scheduler_tests workloads_tests policy_conformance_tests >"$WORK/build.log" 2>&1 || {
  grep -m5 -E "error|Error" "$WORK/build.log"; echo "FAIL: the tree with the new folders does not build"; exit 1; }

# 1. Listed and documented.
list="$("$BUILD/harness/schedlab" list 2>&1)"
for name in throwaway-push throwaway-recurse; do
  grep -q "^  $name:" <<<"$list" || fail "schedlab list does not show $name"
done
markdown="$("$BUILD/harness/schedlab" list --markdown 2>&1)"
for name in throwaway-push throwaway-recurse; do
  grep -q "$name" <<<"$markdown" || fail "schedlab list --markdown (the docs' generated tables) does not show $name"
done

# 2. Run by the conformance tests.
# The policy contract's test is one test over the registry's policies; it names those it checked.
out="$("$BUILD/tests/policy_conformance_tests" --gtest_filter='PolicyConformance.EveryRegisteredPolicyKeepsTheContract' 2>&1)"
if grep -q '^\[  PASSED  \] 1 test' <<<"$out" && grep -q '^policies checked: .*throwaway-push' <<<"$out"; then
  echo "ok: the policy contract's test checked throwaway-push and passed"
else
  fail "policy contract: $(grep -E 'policies checked|FAILED' <<<"$out" | head -3)"
fi
for suite in scheduler_tests workloads_tests; do
  out="$("$BUILD/tests/$suite" --gtest_filter='*hrowaway*' 2>&1)"
  ran="$(grep -cE '^\[       OK \]' <<<"$out")"
  if [ "$ran" -gt 0 ] && grep -q '^\[  PASSED  \]' <<<"$out" && ! grep -q FAILED <<<"$out"; then
    echo "ok: $suite ran $ran cases of the throwaway components, all passed"
  else
    fail "$suite: $ran cases passed: $(tail -5 <<<"$out")"
  fi
done

# 3. From the command line.
if "$BUILD/harness/schedlab" run --scheduler throwaway-push --workload throwaway-recurse --tasks 4 --depth 8 \
     --threads 2 --reps 2 --out "$WORK/run.csv" >/dev/null 2>"$WORK/run.err" &&
   [ "$(grep -c throwaway-push "$WORK/run.csv")" = 2 ]; then
  echo "ok: schedlab run measured throwaway-push on throwaway-recurse"
else
  fail "schedlab run: $(tail -2 "$WORK/run.err")"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "throwaway_component_test: all checks passed"
