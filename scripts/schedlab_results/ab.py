"""scripts/compare RUN.csv: one A/B run (`schedlab run --against OTHER`), judged.

Every case of an A/B run was measured by three servers in the same blocks: build A (the binary
that ran the run), A2 (that binary again: the A/A control) and B (OTHER). Per case:
- B / A: the Hodges-Lehmann estimate of the time ratio over the blocks, paired per block, with
  its exact 95% interval (paired.py, as the claims compute it);
- A2 / A: the same for the A/A control.
The noise floor is the largest A2 / A estimate over the cases: how far apart two servers of one
build came out here and now, at worst. A case is slower (faster) when its whole B / A interval
lies above (below) it and above (below) the case's own A2 / A interval; slower by more than
--min-change, and only that, is a regression (exit status 1). Blocks the machine disturbed (the
`noisy` and `slow_cpu` flags) are left out. A run in which no case could be judged exits with
EXIT_NOTHING_JUDGED (3), never as "no regression".
"""
import math

from .cli import EXIT_NOTHING_JUDGED
from .load import CASE_KEY, block_key, flagged, native, natural_key
from .paired import hodges_lehmann
from .stats import more_repetitions_advice

BUILDS = ("A", "A2", "B")
KEY = [k for k in CASE_KEY if k != "build"]  # a case of the run, whichever build measured it
MIN_BLOCKS = 6  # fewer give no bounded 95% interval (paired.py)


def is_ab(results):
    return "build" in results.rows and results.rows["build"].isin(["B"]).any()


def _ratio(estimate):
    """(estimate, low, high) in log space -> the same as ratios; an unbounded end is None."""
    return tuple(math.exp(v) if math.isfinite(v) else None for v in estimate)


def cases(results, metric):
    """One dict per case: its name, blocks, B / A and A2 / A (ratio, low, high), and the blocks
    left out as flagged."""
    rows = native(results.rows)
    rows = rows[rows["build"].isin(BUILDS)]
    out = []
    for key, group in rows.groupby(KEY, sort=False):
        b_over_a, a2_over_a, left_out = [], [], 0
        for _, block in group.groupby(block_key(group), sort=True):
            if flagged(block).any():
                left_out += 1
                continue
            value = {b: block.loc[block["build"] == b, metric] for b in BUILDS}
            if any(v.empty for v in value.values()):
                continue
            a, a2, b = (float(value[x].iloc[0]) for x in BUILDS)
            if a > 0 and a2 > 0 and b > 0:
                b_over_a.append(math.log(b / a))
                a2_over_a.append(math.log(a2 / a))
        variant = group.loc[group["build"] == "A", "variant"]
        name = (variant.iloc[0] if len(variant) else key[0]).replace(" build=A", "")
        scheduler, _, workload, workload_params, threads = key
        out.append({"case": f"{name} | {workload} {workload_params}".rstrip() +
                            f" | {threads} thread{'s' if threads != 1 else ''}",
                    **dict(zip(KEY, key)), "blocks": len(b_over_a), "flagged_blocks": left_out,
                    "b_over_a": _ratio(hodges_lehmann(b_over_a)) if b_over_a else None,
                    "a2_over_a": _ratio(hodges_lehmann(a2_over_a)) if a2_over_a else None})
    out.sort(key=lambda c: (c["workload"], natural_key(c["workload_params"]), c["scheduler"],
                            c["scheduler_params"], c["threads"]))
    return out


def noise_floor(table):
    """How far apart two servers of one build came out here and now: the largest A2 / A
    estimate over the cases, as a factor >= 1 (1.04: within 4% either way), and its case. The
    estimates, not their intervals: a case whose blocks spread widely has a wide interval but
    still a central estimate, and what varies from case to case between two processes (the
    layout of code and data in memory, which stays for a process's life) shows in the estimates.
    (inf, None) without a case that has an A/A estimate."""
    widest, where = math.inf, None
    for c in table:
        if c["a2_over_a"] is None:
            continue
        ratio = c["a2_over_a"][0]
        reach = max(ratio, 1.0 / ratio)
        if where is None or reach > widest:
            widest, where = reach, c["case"]
    return widest, where


