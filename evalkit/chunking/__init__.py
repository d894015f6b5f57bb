"""Chunking: cut documents into span-exact chunks, project evidence spans onto them, check chunk health.

Pure functions over records. May import: records.
"""
