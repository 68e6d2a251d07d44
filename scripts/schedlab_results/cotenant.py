"""scripts/cotenant: do the claims' verdicts survive a co-tenant? Runs a preset quietly and then
again, several times, while a co-tenant competes, in one of three modes (--mode):
  bursts    a busy loop pinned to one CPU, a few seconds at a time, at random moments (default);
  steady    a busy loop pinned to one CPU (--cpu, default the last usable one) with a duty cycle
            (--duty, default 0.4 of every 100 ms), started --start seconds into the run and left
            running to its end: the state of a shared cloud VM whose other tenant holds a steady
            share of one vCPU;
  slow-cpu  no co-tenant in the guest: the run's speed probe reads --cpu as --factor times slower
            from --start seconds on (the test hook SCHEDLAB_TEST_PROBE_SCALE, harness/speed_probe.hpp),
            standing in for a vCPU the host slows, which nothing else in the guest can see.
Then it plots every run (claims.json), prints the verdict of every claim part side by side (and
which parts are judged at 1 thread only), each run's time and replacement repetitions, and, for
each disturbed run in bursts mode, which block repetitions overlapped a burst and whether they
were flagged (`noisy`, `slow_cpu`) and so left out of the claims.

Exit status 0 when every disturbed run gives the quiet run's verdict on every part, 1 when one
differs, 2 for bad input. The default (one quiet run, two disturbed ones) takes three times a
quick-preset run (docs/presets.md's table has its recorded time), so it is not part of
scripts/test. Run it on an otherwise quiet machine: the point is to control the disturbance.
"""
import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import time

from .cli import run
from .load import UserError, block_key, flagged, load, native

PROG = "scripts/cotenant"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEDLAB = os.path.join(ROOT, "build", "release", "harness", "schedlab")

# The co-tenant: a busy loop on one CPU, pinned there, until its deadline.
BUSY_LOOP = "import os, sys, time\nos.sched_setaffinity(0, {int(sys.argv[1])})\n" \
            "end = time.time() + float(sys.argv[2])\nwhile time.time() < end:\n    pass\n"
# The steady co-tenant: on one CPU, busy for `duty` of every 100 ms, until killed.
DUTY_LOOP = "import os, sys, time\nos.sched_setaffinity(0, {int(sys.argv[1])})\nduty = float(sys.argv[2])\n" \
            "while True:\n    start = time.time()\n    while time.time() - start < 0.1 * duty:\n        pass\n" \
            "    time.sleep(0.1 * (1 - duty))\n"


def steady_run(command, log, cpu, duty, start):
    """Runs `command` with a steady co-tenant on `cpu` from `start` seconds on. Returns (exit
    status, [(start, end, cpu)] of the co-tenant's life)."""
    with subprocess.Popen(command, stdout=log, stderr=log) as child:
        try:
            child.wait(timeout=start)
            return child.returncode, []
        except subprocess.TimeoutExpired:
            pass
        began = time.time()
        with subprocess.Popen([sys.executable, "-c", DUTY_LOOP, str(cpu), str(duty)]) as tenant:
            status = child.wait()
            tenant.kill()
        return status, [(began, time.time(), cpu)]


def disturbed_run(command, log, rng, burst, gap):
    """Runs `command` (a schedlab run) while bursts of a pinned busy loop come and go: each after
    a gap drawn from `gap` seconds, lasting a time drawn from `burst`, on a CPU drawn from those
    this process may use. Returns (exit status, [(start, end, cpu)] of the bursts)."""
    cpus = sorted(os.sched_getaffinity(0))
    bursts = []
    with subprocess.Popen(command, stdout=log, stderr=log) as child:
        while True:
            wait = rng.uniform(*gap)
            try:
                child.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                pass
            cpu, seconds = rng.choice(cpus), rng.uniform(*burst)
            start = time.time()
            subprocess.run([sys.executable, "-c", BUSY_LOOP, str(cpu), str(seconds)], check=False)
            bursts.append((start, time.time(), cpu))
            if child.poll() is not None:
                break
        return child.wait(), bursts


