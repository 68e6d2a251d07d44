"""report.md / report.html: the claims (one line per part first, then every configuration), the
figures, the runs, the machine, the counters and the medians of every case. One function per
section (its blocks), put in order by write()."""
import datetime
import math
import os

from . import apart, claims, doc, drawing, latency, literature, machine
from .load import (CASE_KEY, FLAGS, block_key, config_labels, flagged, flagged_block_list, native,
                   natural_key)
from .stats import summarise

def flatten(obj, prefix=""):
    """{'cache_bytes': {'l1d': 1}} -> [('cache_bytes.l1d', 1)]."""
    items = []
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            items += flatten(value, name + ".")
        else:
            items.append((name, value))
    return items


def runs_blocks(results):
    rows = [[f.csv_path, f.meta.get("run_id", "n/a"), f.meta.get("preset") or "(none)",
             f.meta.get("status", "n/a"), str(f.rows), f.meta.get("started_utc", "n/a")]
            for f in results.files]
    blocks = [doc.Table(["CSV", "run_id", "preset", "status", "rows", "started (UTC)"], rows)]
    warnings = [f"{f.csv_path}: {f.meta_note}; machine details unknown for it"
                for f in results.files if f.meta_note]
    warnings += [f"{f.csv_path}: run status is `{f.meta['status']}`: its cases may be incomplete"
                 for f in results.files if f.meta.get("status", "complete") != "complete"]
    notes = [f"{f.label}: {n}" for f in results.files for n in f.meta.get("notes", [])]
    if warnings:
        blocks += [doc.Paragraph("Warnings:"), doc.Bullets(warnings)]
    if notes:
        blocks += [doc.Paragraph("Notes recorded with the runs:"), doc.Bullets(notes)]
    return blocks


def machine_blocks(results):
    described = [f for f in results.files if f.meta.get("machine")]
    if not described:
        return [doc.Paragraph(
            "No machine metadata (no .meta.json sidecar with a `machine` object).")]
    columns = [dict(flatten(f.meta["machine"])) for f in described]
    keys = list(dict.fromkeys(k for c in columns for k in c))
    if all(c == columns[0] for c in columns):  # one machine: one value column
        return [doc.Table(["Key", "Value"], [[k, str(columns[0][k])] for k in keys])]
    return [doc.Table(["Key"] + [f.label for f in described],
                      [[k] + [str(c.get(k, "")) for c in columns] for k in keys])]


def counters_blocks(results):
    rows = results.rows
    sections = [f.meta["counters"] for f in results.files if "counters" in f.meta]
    events = {}
    for counters in sections:
        events.update(counters.get("events") or {})
    table = []
    for c in results.counter_columns():
        reason = results.unavailable_reason(c)
        if c not in rows:
            status, detail = "absent from the CSV", reason
        elif rows[c].notna().any():
            status = f"measured ({rows[c].notna().sum()} of {len(rows)} rows)"
            detail = "; ".join(filter(None, [events.get(c), reason and f"some runs: {reason}"]))
        else:
            status, detail = "not measured (empty in every row)", reason
        table.append([f"`{c}`", status, detail])
    blocks = [doc.Paragraph("An empty cell means not measured; it is never read as 0. Details "
                            "are the event used or the reason a counter was unavailable, from "
                            "the runs' metadata (`counters`)."),
              doc.Table(["Column", "Status", "Event or reason"], table)]
    unknown = [f.csv_path for f in results.files if "schema" not in f.meta]
    if unknown:
        blocks.append(doc.Paragraph(
            "Counters absent from the CSV cannot be named for " + ", ".join(unknown) +
            ": no sidecar `schema` says which columns schedlab writes (an older run, or the "
            "sidecar is missing)."))
    notes = list(dict.fromkeys(
        [f"scope: {c['scope']}" for c in sections if c.get("scope")] +
        [str(n) for c in sections for n in (c.get("notes") or [])]))
    if notes:
        blocks += [doc.Paragraph("Counter notes from the runs:"), doc.Bullets(notes)]
    return blocks


