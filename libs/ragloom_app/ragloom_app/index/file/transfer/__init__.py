"""Move a file index between deployments: :func:`export_index` and :func:`import_index`.

An export is a zip holding everything the index answers from, in a form independent of
the stores it came from (SQLite or PostgreSQL, embedded Chroma or a server, a BM25 file
or PostgreSQL full text):

- ``manifest.json``: the format, the index's name, type and settings, the embedding model
  (class, model, backend, precision, dimension; never an API key) and the counts;
- ``sources.jsonl``: each indexed file (name, sha256, size, chunk count), in order;
- ``chunks.jsonl``: each chunk (text, page, offsets), grouped by file in the same order;
- ``vectors.f32``: the chunks' vectors, little-endian float32, row by row, same order;
- ``files/<sha256><suffix>``: the stored copy of each file.

The full text is not exported: the receiving full-text store indexes the chunk texts
itself, so it scores them as its own. An import makes a new index and writes each file as
the pipeline does (row ``indexing``, then the stores, then the chunk rows with the flip to
``indexed``), so an import cut short leaves what ``ragloom index check`` and the recovery
know how to finish; one that fails deletes the index it made. The file is read as
hostile: only the names above, bounded sizes, each stored copy checked against its hash,
vectors of the deployment's own dimension and model.
"""

from ragloom_app.index.file.transfer.export import export_index
from ragloom_app.index.file.transfer.format import (
    EXPORT_FORMAT,
    ImportLimits,
    IndexTransferError,
    TransferReport,
    embedding_identity,
)
from ragloom_app.index.file.transfer.importer import import_index

__all__ = [
    "EXPORT_FORMAT",
    "ImportLimits",
    "IndexTransferError",
    "TransferReport",
    "embedding_identity",
    "export_index",
    "import_index",
]
