"""Answering: context assembly under a token budget, generation backends, the advisory judge.

May import: records, cache, settings, cost. Never retrieval, scoring or pipeline (the table: ``ALLOWED`` in
``tests/test_architecture.py``).
"""
