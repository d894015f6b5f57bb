"""``retriever=external``: score the retriever production runs (a Python function or an HTTP endpoint)."""
