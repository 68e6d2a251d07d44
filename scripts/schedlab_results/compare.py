"""scripts/compare OLD.csv NEW.csv: per case present in both, the change of the median with a
bootstrap interval and a Mann-Whitney U test (Holm-corrected over the table), a geometric-mean
line over the cases, and an exit status CI can act on; cases present in only one file are
listed. Text by default, one JSON object with --json."""
import argparse
import json
import math
import sys
from statistics import median

from pandas.api.types import is_numeric_dtype

from .cli import EXIT_USER_ERROR, run
from .load import CASE_KEY, UserError, load, native, natural_key, simulated
from .paired import holm
from .stats import (ALPHA, BOOTSTRAP_RESAMPLES, GEOMEAN_MIN_CASES, MIN_REPS, change_interval,
                    format_p, geometric_mean_change, mwu_p, smallest_p)

PROG = "scripts/compare"
EXIT_REGRESSION = 1  # at least one case is significantly slower (see --help)

EPILOG = f"""exit status:
  0    no case is significantly slower
  {EXIT_REGRESSION}    at least one case is significantly slower: Holm-corrected p < {ALPHA} and
       the median grew by more than --min-change (a regression, for CI)
  {EXIT_USER_ERROR}    bad input: a file that is not a schedlab CSV, a metric that is absent or
       not numeric, no case in both files (one line on stderr, nothing on stdout)
  130  interrupted
Lower is better for every metric ('faster' = lower). Fewer than {MIN_REPS} repetitions on a side
gets a warning on stderr: the test's p cannot get small there."""


def case_values(results, path, metric):
    """{case key: (variant label, [values of the repetitions])}; None when the column is absent
    or empty. Simulated rows count only for the simulator's own columns (sim_*), and then alone:
    their times are Valgrind's. Raises UserError for a column of text, which has no median."""
    rows = results.rows
    rows = rows[simulated(rows)] if metric.startswith("sim_") else native(rows)
    if metric not in rows or rows[metric].isna().all():
        return None
    if not is_numeric_dtype(rows[metric]):
        example = rows[metric].dropna().iloc[0]
        raise UserError(path, f"column {metric} is not numeric (it holds {example!r})",
                        "choose a numeric --metric (wall_ns, ns_per_task, cpu_ns, steals, ...)")
    out = {}
    for key, group in rows.groupby(CASE_KEY, sort=False):
        values = group[metric].dropna().to_list()
        if values:
            out[key] = (group["variant"].iloc[0], values)
    return out


def describe(key, variant):
    _, _, workload, workload_params, threads = key
    plural = "s" if threads != 1 else ""
    return f"{variant} | {workload} {workload_params}".rstrip() + f" | {threads} thread{plural}"


def sort_key(key):
    scheduler, scheduler_params, workload, workload_params, threads = key
    return (workload, natural_key(workload_params), scheduler, scheduler_params, threads)


def compare_case(key, variant, before, after):
    """One case's comparison, as a dict (the JSON form; None where there is no value). p_holm
    and verdict are filled by judge(), which sees the whole table."""
    old_med, new_med = median(before), median(after)
    # A change from a median of 0 has no relative size.
    change = (new_med / old_med - 1) * 100 if old_med != 0 else None
    interval = change_interval(before, after) if old_med != 0 else None
    return {"case": describe(key, variant), **dict(zip(CASE_KEY, key)), "variant": variant,
            "reps_old": len(before), "reps_new": len(after),
            "old_median": old_med, "new_median": new_med, "change_pct": change,
            "interval_pct": list(interval) if interval else None, "p": mwu_p(before, after)}


def judge(cases, min_change):
    """Holm-corrects the table's p-values (the family is every case compared, so that a table of
    60 cases does not flag 3 unchanged ones by chance) and sets each case's verdict and whether
    it counts as a regression: slower at corrected p < ALPHA by more than min_change percent."""
    adjusted = holm([math.nan if c["p"] is None else c["p"] for c in cases])
    for case, p_holm in zip(cases, adjusted):
        case["p_holm"] = None if math.isnan(p_holm) else p_holm
        significant = case["p_holm"] is not None and case["p_holm"] < ALPHA
        if significant:
            case["verdict"] = "faster" if case["new_median"] < case["old_median"] else "slower"
        else:
            case["verdict"] = "no significant change"
        grew = case["change_pct"] is None or case["change_pct"] > min_change
        case["regression"] = case["verdict"] == "slower" and grew


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


