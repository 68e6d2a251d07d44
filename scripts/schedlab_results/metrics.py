"""The metrics that claim parts are judged on (criteria.toml names them).

A metric maps one CSV row, and the other rows of its block, to one number, or NaN when the row
does not measure it (an empty cell stays unmeasured; it never becomes 0). Counts per task add
one event per run before dividing (`_per_task`), so that a design that never migrates or
never parks has a finite ratio against one that does, instead of a division by zero; with
thousands of tasks per run the added event is invisible next to any real count.

`timed` metrics are times: a ratio of two of them is judged against the run's noise floor too
(the A/A control's time ratio); counts and shares are not.

`source` picks the rows a metric may be judged on, and names where its numbers came from: rows
measured under Valgrind's simulator (`simulated` = 1) count only for the simulated cache
columns, never for a time or a scheduler counter (Valgrind runs one thread at a time).
"""
import math
from dataclasses import dataclass
from typing import Callable

from .load import ELISION, native, parse_params, simulated


@dataclass(frozen=True)
class Metric:
    name: str
    label: str    # how the report names it
    timed: bool   # a time: its ratios are judged against the noise floor too
    value: Callable  # (row, block) -> float; block: the rows of the same block (a DataFrame)
    needs: tuple = ()  # columns without which it is not measured
    # (rows) -> (the rows it may be judged on, the name of their source or ""): native rows
    # unless the metric says otherwise.
    source: Callable = lambda rows: (native(rows), "")
    # The range the quantity allows (claims.py stops a part whose interval lies wholly outside
    # it, as an error naming the cause).
    allowed: tuple = (0.0, math.inf)
    # It compares a run at P threads with one at 1 thread (claims.needs_equal_cpus).
    needs_equal_cpus: bool = False


def _cell(row, column):
    value = row.get(column, math.nan)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _per_task(column):
    def value(row, _block):
        count, tasks = _cell(row, column), _cell(row, "tasks")
        return (count + 1.0) / tasks if tasks > 0 else math.nan
    return value


def _scaled(column, unit):
    """The column in `unit`s (1e3: ns to µs)."""
    return lambda row, _block: _cell(row, column) / unit


def _extra_threads(row, _block):
    """Worker threads beyond the P ones (threads_created is a gauge: the most the scheduler had
    started by the end of the repetition)."""
    return _cell(row, "threads_created") - _cell(row, "threads")


def _connections(row):
    """netmix's --conns, from the row's workload parameters (the loader keeps no parameter
    columns); NaN for a workload without it."""
    try:
        return float(parse_params(row.get("workload_params", "")).get("conns", math.nan))
    except (TypeError, ValueError):
        return math.nan


def _live_tasks_per_connection(row, _block):
    """The peak of live tasks, the root left out, per connection: under os-threads each live
    task is a thread of its own."""
    conns = _connections(row)
    return (_cell(row, "peak_live_tasks") - 1.0) / conns if conns > 0 else math.nan


def _round_trips(row):
    """pingpong's round trips (--rounds x --pairs), from the row's workload parameters; NaN for
    any other workload."""
    if row.get("workload") != "pingpong":
        return math.nan
    try:
        p = parse_params(row.get("workload_params", ""))
        return float(p["rounds"]) * float(p["pairs"])
    except (KeyError, TypeError, ValueError):
        return math.nan


def _round_trip_ns(row, _block):
    """Wall time per round trip of a token between two tasks: two hand-offs, each a park of one
    task and a ready of the other (a thread switch each under os-threads)."""
    trips = _round_trips(row)
    return _cell(row, "wall_ns") / trips if trips > 0 else math.nan


def _per_round_trip(column):
    """A count per pingpong round trip, one event added (as _per_task), so that a design that
    never counts one has a finite ratio against one that does."""
    def value(row, _block):
        trips = _round_trips(row)
        return (_cell(row, column) + 1.0) / trips if trips > 0 else math.nan
    return value


def _idle_share(row, _block):
    return _cell(row, "idle_ns") / (_cell(row, "wall_ns") * _cell(row, "threads"))


def _parks_per_task(row, _block):
    tasks = _cell(row, "tasks")
    return (_cell(row, "parks") + _cell(row, "unparks") + 1.0) / tasks if tasks > 0 else math.nan


# Where cache misses per task come from, in order of preference: the core's own L2 counted by the
# PMU, else Valgrind's simulated last level (the per-core L2's geometry by default).
CACHE_SOURCES = (("papi_l2_dcm", "PAPI L2", False), ("sim_ll_misses", "simulated L2", True))


def _cache_misses_per_task(row, _block):
    """The core's own cache: PAPI's L2 data misses where the machine counted them, else the
    simulator's last-level data misses (Valgrind, as configured for the run). A simulated row
    has only the simulator's: events are not counted under Valgrind."""
    tasks = _cell(row, "tasks")
    for column, _, _ in CACHE_SOURCES:
        misses = _cell(row, column)
        if not math.isnan(misses):
            return misses / tasks if tasks > 0 else math.nan
    return math.nan


def cache_source(rows):
    """The rows cache misses are judged on, and their source: PAPI's L2 where any native row
    has it, else the simulator's rows. One source for all the rows given, so that no comparison
    mixes a hardware count with a simulated one."""
    for column, label, from_simulator in CACHE_SOURCES:
        if column not in rows:
            continue
        mine = rows[simulated(rows) == from_simulator]
        mine = mine[mine[column].notna()]
        if not mine.empty:
            return mine, label
    return rows.iloc[0:0], ""


