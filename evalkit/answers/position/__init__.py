"""Answer accuracy by where the gold sits in the context: stuff vs retrieve-k vs whole files.

The experiment (issue: "accuracy of stuffing everything vs retrieving 5 vs
retrieving 10, each question repeated with shuffled chunk order, grouped by
where the gold chunk sat") runs after a retrieval sweep, on one chunking's
ranked candidate pool (``pools/<chunking>.parquet``):

1. **Settings** (:class:`PositionSettings`, from the ``position:`` config block):
   arms, repeats, placements, the question subset, the token budget.
2. **Plan** (:func:`plan_position`, pure): every (question, arm, placement,
   repeat) context assembled with :func:`evalkit.answers.context.assemble` under the
   budget, its gold bucket and planned prompt tokens, so the number of answers,
   prompt tokens, time and cost, and every "does not fit", are known before a
   single request is sent (:func:`describe`).
3. **Run** (:func:`run_position`): answers through the shared response cache
   (:func:`evalkit.answers.generation.generate_many`; Message Batches when the
   generator has them enabled), scored with :func:`evalkit.scoring.answers.score_answer`,
   written to ``position/rows.parquet`` as they finish (a re-run reuses written
   rows and cached answers), then ``position/summary.parquet``.

Arms (config spelling):

- ``stuff``: every document in scope, whole (:func:`evalkit.answers.context.stuff_context`):
  sent only when it fits the budget, else a ``does not fit`` row; never truncated.
  In scope: the question's ``tags.context_doc_ids`` / ``tags.scope_doc_id`` when
  given, else every document of the labelled set.
- ``retrieve-<k>``: the top k units of the pool; ``is_gold`` is the pool's
  ``relevant`` column (span projection, DESIGN §2).
- ``files`` / ``files-<k>``: the whole files the top k units came from
  (:func:`evalkit.answers.context.file_items`); a file is gold when it holds an evidence span.

Placements: ``shuffle`` is repeated ``repeats`` times with a seeded shuffle per
(seed, question, repeat); deterministic placements (``score``, ``gold_at:head``,
``gold_at:mid``, ``gold_at:tail``) run once, on ``controlled_arms`` only, and only
where the context holds a gold item (placing nothing proves nothing).

Accuracy in the summary is question-weighted: each question's share of correct
answers in a cell, averaged over questions, with a bootstrap interval over
questions (repeats of one question are not independent draws).
"""
