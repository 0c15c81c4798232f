"""theflow settings used by Ragloom: an in-memory context and no run storage.

theflow's defaults write a cache under the temp folder and a run store under ``./.theflow``
for every call (about 23 ms per 3-node call); Ragloom components turn that tracking off, so
nothing here touches the disk.
"""

CONTEXT = {"__type__": "ragloom.base.InMemoryContext"}
CACHE = {"__type__": "ragloom.flow_backend.InMemoryCache"}
STORAGE = {"__type__": "ragloom.flow_backend.NoRunStorage"}
MIDDLEWARE: dict[str, list[str]] = {"default": []}
BASE_BACKEND = {"__type__": "theflow.backends.Backend"}
