"""Production retrievers for the tests of ``retriever=external``: they return the gold, as offsets or as text."""
