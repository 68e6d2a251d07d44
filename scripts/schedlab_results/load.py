"""Reading schedlab CSVs and their .meta.json sidecars into one table.

Conventions the rest of the package relies on:
- the columns are described by the sidecar's `schema` (written by `schedlab run` from
  harness/row.cpp, the one definition of the columns): each has a group (`id`, `param`,
  `result`, and one group per kind of counter). Nothing here lists the columns again; a CSV
  without a sidecar schema is read by position (the parameter columns lie between
  `workload_params` and `wall_ns`);
- an empty cell is "not measured" and becomes NaN, never 0;
- parameter values are read from the `scheduler_params` / `workload_params` strings
  ("key=value key=value", keys as on the command line); the per-parameter columns are dropped,
  because a parameter may share its name with a result column (loops' `tasks` parameter and the
  `tasks` result);
- every column that is not an identification or a parameter is numeric and optional;
- each row's latency distributions, when the run kept them (NAME.latency.jsonl), are in the
  object columns `_sched_delay` and `_request` (latency.py), None where the row has none.
"""
import csv
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from . import latency

# The columns these scripts read to identify a row and time it: a CSV without them is refused.
REQUIRED_COLUMNS = ["run_id", "preset", "scheduler", "workload", "threads", "rep",
                    "scheduler_params", "workload_params", "wall_ns"]
# Schema groups (harness/row.cpp) that are not measurements of the run.
ID_GROUP, PARAM_GROUP, RESULT_GROUP = "id", "param", "result"
# What identifies a case; its rows are the repetitions. `build` is empty but in an A/B run
# (`schedlab run --against`: A, A2, B), and empty for CSVs without the column (load() adds it).
CASE_KEY = ["scheduler", "scheduler_params", "workload", "workload_params", "threads", "build"]
# The sequential elision (harness/registry.hpp, kElisionName): each workload's program with every
# spawn a plain call and no scheduler, T_S of every speedup and efficiency. `serial` runs the
# task API on one thread (its cost without scheduling); both run on one thread only.
ELISION = "elision"
SINGLE_THREADED = (ELISION, "serial")

CSV_FIX = "pass a CSV written by `schedlab run` (header run_id,preset,scheduler,...,wall_ns,...)"


class UserError(Exception):
    """A problem with the user's input, reported as one line: `FILE: problem; fix`."""

    def __init__(self, path, problem, fix):
        super().__init__(f"{path}: {problem}; {fix}")


@dataclass
class RunFile:
    """One CSV given on the command line and what its sidecar says about it."""
    csv_path: str
    rows: int
    meta: dict = field(default_factory=dict)  # empty when there is no usable sidecar
    meta_note: str = ""  # why the sidecar is missing or unusable, for the report

    @property
    def label(self):
        return self.meta.get("run_id") or os.path.basename(self.csv_path)


@dataclass
class Results:
    rows: pd.DataFrame
    files: list
    result_columns: list  # every measured column (wall_ns on), in the order the CSVs have them
    schema: dict = field(default_factory=dict)  # column -> its sidecar schema entry, CSV order

    def counter_columns(self):
        """The counter columns (every group but id, param and result), in CSV order: from the
        schema when a sidecar has one, else the CSVs' measured columns past the results."""
        if self.schema:
            return [c for c, e in self.schema.items()
                    if e.get("group") not in (ID_GROUP, PARAM_GROUP, RESULT_GROUP)]
        return [c for c in self.result_columns if c not in ("wall_ns", "tasks", "ns_per_task")]

    def measured(self, column):
        """True when the column exists and at least one row has a value."""
        return column in self.rows and self.rows[column].notna().any()

    def unavailable_reason(self, column):
        """The reason the runs' metadata gives for a counter being unavailable, or ""."""
        reasons = {f.meta.get("counters", {}).get("unavailable", {}).get(column)
                   for f in self.files}
        return "; ".join(sorted(str(r) for r in reasons if r))

    def peers(self):
        """The schedulers the runs' sidecars name as peers (`peers`: the established runtimes a
        user would pick instead of schedlab's designs; harness/registry.hpp), in registry order;
        empty when no sidecar says (runs older than the list)."""
        names = []
        for f in self.files:
            names += [n for n in f.meta.get("peers", []) if n not in names]
        return names

    def why_unmeasured(self, column):
        """For a figure: the metadata's reason, else what the CSV shows."""
        return self.unavailable_reason(column) or (
            "empty in every row" if column in self.rows else "column absent from the CSV")