def claims_blocks(table, figures):
    """The Claims section, the answer first: one line per part, the noise floor and how to read
    the forest plot, beside that plot, on one screen; then the per-configuration rows and what
    was left out (collapsed in HTML); then how to read it all. `figures`: forest.ClaimFigures."""
    # The forest plot on the right; its caption (or why it was skipped) under the summary,
    # where the first screen has room.
    plot = [b for b in figures.by_part.blocks if isinstance(b, doc.Figure)]
    notes = [b for b in figures.by_part.blocks if not isinstance(b, doc.Figure)]
    summary = [claims_summary_table(table), doc.Paragraph(noise_text(table.noise, table.floors))] + \
        broken_warning(table) + notes
    return ([doc.Beside([summary, plot])] +
            claims_detail_blocks(table, figures.by_configuration) +
            controls_and_history_blocks(table) + [claims_method()])


def claims_summary_table(table):
    """One line per part, numbered as the forest plot's rows: its verdict (with how many of its
    configurations had it, where it has several; "broken" when its negative control came out
    held, with what its own interval said), the effect and interval of the configuration that
    decided it (claims.deciding; bold in the rows per configuration), or why there is none, its
    control's verdict, and how often its criterion changed after data had been seen (each
    change under "Each part's control and history"). Narrow enough to sit beside the forest
    plot at 1366 pixels."""
    rows, last_claim = [], None
    for i, pr in enumerate(table.parts, 1):
        source = claims.judged_on(pr)
        own = pr.own_verdict
        verdict = f"**{own} ({source})**" if source else f"**{own}**"
        measured = [c for c in pr.configs if c.verdict != claims.NOT_MEASURED]
        if len(measured) > 1:
            verdict += f" ({sum(c.verdict == own for c in measured)} of {len(measured)})"
        if pr.verdict == claims.BROKEN:
            verdict = f"**broken**: {verdict.replace('**', '')}, but its control held"
        r = claims.deciding(pr)
        effect = f"n/a: {unmeasured_reason(pr)}" if r is None else r.note if r.note else \
            claims.format_effect(pr.part, r.estimate, r.low, r.high)
        rows.append([str(i), pr.part.claim if pr.part.claim != last_claim else "", pr.part.name,
                     verdict, effect, control_cell(pr), history_cell(pr.part)])
        last_claim = pr.part.claim
    return doc.Table(["#", "Claim", "Part", "Verdict (of configurations)", "Effect [95% interval]",
                      "Control", "Changed after data"], rows, compact=True)


def control_cell(pr):
    """The control's verdict in a few words ("not held ✓", "HELD: part broken", ...)."""
    if pr.control is None:
        return "none"
    verdict = pr.control.verdict
    if verdict == claims.NOT_HELD:
        return "not held ✓"
    if verdict == claims.HELD:
        return "**HELD**: part broken"
    return verdict


def history_cell(part):
    """'2 of 4 changes' (changes after data of all history entries), or 'never'."""
    after = sum(1 for h in part.history if h["after_data"])
    return f"{after} of {len(part.history)}" if after else f"never (of {len(part.history)})"


def broken_warning(table):
    """A line naming the broken parts (their control came out held), or nothing."""
    broken = [pr.part.name for pr in table.parts if pr.verdict == claims.BROKEN]
    if not broken:
        return []
    return [doc.Paragraph(f"**{len(broken)} part(s) broken**: their negative control came out held, "
                          "so their effect appears without its cause: " + "; ".join(broken) + ".")]


def unmeasured_reason(pr):
    """Why a part has no verdict, in a few words."""
    if any(c.flagged for c in pr.configs):
        return "flagged blocks only"
    if pr.configs:
        return "no measured value"
    return "all left out" if pr.left_out else "no matching rows"


def _threads(r):
    return f"{r.threads} thread{'s' if r.threads != '1' else ''}"


