"""Cost: prices, the cost model, applying it to results, token estimates, the budget.

May import: records. Price files are read here and nowhere else.
"""
