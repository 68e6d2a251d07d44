"""The claims table: the seed articles' claims, judged part by part on paired blocks.

Everything a verdict depends on is in criteria.toml (what is compared, where, on which metric,
the smallest effect that counts); this module only applies it. How a part is judged is written
at the top of criteria.toml; the statistics are in paired.py, the metrics in metrics.py.

Rows left out of every claim: preset "granularity" (a task-size sweep for the granularity
figure; its A/A control still gives the noise floor), thread counts
above the machine's logical CPUs (oversubscribed: a bar like "efficiency near the bound" means
nothing there), and blocks with a flagged repetition (another process took CPU time during it, or
the speed probe found a CPU running slow: load.flagged).
Rows run under Valgrind's simulator count only for the metric that reads the simulator
(metrics.py, `source`): never for a time. The report names what was left out, and which source
judged a part whose metric has more than one.

Every part has a negative control ([part.control]: the same comparison where the claim's cause
is absent, judged by the same rule; a part whose control comes out held is reported broken) and
a history ([[part.history]]); both are checked here when the table is read.
"""
import dataclasses
import datetime
import math
import os
import re
import tomllib
from dataclasses import dataclass, field

import numpy as np

from .load import ELISION, block_key, config_labels, flagged, modal_params, native, parse_params
from .metrics import METRICS, ROOMS
from .paired import hodges_lehmann, holm, signed_rank_p

CRITERIA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "criteria.toml")
ALPHA = 0.05
KINDS = ("ratio", "growth", "difference", "level")
EXPECTS = ("greater", "equivalent", "noninferior", "at_most")
THREADS = ("max", "one", "max-or-one", "all")
HELD, NOT_HELD, INCONCLUSIVE, NOT_MEASURED = "held", "not held", "inconclusive", "not measured"
# A configuration whose blocks ran on CPUs of unequal speed cannot judge a part that compares a
# run at P threads with one at 1 thread (machine_state below); one whose value lies wholly outside
# what its quantity allows stops the part with an error naming the cause (_impossible).
NOT_JUDGED, ERROR = "not judged", "error"
# The fewest blocks that bound a 95% interval (paired.hodges_lehmann: with 5 or fewer it is
# unbounded): a configuration left with fewer after its unequal-CPU blocks is not judged.
MIN_BLOCKS = 6
# A part whose negative control came out held: its effect appears without its cause.
BROKEN = "broken"
# What a control may override, and what a history entry holds (criteria.toml, at the top).
CONTROL_FIELDS = ("where", "workloads", "a", "b", "threads")
HISTORY_FIELDS = {"date": str, "commit": str, "change": str, "after_data": bool, "why": str}


@dataclass(frozen=True)
class Selector:
    scheduler: str
    params: tuple = ()  # (name, value) pairs that differ from the scheduler's defaults

    def describe(self):
        changed = " ".join(f"{k}={v}" for k, v in self.params)
        return self.scheduler + (f" [{changed}]" if changed else "")


@dataclass
class Part:
    claim: str
    name: str
    a: Selector
    b: Selector  # None for kind "level"
    workloads: list
    where: dict
    threads: str
    metric: str
    kind: str
    expect: str
    min_effect: float
    why: str
    only_without_overflow: bool = False
    room: str = ""  # metrics.ROOMS: configurations whose inputs leave the effect too little room are left out
    control: dict = field(default_factory=dict)  # [part.control]: the fields it overrides, and why
    history: list = field(default_factory=list)  # [[part.history]], oldest first
    is_control: bool = False  # this Part is another part's control (controlled())
    # A control keeps its part's room here (its own `room` is cleared): the part's comparison
    # assumed CPUs of equal speed, and so does its control's (needs_equal_cpus).
    part_room: str = ""

    def controlled(self):
        """The part's negative control as a Part: its fields with the control's overrides, no
        room filter (a control is chosen where the effect has no room), no control of its own.
        None when the part has none."""
        if not self.control:
            return None
        changes = {k: v for k, v in self.control.items() if k in CONTROL_FIELDS}
        return dataclasses.replace(self, **changes, room="", control={}, is_control=True, part_room=self.room)

    @property
    def threshold(self):
        """The smallest effect that counts, on the scale of x."""
        if self.kind in ("ratio", "growth"):
            return math.log1p(self.min_effect)
        return self.min_effect


@dataclass
class Criteria:
    noise: dict
    claims: list  # [{"id", "text", "seed"}]
    parts: list
    history: list = field(default_factory=list)  # [[history]]: changes that touched every part


def _selector(spec, where):
    if spec is None:
        return None
    if not isinstance(spec, dict) or "scheduler" not in spec:
        raise ValueError(f"{where}: a variant is {{scheduler = ..., params = {{...}}}}")
    return Selector(spec["scheduler"], tuple(sorted((spec.get("params") or {}).items())))


