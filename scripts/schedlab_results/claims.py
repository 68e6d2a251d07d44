"""The claims table: the seed articles' claims about schedulers, each tested against the data.
A claim without data says which preset of harness/presets.json provides it.

Every claim compares two scheduler variants on the same workload configuration at the largest
thread count both were run with. When several configurations qualify, a part of a claim holds
only if it holds in every one of them. Rows of preset "granularity" are left out: that sweep
varies task size on purpose and belongs to figure 5.
"""
from dataclasses import dataclass

from .load import config_labels, parse_params
from .stats import (ALPHA, MIN_REPS, efficiency, efficiency_reference, format_p, mwu_p, per_task,
                    summarise)

SKEWED = ("one-long", "heavy-tail")


@dataclass
class Claim:
    text: str
    evidence: str
    p_value: str
    verdict: str


@dataclass
class Match:
    """The rows of each compared variant for one workload configuration and thread count."""
    config: str
    threads: int
    sides: dict  # variant label -> rows

    @property
    def few_reps(self):
        return min(len(r) for r in self.sides.values()) < MIN_REPS

    def median(self, variant, values):
        """Median over the variant's rows of a column, or of values(rows); None if unmeasured."""
        rows = self.sides[variant]
        if callable(values):
            v = values(rows)
        elif values in rows:
            v = rows[values]
        else:
            return None
        return float(v.median()) if v is not None and v.notna().any() else None


def baseline_variant(rows, scheduler):
    """The variant label of a scheduler's usual configuration: the one without bracketed
    changes (load._variant_labels), else the one with the most rows."""
    mine = rows[rows["scheduler"] == scheduler]
    if mine.empty:
        return None
    if (mine["variant"] == scheduler).any():
        return scheduler
    return mine["variant"].value_counts().index[0]


def paired_variants(rows, scheduler, key, a, b):
    """Labels (A, B) of two variants of `scheduler` that differ only in `key` (= a, = b),
    preferring the pair whose A is the usual configuration."""
    mine = rows[rows["scheduler"] == scheduler].drop_duplicates("scheduler_params")
    by_params = {tuple(sorted(parse_params(p).items())): v
                 for p, v in zip(mine["scheduler_params"], mine["variant"])}
    pairs = []
    for params, variant in by_params.items():
        d = dict(params)
        if d.get(key) != a:
            continue
        other = by_params.get(tuple(sorted({**d, key: b}.items())))
        if other is not None:
            pairs.append((variant != scheduler, variant, other))
    return min(pairs)[1:] if pairs else None


def matches(rows, required, optional=()):
    """Per workload configuration: a Match at the largest thread count that every `required`
    variant ran; the `optional` variants that ran it too join the Match. None stands for a
    scheduler absent from the data and makes a required side missing."""
    found = []
    optional = [v for v in optional if v is not None]
    for workload, params in sorted(set(zip(rows["workload"], rows["workload_params"]))):
        cfg = rows[(rows["workload"] == workload) & (rows["workload_params"] == params)]
        threads_of = {v: set(cfg.loc[cfg["variant"] == v, "threads"])
                      for v in (*required, *optional)}
        common = set.intersection(*(threads_of[v] for v in required))
        if not common:
            continue
        t = max(common)
        sides = {v: cfg[(cfg["variant"] == v) & (cfg["threads"] == t)]
                 for v in (*required, *optional) if t in threads_of[v]}
        found.append(Match(cfg["config"].iloc[0], t, sides))
    return found


def verdict(parts, few_reps):
    """Combines part results {name: "held" | "not held" | "not held: <detail>" |
    "needs hardware counters" | "not measured"} into the table's verdict."""
    held = [n for n, s in parts.items() if s == "held"]
    not_held = [(n, s) for n, s in parts.items() if s.startswith("not held")]
    if len(held) == len(parts):
        text = "held"
    elif len(not_held) == len(parts) == 1 and not_held[0][1] == "not held":
        text = "not held"
    else:
        pieces = [f"held ({', '.join(held)})"] if held else []
        if not_held:
            pieces.append("not held (" + "; ".join(
                n if s == "not held" else f"{n}: {s[len('not held: '):]}" for n, s in not_held) + ")")
        pieces += [f"{n}: {s}" for n, s in parts.items()
                   if s != "held" and not s.startswith("not held")]
        text = "; ".join(pieces)
    return text + (f" (n<{MIN_REPS} reps)" if few_reps and (held or not_held) else "")


