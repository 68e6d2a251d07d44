"""A small document model rendered both to Markdown and to HTML, so that report.html needs no
Markdown library. Text may contain `code` spans and **strong** text; everything else is plain text. Tables are
rendered by pandas (to_markdown, which uses tabulate, and to_html); the headings, paragraphs,
lists and figures around them are a few lines each, which no library here renders both ways."""
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


@dataclass
class Figure:
    png: str  # paths relative to the report
    svg: str
    pdf: str
    alt: str


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _frame(table, cell):
    return pd.DataFrame([[cell(c) for c in row] for row in table.rows],
                        columns=[cell(h) for h in table.header])


def render_markdown(blocks):
    out = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Paragraph):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            # Cells stay the strings we made: no number parsing, no reformatting.
            out.append(_frame(b, _md_cell).to_markdown(index=False, disable_numparse=True))
        elif isinstance(b, Figure):
            out.append(f"![{b.alt}]({b.png})\n\n[SVG]({b.svg}) · [PDF]({b.pdf})")
    return "\n\n".join(out) + "\n"


def _marks(escaped):
    """`code` and **strong**, the two inline marks the report uses, in escaped HTML."""
    escaped = re.sub(r"`([^`]*)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)


def _inline_html(text):
    return _marks(html.escape(str(text)))


def render_html(blocks, title):
    out = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>",
           "<style>body{font-family:sans-serif;max-width:70em;margin:auto}"
           "table{border-collapse:collapse}td,th{border:1px solid #aaa;padding:2px 6px;"
           "text-align:left;vertical-align:top}"
           "img{max-width:100%}</style></head><body>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Paragraph):
            out.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            table = _frame(b, str).to_html(index=False, escape=True, border=0)
            out.append(_marks(table))
        elif isinstance(b, Figure):
            out.append(f'<p><img src="{html.escape(b.png)}" alt="{html.escape(b.alt)}"><br>'
                       f'<a href="{html.escape(b.svg)}">SVG</a> · '
                       f'<a href="{html.escape(b.pdf)}">PDF</a></p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