def few_reps_warning(cases):
    """One line when a case has fewer than MIN_REPS repetitions on a side, naming the smallest p
    its sizes can reach; None otherwise."""
    few = [c for c in cases if min(c["reps_old"], c["reps_new"]) < MIN_REPS]
    if not few:
        return None
    worst = min(few, key=lambda c: (min(c["reps_old"], c["reps_new"]), c["reps_old"] + c["reps_new"]))
    floor = smallest_p(worst["reps_old"], worst["reps_new"])
    consequence = (f"no change can be significant at {ALPHA}" if floor >= ALPHA else
                   "only the largest changes can be significant, fewer still after Holm's correction")
    return (f"{len(few)} of {len(cases)} cases have fewer than {MIN_REPS} repetitions on a side "
            f"(fewest {worst['reps_old']}/{worst['reps_new']}): p cannot get small there (at best "
            f"{format_p(floor)}), so {consequence}; run more repetitions (--reps {MIN_REPS} or more)")


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
    """The human form of `report` (the dict --json prints)."""
    print(f"{PROG}: {report['old']} -> {report['new']}; metric {report['metric']}"
          f"{f' ({unit})' if unit else ''}, median over repetitions; change interval: 95% "
          f"percentile bootstrap of the change of the median ({BOOTSTRAP_RESAMPLES} resamples); "
          f"p: Mann-Whitney U two-sided, Holm-corrected over the {len(report['cases'])} cases, "
          f"significant at p<{ALPHA}; 'faster'/'slower' read lower as better")
    rows = [[c["case"], f"{c['reps_old']}/{c['reps_new']}", f"{c['old_median'] / scale:.3f}",
             f"{c['new_median'] / scale:.3f}", percent(c["change_pct"]),
             interval_text(c["interval_pct"]), format_p(c["p"]), format_p(c["p_holm"]),
             c["verdict"]] for c in report["cases"]]
    print_table(["case", "reps old/new", "old", "new", "change", "95% interval", "p", "p (Holm)",
                 "verdict"], rows)
    if report["geomean"]:
        g = report["geomean"]
        interval = (f" {interval_text(g['interval_pct'])} (95% bootstrap over cases)"
                    if g["interval_pct"] else f" (no interval: fewer than {GEOMEAN_MIN_CASES} cases)")
        print(f"geometric mean of new/old over {g['cases']} cases: {g['ratio']:.3f}x, "
              f"{percent(g['change_pct'])}{interval}")
    for label, field in (("only in OLD", "only_in_old"), ("only in NEW", "only_in_new")):
        if report[field]:
            print(f"{label} ({len(report[field])}):")
            for case in report[field]:
                print(f"  {case}")
    regressions = [c for c in report["cases"] if c["regression"]]
    if regressions:
        print(f"{len(regressions)} significant regression(s) (exit status {EXIT_REGRESSION}): "
              + "; ".join(c["case"] for c in regressions))


def main():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Compare two schedlab result CSVs case by case.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", help="baseline CSV")
    parser.add_argument("new", help="CSV to compare against the baseline")
    parser.add_argument("--metric", default="wall_ns",
                        help="column to compare (default wall_ns; e.g. ns_per_task, cpu_ns)")
    parser.add_argument("--min-change", type=float, default=0.0, metavar="PCT",
                        help="a significant slowdown counts as a regression (exit status "
                             f"{EXIT_REGRESSION}) only when the median grew by more than PCT "
                             "percent (default 0: any significant slowdown)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (every case, the geometric mean, warnings, "
                             "exit status) instead of the table; medians in the metric's unit")
    args = parser.parse_args()

    old, new = load([args.old]), load([args.new])
    old_cases = case_values(old, args.old, args.metric)
    new_cases = case_values(new, args.new, args.metric)
    for path, cases in ((args.old, old_cases), (args.new, new_cases)):
        if cases is None:
            raise UserError(path, f"column {args.metric} is absent or empty",
                            "choose another --metric (wall_ns is always present)")

    common = sorted(set(old_cases) & set(new_cases), key=sort_key)
    if not common:
        # Nothing compared must not pass a CI gate as "no regression".
        raise UserError(args.new, f"no case is also in {args.old} (a case is the scheduler and its "
                        "parameters, the workload and its parameters, and the threads; a parameter "
                        "added between the two builds changes every case)",
                        "compare runs of the same cases, made by builds with the same parameters")
    cases = [compare_case(key, old_cases[key][0], old_cases[key][1], new_cases[key][1])
             for key in common]
    judge(cases, args.min_change)
    warning = few_reps_warning(cases)
    regressed = any(c["regression"] for c in cases)
    report = {
        "old": args.old, "new": args.new, "metric": args.metric, "alpha": ALPHA,
        "min_change_pct": args.min_change, "cases": cases, "geomean": geometric_mean(cases),
        "only_in_old": [describe(k, old_cases[k][0]) for k in sorted(set(old_cases) - set(new_cases), key=sort_key)],
        "only_in_new": [describe(k, new_cases[k][0]) for k in sorted(set(new_cases) - set(old_cases), key=sort_key)],
        "warnings": [warning] if warning else [],
        "exit_status": EXIT_REGRESSION if regressed else 0,
    }
    if args.json:
        # Case keys come from pandas as numpy scalars; .item() is their plain Python value.
        print(json.dumps(report, indent=2, default=lambda value: value.item()))
    else:
        in_ms = args.metric.endswith("_ns") and args.metric != "ns_per_task"
        print_text(report, *((1e6, "ms") if in_ms else (1, "")))
    for line in report["warnings"]:
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    sys.exit(report["exit_status"])


if __name__ == "__main__":
    run(PROG, main)