def all_configs(results_per_match, matches_=None):
    """A part holds only if it holds in every configuration. Given the matches, a part that
    holds in some configurations and not in others says which did not hold."""
    if all(results_per_match):
        return "held"
    if matches_ is None or not any(results_per_match):
        return "not held"
    failed = [m.config for m, ok in zip(matches_, results_per_match) if not ok]
    return (f"not held: held in {len(results_per_match) - len(failed)} of "
            f"{len(results_per_match)} configurations, not in {', '.join(failed)}")


def num(x, spec):
    """x formatted, or "n/a" when it was not measured."""
    return "n/a" if x is None else format(x, spec)


def ms(ns):
    return "n/a" if ns is None else f"{ns / 1e6:.2f} ms"


def change(new, old):
    return f"{(new / old - 1) * 100:+.0f}%" if new is not None and old else "n/a"


def reps(m):
    return "n=" + "/".join(str(len(r)) for r in m.sides.values())


def not_measured(text, preset):
    return Claim(text, "no matching rows", "n/a", f"not measured (run preset {preset})")


def claim_fair_idle(rows):
    """Two parts: that fair leaves a processor idle (its idle time per run is significantly
    larger than steal-half's, which can move tasks), and that steal-half is faster there. Both can
    fail where even steal-half starts the long task late (LIFO order runs the oldest task, the long
    one in one-long, last)."""
    text = "fair split leaves a processor idle when tasks are unequal"
    skewed = rows[(rows["workload"] == "loops") &
                  rows["workload_params"].map(lambda p: parse_params(p).get("skew") in SKEWED)]
    fair, steal = baseline_variant(rows, "fair"), baseline_variant(rows, "steal-half")
    found = matches(skewed, [steal, fair])
    if not found:
        return not_measured(text, "quick")
    evidence, ps, idles, faster = [], [], [], []
    for m in found:
        p = mwu_p(m.sides[steal]["wall_ns"], m.sides[fair]["wall_ns"])
        s_med, f_med = m.median(steal, "wall_ns"), m.median(fair, "wall_ns")
        idle, s_idle = m.median(fair, "idle_ns"), m.median(steal, "idle_ns")
        measured = idle is not None and s_idle is not None
        p_idle = mwu_p(m.sides[fair]["idle_ns"], m.sides[steal]["idle_ns"]) if measured else None
        share = None if idle is None or not f_med else idle / (f_med * m.threads)
        evidence.append(f"{m.config}, {m.threads} threads, {reps(m)}: steal-half {ms(s_med)} vs "
                        f"fair {ms(f_med)} ({change(s_med, f_med)}); idle/run fair {ms(idle)}"
                        f" ({num(None if share is None else share * 100, '.0f')}% of processor "
                        f"time), steal-half {ms(s_idle)}")
        ps.append(f"{m.config}: time {format_p(p)}, idle {format_p(p_idle)}")
        idles.append(None if not measured else p_idle is not None and p_idle < ALPHA and idle > s_idle)
        faster.append(p is not None and p < ALPHA and s_med < f_med)
    parts = {"fair idles more": "not measured" if None in idles else all_configs(idles, found),
             "steal-half faster": all_configs(faster, found)}
    return Claim(text, "; ".join(evidence), "; ".join(ps),
                 verdict(parts, any(m.few_reps for m in found)))


