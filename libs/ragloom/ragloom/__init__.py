"""Ragloom core library: components for answering questions over documents.

theflow reads its settings once, the first time it is imported. Unless the user chose a
settings module, point it at :mod:`ragloom.flow_settings`, which keeps every run in memory:
theflow's defaults create folders at import and pickle each call to disk. theflow also
creates ``<tmp>/theflow_<user>`` at import unless ``THEFLOW_TEMP_PATH`` names a folder;
the system's temp folder itself is used, since Ragloom stores nothing there.
"""

import os
import tempfile

os.environ.setdefault("THEFLOW_SETTINGS_MODULE", "ragloom.flow_settings")
os.environ.setdefault("THEFLOW_TEMP_PATH", tempfile.gettempdir())

__version__ = "0.1.0"