def _history(entries, where):
    """[[history]] entries, checked: each has every HISTORY_FIELDS key of its type, a date
    YYYY-MM-DD, a commit (a short hash or "this change") and a change that says "before ->
    after" or "created" (with what was created, if it says)."""
    if not isinstance(entries, list):
        raise ValueError(f"{where}: history is a list of [[...history]] tables")
    for k, entry in enumerate(entries, 1):
        missing = [f"{name} ({kind.__name__})" for name, kind in HISTORY_FIELDS.items()
                   if not isinstance(entry.get(name), kind)]
        unknown = sorted(set(entry) - set(HISTORY_FIELDS))
        if missing or unknown:
            raise ValueError(f"{where}: history entry {k}: " + "; ".join(
                filter(None, ["missing or mistyped " + ", ".join(missing) if missing else "",
                              "unknown " + ", ".join(unknown) if unknown else ""])))
        try:
            datetime.date.fromisoformat(entry["date"])
        except ValueError:
            raise ValueError(f"{where}: history entry {k}: date {entry['date']!r} is not YYYY-MM-DD") from None
        if not entry["change"].startswith("created") and "->" not in entry["change"]:
            raise ValueError(f"{where}: history entry {k}: change says 'before -> after' or 'created'")
        if entry["commit"] != "this change" and not re.fullmatch(r"[0-9a-f]{7,40}", entry["commit"]):
            raise ValueError(f"{where}: history entry {k}: commit is a short hash or 'this change'")
    return list(entries)


