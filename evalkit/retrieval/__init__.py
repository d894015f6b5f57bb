"""Retrieval: embedding, BM25 and tokenising, candidate pools, metadata filters, rerank.

May import: records, cache, settings, cost (prices of paid calls), run (progress bars). Never answers,
scoring or pipeline (the table: ``ALLOWED`` in ``tests/test_architecture.py``).
"""
