"""HTML building blocks: escaping, tables, images and the page shell (CSS and JS inline).

Every string that reaches the page goes through :func:`esc` unless it is a
:class:`Markup`, which only this package's own code constructs from escaped
parts. The inline script reads and toggles the page and renders the drill-down a page at a time from
JSON kept inert in a ``<template>`` (:func:`data_block`); it never parses data as HTML (no
``innerHTML``: elements and text nodes only) and no data is placed inside the script itself.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
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


CJK_FAMILY = "evalkit CJK"
"""The embedded CJK face's family (see ``webfont``), named first wherever the page sets a font."""

CSS = """
:root{--ink:#1d2433;--muted:#5b6577;--line:#dde2ea;--bg:#f5f7fa;--card:#fff;--accent:#2457c5;
--good:#1a7f37;--bad:#b42318;--warn:#9a6700;--mark:#ffe58f}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 "@CJK@",system-ui,
-apple-system,"Segoe UI","Noto Sans","Noto Sans CJK SC","WenQuanYi Micro Hei",sans-serif}
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
code{font-family:"@CJK@",ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;background:#f0f2f6;
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
.qid{font-family:"@CJK@",ui-monospace,monospace;font-size:12px;color:var(--muted);white-space:nowrap}
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
""".replace("@CJK@", CJK_FAMILY)

JS = """
(function(){
  function el(name,cls,text){var e=document.createElement(name);if(cls){e.className=cls;}
    if(text!==undefined&&text!==null){e.textContent=String(text);}return e;}
  function add(parent,children){children.forEach(function(c){
    parent.appendChild(typeof c==='string'?document.createTextNode(c):c);});return parent;}
  var list=document.getElementById('qlist');
  var box=document.getElementById('qfilter');
  var shown=document.getElementById('qshown');
  var store=document.getElementById('qdata');
  var data=null;
  if(store&&store.content){try{data=JSON.parse(store.content.textContent);}catch(err){data=null;}}
  function setAll(open){Array.prototype.slice.call(document.querySelectorAll('details.q')).forEach(function(d){
    if(!d.hidden){d.open=open;}});}
  var ex=document.getElementById('qexpand');if(ex){ex.addEventListener('click',function(){setAll(true);});}
  var co=document.getElementById('qcollapse');if(co){co.addEventListener('click',function(){setAll(false);});}
  if(!data||!list){
    var items=Array.prototype.slice.call(document.querySelectorAll('details.q'));
    var apply=function(){var needle=(box&&box.value||'').toLowerCase();var n=0;
      items.forEach(function(d){var hit=!needle||d.textContent.toLowerCase().indexOf(needle)>=0;
        d.hidden=!hit;if(hit){n++;}});if(shown){shown.textContent=String(n);}};
    if(box){box.addEventListener('input',apply);}
    return;
  }
  var MINUS='\\u2212';
  function num(x,d){return (x===null||x===undefined)?'n/a':x.toFixed(d).replace('-',MINUS);}
  var cache={};
  function piece(doc,s,e){
    var parts=data.docs[doc]||[];
    for(var i=0;i<parts.length;i++){var p=parts[i];var t=p[1];
      if(p[2]){if(!cache[doc+'#'+i]){cache[doc+'#'+i]=Array.from(t);}t=cache[doc+'#'+i];}
      if(p[0]<=s&&e<=p[0]+t.length){var out=t.slice(s-p[0],e-p[0]);return p[2]?out.join(''):out;}}
    return null;}
  function stretchEnd(doc,s){var parts=data.docs[doc]||[];for(var i=0;i<parts.length;i++){var p=parts[i];
    var n=p[2]?Array.from(p[1]).length:p[1].length;if(p[0]<=s&&s<=p[0]+n){return p[0]+n;}}return s;}
  function marked(doc,s,e,spans){
    var nodes=[];var at=s;
    spans.filter(function(g){return g[0]===doc&&g[2]>s&&g[1]<e;}).map(function(g){
      return [Math.max(g[1],s),Math.min(g[2],e)];}).sort(function(a,b){return a[0]-b[0];}).forEach(function(c){
      var a=Math.max(c[0],at);if(c[1]<=a){return;}
      nodes.push(piece(doc,at,a)||'');nodes.push(el('mark','',piece(doc,a,c[1])));at=c[1];});
    nodes.push(piece(doc,at,e)||'');return nodes;}
  function pill(ok,yes,no){if(ok===null){return el('span','pill neutral','n/a');}
    return el('span',ok?'pill good':'pill bad',ok?yes:no);}
  function rankWords(r){return r===null||r===undefined?'gold rank n/a':(r>0?'gold rank '+r+' in pool':
    'gold not in pool');}
  function outcomePill(q,r){if(!r){return pill(null);}
    if(q.u){var w=rankWords(r[3]);return pill(r[0]===1,'hit \\u00b7 '+w,'miss \\u00b7 '+w);}
    return pill(r[0]===1,'abstained','returned context');}
  function goldContext(ev){var doc=ev[0],s=ev[1],e=ev[2];var left=Math.max(0,s-150);
    var right=Math.min(stretchEnd(doc,e),e+150);if(piece(doc,s,e)===null){return ['(document text not found)'];}
    var out=[(left>0?'\\u2026':'')+(piece(doc,left,s)||'')];
    if(e-s>800){out.push(el('mark','',piece(doc,s,s+400)));out.push(' \\u2026 ');out.push(el('mark','',
      piece(doc,e-400,e)));}else{out.push(el('mark','',piece(doc,s,e)));}
    out.push((piece(doc,e,right)||'')+(right>=e+150?'\\u2026':''));return out;}
  function chunkTable(q,r){
    if(!r[4].length){return el('p','note',
      'Nothing returned (every candidate scored below the threshold: a zero-hit).');}
    var t=el('table','data');var head=el('tr');
    ['rank','score','relevant','document [start:end]','chunk text'].forEach(function(h){
      head.appendChild(el('th','',h));});
    add(t,[add(el('thead'),[head])]);var body=el('tbody');
    r[4].forEach(function(c,i){var end=Math.min(c[2],c[1]+2000);var text=piece(c[0],c[1],end);
      var cell=el('div','chunk');
      if(text===null){cell.appendChild(el('span','note','(document text not found)'));}
      else{add(cell,marked(c[0],c[1],end,q.ev));if(c[2]>end){cell.appendChild(document.createTextNode('\\u2026'));}}
      add(body,[add(el('tr'),[el('td','num',i+1),el('td','num',num(c[3],3)),add(el('td'),[pill(c[4]===1,'yes','no')]),
        add(el('td'),[el('code','',data.doc_ids[c[0]]+' ['+c[1]+':'+c[2]+']')]),add(el('td'),[cell])])]);});
    t.appendChild(body);return add(el('div','scroll'),[t]);}
  function details(q){
    var d=el('details','q');var sum=el('summary');var text=q.q===null?'(question not found in the labelled set)':q.q;
    var out=el('span','outcome');
    data.configs.forEach(function(c,i){add(out,[el('span','note',c.label+': '),outcomePill(q,q.r[i]),' ']);});
    add(sum,[el('span','qid',q.id),el('span','qtext',text.length<=180?text:text.slice(0,177)+'\\u2026'),out]);
    var b=el('div','qbody');
    add(b,[add(el('p'),[el('strong','','Question: '),text])]);
    if(q.q!==null){
      add(b,[add(el('p'),[el('strong','','Gold answer(s): '),q.a.length?q.a.join('; '):'(none: unanswerable)']),
        el('p','note','evidence mode '+(q.m||'n/a')+'; tags: '+(q.t||'none'))]);
      q.ev.forEach(function(ev){add(b,[add(el('p','note'),[el('code','',data.doc_ids[ev[0]]+' ['+ev[1]+':'+ev[2]+']')]),
        add(el('div','ctx'),goldContext(ev))]);});
      q.st.forEach(function(s){var clip=s[3].length<=80?s[3]:s[3].slice(0,79)+'\\u2026';
        add(b,[add(el('p','note'),[el('code','',data.doc_ids[s[0]]+' ['+s[1]+':'+s[2]+']'),
          ' stale label: the document no longer holds \\u201c'+clip+'\\u201d here (not shown as gold)'])]);});}
    data.configs.forEach(function(c,i){var r=q.r[i];
      var extra=r?' \\u2014 best pool score '+num(r[1],3)+', '+r[2]+' returned':'';
      add(b,[add(el('h3'),[c.label+': ',el('code','',c.id),extra])]);
      b.appendChild(r?chunkTable(q,r):el('p','note','(no result row for this question)'));});
    return add(d,[sum,b]);}
  var view=document.getElementById('qview');var page=0;
  var prev=document.getElementById('qprev'),next=document.getElementById('qnext');
  var where=document.getElementById('qpage');
  function current(){var key=view?view.value:data.views[0].key;
    var v=data.views.filter(function(x){return x.key===key;})[0]||data.views[0];
    var needle=(box&&box.value||'').toLowerCase();
    return v.q.filter(function(i){if(!needle){return true;}var q=data.questions[i];
      return [q.id,q.q||'',q.a.join(' '),q.t].join(' ').toLowerCase().indexOf(needle)>=0;});}
  function render(){var hits=current();var size=data.page_size;var pages=Math.max(1,Math.ceil(hits.length/size));
    page=Math.min(Math.max(page,0),pages-1);
    while(list.firstChild){list.removeChild(list.firstChild);}
    hits.slice(page*size,(page+1)*size).forEach(function(i){list.appendChild(details(data.questions[i]));});
    if(shown){shown.textContent=String(hits.length);}
    if(where){where.textContent='page '+(page+1)+' of '+pages;}
    if(prev){prev.disabled=page<=0;}if(next){next.disabled=page>=pages-1;}}
  if(box){box.addEventListener('input',function(){page=0;render();});}
  if(view){view.addEventListener('change',function(){page=0;render();});}
  if(prev){prev.addEventListener('click',function(){page--;render();});}
  if(next){next.addEventListener('click',function(){page++;render();});}
  render();
})();
"""