def claims_detail_blocks(table, forest):
    """Every configuration's result, the parts' full claims and comparisons, the
    per-configuration forest plot and what each part left out, under one collapsed heading."""
    texts = {c["id"]: c["text"] for c in table.claims}
    rows, last_claim = [], None
    for pr in table.parts:
        part = pr.part
        # One row per configuration; the claim and the part on the part's first.
        first = [texts.get(part.claim, part.claim) if part.claim != last_claim else "",
                 part.name, claims.compared(part)]
        last_claim = part.claim
        decided = claims.deciding(pr)
        for i, r in enumerate(pr.configs or [None]):
            head = first if i == 0 else [""] * len(first)
            if r is None:
                rows.append(head + ["no matching rows", "n/a", "n/a", ""])
                continue
            left = f", {r.flagged} flagged left out" if r.flagged else ""
            config = f"{r.config}, {_threads(r)} ({r.n} blocks{left})"
            # Bold: the configuration whose effect the summary shows.
            verdict = f"**{r.verdict}**" if r is decided else r.verdict
            effect = claims.format_effect(part, r.estimate, r.low, r.high)
            rows.append(head + [config, f"{effect} ({r.note})" if r.note else effect,
                                claims.format_p(r.p_holm), verdict])
    left_out = [f"{pr.part.name}: {why}" for pr in table.parts for why in pr.left_out]
    blocks = [doc.Table(["Claim", "Part", "Compared", "Configuration", "Effect [95% interval]",
                         "p (Holm)", "Verdict"], rows)]
    blocks += forest.blocks
    blocks += [doc.Paragraph("Left out, by part:"), doc.Bullets(left_out)] if left_out else \
        [doc.Paragraph("Left out: no configuration of any part.")]
    return [doc.Details(3, "Per configuration: every part's effects, p values and what was left "
                           "out", blocks)]


def controls_and_history_blocks(table):
    """Each part's negative control (what it compares and why, its effect and verdict per
    configuration) and its history (every change of its criterion, whether it came after data
    that judges it, and why), under one collapsed heading, with the changes that touched every
    part first."""
    blocks = []
    if table.history:
        blocks += [doc.Paragraph("Changes that touched every part:"),
                   doc.Table(["Date", "Commit", "Change", "After data", "Why"],
                             [history_row(h) for h in table.history])]
    for i, pr in enumerate(table.parts, 1):
        blocks.append(doc.Paragraph(f"**{i} {pr.part.claim}: {pr.part.name}** ({claims.compared(pr.part)}): "
                                    f"{pr.verdict}."))
        if pr.control is None:
            blocks.append(doc.Paragraph("Negative control: none in criteria.toml."))
        else:
            c = pr.control
            head = (f"Negative control: {claims.compared(c.part)}"
                    f"{', ' + where_text(c.part) if where_text(c.part) else ''}; must come out not held "
                    f"({pr.part.control.get('why', '')}). Verdict: **{c.verdict}**.")
            rows = [[f"{r.config}, {_threads(r)} ({r.n} blocks"
                     f"{f', {r.flagged} flagged left out' if r.flagged else ''})",
                     claims.format_effect(c.part, r.estimate, r.low, r.high),
                     claims.format_p(r.p_holm), r.verdict] for r in c.configs]
            blocks.append(doc.Paragraph(head))
            if rows:
                blocks.append(doc.Table(["Control configuration", "Effect [95% interval]",
                                         "p (uncorrected)", "Verdict"], rows))
            elif c.left_out:
                blocks.append(doc.Paragraph("Left out: " + "; ".join(c.left_out)))
        blocks.append(doc.Table(["Date", "Commit", "Change", "After data", "Why"],
                                [history_row(h) for h in pr.part.history]))
    return [doc.Details(3, "Each part's negative control and history (changes after seeing data "
                           "marked)", blocks)]


def history_row(h):
    return [h["date"], h["commit"], h["change"], "**yes**" if h["after_data"] else "no", h["why"]]


def where_text(part):
    """'workloads loops, skew uniform' for a part's workloads and `where`."""
    items = [f"{k} {'/'.join(map(str, v))}" for k, v in part.where.items()]
    threads = {"one": "1 thread", "max": "the most threads", "max-or-one": "the most threads",
               "all": "every thread count"}[part.threads]
    return ", ".join([f"{'/'.join(part.workloads)}"] + items + [threads])


