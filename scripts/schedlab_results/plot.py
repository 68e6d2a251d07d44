"""scripts/plot CSV... --out DIR: figures (PNG, SVG, PDF), report.md and report.html, and the
claims table as claims.json."""
import argparse
import json
import os

from . import claims, plots, report
from .cli import run
from .load import UserError, load

PROG = "scripts/plot"


def main():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Plot schedlab results and write report.md (+ report.html).")
    parser.add_argument("csv", nargs="+", help="CSV files written by `schedlab run` (concatenated)")
    parser.add_argument("--out", required=True, help="directory for the figures and the report")
    args = parser.parse_args()

    results = load(args.csv)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise UserError(args.out, f"cannot create the output directory ({e.strerror})",
                        "choose another --out") from None
    table = claims.evaluate(results)
    with open(os.path.join(args.out, "claims.json"), "w", encoding="utf-8") as f:
        json.dump(claims.as_json(table), f, indent=2)
    sections, claim_figures = plots.draw_all(results, args.out, table)
    path = report.write(results, sections, claim_figures, table, args.out)
    figures = sum(len(s.files) for s in sections + list(claim_figures)) // 3
    print(f"{PROG}: {figures} figures in {args.out}")
    print(f"report: {path}")


if __name__ == "__main__":
    run(PROG, main)
