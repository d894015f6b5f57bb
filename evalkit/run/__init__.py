"""The run folder as a contract: every file name, its schema, the readers and writers, freshness.

May import: records. Every file is written atomically (temporary name, then rename).
"""
