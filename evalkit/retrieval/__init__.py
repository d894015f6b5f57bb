"""Retrieval: embedding, BM25 and tokenising, candidate pools, metadata filters, rerank.

May import: records, cache, cost (prices of paid calls). Never answering, scoring or pipeline.
"""
