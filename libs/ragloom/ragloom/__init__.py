"""Ragloom core library: components for answering questions over documents.

theflow reads its settings once, the first time it is imported. Unless the user chose a
settings module, point it at :mod:`ragloom.flow_settings`, which keeps every run in memory:
theflow's defaults create folders at import and pickle each call to disk.
"""

import os

os.environ.setdefault("THEFLOW_SETTINGS_MODULE", "ragloom.flow_settings")

__version__ = "0.1.0"