def _best_busy_share(row):
    """The busy share of the best schedule the task lengths allow: min(1, W / (P x Lmax))
    (`work_span_ratio` = W / Lmax)."""
    return min(1.0, _cell(row, "work_span_ratio") / _cell(row, "threads"))


def _efficiency_to_bound(row, block):
    """Parallel efficiency T_S / (P x T_P) over the best the task lengths allow,
    min(1, W / (P x Lmax)) (`work_span_ratio` = W / Lmax). T_S: the sequential elision's time in
    the same block (the program with every spawn a plain call, as work-stealing theory defines
    T_S), so both were measured in the same moment of the machine."""
    elision = block[block["scheduler"] == ELISION]
    if elision.empty:
        return math.nan
    efficiency = _cell(elision.iloc[0], "wall_ns") / (_cell(row, "threads") * _cell(row, "wall_ns"))
    return efficiency / _best_busy_share(row)


def _static_split_loss(metric, row):
    """What a static split (task i on processor i mod P, fair's rule) must lose on the row's
    task lengths, on the scale a part judges `metric` on: from `round_robin_ratio` (the split's
    makespan over the best possible, computed by the workload from the lengths; nothing
    measured). time: log of that ratio. idle_share: the split's idle share minus the best
    schedule's, bound x (1 - 1/ratio), where bound = min(1, W / (P x Lmax)) is the busy share
    of the best schedule. NaN where the row does not say."""
    ratio = _cell(row, "round_robin_ratio")
    if metric == "time":
        return math.log(ratio) if ratio > 0 else math.nan
    if metric == "idle_share":
        return _best_busy_share(row) * (1.0 - 1.0 / ratio) if ratio > 0 else math.nan
    raise ValueError(f"room 'static_split' has no prediction for metric {metric!r}")  # load_criteria refuses it


@dataclass(frozen=True)
class Room:
    """What a configuration's own inputs allow a part's effect to be, computed, not measured
    (criteria.toml, `room`)."""
    allowed: Callable  # (metric, row) -> the largest effect, on the part's scale
    says: str          # how the report names it: "... at most 1.1×"
    metrics: tuple     # the metrics it predicts


ROOMS = {"static_split": Room(_static_split_loss, "a static split of its task lengths loses",
                              ("time", "idle_share"))}


METRICS = {m.name: m for m in [
    Metric("time", "time", True, lambda r, b: _cell(r, "wall_ns"), ("wall_ns",)),
    Metric("per_task", "time per task", True, lambda r, b: _cell(r, "ns_per_task"),
           ("ns_per_task",)),
    Metric("idle_share", "idle share of processor time", False, _idle_share, ("idle_ns",),
           allowed=(0.0, 1.0)),
    Metric("live_tasks", "peak live tasks", False, lambda r, b: _cell(r, "peak_live_tasks"),
           ("peak_live_tasks",)),
    Metric("migrations_per_task", "migrations per task", False, _per_task("migrations"),
           ("migrations",)),
    Metric("parks_per_task", "parks + unparks per task", False, _parks_per_task,
           ("parks", "unparks")),
    Metric("voluntary_switches_per_task", "voluntary context switches per task", False,
           _per_task("ru_nvcsw"), ("ru_nvcsw",)),
    Metric("steals_per_task", "steals per task", False, _per_task("steals"), ("steals",)),
    Metric("tasks_stolen_per_task", "tasks stolen per task", False, _per_task("tasks_stolen"),
           ("tasks_stolen",)),
    Metric("tasks_stolen", "tasks stolen per run", False,
           lambda r, b: _cell(r, "tasks_stolen"), ("tasks_stolen",)),
    Metric("cache_misses_per_task", "cache misses per task", False, _cache_misses_per_task,
           (), cache_source),
    Metric("efficiency_to_bound", "efficiency / best possible", False, _efficiency_to_bound,
           ("work_span_ratio",), allowed=(0.0, 1.0), needs_equal_cpus=True),
    Metric("extra_threads", "worker threads beyond P", False, _extra_threads, ("threads_created",),
           allowed=(-math.inf, math.inf)),
    Metric("live_tasks_per_connection", "peak live tasks (threads) per connection", False,
           _live_tasks_per_connection, ("peak_live_tasks",)),
    Metric("round_trip_ns", "ns per ping-pong round trip", True, _round_trip_ns, ("wall_ns",)),
    Metric("voluntary_switches_per_round_trip", "voluntary context switches per round trip", False,
           _per_round_trip("ru_nvcsw"), ("ru_nvcsw",)),
    Metric("migrations_per_round_trip", "migrations per round trip", False,
           _per_round_trip("migrations"), ("migrations",)),
    # Latency (docs/latency.md): percentiles of one repetition's delays, read from its row. Not
    # `timed`: the A/A control's noise floor is of a run's wall time, not of a tail of waits; the
    # parts on them ask for effects of a quarter or a doubling instead.
    Metric("delay_p50", "scheduling delay p50 (µs)", False, _scaled("delay_p50_ns", 1e3), ("delay_p50_ns",)),
    Metric("delay_p99", "scheduling delay p99 (µs)", False, _scaled("delay_p99_ns", 1e3), ("delay_p99_ns",)),
    Metric("delay_max", "longest scheduling delay (ms)", False, _scaled("delay_max_ns", 1e6), ("delay_max_ns",)),
    Metric("request_p99", "request latency p99, open loop (µs)", False, _scaled("request_p99_ns", 1e3),
           ("request_p99_ns",)),
]}