def claim_central_cost(rows):
    text = "one central queue costs more per task and spreads related tasks across cores"
    fib = rows[rows["workload"].isin(["fib", "fib-go"])]
    central, steal = baseline_variant(rows, "central"), baseline_variant(rows, "steal-half")
    found = matches(fib, [central, steal])
    if not found:
        return not_measured(text, "quick")
    evidence, ps, cost, spread = [], [], [], []
    for m in found:
        p = mwu_p(m.sides[central]["ns_per_task"], m.sides[steal]["ns_per_task"])
        c_med, s_med = m.median(central, "ns_per_task"), m.median(steal, "ns_per_task")
        c_mig = m.median(central, lambda r: per_task(r, "migrations"))
        s_mig = m.median(steal, lambda r: per_task(r, "migrations"))
        mig_text = ("not measured" if c_mig is None or s_mig is None
                    else f"central {c_mig:.3f} vs steal-half {s_mig:.3f}")
        evidence.append(f"{m.config}, {m.threads} threads, {reps(m)}: central "
                        f"{num(c_med, '.0f')} vs steal-half {num(s_med, '.0f')} ns/task "
                        f"({change(c_med, s_med)}); "
                        f"migrations/task {mig_text}")
        ps.append(f"{m.config}: {format_p(p)}")
        cost.append(p is not None and p < ALPHA and c_med > s_med)
        spread.append(None if c_mig is None or s_mig is None else c_mig > s_mig)
    parts = {"cost per task": all_configs(cost, found),
             "migrations": "not measured" if None in spread else all_configs(spread, found)}
    return Claim(text, "; ".join(evidence), "; ".join(ps),
                 verdict(parts, any(m.few_reps for m in found)))


def claim_lifo(rows, results):
    text = ("the owner's LIFO pop keeps data in cache, joins earlier and keeps fewer tasks "
            "alive")
    pair = paired_variants(rows, "steal-half", "local-order", "lifo", "fifo")
    if pair is None:
        return not_measured(text, "locality")
    lifo, fifo = pair
    central = baseline_variant(rows, "central")
    work = rows[rows["workload"].isin(["locality", "matmul", "fib"])]
    found = matches(work, [lifo, fifo], [central])
    if not found:
        return not_measured(text, "locality")
    cache_column = next((c for c in ("papi_l2_dcm", "papi_l1_dcm") if results.measured(c)), None)
    evidence, ps, time, live, cache = [], [], [], [], []
    for m in found:
        others = [v for v in m.sides if v != lifo]
        names = ["lifo"] + ["fifo" if v == fifo else "central" for v in others]
        walls = [m.median(v, "wall_ns") for v in (lifo, *others)]
        lives = [m.median(v, "peak_live_tasks") for v in (lifo, *others)]
        p_time = {v: mwu_p(m.sides[lifo]["wall_ns"], m.sides[v]["wall_ns"]) for v in others}
        time.append(all(p is not None and p < ALPHA and walls[0] < w
                        for p, w in zip(p_time.values(), walls[1:])))
        live.append(None if None in lives else all(lives[0] < x for x in lives[1:]))
        line = (f"{m.config}, {m.threads} threads, {reps(m)}: wall {' / '.join(names)} "
                f"{' / '.join(ms(w) for w in walls)}; peak live tasks "
                f"{' / '.join(num(x, '.0f') for x in lives)}")
        p_text = ", ".join(f"{'fifo' if v == fifo else 'central'} {format_p(p)}"
                           for v, p in p_time.items())
        if cache_column:
            misses = [m.median(v, lambda r: per_task(r, cache_column)) for v in (lifo, *others)]
            lifo_misses = per_task(m.sides[lifo], cache_column)
            p_cache = [mwu_p(lifo_misses, per_task(m.sides[v], cache_column)) for v in others]
            cache.append(None if None in misses else
                         all(p is not None and p < ALPHA and misses[0] < x
                             for p, x in zip(p_cache, misses[1:])))
            line += (f"; {cache_column}/task "
                     f"{' / '.join(num(x, '.2f') for x in misses)}")
            p_text += "; cache " + ", ".join(format_p(p) for p in p_cache)
        else:
            line += "; cache misses not measured"
        evidence.append(line)
        ps.append(f"{m.config}: {p_text}")
    parts = {"time": all_configs(time, found),
             "live tasks": "not measured" if None in live else all_configs(live, found),
             "cache": ("needs hardware counters" if not cache_column or None in cache
                       else all_configs(cache, found))}
    return Claim(text, "; ".join(evidence), "; ".join(ps),
                 verdict(parts, any(m.few_reps for m in found)))


