"""scripts/compare: two runs case by case, or one A/B run, with an exit status CI can act on.

OLD.csv NEW.csv, two separate runs: per case present in both, the change of the median with a
bootstrap interval. Two runs of the same build on a shared VM differ by a few percent as a whole,
and per-case tests between runs cannot tell that drift from a change of the code. So the drift
the runs show is measured first: the geometric mean of new/old over the cases (with its interval
over cases), the A/A control's change between the runs (steal-half `replica` a and b, present in
every preset), and the spread of the cases' changes (Tukey's far-out fences, quartiles +- 3
interquartile ranges). A case is slower (faster) only when its whole interval lies above (below)
that drift band and a one-sided Mann-Whitney test against the band's edge, Holm-corrected over
the table, says so; that alone is a regression (exit status 1). A change that moves most cases
alike looks like drift here: an A/B run (`schedlab run --against OTHER`, judged by
`scripts/compare RUN.csv`, ab.py) tells them apart.

RUN.csv, one A/B run: see ab.py.

Cases present in only one file are listed. Blocks flagged `noisy` or `slow_cpu` are left out.
Text by default, one JSON object with --json."""
import argparse
import json
import math
import sys
from statistics import median

import numpy as np
from pandas.api.types import is_numeric_dtype

from . import ab
from .cli import EXIT_NOTHING_JUDGED, EXIT_USER_ERROR, run
from .load import CASE_KEY, UserError, flagged, load, native, natural_key, simulated
from .paired import holm
from .stats import (ALPHA, BOOTSTRAP_RESAMPLES, GEOMEAN_MIN_CASES, MIN_REPS, change_interval,
                    format_p, geometric_mean_change, more_repetitions_advice, mwu_p_one_sided,
                    smallest_p)

PROG = "scripts/compare"
EXIT_REGRESSION = 1  # at least one case is slower beyond the drift or noise floor (see --help)
# Tukey's "far out": beyond the quartiles by this many interquartile ranges. A case of two runs of
# one build lands there about once in a few hundred thousand cases when the drift is normal.
FENCE_IQR = 3.0

EPILOG = f"""exit status:
  0    no case is slower beyond the drift (two runs) or the noise floor (an A/B run)
  {EXIT_REGRESSION}    at least one case is: two runs: its whole change interval above the drift
       band and a one-sided Mann-Whitney test against the band's edge, Holm-corrected, below
       {ALPHA}; an A/B run: its whole B / A interval above the noise floor; and the median grew
       by more than --min-change (a regression, for CI)
  {EXIT_USER_ERROR}    bad input: a file that is not a schedlab CSV, a metric that is absent or
       not numeric, no case in both files (one line on stderr, nothing on stdout)
  {EXIT_NOTHING_JUDGED}    nothing was judged: no case had enough unflagged repetitions (two runs: fewer
       than {GEOMEAN_MIN_CASES} cases to see the drift, or no case with an interval) or blocks
       (an A/B run: fewer than 6 unflagged blocks, or no A/A estimate); said on stderr, never
       read as "no regression"
  130  interrupted
Lower is better for every metric ('faster' = lower). Fewer than {MIN_REPS} repetitions on a side
gets a warning on stderr: the test's p cannot get small there. Two separate runs cannot separate
the machine's drift from a change of the code: to compare two builds, measure both in one run,
`schedlab run ... --against OTHER_BINARY`, and pass that one CSV."""