def simulated(rows):
    """Mask of the rows measured under Valgrind's cache simulator (`simulated` = 1, `schedlab run
    --counters sim`): their wall time is Valgrind's, tens of times a native run's, so no time
    comparison may use them. CSVs without the column have none."""
    if "simulated" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["simulated"].fillna(0) == 1


def native(rows):
    """The rows that ran natively: the only ones whose times and scheduler behaviour count."""
    return rows[~simulated(rows)]


# The columns that flag a row as disturbed, and why (harness/row.cpp says how each is set, on the
# CPUs the row's case ran on): another process took CPU time on them during its block
# repetition, or the speed of one of them changed during it (the speed probe).
FLAGS = {"noisy": "other processes took CPU time on its CPUs",
         "slow_cpu": "a CPU's speed changed during the block (speed probe)"}


def flagged(rows):
    """Mask of the repetitions the machine may have disturbed: another process took CPU time
    (`noisy`) or a CPU ran slow (`slow_cpu`). A simulated row never is: its counts are the
    simulator's, which the machine's load and speed cannot change. CSVs without a column have
    none of its flags."""
    mask = pd.Series(False, index=rows.index)
    for column in FLAGS:
        if column in rows:
            mask |= rows[column].fillna(0).astype(float) > 0
    return mask & ~simulated(rows)


# What identifies a block repetition: the cases of one configuration measured back to back. CSVs
# written before the `block_index` column have one block per configuration and repetition.
def block_key(rows):
    if "block_index" in rows:
        return ["source", "run_id", "block_index", "rep"]
    return ["source", "run_id", "workload", "workload_params", "rep"]


def flagged_block_list(rows):
    """One entry per block repetition of the native `rows` with a flagged row: (source, run_id,
    block index or None, rep, workload, workload_params, why), `why` naming each flag with its
    figures and the rows it flagged ("other processes: 42 ms of CPU time on the CPUs of 3 of 7
    rows; speed changed 1.31x during it, 7 of 7 rows"). Empty when nothing was flagged or the
    runs did not record the flags."""
    rows = native(rows)
    sizes = rows.groupby(block_key(rows), sort=False).size()
    rows = rows[flagged(rows)]
    out = []
    for key, block in rows.groupby(block_key(rows), sort=True):
        first = block.iloc[0]
        total = int(sizes[key])
        why = []
        noisy = block[block.get("noisy", pd.Series(0, index=block.index)).fillna(0).astype(float) > 0]
        if len(noisy):
            other = noisy["other_cpu_ns"].max() if "other_cpu_ns" in noisy else math.nan
            why.append("other processes: " + (f"{other / 1e6:.0f} ms of CPU time" if other == other else "busy") +
                       f" on the CPUs of {len(noisy)} of {total} rows")
        slow = block[block.get("slow_cpu", pd.Series(0, index=block.index)).fillna(0).astype(float) > 0]
        if len(slow):
            change = slow["probe_change"].max() if "probe_change" in slow else \
                slow.get("probe_slowest", pd.Series(math.nan, index=slow.index)).max()
            why.append(f"a CPU's speed changed {change:.2f}x during it, {len(slow)} of {total} rows")
        out.append({"source": first["source"], "run_id": first["run_id"],
                    "block_index": int(first["block_index"]) if "block_index" in block else None,
                    "rep": int(first["rep"]), "workload": first["workload"],
                    "workload_params": first["workload_params"], "why": "; ".join(why)})
    return out


