"""A run that answers three questions through Message Batches, as its own process (the kill-mid-poll test).

``python -m tests.loopback.batch_client URL CACHE JOURNAL OUT``: generate_many with batches on, the journal
at JOURNAL and the cache at CACHE, polling every 10 ms; writes the answers to OUT as JSON when done.
The test SIGKILLs it while the loopback server still reports ``in_progress``, then runs the same command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.request import GenerationRequest, build_request
from evalkit.cache import Cache
from tests.loopback.anthropic_server import anthropic_generator

CONTEXT = "\n".join(
    [
        "[en] The RateLimiter allows a burst of 20 requests per second by default.",
        "[ops] Deployments happen every Tuesday after the change review.",
    ]
)
QUESTIONS = {
    "q1": "What burst does the RateLimiter allow?",
    "q2": "When do deployments happen?",
    "q3": "[[batch-error]] What is the parking allowance?",
}


def requests() -> list[GenerationRequest]:
    return [
        build_request(
            question,
            CONTEXT,
            model="claude-sonnet-5",
            system="Answer from the context only. Cite [doc_id].",
            max_tokens=64,
            question_id=qid,
            metadata={"custom_id": qid},
        )
        for qid, question in QUESTIONS.items()
    ]


def main(argv: list[str]) -> int:
    url, cache_path, journal, out = argv
    generator = anthropic_generator(api_key="test-key", base_url=url, window=0, poll_interval_s=0.01, max_retries=2)
    with Cache(cache_path) as cache:
        answers = generate_many(generator, requests(), cache, batch=True, journal=Path(journal))
    rows = [{"question_id": a.question_id, "text": a.text, "stop": a.stop_reason, "error": a.error} for a in answers]
    Path(out).write_text(json.dumps(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
