#!/usr/bin/env bash
# README's CSV column table must be exactly `schedlab columns --markdown`: the schema in
# harness/row.cpp is the one home of the columns, and README only shows it.
# Usage: readme_columns_test.sh PATH/TO/schedlab PATH/TO/README.md
set -uo pipefail
schedlab="$1" readme="$2"
want="$("$schedlab" columns --markdown)" || { echo "FAIL: schedlab columns --markdown failed"; exit 1; }
have="$(sed -n '/^<!-- columns:begin/,/^<!-- columns:end/p' "$readme" | sed '1d;$d')"
if [ "$have" != "$want" ]; then
  echo "FAIL: README.md's column table differs from \`schedlab columns --markdown\`:"
  diff <(printf '%s\n' "$have") <(printf '%s\n' "$want")
  echo "Regenerate it: replace the lines between the columns:begin and columns:end markers with the command's output."
  exit 1
fi
echo "README column table matches the schema ($(printf '%s\n' "$want" | wc -l) lines)"