def case_values(results, path, metric):
    """({case key: (variant label, [values of the unflagged repetitions], repetitions of it left
    out as flagged)}, repetitions left out as flagged in all): a case whose every repetition was
    flagged has no values; None for the first when the column is absent or empty. Simulated rows count only for the simulator's own columns (sim_*), and then
    alone: their times are Valgrind's. Raises UserError for a column of text, which has no
    median."""
    rows = results.rows
    rows = rows[simulated(rows)] if metric.startswith("sim_") else native(rows)
    if metric not in rows or rows[metric].isna().all():
        return None, 0
    if not is_numeric_dtype(rows[metric]):
        example = rows[metric].dropna().iloc[0]
        raise UserError(path, f"column {metric} is not numeric (it holds {example!r})",
                        "choose a numeric --metric (wall_ns, ns_per_task, cpu_ns, steals, ...)")
    disturbed = flagged(rows)
    out = {}
    for key, group in rows.assign(_flagged=disturbed).groupby(CASE_KEY, sort=False):
        values = group.loc[~group["_flagged"], metric].dropna().to_list()
        left = int(group["_flagged"].sum())
        if values or left:  # a case every repetition of which was flagged is still a case
            out[key] = (group["variant"].iloc[0], values, left)
    return out, int(disturbed.sum())


def describe(key, variant):
    _, _, workload, workload_params, threads, _ = key
    plural = "s" if threads != 1 else ""
    return f"{variant} | {workload} {workload_params}".rstrip() + f" | {threads} thread{plural}"


def sort_key(key):
    scheduler, scheduler_params, workload, workload_params, threads, build = key
    return (workload, natural_key(workload_params), scheduler, scheduler_params, threads, build)


def compare_case(key, variant, before, after, flagged_old=0, flagged_new=0):
    """One case's comparison, as a dict (the JSON form; None where there is no value). p, p_holm
    and verdict are filled by judge(), which sees the drift and the whole table."""
    old_med, new_med = median(before), median(after)
    # A change from a median of 0 has no relative size.
    change = (new_med / old_med - 1) * 100 if old_med != 0 else None
    interval = change_interval(before, after) if old_med != 0 else None
    return {"case": describe(key, variant), **dict(zip(CASE_KEY, key)), "variant": variant,
            "reps_old": len(before), "reps_new": len(after),
            "flagged_old": flagged_old, "flagged_new": flagged_new,
            "old_median": old_med, "new_median": new_med, "change_pct": change,
            "interval_pct": list(interval) if interval else None,
            "_old": before, "_new": after}


def geometric_mean(cases):
    """The geometric mean of new/old medians over the cases where both are positive, with its
    bootstrap interval over cases (stats.geometric_mean_change); None without such a case."""
    ratios = [c["new_median"] / c["old_median"] for c in cases
              if c["old_median"] > 0 and c["new_median"] > 0]
    if not ratios:
        return None
    change, interval = geometric_mean_change(ratios)
    return {"ratio": 1 + change / 100, "change_pct": change,
            "interval_pct": list(interval) if interval else None, "cases": len(ratios)}


def aa_control(cases):
    """The A/A control's cases (a scheduler at `replica` a and b in the same configuration: every
    preset runs steal-half so), each with its change between the runs."""
    def without_replica(c):
        return (c["scheduler"], " ".join(p for p in c["scheduler_params"].split()
                                         if not p.startswith("replica=")),
                c["workload"], c["workload_params"], c["threads"], c["build"])
    replicas = {}
    for c in cases:
        replicas.setdefault(without_replica(c), []).append(c)
    out = []
    for group in replicas.values():
        if {"replica=a", "replica=b"} <= {p for c in group for p in c["scheduler_params"].split()}:
            out += [c for c in group if c["interval_pct"]]
    return out


def log_change(pct):
    return math.log1p(pct / 100.0)


def drift(cases):
    """The drift between the runs: the geometric mean, the A/A control's changes, the fences of
    the cases' changes, and the band they span together (log new/old), or band None with fewer
    than GEOMEAN_MIN_CASES cases, too few to see a drift."""
    gm = geometric_mean(cases)
    control = aa_control(cases)
    logs = np.array([math.log(c["new_median"] / c["old_median"]) for c in cases
                     if c["old_median"] > 0 and c["new_median"] > 0])
    out = {"geomean": gm,
           "aa_control": [{"case": c["case"], "change_pct": c["change_pct"],
                           "interval_pct": c["interval_pct"]} for c in control],
           "fences_pct": None, "band_pct": None}
    if len(logs) < GEOMEAN_MIN_CASES:
        return out
    q1, q3 = np.percentile(logs, [25, 75])
    fences = (q1 - FENCE_IQR * (q3 - q1), q3 + FENCE_IQR * (q3 - q1))
    out["fences_pct"] = [math.expm1(v) * 100 for v in fences]
    edges = [0.0, *fences]
    if gm and gm["interval_pct"]:
        edges += [log_change(v) for v in gm["interval_pct"]]
    for c in control:
        edges += [log_change(v) for v in c["interval_pct"]]
    out["band"] = (min(edges), max(edges))
    out["band_pct"] = [math.expm1(v) * 100 for v in out["band"]]
    return out