def _control(spec, where):
    """[part.control], checked: only CONTROL_FIELDS and `why`, with a why; {} when absent."""
    control = spec.get("control")
    if control is None:
        return {}
    unknown = sorted(set(control) - set(CONTROL_FIELDS) - {"why"})
    if unknown or not control.get("why") or not set(control) & set(CONTROL_FIELDS):
        raise ValueError(f"{where}: control overrides one or more of {', '.join(CONTROL_FIELDS)} "
                         f"and says why" + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    out = dict(control)
    for side in ("a", "b"):
        if side in out:
            out[side] = _selector(out[side], where + " control")
    if "workloads" in out:
        out["workloads"] = list(out["workloads"])
    if "where" in out:
        out["where"] = dict(out["where"])
    return out


def load_criteria(path=CRITERIA):
    """Reads and checks the criteria table; a malformed table is a bug, reported as one."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    claims = {c["id"]: c for c in data["claim"]}
    parts = []
    for i, spec in enumerate(data["part"]):
        where = f"{os.path.basename(path)} part {i + 1} ({spec.get('name')})"
        part = Part(spec["claim"], spec["name"], _selector(spec["a"], where),
                    _selector(spec.get("b"), where), list(spec["workloads"]),
                    dict(spec.get("where", {})), spec["threads"], spec["metric"], spec["kind"],
                    spec["expect"], float(spec["min_effect"]), spec["why"],
                    bool(spec.get("only_without_overflow", False)), spec.get("room", ""),
                    _control(spec, where), _history(spec.get("history", []), where))
        checks = [(part.claim in claims, f"claim {part.claim!r}"),
                  (part.metric in METRICS, f"metric {part.metric!r}"),
                  (part.kind in KINDS, f"kind {part.kind!r}"),
                  (part.expect in EXPECTS, f"expect {part.expect!r}"),
                  (part.threads in THREADS, f"threads {part.threads!r}"),
                  (not part.room or part.metric in getattr(ROOMS.get(part.room), "metrics", ()),
                   f"room {part.room!r} for metric {part.metric!r}"),
                  ((part.b is None) == (part.kind == "level"), "b (every kind but level has one)"),
                  (part.expect != "at_most" or part.kind in ("level", "ratio"),
                   "kind for at_most (level or ratio)"),
                  (part.control.get("threads", part.threads) in THREADS, "control threads")]
        problems = [what for ok, what in checks if not ok]
        if problems:
            raise ValueError(f"{where}: unknown or missing " + ", ".join(problems))
        parts.append(part)
    noise = dict(data["noise"])
    noise["a"], noise["b"] = _selector(noise["a"], "noise"), _selector(noise["b"], "noise")
    return Criteria(noise, list(claims.values()), parts,
                    _history(data.get("history", []), f"{os.path.basename(path)} [[history]]"))


# ---- rows -------------------------------------------------------------------------------------

class Rows:
    """The rows claims may use, with what selecting and pairing them needs."""

    def __init__(self, results, sweeps=False):
        """`sweeps`: keep the granularity preset's rows too (the noise floor's A/A control)."""
        rows = results.rows if sweeps else results.rows[results.rows["preset"] != "granularity"]
        # An A/B run's claims are build A's (this binary's); its other builds are compared with
        # it by scripts/compare, not judged.
        if "build" in rows:
            rows = rows[rows["build"].isin(["", "A"])]
        self.rows = rows.assign(
            _params=[parse_params(p) for p in rows["scheduler_params"]],
            _over=_oversubscribed(rows, results.files),
            _flagged=flagged(rows))
        configs = list(zip(self.rows["workload"], self.rows["workload_params"]))
        self.labels = config_labels(set(configs))
        self.defaults = _defaults(results, self.rows)
        self.setup = _setup_parameters(results)
        self.cpu_limits = _cpu_limits(results)

    def matches(self, rows, selector):
        """Mask of rows of `selector`'s variant: its scheduler, its parameters, and every other
        parameter at the scheduler's default; except a parameter that sets up the machine rather
        than the design (pinning, the replica label: the sidecars' `parameters.setup`) and that
        the selector does not name, where every row of the scheduler in `rows` (a configuration)
        has the same value: a preset that pins every case is judged on its pinned rows. Where
        the rows differ in it (an A/A control's two replicas, pinning on against off), the
        default decides, as for any parameter."""
        want = dict(self.defaults.get(selector.scheduler, {}))
        want.update(selector.params)
        mine = rows["scheduler"] == selector.scheduler
        named = {k for k, _ in selector.params}
        for key in self.setup - named:
            if len({p.get(key) for p in rows.loc[mine, "_params"]}) <= 1:
                want.pop(key, None)
        return mine & rows["_params"].map(
            lambda p: all(p.get(k) == v for k, v in want.items() if k in p)
            and all(k in p for k in named))

    def configs(self, workloads, where):
        """(label, rows) of each configuration of `workloads` whose parameters `where` allows
        (a `where` key filters only the workloads that have that parameter)."""
        out = []
        for (workload, params), cfg in self.rows.groupby(["workload", "workload_params"],
                                                          sort=True):
            if workload not in workloads:
                continue
            values = parse_params(params)
            if any(k in values and values[k] not in allowed for k, allowed in where.items()):
                continue
            out.append((self.labels[(workload, params)], cfg))
        return out


def _oversubscribed(rows, files):
    """The harness's `oversubscribed` column; for older CSVs, threads above the logical CPUs
    the sidecar records."""
    if "oversubscribed" in rows and rows["oversubscribed"].notna().any():
        return rows["oversubscribed"].fillna(0).astype(float) > 0
    cpus = {f.csv_path: f.meta.get("machine", {}).get("logical_cpus") for f in files}
    return [bool(cpus.get(s)) and t > cpus[s] for s, t in zip(rows["source"], rows["threads"])]


def _cpu_limits(results):
    """(unequal_ratio, in_turns_ratio): the speed probe's thresholds for CPUs of unequal speed
    and CPUs in turns, as the runs' sidecars record them (harness/speed_probe.hpp, their one
    home); None when no sidecar says (runs older than the absolute probe figures)."""
    for f in results.files:
        probe = f.meta.get("speed_probe") or {}
        if "unequal_ratio" in probe and "in_turns_ratio" in probe:
            return float(probe["unequal_ratio"]), float(probe["in_turns_ratio"])
    return None


def _setup_parameters(results):
    """The parameters the runs' sidecars name as setting up the machine rather than the design
    (`parameters.setup`, from the registry's ParamSpec::machine_setup); none for older runs."""
    names = set()
    for f in results.files:
        setup = (f.meta.get("parameters") or {}).get("setup") or []
        names |= {n for n in setup if isinstance(n, str)}
    return names


def _defaults(results, rows):
    """Each scheduler's parameter defaults: from the sidecars (`parameters`), else the value
    most of its rows use."""
    out = {}
    for f in results.files:
        for name, params in (f.meta.get("parameters", {}).get("schedulers") or {}).items():
            out.setdefault(name, dict(params))
    for scheduler, group in rows.groupby("scheduler"):
        out.setdefault(scheduler, modal_params(group["scheduler_params"]))
    return out


# ---- one part ---------------------------------------------------------------------------------

@dataclass
class ConfigResult:
    config: str
    threads: str
    n: int
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p: float = math.nan
    p_holm: float = math.nan
    verdict: str = INCONCLUSIVE
    flagged: int = 0  # blocks left out for a flagged repetition
    unequal: int = 0  # blocks left out because the CPUs ran at unequal speed (machine_state)
    note: str = ""    # why NOT_JUDGED or ERROR, in one sentence
    workload: str = ""  # the configuration's workload: its family's noise floor applies
    noise: str = ""     # which A/A floor a time effect was judged against ("" none)


@dataclass
class PartResult:
    part: Part
    configs: list = field(default_factory=list)
    left_out: list = field(default_factory=list)  # "config: why"
    verdict: str = NOT_MEASURED
    sources: list = field(default_factory=list)  # where the metric's numbers came from, if it says
    control: "PartResult" = None  # the part's negative control, judged by the same rule
    # The verdict before its control was looked at: a broken part (verdict BROKEN) keeps here
    # what its own interval said.
    own_verdict: str = NOT_MEASURED


def judged_on(pr):
    """'simulated L2, 1 worker' for a part whose metric names its source, else ''."""
    if not pr.sources:
        return ""
    sources = " + ".join(pr.sources)
    threads = sorted({r.threads for r in pr.configs if r.n})
    noun = "worker" if threads == ["1"] else "workers"
    return f"{sources}, {', '.join(threads)} {noun}" if threads else sources


def _thread_choice(mode, counts):
    """The thread count(s) a part compares at, from the counts every side ran unoversubscribed."""
    if not counts:
        return None
    if mode == "one":
        return [1] if 1 in counts else None
    if mode == "all":
        return sorted(counts)
    top = max(counts)
    if mode == "max":
        return [top] if top >= 2 else None
    return [top]


def _blocks(cfg):
    """The blocks of a configuration's rows: the same run, block and repetition."""
    return cfg.groupby(block_key(cfg), sort=True)


def _row(block, mask, threads):
    hit = block[mask.loc[block.index] & (block["threads"] == threads)]
    return hit.iloc[0] if len(hit) else None


def _x(part, metric, block, masks, threads):
    """The part's number for one block, NaN when a side is missing; None when a side is flagged."""
    def value(side, t):
        row = _row(block, masks[side], t)
        if row is None:
            return math.nan, False
        return metric.value(row, block), bool(row["_flagged"])
    if part.kind == "growth":
        values = [value(s, t) for s in ("a", "b") for t in (threads, 1)]
        if any(f for _, f in values):
            return None
        (a_top, _), (a_one, _), (b_top, _), (b_one, _) = values
        return math.log(a_top / b_top) - math.log(a_one / b_one)
    a, flagged = value("a", threads)
    if part.kind == "level":
        reference_flag = bool(block[block["scheduler"] == ELISION]["_flagged"].any()) \
            if part.metric == "efficiency_to_bound" else False
        return None if flagged or reference_flag else a
    b, b_flagged = value("b", threads)
    if flagged or b_flagged:
        return None
    if part.kind == "difference":
        return a - b
    return math.log(a / b) if a > 0 and b > 0 else math.nan


def _overflowed(cfg, mask_a):
    """The root's tasks overflowed its local queue: global-queue pops beyond the root's own."""
    pops = cfg.loc[mask_a & (cfg["threads"] > 1), "global_pops"] if "global_pops" in cfg else None
    return pops is not None and pops.notna().any() and float(pops.median()) > 1


ROOM_FACTOR = 2.0


def _no_room(part, cfg, mask_a, threads):
    """Why a configuration cannot decide the part, or "": its own inputs (the part's `room`)
    allow an effect under ROOM_FACTOR times the smallest that counts. Then even a design that
    did exactly what the claim says would show an effect at the threshold, and the verdict
    would be a coin toss about it, not a test of the claim. Twice, so that an interval of
    half-width up to the threshold around the allowed effect still clears it. Configurations
    whose rows do not say (older CSVs) are judged."""
    if not part.room:
        return ""
    row = _row(cfg, mask_a, threads)
    room = ROOMS[part.room]
    allowed = room.allowed(part.metric, row) if row is not None else math.nan
    need = ROOM_FACTOR * part.threshold
    if math.isnan(allowed) or allowed >= need:
        return ""
    scale = (lambda v: f"{math.exp(v):.3g}×") if part.kind in ("ratio", "growth") else (lambda v: f"{v:.3g}")
    return (f"{room.says} at most {scale(allowed)}, under the {scale(need)} a verdict needs "
            f"({ROOM_FACTOR:g} times the smallest effect that counts)")


def needs_equal_cpus(part):
    """Whether the part compares a run at P threads with one at 1 thread, or judges against a
    bound computed for CPUs of equal speed: a growth from 1 thread, an efficiency against the
    sequential elision (on the first CPU), a static split's room. Such a part is not judged on a
    block whose CPUs ran at unequal speed or in turns (the speed probe, speed_probe.hpp): there
    T_S on a slow CPU against T_P on both put the efficiency above 1 on a fresh cloud VM whose
    second vCPU ran 1.5x slower. A part's control is judged alike: on a slow CPU a static split
    idles on equal tasks too, which would break its part for a cause that is the machine's."""
    return part.kind == "growth" or METRICS[part.metric].needs_equal_cpus or bool(part.room or part.part_room)


def machine_state(block, threads, limits):
    """(spread, together) of the block's rows at `threads`, the largest of each: the slowest of
    their CPUs over the fastest, and the spins at once over the slowest alone (absolute, from
    the speed probe). `limits` = (unequal_ratio, in_turns_ratio) from the sidecars; None for runs
    that do not record them (older CSVs), whose blocks are judged."""
    if limits is None or "probe_spread" not in block:
        return None
    rows = block[block["threads"] == threads]
    spread = float(rows["probe_spread"].max()) if rows["probe_spread"].notna().any() else math.nan
    together = float(rows["probe_together"].max()) \
        if "probe_together" in rows and rows["probe_together"].notna().any() else math.nan
    return spread, together


def _unequal(state, limits):
    if state is None:
        return False
    spread, together = state
    return spread > limits[0] or together > limits[1]


def _cpu_note(states, unequal, blocks, limits):
    """'the CPUs ran at unequal speed in 25 of 25 blocks (slowest/fastest 1.52, median)'."""
    spreads = [s for s, _ in states if not math.isnan(s) and s > limits[0]]
    turns = [t for _, t in states if not math.isnan(t) and t > limits[1]]
    what = []
    if spreads:
        what.append(f"at unequal speed (slowest over fastest {float(np.median(spreads)):.2f}, median)")
    if turns:
        what.append(f"in turns (spins at once {float(np.median(turns)):.2f}x the slowest alone, median)")
    return (f"the CPUs ran {' and '.join(what)} in {unequal} of {blocks} blocks, and a comparison of P "
            f"threads with 1 thread needs CPUs of equal speed running at once")


def evaluate_part(part, rows_):
    result = PartResult(part)
    metric = METRICS[part.metric]
    for label, cfg in rows_.configs(part.workloads, part.where):
        cfg, source = metric.source(cfg)
        if cfg.empty:
            continue  # nothing here measures this metric
        masks = {"a": rows_.matches(cfg, part.a)}
        if part.b is not None:
            masks["b"] = rows_.matches(cfg, part.b)
        if part.metric == "efficiency_to_bound" and not (cfg["scheduler"] == ELISION).any():
            continue
        ran = [set(cfg.loc[m, "threads"]) for m in masks.values()]
        if not all(ran):
            continue  # a variant was not run here: nothing to say
        common = set.intersection(*ran)
        fit = {t for t in common if not cfg.loc[(cfg["threads"] == t), "_over"].any()}
        if common - fit:
            result.left_out.append(f"{label} at {sorted(common - fit)} threads: oversubscribed")
        chosen = _thread_choice("max" if part.kind == "growth" else part.threads, fit)
        if chosen is None or (part.kind == "growth" and 1 not in fit):
            result.left_out.append(f"{label}: no run at the thread counts the part needs")
            continue
        if part.only_without_overflow and _overflowed(cfg, masks["a"]):
            result.left_out.append(f"{label}: the root's queue overflowed to the global queue")
            continue
        for t in chosen:
            if (why := _no_room(part, cfg, masks["a"], t)):
                result.left_out.append(f"{label}, {t} threads: {why}")
                continue
            xs, flagged, states = [], 0, []
            limits = rows_.cpu_limits if needs_equal_cpus(part) and t > 1 else None
            for _, block in _blocks(cfg):
                state = machine_state(block, t, limits)
                if _unequal(state, limits):
                    states.append(state)
                    continue
                x = _x(part, metric, block, masks, t)
                if x is None:
                    flagged += 1
                elif not math.isnan(x):
                    xs.append(x)
            threads = f"1→{t}" if part.kind == "growth" else str(t)
            r = _summarise(ConfigResult(label, threads, len(xs), flagged=flagged, unequal=len(states),
                                        workload=str(cfg["workload"].iloc[0])), xs, part)
            if states and len(xs) < MIN_BLOCKS:
                r.verdict, r.note = NOT_JUDGED, _cpu_note(states, len(states), len(states) + len(xs), limits)
            elif states:
                result.left_out.append(f"{label}, {t} threads: {_cpu_note(states, len(states), len(states) + len(xs), limits)}")
            if r.verdict != NOT_JUDGED and xs:
                if (why := _impossible(part, metric, r, cfg, masks["a"], t, rows_)):
                    r.verdict, r.note = ERROR, why
            result.configs.append(r)
            if source and xs and source not in result.sources:
                result.sources.append(source)
    return result


def _impossible(part, metric, r, cfg, mask_a, threads, rows_):
    """Why the configuration's value cannot be, or "": its whole 95% interval lies outside the
    range its quantity allows, on the part's scale: the metric's own range (metrics.py,
    `allowed`) for a level, that range's widths for a difference, and for a part with a room
    the most its inputs allow (what a static split of these task lengths can lose at all).
    Such a value is never judged: it names the part, the configuration and, where the speed
    probe shows one, the cause."""
    low_ok, high_ok, says = -math.inf, math.inf, ""
    lo, hi = metric.allowed
    if part.kind == "level":
        low_ok, high_ok, says = lo, hi, f"{metric.label} lies in [{lo:g}, {hi:g}]"
    elif part.kind == "difference" and math.isfinite(hi - lo):
        low_ok, high_ok, says = lo - hi, hi - lo, f"a difference of {metric.label}s lies in [{lo - hi:g}, {hi - lo:g}]"
    if part.room and part.metric == "time":  # the room bounds time exactly; an idle share depends on accounting
        row = _row(cfg, mask_a, threads)
        allowed = ROOMS[part.room].allowed(part.metric, row) if row is not None else math.nan
        if math.isfinite(allowed) and allowed < high_ok:
            high_ok = allowed
            scale = f"{math.exp(allowed):.3g}×" if part.kind in ("ratio", "growth") else f"{allowed:.3g}"
            says = f"{ROOMS[part.room].says} at most {scale} on CPUs of equal speed"
    if not (r.low > high_ok or r.high < low_ok):
        return ""
    states = [machine_state(block, threads, rows_.cpu_limits) for _, block in _blocks(cfg)]
    spreads = [s[0] for s in states if s is not None and not math.isnan(s[0])]
    cause = (f"the CPUs' speeds differed (slowest over fastest {float(np.median(spreads)):.2f}, median of its blocks)"
             if spreads and float(np.median(spreads)) > 1.02 else
             "no cause the speed probe shows: check the rows (a measurement outside what the quantity allows)")
    return (f"{part.name}, {r.config} at {r.threads} threads: "
            f"{format_effect(part, r.estimate, r.low, r.high)} is impossible ({says}); cause: {cause}")


def claim_p(part, xs):
    """The one-sided signed-rank p of the claim the part makes, against its null at the
    threshold t (never against "no difference"): greater, H0 x <= t; noninferior, H0 x <= -t;
    equivalent, the larger of the p's of H0 x <= -t and H0 x >= t (two one-sided tests).
    NaN for at_most: a bound, judged on its interval alone, no test."""
    x, t = np.asarray(xs, dtype=float), part.threshold
    if part.expect == "greater":
        return signed_rank_p(x - t, "greater")
    if part.expect == "noninferior":
        return signed_rank_p(x + t, "greater")
    if part.expect == "equivalent":
        return max(signed_rank_p(x + t, "greater"), signed_rank_p(x - t, "less"))
    return math.nan


def _summarise(r, xs, part):
    if not xs:
        return r
    r.estimate, r.low, r.high = hodges_lehmann(xs)
    r.p = claim_p(part, xs)
    return r


# ---- verdicts ---------------------------------------------------------------------------------

def _verdict(part, r, noise_reach):
    """Applies the rule of criteria.toml to one configuration's interval. `noise_reach`: the
    reach of the A/A floor its time effect is judged against (0 for other metrics, or without
    a floor). Noise only raises the bar of a verdict that claims an effect (held for greater;
    not held for equivalent, noninferior and at_most) and lowers none, so a noisier A/A can
    turn a verdict inconclusive but never make one easier."""
    if r.n == 0:
        return NOT_MEASURED
    t = part.threshold
    effect_bar = max(t, noise_reach)  # what an effect must clear
    significant = r.p_holm < ALPHA
    if part.expect == "greater":
        if r.low > effect_bar and significant:
            return HELD
        return NOT_HELD if r.high < t else INCONCLUSIVE
    if part.expect == "at_most":
        if r.high <= t:
            return HELD
        return NOT_HELD if r.low > effect_bar else INCONCLUSIVE
    if part.expect == "equivalent":
        if -t < r.low and r.high < t and significant:
            return HELD
        return NOT_HELD if r.low > effect_bar or r.high < -effect_bar else INCONCLUSIVE
    # noninferior: a is not better than b by more than t (b not worse)
    if r.low > -t and significant:
        return HELD
    return NOT_HELD if r.high < -effect_bar else INCONCLUSIVE


def combine(verdicts):
    """A part's verdict from its configurations': an error if any is one (an impossible value
    stops the part); held only if held in each, not held if not held in any, else inconclusive;
    configurations without data, or not judged (CPUs of unequal speed), do not count; not judged
    when every configuration with data was."""
    if ERROR in verdicts:
        return ERROR
    if not verdicts or all(v == NOT_MEASURED for v in verdicts):
        return NOT_MEASURED
    measured = [v for v in verdicts if v not in (NOT_MEASURED, NOT_JUDGED)]
    if not measured:
        return NOT_JUDGED
    if NOT_HELD in measured:
        return NOT_HELD
    if INCONCLUSIVE in measured:
        return INCONCLUSIVE
    return HELD


def deciding(pr):
    """The configuration whose result decided the part's verdict (combine's rule), or None when
    the part was not measured. Not held or inconclusive: the first configuration with that
    verdict (one such is enough). Held: every configuration had to hold, so the one that held
    by the least: the lowest interval for "greater" and "noninferior" (the same threshold for
    all of a part's configurations), the one reaching furthest from 0 for "equivalent"."""
    verdict = pr.own_verdict  # a broken part is shown by what its own interval said
    mine = [r for r in pr.configs if r.verdict == verdict]
    if verdict == NOT_MEASURED or not mine:
        return None
    if verdict in (NOT_JUDGED, ERROR):
        return mine[0]
    if verdict != HELD:
        return mine[0]
    if pr.part.expect == "equivalent":
        return max(mine, key=lambda r: max(-r.low, r.high))
    return min(mine, key=lambda r: r.low)


@dataclass
class NoiseFloor:
    """The A/A control's log time ratio (estimate and interval over `blocks` blocks) for one
    workload family, or why it is missing: no A/A rows at all, or `flagged` blocks that were all
    left out as flagged."""
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    blocks: int = 0
    flagged: int = 0
    family: str = ""

    @property
    def measured(self):
        return self.blocks > 0

    @property
    def reach(self):
        """How far from 0 the interval reaches (the bar a time effect must clear); 0 unmeasured."""
        return max(abs(self.low), abs(self.high)) if self.measured else 0.0


def noise_families(criteria):
    """{family: its workloads} from [noise] `families`; a table without them (older tests)
    has one family of its `workloads`."""
    spec = criteria.noise
    return dict(spec.get("families") or {"A/A": list(spec.get("workloads", []))})


def noise_floors(criteria, rows_):
    """{family: NoiseFloor}, each pooled over the family's configurations and unoversubscribed
    thread counts."""
    return {family: noise_floor(criteria, rows_, workloads, family)
            for family, workloads in noise_families(criteria).items()}


def widest(floors):
    """The measured floor that reaches furthest, or an unmeasured one (with the flagged blocks
    of all) when none was measured."""
    measured = [f for f in floors.values() if f.measured]
    if measured:
        return max(measured, key=lambda f: f.reach)
    return NoiseFloor(flagged=sum(f.flagged for f in floors.values()))


def floor_for(workload, floors, families):
    """(the NoiseFloor a configuration of `workload` is judged against, how the report names
    it): its own family's when measured, else the widest measured, else none."""
    family = next((f for f, members in families.items() if workload in members), None)
    own = floors.get(family)
    if own is not None and own.measured:
        return own, family
    wide = widest(floors)
    if wide.measured:
        return wide, f"{wide.family} (widest measured; no A/A of {family or workload})"
    return wide, ""


def noise_floor(criteria, rows_, workloads=None, family=""):
    """The A/A control's NoiseFloor over `workloads` (default: every family's)."""
    spec = dict(criteria.noise)
    if workloads is None:
        workloads = [w for members in noise_families(criteria).values() for w in members]
    part = Part("noise", "noise floor", spec["a"], spec["b"], list(workloads), {},
                spec["threads"], spec["metric"], "ratio", "equivalent", 0.0, "")
    xs, flagged = [], 0
    for label, cfg in rows_.configs(part.workloads, part.where):
        cfg = native(cfg)  # a time ratio: simulated rows have Valgrind's times
        masks = {"a": rows_.matches(cfg, part.a), "b": rows_.matches(cfg, part.b)}
        both = set(cfg.loc[masks["a"], "threads"]) & set(cfg.loc[masks["b"], "threads"])
        for t in sorted(t for t in both if not cfg.loc[cfg["threads"] == t, "_over"].any()):
            for _, block in _blocks(cfg):
                x = _x(part, METRICS[part.metric], block, masks, t)
                if x is None:
                    flagged += 1
                elif not math.isnan(x):
                    xs.append(x)
    if not xs:
        return NoiseFloor(flagged=flagged, family=family)
    estimate, low, high = hodges_lehmann(xs)
    return NoiseFloor(estimate, low, high, len(xs), flagged, family)


@dataclass
class ClaimsTable:
    noise: NoiseFloor  # the widest family floor (or why none was measured): the one-line summary
    claims: list
    parts: list  # PartResult, in criteria order
    floors: dict = field(default_factory=dict)  # {family: NoiseFloor}
    history: list = field(default_factory=list)  # criteria's [[history]]: every part's


def _judge(pr, floors, families):
    """Sets each configuration's verdict (its time effect against its family's floor) and the
    part's."""
    timed = METRICS[pr.part.metric].timed and pr.part.kind in ("ratio", "growth")
    for r in pr.configs:
        if r.verdict in (NOT_JUDGED, ERROR):
            continue  # set by evaluate_part: CPUs of unequal speed, or an impossible value
        floor, name = floor_for(r.workload, floors, families) if timed else (NoiseFloor(), "")
        r.noise = name if floor.measured else ""
        r.verdict = _verdict(pr.part, r, floor.reach)
    pr.verdict = pr.own_verdict = combine([r.verdict for r in pr.configs])


def evaluate(results, criteria=None):
    criteria = criteria or load_criteria()
    rows_ = Rows(results)
    # The A/A control is no task-size sweep: a granularity run's noise floor is found too.
    families = noise_families(criteria)
    floors = noise_floors(criteria, Rows(results, sweeps=True))
    parts = [evaluate_part(p, rows_) for p in criteria.parts]
    # Holm's family: the parts' tests. A control's p stays uncorrected (a held control, which
    # breaks its part, comes easier so).
    everything = [r for pr in parts for r in pr.configs]
    for r, adjusted in zip(everything, holm([r.p for r in everything])):
        r.p_holm = adjusted
    for pr in parts:
        _judge(pr, floors, families)
        control = pr.part.controlled()
        if control is not None:
            pr.control = evaluate_part(control, rows_)
            for r in pr.control.configs:
                r.p_holm = r.p
            _judge(pr.control, floors, families)
            if pr.control.verdict == HELD:
                pr.verdict = BROKEN
    return ClaimsTable(widest(floors), criteria.claims, parts, floors, criteria.history)


def as_json(table):
    """The claims table as plain data (scripts/plot writes it as claims.json): the noise floor
    (the widest family's, and each family's), and per part its claim, name, verdict (`broken`
    when its control came out held; `own_verdict` then keeps what its interval said), source,
    every configuration's effect (as the report prints it) and verdict, what was left out, its
    control's result and its history. For scripts that compare verdicts across runs
    (scripts/cotenant) or check which parts and controls a run judged
    (tests/scripts/test_presets.py)."""
    def number(v):
        return v if isinstance(v, (int, float)) and math.isfinite(v) else None

    def floor(noise):
        return {"measured": noise.measured, "blocks": noise.blocks, "flagged": noise.flagged,
                "ratio": math.exp(noise.estimate) if noise.measured else None,
                "low": math.exp(noise.low) if noise.measured else None,
                "high": math.exp(noise.high) if noise.measured else None}

    def result(pr):
        return {"verdict": pr.verdict, "judged_on": judged_on(pr), "left_out": pr.left_out,
                "configs": [{"config": r.config, "threads": r.threads, "blocks": r.n,
                             "flagged_blocks": r.flagged, "unequal_cpu_blocks": r.unequal,
                             "verdict": r.verdict, "note": r.note,
                             "effect": format_effect(pr.part, r.estimate, r.low, r.high),
                             "p_holm": number(r.p_holm), "noise_floor": r.noise}
                            for r in pr.configs]}
    return {
        "noise_floor": floor(table.noise),
        "noise_floors": {family: floor(f) for family, f in table.floors.items()},
        "history": table.history,
        "parts": [{"claim": pr.part.claim, "name": pr.part.name, **result(pr),
                   "own_verdict": pr.own_verdict,
                   "control": None if pr.control is None else
                   {"compared": compared(pr.control.part), "why": pr.part.control.get("why", ""),
                    **result(pr.control)},
                   "history": pr.part.history}
                  for pr in table.parts]}


# ---- how the report shows a result -------------------------------------------------------------

def format_effect(part, estimate, low, high):
    """'1.31x [1.22, 1.40]' for ratios, '+0.21 [0.18, 0.25]' for differences, '0.93 [...]'."""
    def ratio(v):
        return "∞" if v == math.inf else "0" if v == -math.inf else f"{math.exp(v):.3g}"

    def plain(v):
        return "∞" if v == math.inf else "-∞" if v == -math.inf else f"{v:+.3g}"
    if math.isnan(estimate):
        return "n/a"
    if part.kind in ("ratio", "growth"):
        return f"{ratio(estimate)}× [{ratio(low)}, {ratio(high)}]"
    if part.kind == "level":
        return f"{estimate:.3g} [{plain(low).lstrip('+')}, {plain(high).lstrip('+')}]"
    return f"{plain(estimate)} [{plain(low)}, {plain(high)}]"


def format_p(p):
    if math.isnan(p):
        return "n/a"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def compared(part):
    what = METRICS[part.metric].label
    if part.kind == "level":
        bound = "at most" if part.expect == "at_most" else "at least"
        return f"{part.a.describe()}: {what} ({bound} {part.min_effect:g})"
    sign = {"ratio": "÷", "growth": "÷", "difference": "−"}[part.kind]
    growth = ", growth from 1 thread" if part.kind == "growth" else ""
    return f"{part.a.describe()} {sign} {part.b.describe()}: {what}{growth}"
