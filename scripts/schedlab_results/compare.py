"""scripts/compare OLD.csv NEW.csv: per case present in both, the change of the median with a
bootstrap interval and a Mann-Whitney U test; cases present in only one file are listed."""
import argparse
from statistics import median

from pandas.api.types import is_numeric_dtype

from .cli import run
from .load import CASE_KEY, UserError, load, native, natural_key, simulated
from .stats import ALPHA, change_interval, format_p, mwu_p

PROG = "scripts/compare"


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


def print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def main():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Compare two schedlab result CSVs case by case.")
    parser.add_argument("old", help="baseline CSV")
    parser.add_argument("new", help="CSV to compare against the baseline")
    parser.add_argument("--metric", default="wall_ns",
                        help="column to compare (default wall_ns; e.g. ns_per_task, cpu_ns)")
    args = parser.parse_args()

    old, new = load([args.old]), load([args.new])
    old_cases = case_values(old, args.old, args.metric)
    new_cases = case_values(new, args.new, args.metric)
    for path, cases in ((args.old, old_cases), (args.new, new_cases)):
        if cases is None:
            raise UserError(path, f"column {args.metric} is absent or empty",
                            "choose another --metric (wall_ns is always present)")

    in_ms = args.metric.endswith("_ns") and args.metric != "ns_per_task"
    scale, unit = (1e6, "ms") if in_ms else (1, "")
    rows = []
    for key in sorted(set(old_cases) & set(new_cases), key=sort_key):
        variant, before = old_cases[key]
        _, after = new_cases[key]
        old_med, new_med = median(before), median(after)
        interval = change_interval(before, after) if old_med != 0 else None
        p = mwu_p(before, after)
        if p is not None and p < ALPHA:
            verdict = "faster" if new_med < old_med else "slower"
        else:
            verdict = "no significant change"
        # A change from a median of 0 has no relative size.
        change = f"{(new_med / old_med - 1) * 100:+.1f}%" if old_med != 0 else "n/a (median 0)"
        rows.append([describe(key, variant), f"{len(before)}/{len(after)}",
                     f"{old_med / scale:.3f}", f"{new_med / scale:.3f}", change,
                     f"[{interval[0]:+.1f}%, {interval[1]:+.1f}%]" if interval else "n/a",
                     format_p(p), verdict])

    print(f"{PROG}: {args.old} -> {args.new}; metric {args.metric}{f' ({unit})' if unit else ''}, "
          "median over repetitions; change interval: 95% percentile bootstrap of the change of "
          f"the median (2000 resamples); p: Mann-Whitney U two-sided, significant at p<{ALPHA}; "
          "'faster'/'slower' read lower as better")
    if rows:
        print_table(["case", "reps old/new", "old", "new", "change", "95% interval", "p",
                     "verdict"], rows)
    else:
        print("no case is present in both files")
    for label, mine, other in (("only in OLD", old_cases, new_cases),
                               ("only in NEW", new_cases, old_cases)):
        only = sorted(set(mine) - set(other), key=sort_key)
        if only:
            print(f"{label} ({len(only)}):")
            for key in only:
                print(f"  {describe(key, mine[key][0])}")


if __name__ == "__main__":
    run(PROG, main)
