"""Every command README.md and docs/*.md show is run here, at a small size or with --dry-run, so
that a shown command cannot rot: docs/platform.md's `schedlab_gbench ... --schedlab_param n=25`
was refused for a workload its own filter left out, and nothing noticed.

A command is a code span or a line of a fenced block that starts with a program of this
repository (schedlab, schedlab_gbench, scripts/..., cmake). What runs:
  - `schedlab run ...` with --dry-run appended: every name, parameter and value is checked by the
    planner, nothing is measured or written; the other subcommands as they are;
  - `schedlab_gbench ...` with --benchmark_list_tests=true: registration checks the parameters
    against the benchmarks the filter keeps;
  - scripts/compare on the fixture CSVs; scripts/plot's arguments by its --help;
  - `cmake --preset X`, `--workflow --preset X`, `--build --preset X`: X is one of
    CMakePresets.json's;
  - scripts/bench PRESET: PRESET is a preset (`schedlab run --preset PRESET --dry-run`);
    scripts/test, scripts/bench, scripts/cotenant and scripts/stack-depth alone exist and are
    executable (running them is the whole suite's job, or minutes);
  - a span with "..." is a form (`schedlab run ... --against OTHER_BINARY`), not a command: its
    options are checked to be ones `schedlab run --help` lists.
Placeholders in capitals are replaced by real values (PLACEHOLDERS).

The binaries come from $SCHEDLAB and $SCHEDLAB_GBENCH (tests/scripts/CMakeLists.txt).
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEDLAB = os.environ.get("SCHEDLAB", "")
GBENCH = os.environ.get("SCHEDLAB_GBENCH", "")
FIXTURE = ROOT / "tests" / "fixtures" / "results" / "small.csv"
PROGRAMS = ("schedlab", "schedlab_gbench", "scripts/", "cmake", "build/release/harness/")


def documents():
    return [ROOT / "README.md"] + sorted(Path(p) for p in glob.glob(str(ROOT / "docs" / "*.md")))


def commands(text):
    """The command-like spans of a Markdown text: fenced blocks' lines (comments after `#`
    dropped) and inline code spans (which may wrap over lines), whitespace collapsed."""
    found = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            found.append(line.split("  #")[0].strip())
    rest = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.S | re.M)
    found += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", rest)]
    out = []
    for c in found:
        first = c.split(" ")[0] if c else ""
        if not first.startswith(PROGRAMS) or first.endswith("/") or first.endswith(":"):
            continue  # prose about a folder ("scripts/"), not a command
        if " " not in c and not re.fullmatch(r"scripts/[a-z-]+", c):
            continue  # a program or file named in prose (`schedlab`, `scripts/.../criteria.toml`)
        out.append(re.sub(r"\s*\[[^]]*\]", "", c))  # optional parts, `[--metric COLUMN]`, left out
    return out


# Commands the docs show as mistakes, each refused with one line and exit status 2: as shown, or
# with the files the docs leave out of the table.
REFUSED = {"schedlab runn": "schedlab runn",
           "scripts/compare --metric scheduler": "scripts/compare OLD.csv NEW.csv --metric scheduler"}


def presets():
    return set(json.loads((ROOT / "harness" / "presets.json").read_text(encoding="utf-8")))


def cmake_presets():
    data = json.loads((ROOT / "CMakePresets.json").read_text(encoding="utf-8"))
    return {p["name"] for key in ("configurePresets", "buildPresets", "testPresets", "workflowPresets")
            for p in data.get(key, [])}


@unittest.skipUnless(SCHEDLAB and os.access(SCHEDLAB, os.X_OK), "no schedlab binary in $SCHEDLAB")
class DocsCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="schedlab-docs-test-"))
        for name in ("OLD", "NEW"):
            shutil.copy(FIXTURE, cls.tmp / f"{name}.csv")
            shutil.copy(FIXTURE.with_name("small.meta.json"), cls.tmp / f"{name}.meta.json")
        # Each placeholder in capitals, by what it stands for.
        cls.placeholders = {
            "results/OLD.csv": str(cls.tmp / "OLD.csv"), "results/NEW.csv": str(cls.tmp / "NEW.csv"),
            "OLD.csv": str(cls.tmp / "OLD.csv"), "NEW.csv": str(cls.tmp / "NEW.csv"),
            "RUN.csv": str(cls.tmp / "ab.csv"), "results/ab.csv": str(cls.tmp / "ab.csv"),
            "OLD/schedlab": SCHEDLAB, "BUILD/schedlab": SCHEDLAB, "OTHER_BINARY": SCHEDLAB,
            "NAME": "quick", "PRESET": "quick", "DIR": str(cls.tmp / "out"), "COLUMN": "wall_ns",
        }
        # An A/B run for the commands that judge one (a few milliseconds of fib, six repetitions).
        subprocess.run([SCHEDLAB, "run", "--scheduler", "steal-half", "--workload", "fib", "--n", "10", "--reps", "6",
                        "--warmup", "0", "--against", SCHEDLAB, "--out", str(cls.tmp / "ab.csv")],
                       capture_output=True, check=True, timeout=120)
        cls.run_options = set(re.findall(r"(--[a-z][a-z0-9-]*)", subprocess.run(
            [SCHEDLAB, "run", "--help"], capture_output=True, text=True, check=True).stdout))

    def substitute(self, command):
        words = []
        for word in shlex.split(command):
            for key in sorted(self.placeholders, key=len, reverse=True):
                if word == key or word.endswith("=" + key):
                    word = word[: len(word) - len(key)] + self.placeholders[key]
                    break
            words.append(word)
        return words

    def run_ok(self, words, where, codes=(0,)):
        done = subprocess.run(words, capture_output=True, text=True, cwd=self.tmp, timeout=120)
        self.assertIn(done.returncode, codes,
                      f"{where}: `{' '.join(words)}` exited {done.returncode}:\n{done.stderr[-2000:]}")
        return done

    def check(self, command, where):
        if "..." in command:
            # A form, not a command: each option it names must exist.
            for option in re.findall(r"(--[a-z][a-z0-9-]*)", command):
                if command.startswith(("schedlab run", "build/release/harness/schedlab run")):
                    self.assertIn(option, self.run_options, f"{where}: `{command}` names an option run does not take")
            return "form"
        if "&&" in command:
            for part in command.split("&&"):
                self.check(part.strip(), where)
            return "ran"
        words = self.substitute(REFUSED.get(command, command))
        program = words[0]
        if command in REFUSED:
            done = self.run_ok([str(ROOT / program) if program.startswith("scripts/") else SCHEDLAB] + words[1:],
                               where, codes=(2,))
            self.assertEqual(len(done.stderr.strip().splitlines()), 1, f"{where}: `{command}`: {done.stderr}")
            return "ran"
        if program.endswith("schedlab_gbench"):
            if not GBENCH:
                return "skipped"
            self.run_ok([GBENCH] + words[1:] + ["--benchmark_list_tests=true"], where)
            return "ran"
        if program in ("schedlab", "build/release/harness/schedlab"):
            args = words[1:]
            if args[:1] == ["run"] and "--help" not in args and args[1:]:
                # A shown mistake (`schedlab runn`) is refused, as the docs say; nothing else is.
                self.run_ok([SCHEDLAB] + args + ["--dry-run"], where)
            elif args[:1] == ["run"]:
                self.run_ok([SCHEDLAB] + args + (["--help"] if len(args) == 1 else []), where)
            else:
                self.run_ok([SCHEDLAB] + args, where)
            return "ran"
        if program == "cmake":
            names = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--preset"]
            for name in names:
                self.assertIn(name, cmake_presets(), f"{where}: `{command}`: no CMake preset {name}")
            return "ran"
        if program.startswith("scripts/"):
            path = ROOT / program
            self.assertTrue(path.is_file() and os.access(path, os.X_OK), f"{where}: `{command}`: no {program}")
            if program == "scripts/compare" and len(words) > 1:
                # 1: a case moved; 3: nothing judged (too few unflagged blocks in the few repetitions
                # made here, on a busy machine): the documented answers of a command that works.
                self.run_ok([str(path)] + words[1:], where, codes=(0, 1, 3))
            elif program == "scripts/plot":
                self.run_ok([str(path), "--help"], where)
            elif program == "scripts/bench" and len(words) > 1:
                self.assertIn(words[1], presets(), f"{where}: `{command}`: no preset {words[1]}")
            return "ran"
        return "skipped"

    def test_every_shown_command_runs(self):
        seen = {"ran": 0, "form": 0, "skipped": 0}
        checked = set()
        for doc in documents():
            for command in commands(doc.read_text(encoding="utf-8")):
                if command in checked:
                    continue
                checked.add(command)
                with self.subTest(doc=doc.name, command=command):
                    seen[self.check(command, doc.relative_to(ROOT))] += 1
        self.assertGreater(seen["ran"], 20, seen)

    def test_the_extraction_finds_a_wrapped_span_and_leaves_prose(self):
        text = "Run `schedlab_gbench\n--benchmark_filter=x --schedlab_param n=25` now; see `scripts/`, `schedlab`,\n" \
               "`scripts/x/criteria.toml`, `scripts/test` and `scripts/compare A [--metric C]`.\n" \
               "```sh\nscripts/compare A.csv B.csv   # why\n```\n"
        self.assertEqual(commands(text), ["scripts/compare A.csv B.csv",
                                          "schedlab_gbench --benchmark_filter=x --schedlab_param n=25",
                                          "scripts/test", "scripts/compare A"])


if __name__ == "__main__":
    unittest.main()