def data_block(element_id: str, payload: object) -> Markup:
    """JSON for the page's script, inert: inside a ``<template>`` (never executed, never rendered).

    The JSON is escaped as element text (``&``, ``<``, ``>``), so no string in it can close the
    element or open a tag; the script reads it back with ``template.content.textContent``.
    JSON's own escapes keep control characters (and ``\\r``) out of the HTML parser's reach.
    """
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return Markup(f'<template id="{esc(element_id)}">{text}</template>')


def content_security_policy(script: str) -> str:
    """No network at all; only the report's own script (by hash) may run, so even text that
    escaped escaping could not execute."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"


def page(
    title: str, subtitle: str, toc: Sequence[tuple[str, str]], sections: Iterable[Markup], font_css: str = ""
) -> str:
    """The whole self-contained document; ``font_css``: the embedded @font-face rule (see ``webfont``)."""
    nav = join(tag("a", label, href=f"#{anchor}") for anchor, label in toc)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(content_security_policy(JS))}">'
        f"<title>{esc(title)}</title><style>{font_css}{CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>'
        f'<nav class="toc">{nav}</nav><main>{join(sections)}</main>'
        "<footer>Written by <code>python -m evalkit.report</code>. Self-contained: no network.</footer>"
        f"<script>{JS}</script></body></html>\n"
    )
