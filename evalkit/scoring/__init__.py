"""Scoring: metric definitions and their vectorised forms, answer scoring, calibration,
aggregation, statistics and paired comparison.

Pure: no I/O, no model calls. May import: records, cost (pure cost model).
"""
