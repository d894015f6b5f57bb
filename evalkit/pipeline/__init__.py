"""The only orchestrator: typed plan -> units of work -> executor -> run folder.

The retrieval sweep, the position experiment and the dry run are walks of one plan.
This is the one package allowed to import from more than one of retrieval, answers and scoring.
"""