def claims_method():
    return doc.Paragraph(
        "How to read it: each part compares two variants block by block: a block is one "
        "repetition of one workload configuration, in which every variant ran back to back in a "
        "shuffled order. "
        "Effect: the Hodges-Lehmann estimate over blocks with its exact 95% interval (a ratio "
        "for times and counts, a difference for shares, a level for one variant); p: Wilcoxon "
        "signed-rank, Holm-corrected over the whole table. Held: the interval clears the "
        "smallest effect that counts (and, for times, the noise floor) with p < 0.05; not held: "
        "the interval excludes that effect; inconclusive: neither. A part with several "
        "configurations is held only if held in each and not held if not held in any; the "
        "summary shows the effect of the configuration that decided it (the first not held or "
        "inconclusive; for a held part, the one that held by the least), whose verdict is bold "
        "in the rows per configuration. p is the one-sided p of the claim made, tested against "
        "its threshold (an effect above it; for equivalence both edges), not against no "
        "difference. Every part has a negative control: the same comparison where the claim's "
        "cause is absent (or, for a claim that something costs nothing, with that cost added), "
        "which must come out not held; a part whose control comes out held is **broken**. A "
        "time effect must also clear its workload family's A/A noise floor; noise only ever "
        "makes a verdict harder (an equivalence is held inside its threshold whatever the "
        "noise). The criteria, each with its "
        "reason and history, are fixed in `scripts/schedlab_results/criteria.toml`. Left out: "
        "oversubscribed thread counts, blocks with a flagged repetition, and, for a part with "
        "a `room`, configurations whose own inputs allow less than twice the smallest effect "
        "that counts (the fair-split parts: `round_robin_ratio`). Rows run under "
        "Valgrind's simulator count only for the cache part, which names its source.")


def noise_text(noise, floors=None):
    """The noise floors, per workload family: what each is (the interval of the centre of an A/A
    time ratio, which narrows with more blocks) and is not (the spread between blocks or runs,
    which each part's own interval carries)."""
    if not noise.measured:
        why = (f"all {noise.flagged} blocks of the A/A control were flagged: other processes took CPU "
               "time, or a CPU ran slow" if noise.flagged else
               "these runs have no A/A control, i.e. steal-half twice as `--replica a,b`")
        return f"Noise floor: not measured ({why}); effects on time are judged against their smallest effect alone."
    floors = floors or {noise.family: noise}

    def one(f):
        return (f"{f.family} {math.exp(f.estimate):.2f} [{math.exp(f.low):.2f}, {math.exp(f.high):.2f}] "
                f"(n={f.blocks})")
    measured = [one(f) for f in floors.values() if f.measured]
    missing = [family for family, f in floors.items() if not f.measured]
    return ("Noise floors (A/A control per workload family: the same steal-half configuration "
            "twice in the same blocks): " + "; ".join(measured) +
            (f"; no A/A for {', '.join(missing)} (judged against the widest, {noise.family})" if missing else "") +
            ". A floor is the interval of the centre of the A/A time ratio, a systematic difference "
            "between identical variants, and narrows with more blocks; it is not the spread between "
            "blocks or runs, which each part's own interval carries. A time effect must clear its "
            "family's floor as well as its smallest effect.")


def _flagged(results):
    """The native rows with `_f`, True where the repetition was flagged; None when these runs did
    not record the flags."""
    rows = native(results.rows)
    if not any(c in rows and rows[c].notna().any() for c in FLAGS):
        return None
    return rows.assign(_f=flagged(rows))


def _replacements(results):
    """What the runs' sidecars say of the extra repetitions that replaced flagged ones."""
    said = [f.meta["replacements"] for f in results.files if isinstance(f.meta.get("replacements"), dict)]
    if not said:
        return ""
    extra = sum(int(n) for r in said for n in r.get("blocks", {}).values())
    blocks = sum(len(r.get("blocks", {})) for r in said)
    allowed = sorted({r.get("max_per_block", 0) for r in said})
    if allowed == [0]:
        return " No repetition was replaced (--replace-flagged 0)."
    text = (f" The run measured {extra} extra repetitions of {blocks} blocks to replace them "
            f"(at most {'/'.join(map(str, allowed))} per block: --replace-flagged).")
    groups = [g for r in said for g in r.get("groups", []) if isinstance(g, dict)]
    if groups:
        used = sum(float(g.get("used_s", 0)) for g in groups)
        budget = sum(float(g.get("budget_s", 0)) for g in groups)
        spent = sum(bool(g.get("spent")) for g in groups)
        shares = sorted({float(r["budget_share"]) for r in said if "budget_share" in r})
        text += (f" Replacements and waits had a budget of {'/'.join(f'{x:.0%}' for x in shares)} of the time "
                 f"the planned repetitions took: {used:.0f} s used of {budget:.0f} s"
                 + (f", spent in {spent} of {len(groups)} groups." if spent else "."))
    left = {(r_i, b): int(n) for r_i, r in enumerate(said) for b, n in (r.get("unreplaced") or {}).items()}
    if left:
        text += (f" Left unreplaced (out of budget or over the per-block maximum), and so left out of the "
                 f"claims: {sum(left.values())} block repetitions of blocks "
                 + ", ".join(sorted({b for _, b in left}, key=int)) + ".")
    waits = [r["waits"] for r in said if isinstance(r.get("waits"), dict)]
    rounds = sum(int(w.get("rounds", 0)) for w in waits)
    if rounds:
        seconds = sum(float(w.get("seconds", 0)) for w in waits)
        unsteady = sum(int(w.get("still_unsteady", 0)) for w in waits)
        text += (f" Before its {rounds} rounds it waited {seconds:.1f} s in all for a steady machine"
                 + (f"; {unsteady} ran with the machine still unsteady after the longest wait." if unsteady else "."))
    return text