def parse_params(text):
    """'stack-size=65536 local-order=lifo' -> {'stack-size': '65536', 'local-order': 'lifo'}."""
    params = {}
    for item in text.split():
        key, _, value = item.partition("=")
        params[key] = value
    return params


def natural_key(text):
    """Sort key that orders 'cutoff=8' before 'cutoff=14'."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", text))


def sidecar_path(csv_path):
    stem = csv_path[:-4] if csv_path.endswith(".csv") else csv_path
    return stem + ".meta.json"


def _read_meta(csv_path):
    path = sidecar_path(csv_path)
    if not os.path.exists(path):
        return {}, f"no sidecar {os.path.basename(path)}"
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        return {}, f"sidecar {os.path.basename(path)} unreadable ({e})"
    if not isinstance(meta, dict):
        return {}, f"sidecar {os.path.basename(path)} is not a JSON object"
    # The rest of the package trusts these shapes; drop what does not have them.
    for key, kind in (("machine", dict), ("counters", dict), ("notes", list), ("peers", list)):
        if not isinstance(meta.get(key, kind()), kind):
            del meta[key]
    if "peers" in meta:
        meta["peers"] = [n for n in meta["peers"] if isinstance(n, str)]
    if not isinstance(meta.get("counters", {}).get("unavailable", {}), dict):
        del meta["counters"]["unavailable"]
    return meta, ""


def _read_csv(path, schema):
    # The csv module rather than pandas' parser: it lets a row with the wrong number of cells
    # be refused instead of silently realigned.
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise UserError(path, "empty file (no header, no rows)", CSV_FIX)
            missing = [c for c in REQUIRED_COLUMNS if c not in header]
            if missing:
                raise UserError(path, "missing required column(s) " + ", ".join(missing), CSV_FIX)
            repeated = sorted({c for c in header if header.count(c) > 1})
            if repeated:
                raise UserError(path, "the header names column(s) " + ", ".join(repeated) +
                                " more than once", "pass a CSV as `schedlab run` writes it, each "
                                "column once")
            records = []
            for record in reader:
                if not record:
                    continue  # a blank line
                if len(record) != len(header):
                    raise UserError(path, f"line {reader.line_num} has {len(record)} cells, "
                                    f"the header {len(header)}",
                                    "the file is damaged; rerun `schedlab run`")
                records.append(record)
    except OSError as e:
        raise UserError(path, f"cannot read ({e.strerror})", "check the path") from None
    except (UnicodeDecodeError, csv.Error):
        raise UserError(path, "not a CSV text file", CSV_FIX) from None
    if not records:
        raise UserError(path, "no rows (header only)",
                        "the run recorded nothing; rerun `schedlab run` or pass another CSV")

    groups = _column_groups(header, schema)
    # Parameter columns are left out: one may share its name with a result column.
    keep = [i for i, g in enumerate(groups) if g != PARAM_GROUP]
    df = pd.DataFrame([[r[i] for i in keep] for r in records], columns=[header[i] for i in keep])
    return df, [c for c, g in zip(header, groups) if g not in (ID_GROUP, PARAM_GROUP)]


def _column_groups(header, schema):
    """The schema group of each header column. Without a schema: by position, as schedlab
    writes them (identification, then parameters up to wall_ns, then measurements)."""
    if schema:
        return [schema.get(c, {}).get("group", RESULT_GROUP) for c in header]
    first_param, first_result = header.index("workload_params") + 1, header.index("wall_ns")
    return [ID_GROUP if i < first_param else PARAM_GROUP if i < first_result else RESULT_GROUP
            for i in range(len(header))]


def _schema_of(meta):
    """{column: entry} from a sidecar's `schema`, or {} when it has none (older runs)."""
    entries = meta.get("schema")
    if not isinstance(entries, list):
        return {}
    return {e["name"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)}


