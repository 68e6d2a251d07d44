#!/usr/bin/env bash
# The tables docs/ shows of the registry and presets.json must be exactly what the binary prints
# (`schedlab list --markdown TABLE`): the registry and presets.json are their one home, a page
# only shows them. A table is the lines between
#   <!-- generated: schedlab list --markdown TABLE -->  and  <!-- end generated -->
# in any page of docs/ or README.md; each of the three tables must be shown somewhere, so that
# deleting a marker cannot make this pass. Also: docs/layout.md names every component folder
# (schedulers/X/ and workloads/X/ holding an entry.cpp), which the build finds by itself and a
# hand-written layout forgot (random-push's, among others).
# Usage: docs_tables_test.sh PATH/TO/schedlab PATH/TO/SOURCE_DIR
set -uo pipefail
schedlab="$1" root="$2"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
$PY - "$schedlab" "$root" <<'PYEOF'
import glob
import os
import re
import subprocess
import sys

schedlab, root = sys.argv[1], sys.argv[2]
START = re.compile(r"^<!-- generated: schedlab list --markdown (\w+) -->$")
END = "<!-- end generated -->"
TABLES = ("schedulers", "workloads", "presets")
failures = []
shown = set()
wanted = {}
for table in TABLES:
    done = subprocess.run([schedlab, "list", "--markdown", table], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: schedlab list --markdown {table} exited {done.returncode}: {done.stderr}")
    wanted[table] = done.stdout.splitlines()

pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
for page in pages:
    name = os.path.relpath(page, root)
    lines = open(page, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m:
            i += 1
            continue
        table, first = m.group(1), i + 1
        if table not in wanted:
            failures.append(f"{name}:{i + 1}: unknown table '{table}'; choose one of {', '.join(TABLES)}")
            break
        try:
            end = lines.index(END, first)
        except ValueError:
            failures.append(f"{name}:{i + 1}: the {table} table has no '{END}' line")
            break
        shown.add(table)
        have, want = lines[first:end], wanted[table]
        if have != want:
            k = next((k for k in range(min(len(have), len(want))) if have[k] != want[k]), min(len(have), len(want)))
            failures.append(
                f"{name}:{first + k + 1}: the {table} table differs from `schedlab list --markdown {table}` "
                f"at its line {k + 1}:\n  page:   {have[k] if k < len(have) else '(the table ends here)'}\n"
                f"  binary: {want[k] if k < len(want) else '(the table ends here)'}\n"
                f"  regenerate it: scripts/regen-docs (it replaces the lines between the markers with the command's output)")
        i = end + 1
for table in TABLES:
    if table not in shown:
        failures.append(f"no page shows the {table} table (a '<!-- generated: schedlab list --markdown {table} -->' "
                        f"... '{END}' block in README.md or docs/)")

layout = open(os.path.join(root, "docs", "layout.md"), encoding="utf-8").read()
folders = sorted(os.path.relpath(os.path.dirname(p), root)
                 for kind in ("schedulers", "workloads") for p in glob.glob(os.path.join(root, kind, "*", "entry.cpp")))
if not folders:
    failures.append("found no component folder (schedulers/*/entry.cpp, workloads/*/entry.cpp) under " + root)
for folder in folders:
    if f"`{folder}/`" not in layout:
        failures.append(f"docs/layout.md does not name the component folder `{folder}/`")

if failures:
    print("FAIL:\n" + "\n".join(failures))
    sys.exit(1)
print(f"docs tables match the binary ({', '.join(sorted(shown))}); docs/layout.md names all {len(folders)} component folders")
PYEOF