def flagged_blocks(results):
    """The flagged block repetitions, each named (its configuration, block and repetition) with
    why: another process took CPU time, or the speed probe found a CPU running slow."""
    rows = _flagged(results)
    if rows is None:
        return [doc.Paragraph("Flagged repetitions: not recorded in these runs.")]
    total = rows.groupby(block_key(rows)).ngroups
    named = flagged_block_list(rows)
    text = (f"Block repetitions with flagged rows (each row is judged on the CPUs its case ran on, and "
            f"the claims leave a flagged row out: other processes used more than the share the `noisy` "
            f"column states of its CPUs, or one of its CPUs changed speed during the block, `slow_cpu`): "
            f"{len(named)} of {total}.{_replacements(results)}")
    if not named:
        return [doc.Paragraph(text)]
    several = len(results.files) > 1
    return [doc.Paragraph(text), doc.Table(
        (["Run"] if several else []) + ["Block", "Rep", "Workload", "Workload params", "Why"],
        [([b["run_id"]] if several else []) +
         [str(b["block_index"]) if b["block_index"] is not None else "n/a", str(b["rep"]),
          b["workload"], b["workload_params"], b["why"]] for b in named])]


# A case is marked when its repetitions spread this much (coefficient of variation)...
NOISY_CV = 0.10
# ... or when its median is this short: the timer, the first-touch of pools and the run's
# start-up then weigh as much as the scheduling being measured.
SHORT_NS = 1e6


def medians_blocks(results):
    rows = native(results.rows)  # simulated rows' times are Valgrind's
    key = CASE_KEY + ["variant"]
    cases = summarise(rows, "wall_ns")
    spread = rows.groupby(key)["wall_ns"].agg(["mean", "std"]).reset_index()
    cases = cases.merge(spread, on=key, how="left")
    if "ns_per_task" in rows:
        per_task = summarise(rows, "ns_per_task")[key + ["median"]]
        cases = cases.merge(per_task.rename(columns={"median": "per_task"}), on=key, how="left")
    else:
        cases = cases.assign(per_task=float("nan"))
    ordered = sorted(cases.itertuples(), key=lambda c: (c.workload, natural_key(c.workload_params),
                                                         c.variant, c.threads))
    table = []
    for c in ordered:
        cv = c.std / c.mean if c.mean and c.n > 1 else float("nan")
        marks = ([f"noisy (CV {cv:.0%})"] if cv > NOISY_CV else []) + (
            ["short: under 1 ms, timer and start-up dominate; use a larger size"]
            if c.median < SHORT_NS else [])
        table.append([c.variant, c.workload, c.workload_params, str(c.threads), str(c.n),
                      f"{c.median / 1e6:.3f}", f"{(c.q3 - c.q1) / 1e6:.3f}",
                      "n/a" if math.isnan(cv) else f"{cv:.1%}",
                      f"{c.min / 1e6:.3f}–{c.max / 1e6:.3f}",
                      "n/a" if math.isnan(c.per_task) else f"{c.per_task:.1f}",
                      "⚠ " + "; ".join(marks) if marks else ""])
    return [doc.Paragraph("Scheduler names in brackets show the parameters that differ from the "
                          f"scheduler's defaults. IQR: interquartile range; CV: coefficient of "
                          f"variation. ⚠ marks a case whose CV is above {NOISY_CV:.0%} or whose "
                          "median is under 1 ms."),
            doc.Table(["Scheduler", "Workload", "Workload params", "Threads", "Reps",
                       "Median wall (ms)", "IQR (ms)", "CV", "Min–max (ms)", "Median ns/task",
                       "Warning"], table)]


