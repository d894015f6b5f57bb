"""HTML building blocks: escaping, tables, images and the page shell (CSS and JS inline).

Every string that reaches the page goes through :func:`esc` unless it is a
:class:`Markup`, which only this package's own code constructs from escaped
parts. The inline script reads and toggles the page; it never parses data as
HTML (no ``innerHTML``) and no data is placed inside it.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Sequence


class Markup(str):
    """HTML built by the report from escaped parts; inserted as is."""

    __slots__ = ()

    def __add__(self, other: object) -> Markup:
        return Markup(str.__add__(self, esc(other)))

    def __radd__(self, other: object) -> Markup:
        return Markup(str.__add__(esc(other), self))


Cell = str | int | float | Markup | None


def esc(text: object) -> Markup:
    """Escape anything for element content and quoted attribute values."""
    if isinstance(text, Markup):
        return text
    return Markup(html.escape("" if text is None else str(text), quote=True))


def join(parts: Iterable[str]) -> Markup:
    """Concatenate fragments, escaping any that are not already Markup."""
    return Markup("".join(esc(p) for p in parts))


def tag(name: str, content: Cell | Iterable[Cell] = "", **attrs: object) -> Markup:
    """``<name attrs>content</name>``; attribute names end in ``_`` to dodge keywords (``class_``)."""
    rendered = "".join(
        f' {key.rstrip("_").replace("_", "-")}="{esc(val)}"' for key, val in attrs.items() if val is not None
    )
    scalar = isinstance(content, str | int | float) or content is None
    body = esc(content) if scalar else join(esc(c) for c in content)  # type: ignore[union-attr]
    return Markup(f"<{name}{rendered}>{body}</{name}>")


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Cell]], class_: str = "data", numeric: Sequence[int] = ()
) -> Markup:
    """A table; columns listed in ``numeric`` are right-aligned."""
    head = join(tag("th", h, class_="num" if i in numeric else None) for i, h in enumerate(headers))
    body = join(
        tag("tr", [tag("td", c, class_="num" if i in numeric else None) for i, c in enumerate(row)]) for row in rows
    )
    return Markup(
        f'<div class="scroll"><table class="{esc(class_)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def img(png_base64: str, alt: str) -> Markup:
    return Markup(f'<img class="plot" src="data:image/png;base64,{esc(png_base64)}" alt="{esc(alt)}">')


def section(anchor: str, title: str, body: Iterable[Cell], note: str | None = None) -> Markup:
    """A titled section with an id for the table of contents."""
    parts: list[Cell] = [tag("h2", title)]
    if note:
        parts.append(tag("p", note, class_="note"))
    parts.extend(body)
    return tag("section", parts, id=anchor, class_="card")


def no_data(what: str, how: str) -> Markup:
    """The note shown when a run holds no data for a section."""
    return Markup(
        f'<p class="nodata">No data in this run ({esc(what)} not found) — how to get it: <code>{esc(how)}</code></p>'
    )


CSS = """
:root{--ink:#1d2433;--muted:#5b6577;--line:#dde2ea;--bg:#f5f7fa;--card:#fff;--accent:#2457c5;
--good:#1a7f37;--bad:#b42318;--warn:#9a6700;--mark:#ffe58f}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",
"Noto Sans","Noto Sans CJK SC","WenQuanYi Micro Hei",sans-serif}
header.top{background:#1d2433;color:#fff;padding:18px 32px}
header.top h1{margin:0;font-size:22px;font-weight:600}
header.top p{margin:4px 0 0;color:#c9d1de;font-size:13px}
nav.toc{padding:8px 32px;background:#fff;border-bottom:1px solid var(--line);font-size:13px;position:sticky;top:0;
z-index:5}
nav.toc a{color:var(--accent);text-decoration:none;margin-right:14px;white-space:nowrap;display:inline-block}
main{max-width:1180px;margin:0 auto;padding:20px 24px 60px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:18px 22px;margin:0 0 18px}
h2{font-size:18px;margin:0 0 10px}
h3{font-size:15px;margin:16px 0 6px}
p{margin:6px 0}
.note{color:var(--muted);font-size:13px}
.nodata{color:var(--muted);background:#f0f2f6;border-left:3px solid #9aa4b5;padding:8px 12px;border-radius:4px}
.rec{border-left:5px solid var(--accent)}
.big{font-size:20px;font-weight:600;margin:4px 0 10px}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;vertical-align:1px}
.pill.good{background:#dafbe1;color:var(--good)}.pill.bad{background:#ffebe9;color:var(--bad)}
.pill.neutral{background:#eef1f5;color:var(--muted)}.pill.warn{background:#fff8c5;color:var(--warn)}
.scroll{overflow-x:auto;max-width:100%}
table.data{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0 10px}
table.data th{text-align:left;background:#f0f2f6;border-bottom:1px solid var(--line);padding:5px 8px;white-space:nowrap}
table.data td{border-bottom:1px solid #eef1f5;padding:4px 8px;vertical-align:top;overflow-wrap:break-word}
table.data td.num,table.data th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
table.data tr.hl td{background:#eef4ff}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;background:#f0f2f6;
padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}
img.plot{max-width:100%;height:auto;display:block;margin:8px 0}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
ul.findings{padding-left:18px}ul.findings li{margin:6px 0}
.finding-arith{color:var(--muted);font-size:13px;display:block}
details.q{border:1px solid var(--line);border-radius:6px;margin:6px 0;background:#fff}
details.q>summary{cursor:pointer;padding:6px 10px;list-style:none;display:flex;gap:10px;align-items:baseline}
details.q>summary::-webkit-details-marker{display:none}
details.q>summary::before{content:"\\25B8";color:var(--muted)}
details.q[open]>summary::before{content:"\\25BE"}
details.q[open]>summary{border-bottom:1px solid var(--line);background:#f8fafc}
.qid{font-family:ui-monospace,monospace;font-size:12px;color:var(--muted);white-space:nowrap}
.qtext{flex:1;overflow-wrap:anywhere}
.outcome{white-space:nowrap;font-size:12px}
.qbody{padding:8px 14px 12px}
.ctx{white-space:pre-wrap;font-size:13px;background:#fbfbfd;border:1px solid #eef1f5;border-radius:4px;padding:8px;
max-height:260px;overflow:auto;overflow-wrap:anywhere}
.chunk{white-space:pre-wrap;font-size:12.5px;max-height:180px;overflow:auto;overflow-wrap:anywhere}
mark{background:var(--mark);padding:0 1px;border-radius:2px}
.toolbar{display:flex;gap:8px;align-items:center;margin:8px 0;flex-wrap:wrap}
.toolbar input{padding:5px 8px;border:1px solid var(--line);border-radius:4px;min-width:340px;font:inherit}
.toolbar button{padding:5px 10px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer;
font:inherit}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:13px}
.kv dt{color:var(--muted)}.kv dd{margin:0;overflow-wrap:anywhere}
footer{color:var(--muted);font-size:12px;text-align:center;padding:20px}
"""

JS = """
(function(){
  var box=document.getElementById('qfilter');
  var items=Array.prototype.slice.call(document.querySelectorAll('details.q'));
  var shown=document.getElementById('qshown');
  function apply(){
    var needle=(box&&box.value||'').toLowerCase();var n=0;
    items.forEach(function(d){var hit=!needle||d.textContent.toLowerCase().indexOf(needle)>=0;
      d.hidden=!hit;if(hit){n++;}});
    if(shown){shown.textContent=String(n);}
  }
  if(box){box.addEventListener('input',apply);}
  function setAll(open){items.forEach(function(d){if(!d.hidden){d.open=open;}});}
  var ex=document.getElementById('qexpand');if(ex){ex.addEventListener('click',function(){setAll(true);});}
  var co=document.getElementById('qcollapse');if(co){co.addEventListener('click',function(){setAll(false);});}
})();
"""


def content_security_policy(script: str) -> str:
    """No network at all; only the report's own script (by hash) may run, so even text that
    escaped escaping could not execute."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"


def page(title: str, subtitle: str, toc: Sequence[tuple[str, str]], sections: Iterable[Markup]) -> str:
    """The whole self-contained document."""
    nav = join(tag("a", label, href=f"#{anchor}") for anchor, label in toc)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(content_security_policy(JS))}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>'
        f'<nav class="toc">{nav}</nav><main>{join(sections)}</main>'
        "<footer>Written by <code>python -m evalkit.report</code>. Self-contained: no network.</footer>"
        f"<script>{JS}</script></body></html>\n"
    )
