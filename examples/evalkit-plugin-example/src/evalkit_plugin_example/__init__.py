"""An example evalkit plugin: ``retriever=keyword`` and ``chunker=sentences``."""
