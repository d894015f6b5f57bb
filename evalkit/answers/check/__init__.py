"""The answer check: production and the configs a decision names, each answered with its own retrieved context.

The retrieval decision ranks configs on proxies (recall, context precision); whether their contexts make
*answers* better is what this package measures. For a paired sample of questions, every checked config's
context is built as production would build it (its chunking's pool, its top_k in rank order, its
threshold), answered by the configured generator through the shared cache (configs that build the same
context share one answer), and scored by :mod:`evalkit.scoring.answers`. The statistics of the
differences live in :mod:`evalkit.scoring.answer_check`; the pipeline calls :func:`run.answer_check` once.
"""