def judge(table, floor, min_change):
    """Sets each case's verdict: slower (faster) when its whole B / A interval lies above (below)
    the noise floor [1/floor, floor] and above (below) the case's own A2 / A interval, else
    within the noise floor; and whether it is a regression (slower, by more than min_change
    percent). The second condition keeps a case whose blocks are tight from being called
    slower for a difference its own A/A control shows as well."""
    for c in table:
        own = c["a2_over_a"]
        if c["b_over_a"] is None or own is None or not math.isfinite(floor) or None in c["b_over_a"] or None in own:
            c["verdict"], c["regression"] = "not judged", False
            continue
        ratio, low, high = c["b_over_a"]
        _, own_low, own_high = own
        if low > floor and low > own_high:
            c["verdict"] = "slower"
        elif high < 1.0 / floor and high < own_low:
            c["verdict"] = "faster"
        else:
            c["verdict"] = "within the noise floor"
        c["regression"] = c["verdict"] == "slower" and (ratio - 1.0) * 100.0 > min_change


def ratio_text(r):
    if r is None:
        return "n/a"
    ratio, low, high = r
    bound = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    return f"{ratio:.3f}x{bound}"


def report(results, path, metric, min_change):
    """The A/B run's report as a dict (what --json prints)."""
    table = cases(results, metric)
    floor, where = noise_floor(table)
    judge(table, floor, min_change)
    builds = {}
    for f in results.files:
        for build, info in ((f.meta.get("ab") or {}).get("builds") or {}).items():
            builds[build] = info
    warnings = []
    few = [c for c in table if c["blocks"] < MIN_BLOCKS]
    if few:
        worst = min(few, key=lambda c: c["blocks"])
        advice = more_repetitions_advice(worst["blocks"], worst["blocks"] + worst["flagged_blocks"], MIN_BLOCKS)
        warnings.append(f"{len(few)} of {len(table)} cases have fewer than {MIN_BLOCKS} unflagged blocks "
                        f"(fewest {worst['blocks']}, {worst['case']}): no 95% interval, so they are not "
                        f"judged; {advice}")
    nothing = None
    if all(c["verdict"] == "not judged" for c in table):
        nothing = (f"nothing was judged: none of the {len(table)} cases had {MIN_BLOCKS} unflagged "
                   f"blocks and an A/A estimate; exit status {EXIT_NOTHING_JUDGED}, not a pass")
        warnings.append(nothing)
    regressions = [c for c in table if c["regression"]]
    return {"mode": "A/B run", "run": path, "metric": metric, "min_change_pct": min_change,
            "builds": builds, "cases": table,
            "noise_floor": {"factor": floor if math.isfinite(floor) else None, "widest_case": where},
            "warnings": warnings, "nothing_judged": nothing,
            "exit_status": 1 if regressions else EXIT_NOTHING_JUDGED if nothing else 0}


def print_text(r, table_printer):
    """The human form of report()'s dict."""
    other = (r["builds"].get("B") or {}).get("binary", "the --against binary")
    print(f"scripts/compare: A/B run {r['run']}: B = {other}, A = the binary that ran it, A2 = A again "
          f"(the A/A control); metric {r['metric']}; per case the ratio to A over the blocks, paired "
          "per block (Hodges-Lehmann, exact 95% interval); blocks flagged noisy or slow_cpu left out")
    rows = [[c["case"], str(c["blocks"]) + (f" (+{c['flagged_blocks']} flagged)" if c["flagged_blocks"] else ""),
             ratio_text(c["b_over_a"]), ratio_text(c["a2_over_a"]), c["verdict"]] for c in r["cases"]]
    table_printer(["case", "blocks", "B / A [95%]", "A2 / A [95%]", "verdict"], rows)
    floor = r["noise_floor"]
    if floor["factor"] is None:
        print("noise floor: not found (no case has an A2 / A estimate)")
    else:
        print(f"noise floor: within {(floor['factor'] - 1) * 100:.1f}% either way (the largest A2 / A "
              f"estimate of the {len(r['cases'])} cases: {floor['widest_case']}); a case whose whole B / A "
              "interval lies beyond it and beyond the case's own A2 / A interval is slower or faster")
    regressions = [c for c in r["cases"] if c["regression"]]
    if regressions:
        print(f"{len(regressions)} case(s) slower beyond the noise floor (exit status 1): "
              + "; ".join(c["case"] for c in regressions))
    if r["nothing_judged"]:
        print(f"scripts/compare: {r['nothing_judged']}")
