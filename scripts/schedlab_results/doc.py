"""A small document model rendered both to Markdown and to HTML, so that report.html needs no
Markdown library. Text may contain `code` spans and **strong** text; everything else is plain text. Tables are
rendered by pandas (to_markdown, which uses tabulate, and to_html); the headings, paragraphs,
lists and figures around them are a few lines each, which no library here renders both ways.

Two blocks hold other blocks, for the HTML page's layout: Beside (columns side by side, e.g. a
summary table beside its figure) and Details (collapsed until the reader opens it). Markdown has
neither, so there they are the same blocks one after the other (Details under a heading): both
files hold the same content in the same order."""
import html
import re
from dataclasses import dataclass

import pandas as pd


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    text: str


@dataclass
class Bullets:
    items: list


@dataclass
class Table:
    header: list
    rows: list
    compact: bool = False  # HTML: smaller type, one line per row (a summary meant for one screen)


@dataclass
class Figure:
    png: str  # paths relative to the report
    svg: str
    pdf: str
    alt: str


@dataclass
class Beside:
    columns: list  # one list of blocks per column, left to right


@dataclass
class Details:
    level: int    # the heading level of `summary` in Markdown
    summary: str  # the line a reader clicks to open it
    blocks: list


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _frame(table, cell):
    return pd.DataFrame([[cell(c) for c in row] for row in table.rows],
                        columns=[cell(h) for h in table.header])


def _markdown(b):
    if isinstance(b, Heading):
        return "#" * b.level + " " + b.text
    if isinstance(b, Paragraph):
        return b.text
    if isinstance(b, Bullets):
        return "\n".join(f"- {item}" for item in b.items)
    if isinstance(b, Table):
        # Cells stay the strings we made: no number parsing, no reformatting.
        return _frame(b, _md_cell).to_markdown(index=False, disable_numparse=True)
    if isinstance(b, Figure):
        return f"![{b.alt}]({b.png})\n\n[SVG]({b.svg}) · [PDF]({b.pdf})"
    if isinstance(b, Beside):
        return _markdown_all([block for column in b.columns for block in column])
    if isinstance(b, Details):
        return _markdown_all([Heading(b.level, b.summary)] + b.blocks)
    raise TypeError(f"no Markdown for {type(b).__name__}")


def _markdown_all(blocks):
    return "\n\n".join(_markdown(b) for b in blocks)


def render_markdown(blocks):
    return _markdown_all(blocks) + "\n"


def _marks(escaped):
    """`code` and **strong**, the two inline marks the report uses, in escaped HTML."""
    escaped = re.sub(r"`([^`]*)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)


def _inline_html(text):
    return _marks(html.escape(str(text)))


STYLE = (
    # Wide enough for the claims summary beside its forest plot at 1366 pixels; running text
    # keeps a readable measure.
    "body{font-family:sans-serif;max-width:84em;margin:auto;padding:0 1em}p,ul{max-width:70em}"
    "table{border-collapse:collapse}td,th{border:1px solid #aaa;padding:2px 6px;"
    "text-align:left;vertical-align:top}"
    "table.compact{font-size:0.72em}table.compact td{white-space:nowrap;padding:1px 4px}"
    "table.compact th{padding:1px 4px}"
    # Beside: the first column as wide as its widest line that cannot wrap (a compact table;
    # its paragraphs wrap to that), the last takes the rest.
    ".beside{display:flex;gap:1em;align-items:flex-start}"
    ".beside>div:first-child{width:min-content}"
    ".beside>div:last-child{flex:1 1 0;min-width:20em}"
    # A figure beside a table stays within the first screen, below the page's title and heading.
    ".beside img{max-height:calc(100vh - 13em)}"
    "details>summary{cursor:pointer}details>summary>*{display:inline}"
    "img{max-width:100%}")


def _html(b):
    if isinstance(b, Heading):
        return f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>"
    if isinstance(b, Paragraph):
        return f"<p>{_inline_html(b.text)}</p>"
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Table):
        table = _frame(b, str).to_html(index=False, escape=True, border=0,
                                       classes="compact" if b.compact else None)
        return _marks(table)
    if isinstance(b, Figure):
        return (f'<p><img src="{html.escape(b.png)}" alt="{html.escape(b.alt)}"><br>'
                f'<a href="{html.escape(b.svg)}">SVG</a> · '
                f'<a href="{html.escape(b.pdf)}">PDF</a></p>')
    if isinstance(b, Beside):
        return ('<div class="beside">' +
                "".join(f"<div>{_html_all(column)}</div>" for column in b.columns) + "</div>")
    if isinstance(b, Details):
        return (f"<details><summary>{_html(Heading(b.level, b.summary))}</summary>"
                f"{_html_all(b.blocks)}</details>")
    raise TypeError(f"no HTML for {type(b).__name__}")


def _html_all(blocks):
    return "\n".join(_html(b) for b in blocks)


def render_html(blocks, title):
    return "\n".join(["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
                      f"<title>{html.escape(title)}</title>",
                      f"<style>{STYLE}</style></head><body>",
                      _html_all(blocks), "</body></html>"]) + "\n"