def plot(csv, out):
    result = subprocess.run([os.path.join(ROOT, "scripts", "plot"), csv, "--out", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise UserError(csv, f"scripts/plot failed ({result.stderr.strip().splitlines()[-1:]})",
                        "see the run's CSV and sidecar")
    with open(os.path.join(out, "claims.json"), encoding="utf-8") as f:
        return json.load(f)


def blocks_in_bursts(csv, bursts):
    """(block repetitions that overlapped a burst, how many of them were flagged, flagged ones
    that did not overlap one, all block repetitions). A block repetition runs from its
    `started_unix_s` for the sum of its rows' wall time (the measured regions; set-up between them
    is not counted, so the overlap found is a lower bound)."""
    rows = native(load([csv]).rows)
    if "started_unix_s" not in rows:
        raise UserError(csv, "no started_unix_s column", "run it with a schedlab that writes it")
    rows = rows.assign(_f=flagged(rows))
    overlapped = overlapped_flagged = flagged_elsewhere = total = 0
    for _, block in rows.groupby(block_key(rows)):
        total += 1
        start = float(block["started_unix_s"].iloc[0])
        end = start + float(block["wall_ns"].sum()) / 1e9
        hit = any(b_start < end and start < b_end for b_start, b_end, _ in bursts)
        is_flagged = bool(block["_f"].any())
        overlapped += hit
        overlapped_flagged += hit and is_flagged
        flagged_elsewhere += is_flagged and not hit
    return overlapped, overlapped_flagged, flagged_elsewhere, total


def main():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Run a preset quietly and disturbed by a pinned busy loop at random "
        "moments, and compare the claims' verdicts.", epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="quick", help="the preset to run (default quick)")
    parser.add_argument("--runs", type=int, default=2, help="disturbed runs (default 2)")
    parser.add_argument("--quiet", metavar="CSV", help="a quiet run of the preset already made (its "
                        "sidecar beside it); default: make one first")
    parser.add_argument("--out", help="directory for the runs and their reports (default "
                        "results/cotenant-DATE-TIME)")
    parser.add_argument("--burst", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"),
                        help="seconds each burst lasts, drawn uniformly (default 2 5)")
    parser.add_argument("--gap", type=float, nargs=2, default=(5.0, 30.0), metavar=("MIN", "MAX"),
                        help="seconds between bursts, drawn uniformly (default 5 30)")
    parser.add_argument("--seed", type=int, help="seed of the bursts' moments, lengths and CPUs "
                        "(default: drawn, and printed)")
    parser.add_argument("--mode", choices=("bursts", "steady", "slow-cpu"), default="bursts",
                        help="the co-tenant (see above; default bursts)")
    parser.add_argument("--cpu", type=int, help="steady and slow-cpu: the CPU (default the last usable)")
    parser.add_argument("--duty", type=float, default=0.4, help="steady: the share of each 100 ms the "
                        "co-tenant is busy (default 0.4)")
    parser.add_argument("--factor", type=float, default=1.5, help="slow-cpu: how much slower the CPU's "
                        "probe reads (default 1.5)")
    parser.add_argument("--start", type=float, default=60.0, help="steady and slow-cpu: seconds into the "
                        "run it begins (default 60)")
    parser.add_argument("--schedlab", default=SCHEDLAB, help=f"the binary (default {SCHEDLAB})")
    parser.add_argument("--presets-file", help="the presets file (default: the binary's own)")
    parser.add_argument("extra", nargs="*", metavar="-- ARG",
                        help="more arguments for every `schedlab run` (e.g. -- --reps 5)")
    args = parser.parse_args()
    if not os.access(args.schedlab, os.X_OK):
        raise UserError(args.schedlab, "not an executable", "build it (cmake --workflow --preset "
                        "build-release) or pass --schedlab PATH")
    if args.runs < 1 or args.burst[0] <= 0 or args.burst[0] > args.burst[1] or args.gap[0] < 0 \
            or args.gap[0] > args.gap[1]:
        raise UserError("arguments", "--runs must be at least 1, and each MIN at most its MAX",
                        "see --help")
    cpus = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else cpus[-1]
    if cpu not in cpus or not 0 < args.duty < 1 or args.factor <= 0 or args.start < 0:
        raise UserError("arguments", f"--cpu must be one of {cpus}, --duty in (0, 1), --factor above 0 and "
                        "--start at least 0", "see --help")
    seed = args.seed if args.seed is not None else random.randrange(2 ** 32)
    rng = random.Random(seed)
    out = args.out or os.path.join(ROOT, "results", "cotenant-" +
                                   datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    disturbance = {
        "bursts": f"bursts of {args.burst[0]:g}-{args.burst[1]:g} s every {args.gap[0]:g}-{args.gap[1]:g} s on "
                  f"a random CPU, seed {seed}",
        "steady": f"a co-tenant busy {args.duty:.0%} of the time on CPU {cpu} from {args.start:g} s on",
        "slow-cpu": f"CPU {cpu}'s speed probe reading {args.factor:g}x slower from {args.start:g} s on (test hook)",
    }[args.mode]
    print(f"{PROG}: preset {args.preset}, {args.runs} disturbed run(s): {disturbance}; in {out}")

    def schedlab_run(name):
        presets = ["--presets-file", args.presets_file] if args.presets_file else []
        return [args.schedlab, *presets, "run", "--preset", args.preset, "--out",
                os.path.join(out, name + ".csv"), *args.extra]

    seconds = {}

    runs = []  # (name, csv, bursts)
    if args.quiet:
        runs.append(("quiet", args.quiet, []))
    else:
        print(f"{PROG}: quiet run ...", flush=True)
        began = time.time()
        with open(os.path.join(out, "quiet.log"), "w") as log:
            status = subprocess.run(schedlab_run("quiet"), stdout=log, stderr=log, check=False).returncode
        seconds["quiet"] = time.time() - began
        if status != 0:
            raise UserError(os.path.join(out, "quiet.log"), f"the quiet run failed (exit {status})", "see the log")
        runs.append(("quiet", os.path.join(out, "quiet.csv"), []))
    for k in range(1, args.runs + 1):
        name = f"disturbed-{k}"
        print(f"{PROG}: {name} ...", flush=True)
        began = time.time()
        with open(os.path.join(out, name + ".log"), "w") as log:
            if args.mode == "bursts":
                status, bursts = disturbed_run(schedlab_run(name), log, rng, args.burst, args.gap)
            elif args.mode == "steady":
                status, bursts = steady_run(schedlab_run(name), log, cpu, args.duty, args.start)
            else:
                env = dict(os.environ, SCHEDLAB_TEST_PROBE_SCALE=f"{cpu}:{args.factor:g}@{args.start:g}")
                status = subprocess.run(schedlab_run(name), stdout=log, stderr=log, env=env, check=False).returncode
                bursts = []
        seconds[name] = time.time() - began
        if status != 0:
            raise UserError(os.path.join(out, name + ".log"), f"the run failed (exit {status})", "see the log")
        with open(os.path.join(out, name + ".bursts.json"), "w") as f:
            json.dump([{"start_unix_s": s, "end_unix_s": e, "cpu": c} for s, e, c in bursts], f, indent=2)
        runs.append((name, os.path.join(out, name + ".csv"), bursts))

    verdicts = {}
    for name, csv, _ in runs:
        table = plot(csv, os.path.join(out, name))
        verdicts[name] = table
    quiet = verdicts["quiet"]
    parts = [(p["claim"], p["name"]) for p in quiet["parts"]]
    names = [name for name, _, _ in runs]
    rows = []
    differ = differ_one = 0
    for i, (claim, part) in enumerate(parts):
        cells = [verdicts[n]["parts"][i]["verdict"] for n in names]
        same = all(c == cells[0] for c in cells)
        configs = quiet["parts"][i]["configs"]
        one_thread = bool(configs) and all(c["threads"] == "1" for c in configs)
        differ += not same
        differ_one += one_thread and not same
        rows.append([f"{claim}: {part}", "1" if one_thread else ""] + cells + ["" if same else "DIFFERS"])
    header = ["part", "1 thread"] + names + [""]
    widths = [max(len(r[j]) for r in rows + [header]) for j in range(len(header))]
    for r in [header] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    for name, csv, _ in runs:
        meta = json.load(open(csv[:-4] + ".meta.json"))
        rep = meta.get("replacements", {})
        extra = sum(int(n) for n in rep.get("blocks", {}).values())
        left = sum(int(n) for n in rep.get("unreplaced", {}).values())
        used = sum(float(g.get("used_s", 0)) for g in rep.get("groups", []))
        budget = sum(float(g.get("budget_s", 0)) for g in rep.get("groups", []))
        took = f"{seconds[name]:.0f} s" if name in seconds else "(given)"
        print(f"{name}: {took}; {extra} replacement repetitions, {left} left unreplaced, "
              f"{used:.0f} s of a {budget:.0f} s budget used")
    print("noise floor: " + "; ".join(
        f"{n} " + (f"{verdicts[n]['noise_floor']['ratio']:.3f} [{verdicts[n]['noise_floor']['low']:.3f}, "
                   f"{verdicts[n]['noise_floor']['high']:.3f}]" if verdicts[n]["noise_floor"]["measured"]
                   else "not measured") for n in names))
    for name, csv, bursts in runs[1:] if args.mode != "slow-cpu" else []:
        overlapped, caught, elsewhere, total = blocks_in_bursts(csv, bursts)
        busy = sum(e - s for s, e, _ in bursts)
        print(f"{name}: {len(bursts)} bursts, {busy:.0f} s busy; {overlapped} of {total} block repetitions "
              f"overlapped a burst, {caught} of them flagged; {elsewhere} flagged outside the bursts")
    print(f"{PROG}: {'every disturbed run gave the quiet run' + chr(39) + 's verdicts' if not differ else f'{differ} part(s) differ ({differ_one} judged at 1 thread only)'}"
          f" (reports in {out}/NAME/report.md)")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    run(PROG, main)