def claim_steal_balances(rows):
    """Balance: steal-half's parallel efficiency on the skewed loops. Stealing: that the
    balance came from steals, judged only where stealing was the one way for work to leave the
    spawning processor. Where the root's tasks overflowed its local queue (more tasks than the
    capacity, 256), the other processor found them in the global queue instead, and such a
    configuration says nothing about stealing."""
    text = "stealing half from a random victim balances load"
    skewed = rows[(rows["workload"] == "loops") &
                  rows["workload_params"].map(lambda p: parse_params(p).get("skew") in SKEWED)]
    steal, fair = baseline_variant(rows, "steal-half"), baseline_variant(rows, "fair")
    found = [m for m in matches(skewed, [steal], [fair]) if m.threads > 1]
    if not found:
        return not_measured(text, "quick")
    medians = summarise(rows, "wall_ns")
    evidence, balanced, stole, used = [], [], [], []
    for m in found:
        effs = {}
        for variant, part in m.sides.items():
            first = part.iloc[0]
            ref, kind = efficiency_reference(medians, first["scheduler"], first["scheduler_params"],
                                             first["workload"], first["workload_params"])
            if ref is not None:
                effs[variant] = (efficiency(ref, m.threads, m.median(variant, "wall_ns")), kind)
        if steal not in effs:
            continue
        stolen = m.median(steal, "tasks_stolen")
        global_pops = m.median(steal, "global_pops")
        overflowed = global_pops is not None and global_pops > 1  # more than the root
        eff_text = ", ".join(f"{v} {e:.2f} (vs {kind})" for v, (e, kind) in effs.items())
        evidence.append(f"{m.config}, {m.threads} threads, {reps(m)}: efficiency {eff_text}; "
                        f"steal-half tasks stolen/run {num(stolen, '.0f')}, global-queue "
                        f"pops/run {num(global_pops, '.0f')}"
                        + (" (overflowed: not evidence of stealing)" if overflowed else ""))
        used.append(m)
        balanced.append(effs[steal][0] >= 0.8)
        if not overflowed:
            stole.append(None if stolen is None else stolen > 0)
    if not evidence:
        return not_measured(text, "quick")
    if not stole:
        steals = "not measured (every configuration overflowed to the global queue; run loops " \
                 "with at most 256 tasks)"
    else:
        steals = "not measured" if None in stole else all_configs(stole)
    parts = {"efficiency >= 0.8": all_configs(balanced, used), "steals": steals}
    return Claim(text, "; ".join(evidence), "n/a (threshold on efficiency, no test)",
                 verdict(parts, any(m.few_reps for m in found)))


def claim_handoff(rows):
    text = "handing off the P keeps the CPUs busy while a task blocks in I/O"
    pair = paired_variants(rows, "steal-half", "handoff", "on", "off")
    iomix = rows[rows["workload"] == "iomix"]
    if pair is None or iomix.empty:
        return not_measured(text, "io")
    on, off = pair
    cold = iomix[iomix["workload_params"].map(lambda p: parse_params(p).get("cold") == "on")]
    found = matches(cold, [on, off]) or matches(iomix, [on, off])
    if not found:
        return not_measured(text, "io")

    def utilisation(r):
        return r["cpu_ns"] / (r["wall_ns"] * r["threads"]) if "cpu_ns" in r else None

    evidence, ps, held = [], [], []
    for m in found:
        p = mwu_p(m.sides[on]["wall_ns"], m.sides[off]["wall_ns"])
        on_med, off_med = m.median(on, "wall_ns"), m.median(off, "wall_ns")
        u_on, u_off = m.median(on, utilisation), m.median(off, utilisation)
        util = "not measured" if u_on is None or u_off is None else f"{u_on:.2f} vs {u_off:.2f}"
        evidence.append(f"{m.config}, {m.threads} threads, {reps(m)}: handoff=on {ms(on_med)} vs "
                        f"off {ms(off_med)} ({change(on_med, off_med)}); CPU utilisation {util}")
        ps.append(f"{m.config}: {format_p(p)}")
        held.append(p is not None and p < ALPHA and on_med < off_med)
    return Claim(text, "; ".join(evidence), "; ".join(ps),
                 verdict({"wall time": all_configs(held, found)}, any(m.few_reps for m in found)))


def evaluate(results):
    rows = results.rows[results.rows["preset"] != "granularity"]
    # Labels name what differs between all configurations of a workload (e.g. cold=on), even
    # where a claim looks at a subset of them.
    configs = list(zip(rows["workload"], rows["workload_params"]))
    labels = config_labels(set(configs))
    rows = rows.assign(config=[labels[c] for c in configs])
    return [claim_fair_idle(rows), claim_central_cost(rows), claim_lifo(rows, results),
            claim_steal_balances(rows), claim_handoff(rows)]