def judge(cases, seen, min_change):
    """Sets each case's p (one-sided Mann-Whitney of new against old moved to the band's edge, in
    the direction of its change), p_holm (Holm over the table), verdict (slower / faster beyond
    the drift, within the drift, not judged) and whether it counts as a regression."""
    band = seen.get("band")
    for c in cases:
        c["p"] = None
        if band is None or c["change_pct"] is None or c["interval_pct"] is None:
            continue
        slower = c["change_pct"] > 0
        edge = math.exp(band[1] if slower else band[0])
        c["p"] = mwu_p_one_sided([v * edge for v in c["_old"]], c["_new"],
                                 "greater" if slower else "less")
    adjusted = holm([math.nan if c["p"] is None else c["p"] for c in cases])
    for c, p_holm in zip(cases, adjusted):
        c["p_holm"] = None if math.isnan(p_holm) else p_holm
        if c["p"] is None:
            c["verdict"], c["regression"] = "not judged", False
            continue
        low, high = (log_change(v) for v in c["interval_pct"])
        significant = c["p_holm"] < ALPHA
        if significant and low > band[1]:
            c["verdict"] = "slower"
        elif significant and high < band[0]:
            c["verdict"] = "faster"
        else:
            c["verdict"] = "within the drift"
        c["regression"] = c["verdict"] == "slower" and c["change_pct"] > min_change


def few_reps_warning(cases):
    """One line when a case has fewer than MIN_REPS unflagged repetitions on a side, naming the
    smallest p its sizes can reach, and what to do (more repetitions, or fewer flagged ones);
    None otherwise."""
    few = [c for c in cases if min(c["reps_old"], c["reps_new"]) < MIN_REPS]
    if not few:
        return None
    worst = min(few, key=lambda c: (min(c["reps_old"], c["reps_new"]), c["reps_old"] + c["reps_new"]))
    floor = smallest_p(worst["reps_old"], worst["reps_new"])
    consequence = (f"no change can be significant at {ALPHA}" if floor >= ALPHA else
                   "only the largest changes can be significant, fewer still after Holm's correction")
    side = "old" if worst["reps_old"] <= worst["reps_new"] else "new"
    used = worst[f"reps_{side}"]
    advice = more_repetitions_advice(used, used + worst.get(f"flagged_{side}", 0), MIN_REPS)
    return (f"{len(few)} of {len(cases)} cases have fewer than {MIN_REPS} unflagged repetitions on a "
            f"side (fewest {worst['reps_old']}/{worst['reps_new']}): p cannot get small there (at best "
            f"{format_p(floor)}), so {consequence}; {advice}")


def nothing_judged(cases, why, total=None):
    """The line said when no case was judged (exit status EXIT_NOTHING_JUDGED), or None. `total`:
    the cases in both runs, those left without a repetition included (default: `cases`)."""
    if any(c["verdict"] != "not judged" for c in cases):
        return None
    return (f"nothing was judged: none of the {len(cases) if total is None else total} cases could be "
            f"({why}); exit status {EXIT_NOTHING_JUDGED}, not a pass")


def percent(value):
    return "n/a (median 0)" if value is None else f"{value:+.1f}%"


def interval_text(interval):
    return f"[{interval[0]:+.1f}%, {interval[1]:+.1f}%]" if interval else "n/a"


