"""Build ``query_log.jsonl``: 500 lines of an invented production query log over the demo set.

Deterministic (a fixed seed, standard library only): the same file on every
run. What it holds, so ``python -m evalkit.labels sample`` has something real
to do:

- 60 distinct questions of ``questions.jsonl`` (30 English, 30 Chinese),
  asked with Zipf-like frequencies (the most asked about 40 times, the
  rarest once or twice) over 2025-08-01 .. 2026-01-14, so about 45% of the
  rows fall outside the default three-month window;
- spelling variants (case, a missing question mark, "hi," or "请问", a
  full-width or half-width question mark, a stray space in Chinese) that the
  sampler must fold into one question;
- failures: ``known_error`` questions fail about a third of the time,
  ``frequent`` ones rarely, as negative feedback (``"feedback": "down"``) or
  an error (``"error": "timeout"``); a failed row's ``returned`` names the
  outdated or a wrong document, a good one the evidence documents;
- ``user``, ``role`` (the question's ``tags.role``) and ``returned`` on every row;
- three broken rows (an unreadable timestamp, an empty question, an unknown
  feedback value), which ``sample`` reports one line each and skips.

    python labelsets/demo/build_query_log.py           # write query_log.jsonl
    python labelsets/demo/build_query_log.py --check   # exit 1 if the file on disk is stale
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "query_log.jsonl"
SEED = 20260115
N_ROWS = 500
START = dt.datetime(2025, 8, 1, 7, 0, tzinfo=dt.UTC)
END = dt.datetime(2026, 1, 14, 18, 0, tzinfo=dt.UTC)


def _variant(question: str, rng: random.Random) -> str:
    """The question as some user typed it (60% as written)."""
    roll = rng.random()
    if roll < 0.6:
        return question
    if any("\u4e00" <= c <= "\u9fff" for c in question):
        options = [
            "请问" + question,
            question.replace("？", "?"),
            question.rstrip("？?"),
            question[: len(question) // 2] + " " + question[len(question) // 2 :],
        ]
    else:
        options = [question.lower(), question.rstrip("?"), "hi, " + question[0].lower() + question[1:], question + "??"]
    return rng.choice(options)


def _rows(questions: list[dict], docs: list[str], rng: random.Random) -> list[dict]:
    en = [q for q in questions if q["tags"].get("lang") == "en"]
    zh = [q for q in questions if q["tags"].get("lang") != "en"]
    chosen = rng.sample(en, 30) + rng.sample(zh, 30)
    # frequent questions are the most asked; known errors spread over the tail
    chosen.sort(key=lambda q: (q["tags"].get("kind") != "frequent", rng.random()))
    weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(chosen))]
    rows = []
    for _ in range(N_ROWS - 3):
        question = rng.choices(chosen, weights)[0]
        stamp = START + (END - START) * rng.random()
        fails = rng.random() < (0.35 if question["tags"].get("kind") == "known_error" else 0.05)
        evidence_docs = list(dict.fromkeys(e["doc_id"] for e in question["evidence"]))
        if fails:
            wrong = question["tags"].get("outdated_doc_id") or rng.choice([d for d in docs if d not in evidence_docs])
            returned = [wrong, rng.choice(docs)]
        else:
            returned = (evidence_docs[:2] or [rng.choice(docs)]) + [rng.choice(docs)]
        row = {
            "timestamp": stamp.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "user": f"u{rng.randrange(1, 81):03d}",
            "role": question["tags"].get("role", "employee"),
            "question": _variant(question["question"], rng),
            "returned": list(dict.fromkeys(returned)),
        }
        if fails and rng.random() < 0.3:
            row["error"] = "timeout"
        elif fails:
            row["feedback"] = "down"
        elif rng.random() < 0.3:
            row["feedback"] = "up"
        rows.append(row)
    rows.sort(key=lambda r: r["timestamp"])
    broken = [
        {"timestamp": "last tuesday", "user": "u007", "role": "employee", "question": "Where is the VPN guide?"},
        {"timestamp": "2025-12-02T09:15:00Z", "user": "u012", "role": "employee", "question": "   "},
        {"timestamp": "2025-12-20T16:40:00Z", "user": "u033", "role": "employee", "question": "年假有几天？",
         "feedback": "meh"},
    ]  # fmt: skip
    for offset, row in zip((120, 300, 450), broken):
        rows.insert(offset, row)
    return rows


def build() -> str:
    questions = [json.loads(line) for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = sorted(json.loads(line)["doc_id"] for line in (HERE / "docs.jsonl").read_text(encoding="utf-8").splitlines())
    rows = _rows(questions, docs, random.Random(SEED))
    assert len(rows) == N_ROWS
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    text = build()
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.name}: {'up to date' if same else 'stale: run build_query_log.py'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8", newline="")
    print(f"wrote {OUT} ({N_ROWS} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
