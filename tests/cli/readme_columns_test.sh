#!/usr/bin/env bash
# docs/output.md's CSV column table must be exactly `schedlab columns --markdown`: the schema in
# harness/row.cpp is the one home of the columns, and the page only shows it. (The test keeps
# its name from when the table was in README.md.)
# Usage: readme_columns_test.sh PATH/TO/schedlab PATH/TO/docs/output.md
set -uo pipefail
schedlab="$1" page="$2"
want="$("$schedlab" columns --markdown)" || { echo "FAIL: schedlab columns --markdown failed"; exit 1; }
grep -q '^<!-- columns:begin' "$page" || { echo "FAIL: $page has no columns:begin marker (the column table moved?)"; exit 1; }
have="$(sed -n '/^<!-- columns:begin/,/^<!-- columns:end/p' "$page" | sed '1d;$d')"
if [ "$have" != "$want" ]; then
  echo "FAIL: $page's column table differs from \`schedlab columns --markdown\`:"
  diff <(printf '%s\n' "$have") <(printf '%s\n' "$want")
  echo "Regenerate it: scripts/regen-docs (it replaces the lines between the columns:begin and columns:end markers with the command's output)."
  exit 1
fi
echo "$page column table matches the schema ($(printf '%s\n' "$want" | wc -l) lines)"