def _to_numbers(path, df, result_columns):
    """Types the columns in place; required numbers must be present in every row."""
    for column in ("threads", "rep", "wall_ns"):
        values = pd.to_numeric(df[column], errors="coerce")
        bad = values.isna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0]) + 1
            raise UserError(path, f"column {column} is empty or not a number in data row {row}",
                            "the file is damaged; rerun `schedlab run`")
        df[column] = values
    df["threads"] = df["threads"].astype(int)
    for column in result_columns:
        if column != "wall_ns":
            df[column] = pd.to_numeric(df[column], errors="coerce")  # "" -> NaN


def _variant_labels(rows):
    """Short names for (scheduler, scheduler_params): the scheduler, plus in brackets the
    parameters that differ from the value most rows of that scheduler use. Labels stay short
    for the usual case of one configuration per scheduler, and name exactly what a variant
    changed (e.g. 'steal-half [local-order=fifo]')."""
    labels = {}
    for scheduler, group in rows.groupby("scheduler", sort=False):
        variants = group["scheduler_params"].unique()
        modal = modal_params(group["scheduler_params"])
        for params in variants:
            changed = [f"{k}={v}" for k, v in parse_params(params).items() if modal.get(k) != v]
            labels[(scheduler, params)] = scheduler + (f" [{' '.join(changed)}]" if changed else "")
    named = [labels[(s, p)] for s, p in zip(rows["scheduler"], rows["scheduler_params"])]
    if "build" not in rows:
        return named
    # An A/B run's build, as schedlab's own summary names it ("steal-half build=B").
    return [n + (f" build={b}" if b else "") for n, b in zip(named, rows["build"])]


def modal_params(params_column):
    """For each key, the value the most rows use."""
    counts = {}
    for text in params_column:
        for key, value in parse_params(text).items():
            counts.setdefault(key, Counter())[value] += 1
    return {key: c.most_common(1)[0][0] for key, c in counts.items()}


def config_labels(configs):
    """Labels for (workload, workload_params) pairs naming only the parameters that differ
    between configurations of the same workload, so that tick labels stay readable."""
    by_workload = {}
    for workload, params in configs:
        by_workload.setdefault(workload, []).append(parse_params(params))
    labels = {}
    for workload, params in configs:
        mine = parse_params(params)
        siblings = by_workload[workload]
        varying = [k for k in mine if len({p.get(k) for p in siblings}) > 1]
        labels[(workload, params)] = " ".join([workload] + [f"{k}={mine[k]}" for k in varying])
    return labels


def load(paths):
    frames, files, all_result_columns, schema, latency_lines = [], [], [], {}, {}
    for path in paths:
        latency_lines[path] = latency.read_lines(path)
        meta, note = _read_meta(path)
        file_schema = _schema_of(meta)
        df, result_columns = _read_csv(path, file_schema)
        _to_numbers(path, df, result_columns)
        all_result_columns += [c for c in result_columns if c not in all_result_columns]
        for column, entry in file_schema.items():
            schema.setdefault(column, entry)
        df["source"] = path
        frames.append(df)
        files.append(RunFile(path, len(df), meta, note))
    rows = pd.concat(frames, ignore_index=True, sort=False)
    rows["build"] = rows["build"].fillna("") if "build" in rows else ""  # runs before A/B runs: none
    # Recomputed rather than read: the CSV rounds it, and older CSVs may lack it.
    if "tasks" in rows:
        per_task = rows["wall_ns"] / rows["tasks"].where(rows["tasks"] > 0)
        if "ns_per_task" in rows:
            per_task = per_task.fillna(rows["ns_per_task"])
        rows["ns_per_task"] = per_task
    rows["variant"] = _variant_labels(rows)
    latency.attach(rows, latency_lines)
    return Results(rows, files, all_result_columns, schema)