def print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def print_text(report, scale, unit):
    """The human form of `report` (the dict --json prints) for two runs."""
    print(f"{PROG}: {report['old']} -> {report['new']}: two separate runs; metric {report['metric']}"
          f"{f' ({unit})' if unit else ''}, median over repetitions; change interval: 95% "
          f"percentile bootstrap of the change of the median ({BOOTSTRAP_RESAMPLES} resamples); "
          f"p: one-sided Mann-Whitney U against the drift band's edge, Holm-corrected over the "
          f"{len(report['cases'])} cases; 'faster'/'slower' read lower as better and mean beyond "
          "the drift")
    rows = [[c["case"], f"{c['reps_old']}/{c['reps_new']}", f"{c['old_median'] / scale:.3f}",
             f"{c['new_median'] / scale:.3f}", percent(c["change_pct"]),
             interval_text(c["interval_pct"]), format_p(c["p_holm"]), c["verdict"]]
            for c in report["cases"]]
    print_table(["case", "reps old/new", "old", "new", "change", "95% interval", "p vs drift (Holm)",
                 "verdict"], rows)
    d = report["drift"]
    g = d["geomean"]
    if g:
        interval = (f" {interval_text(g['interval_pct'])} (95% bootstrap over cases)"
                    if g["interval_pct"] else f" (no interval: fewer than {GEOMEAN_MIN_CASES} cases)")
        print(f"geometric mean of new/old over {g['cases']} cases: {g['ratio']:.3f}x, "
              f"{percent(g['change_pct'])}{interval}")
    for c in d["aa_control"]:
        print(f"A/A control between the runs: {c['case']}: {percent(c['change_pct'])} "
              f"{interval_text(c['interval_pct'])}")
    if d["band_pct"] is None:
        print(f"drift: fewer than {GEOMEAN_MIN_CASES} cases, too few to see the drift between the runs: "
              "no case is judged")
    else:
        print(f"drift between the runs: {interval_text(d['band_pct'])} (the geometric mean's interval, "
              f"the A/A control's and the far-out fences of the cases' changes, "
              f"{interval_text(d['fences_pct'])}, together); a case is slower or faster only beyond it")
    print("two separate runs cannot separate the machine's drift from a change of the code: to compare "
          "two builds, measure both in one run (schedlab run ... --against OTHER_BINARY) and pass its CSV")
    if report["flagged_reps"]:
        print(f"left out: {report['flagged_reps']} repetitions flagged noisy or slow_cpu")
    if report["exit_status"] == EXIT_NOTHING_JUDGED:
        print(f"{PROG}: {report['nothing_judged']}")
    for label, field in (("not judged, every repetition of a side flagged", "all_flagged"),
                         ("only in OLD", "only_in_old"), ("only in NEW", "only_in_new")):
        if report[field]:
            print(f"{label} ({len(report[field])}):")
            for case in report[field]:
                print(f"  {case}")
    regressions = [c for c in report["cases"] if c["regression"]]
    if regressions:
        print(f"{len(regressions)} case(s) slower beyond the drift (exit status {EXIT_REGRESSION}): "
              + "; ".join(c["case"] for c in regressions))


