"""What each chunking costs and how healthy its chunks are: index size against overlap, chunk-health findings."""

from __future__ import annotations

from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, no_data, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run import files


def index_size(model: ReportModel) -> Markup:
    info = model.run.chunkings.merge(
        model.run.summary.drop_duplicates("chunking")[["chunking", "chunk_size", "chunk_overlap"]],
        on="chunking",
        how="left",
        suffixes=("", "_s"),
    )
    body: list[Markup] = []
    if {"n_chunks", "stored_chars"} <= set(info.columns):
        panels = {}
        for column, title in (("n_chunks", "chunks"), ("stored_chars", "stored characters")):
            series = []
            for size, group in info.sort_values("chunk_overlap").groupby("chunk_size"):
                series.append(
                    plots.Series(
                        f"chunk_size {size}",
                        tuple(group["chunk_overlap"].astype(float)),
                        tuple(group[column].astype(float)),
                    )
                )
            panels[title] = series
        png = plots.draw(lambda: plots.lines(panels, "chunk_overlap", percent=False), model.font)
        body.append(img(png, "chunk count and index size against overlap"))
    columns = [
        c
        for c in ("chunking", "n_chunks", "stored_chars", "indexed_chars", "gold_cut_share", "texts_embedded")
        if c in info.columns
    ]
    rows = []
    for r in info.sort_values(["chunk_size", "chunk_overlap"]).to_dict("records"):
        rows.append(
            [r["chunking"]] + [fmt.pct(r[c]) if c == "gold_cut_share" else fmt.count(r[c]) for c in columns[1:]]
        )
    body.append(table(columns, rows, numeric=tuple(range(1, len(columns)))))
    note = "Index cost by chunking. gold_cut_share: answerable questions whose answer span no single chunk holds whole."
    return section("index", "Chunk count and index size against overlap", body, note)


def chunk_health(model: ReportModel) -> Markup:
    source = files.CHUNK_HEALTH
    report = model.run.chunk_health
    if report is None:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    rows = []
    for f in report.get("findings", []) if isinstance(report.get("findings"), list) else []:
        examples = [e.get("detail", e) if isinstance(e, dict) else e for e in f.get("examples") or []]
        rows.append(
            [
                f.get("chunking", ""),
                f.get("rule", ""),
                fmt.count(f.get("count")),
                fmt.pct(f.get("share")) if f.get("share") is not None else "",
                f.get("message", ""),
                " · ".join(str(e) for e in examples[:3]),
            ]
        )
    body = [
        table(["chunking", "rule", "count", "share", "finding", "examples"], rows, numeric=(2, 3))
        if rows
        else tag("p", "No findings.", class_="note")
    ]
    return section(source.key, source.title, body, f"From {source.where}.")
