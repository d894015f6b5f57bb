"""Cost: prices, the cost model, applying it to results, token estimates, the budget.

- ``prices``: the price files (``conf/pricing/*.yaml``) as frozen records; :func:`prices.price_table`
  is the one loader, read once per process;
- ``tokens``: local token estimates per tokenizer family;
- ``model``: dollars per call, per query and per day (pure);
- ``stuffing``: stuffing the corpus against retrieving k chunks, and the break-even points (pure);
- ``apply``: the cost settings and the model applied to a sweep's result rows (pure);
- ``budget``: the spending cap checked before every paid call.

May import: records. Price files are read here and nowhere else.
"""