def latency_blocks(results):
    """Per kind of latency, configuration, thread count and variant: the percentiles of its
    repetitions' distributions merged (flagged ones too, as the figures and the medians table;
    the claims leave them out), in microseconds; empty when no run recorded a latency."""
    rows = native(results.rows)
    table = []
    for kind in latency.KINDS:
        column = "_" + kind
        if column not in rows:
            continue
        have = rows[rows[column].notna()]
        labels = config_labels(set(zip(have["workload"], have["workload_params"])))
        key = ["workload", "workload_params", "threads", "variant"]
        for (workload, params, threads, variant), case in sorted(
                have.groupby(key), key=lambda g: (g[0][0], natural_key(g[0][1]), g[0][2], g[0][3])):
            d = latency.merged(case, kind)
            source = {"go": "Go's own (1 in 8)", "generator": "the load generator"}.get(
                "".join(sorted(latency.sources(case, kind))), "schedlab")
            table.append([latency.KIND_LABELS[kind], labels[(workload, params)], str(threads), variant, source,
                          str(len(case)), str(d.count)] +
                         [f"{v / 1e3:.1f}" for v in (d.percentile(50), d.percentile(90), d.percentile(99),
                                                      d.percentile(99.9), d.top())])
    if not table:
        return []
    return [doc.Paragraph("Each case's repetitions merged into one "
                          "distribution, from the run's latency file; microseconds. Scheduling "
                          "delay: from a task becoming runnable to its first instruction on a "
                          "worker; request latency: netmix --load open, from each request's "
                          "intended send time to its reply. The CSV's delay_* and request_* "
                          "columns give the same percentiles per repetition."),
            doc.Table(["Latency", "Configuration", "Threads", "Scheduler", "Source", "Reps", "Count",
                       "p50", "p90", "p99", "p99.9", "max"], table)]


def write(results, sections, claim_figures, table, out_dir):
    """The report opens with what people come for, the claims (their summary and forest plot
    first), then the figures, then what the numbers rest on: the runs, the machine, the
    counters, the per-case medians."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blocks = [doc.Heading(1, "schedlab results report"),
              doc.Paragraph(f"Generated by scripts/plot at {now} from {len(results.files)} CSV "
                            f"file(s), {len(results.rows)} rows. Sections: Claims, Figures, Runs, "
                            "Machine, Counters, Medians per case.")]
    blocks += [doc.Heading(2, "Claims")] + machine.claims_note(results) + \
        claims_blocks(table, claim_figures) + \
        flagged_blocks(results)
    shown_apart = apart.blocks(results)
    if shown_apart:
        blocks += [doc.Heading(2, "Figures shown apart from the claims")] + shown_apart
    blocks.append(doc.Heading(2, "Figures"))
    for s in sections:
        blocks += [doc.Heading(3, s.title)] + s.blocks
    percentiles = latency_blocks(results)
    if percentiles:
        blocks += [doc.Heading(2, "Latency percentiles")] + percentiles
    beside = literature.blocks(results)  # only where a workload has published figures
    if beside:
        blocks += [doc.Heading(2, "Beside the literature")] + beside
    blocks += [doc.Heading(2, "Runs")] + runs_blocks(results)
    timeline = machine.section(results, drawing.Painter(results, out_dir), drawing.Section("Machine"))
    blocks += [doc.Heading(2, "Machine")] + timeline.blocks + machine_blocks(results)
    blocks += [doc.Heading(2, "Counters")] + counters_blocks(results)
    blocks += [doc.Heading(2, "Medians per case")] + medians_blocks(results)

    md_path = os.path.join(out_dir, "report.md")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(doc.render_markdown(blocks))
    with open(os.path.join(out_dir, "report.html"), "w", encoding="utf-8") as f:
        f.write(doc.render_html(blocks, "schedlab results report"))
    return md_path
