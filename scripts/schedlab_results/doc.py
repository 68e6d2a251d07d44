"""A small document model rendered both to Markdown and to HTML, so that report.html needs no
Markdown library. Text may contain `code` spans; everything else is plain text."""
import html
import re
from dataclasses import dataclass


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
    alt: str


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


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
            lines = ["| " + " | ".join(_md_cell(h) for h in b.header) + " |",
                     "|" + "---|" * len(b.header)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, Figure):
            out.append(f"![{b.alt}]({b.png})\n\n[SVG]({b.svg})")
    return "\n\n".join(out) + "\n"


def _inline_html(text):
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(str(text)))


def render_html(blocks, title):
    out = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>",
           "<style>body{font-family:sans-serif;max-width:70em;margin:auto}"
           "table{border-collapse:collapse}td,th{border:1px solid #aaa;padding:2px 6px}"
           "img{max-width:100%}</style></head><body>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Paragraph):
            out.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            head = "".join(f"<th>{_inline_html(h)}</th>" for h in b.header)
            body = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>"
                           for row in b.rows)
            out.append(f"<table><tr>{head}</tr>{body}</table>")
        elif isinstance(b, Figure):
            out.append(f'<p><img src="{html.escape(b.png)}" alt="{html.escape(b.alt)}"><br>'
                       f'<a href="{html.escape(b.svg)}">SVG</a></p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
