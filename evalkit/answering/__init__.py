"""Answering: context assembly under a token budget, generation backends, the advisory judge.

May import: records, cache, cost. Never retrieval, scoring or pipeline.
"""