def two_runs(args):
    old, new = load([args.files[0]]), load([args.files[1]])
    old_cases, old_flagged = case_values(old, args.files[0], args.metric)
    new_cases, new_flagged = case_values(new, args.files[1], args.metric)
    for path, cases in ((args.files[0], old_cases), (args.files[1], new_cases)):
        if cases is None:
            raise UserError(path, f"column {args.metric} is absent or empty",
                            "choose another --metric (wall_ns is always present)")
    common = sorted(set(old_cases) & set(new_cases), key=sort_key)
    if not common:
        # Nothing compared must not pass a CI gate as "no regression".
        raise UserError(args.files[1], f"no case is also in {args.files[0]} (a case is the scheduler and "
                        "its parameters, the workload and its parameters, and the threads; a parameter "
                        "added between the two builds changes every case)",
                        "compare runs of the same cases, made by builds with the same parameters")
    flagged_out = [k for k in common if not old_cases[k][1] or not new_cases[k][1]]
    common = [k for k in common if k not in flagged_out]
    cases = [compare_case(key, old_cases[key][0], old_cases[key][1], new_cases[key][1],
                          old_cases[key][2], new_cases[key][2])
             for key in common]
    seen = drift(cases)
    judge(cases, seen, args.min_change)
    for c in cases:
        del c["_old"], c["_new"]
    seen.pop("band", None)
    nothing = nothing_judged(cases, f"fewer than {GEOMEAN_MIN_CASES} cases with unflagged repetitions on "
                             f"both sides to measure the drift ({len(flagged_out)} had every repetition of "
                             "a side flagged)" if seen["band_pct"] is None else "no case has a change interval",
                             len(cases) + len(flagged_out))
    warnings = [w for w in (few_reps_warning(cases), nothing) if w]
    regressed = any(c["regression"] for c in cases)
    return {
        "mode": "two runs", "old": args.files[0], "new": args.files[1], "metric": args.metric,
        "alpha": ALPHA, "min_change_pct": args.min_change, "cases": cases, "drift": seen,
        "geomean": seen["geomean"], "flagged_reps": old_flagged + new_flagged,
        "all_flagged": [describe(k, old_cases[k][0]) for k in flagged_out],
        "only_in_old": [describe(k, old_cases[k][0]) for k in sorted(set(old_cases) - set(new_cases), key=sort_key)],
        "only_in_new": [describe(k, new_cases[k][0]) for k in sorted(set(new_cases) - set(old_cases), key=sort_key)],
        "warnings": warnings, "nothing_judged": nothing,
        "exit_status": EXIT_REGRESSION if regressed else EXIT_NOTHING_JUDGED if nothing else 0,
    }


def main():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Compare two schedlab result CSVs case by case, or judge one A/B run "
        "(schedlab run --against).", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="CSV",
                        help="OLD.csv NEW.csv (two runs: NEW against OLD), or RUN.csv (one A/B run)")
    parser.add_argument("--metric", default="wall_ns",
                        help="column to compare (default wall_ns; e.g. ns_per_task, cpu_ns)")
    parser.add_argument("--min-change", type=float, default=0.0, metavar="PCT",
                        help="a case slower beyond the drift or noise floor counts as a regression (exit "
                             f"status {EXIT_REGRESSION}) only when its median grew by more than PCT "
                             "percent (default 0)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (every case, the drift or noise floor, warnings, "
                             "exit status) instead of the table; medians in the metric's unit")
    args = parser.parse_args()
    if len(args.files) > 2:
        raise UserError(args.files[2], "one CSV too many",
                        "pass OLD.csv NEW.csv (two runs) or RUN.csv (one A/B run)")

    if len(args.files) == 1:
        results = load(args.files)
        if not ab.is_ab(results):
            raise UserError(args.files[0], "not an A/B run (no rows of build B)",
                            "pass two CSVs, OLD.csv NEW.csv, or one written by schedlab run --against OTHER")
        if args.metric not in results.rows or not is_numeric_dtype(results.rows[args.metric]):
            raise UserError(args.files[0], f"column {args.metric} is absent or not numeric",
                            "choose another --metric (wall_ns is always present)")
        report = ab.report(results, args.files[0], args.metric, args.min_change)
        if not args.json:
            ab.print_text(report, print_table)
    else:
        report = two_runs(args)
        if not args.json:
            in_ms = args.metric.endswith("_ns") and args.metric != "ns_per_task"
            print_text(report, *((1e6, "ms") if in_ms else (1, "")))
    if args.json:
        # Case keys come from pandas as numpy scalars; .item() is their plain Python value.
        print(json.dumps(report, indent=2, default=lambda value: value.item()))
    for line in report["warnings"]:
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    sys.exit(report["exit_status"])


if __name__ == "__main__":
    run(PROG, main)
