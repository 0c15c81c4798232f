"""Contract checks for what holds a plugin's documents: readers and index types.

Each raises ``AssertionError`` saying why. A reader must refuse a bad file with a
:class:`~ragloom.loaders.LoaderError` and run in the readers sandbox as the app runs it;
an index type must index, search, check and delete through the app's own paths.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragloom.chunking import ReaderFailedError, read_in_sandbox
from ragloom.loaders import FileReader, LoaderError, default_readers
from ragloom.retrieval import Retriever
from ragloom.schema import Page, RetrievedChunk
from ragloom_app.db.engine import create_db_engine, driver_connections
from ragloom_app.index.base import BaseIndex, CheckReport, FileOutcome, IndexResources
from ragloom_app.index.manager import IndexManager
from ragloom_app.testing.contracts import check_settings_schema, fail_contract
from ragloom_app.testing.fakes import HashEmbeddings, ReplayLLM

__all__ = ["check_index_type", "check_reader", "create_hash_index"]


def _refuses(owner: str, reader: FileReader, path: Path, what: str) -> None:
    try:
        reader.read(path)
    except LoaderError as exc:
        if not exc.reason:
            fail_contract(owner, f"the LoaderError for {what} needs a reason")
        return
    except Exception as exc:
        fail_contract(
            owner, f"{what} raised {type(exc).__name__}: {exc}; raise a LoaderError subclass"
        )
    fail_contract(owner, f"{what} was read without an error; raise a LoaderError subclass")


def check_reader(
    reader: FileReader, sample_path: str | Path, *, expect: str | None = None
) -> list[Page]:
    """Check a file reader: its extensions, the sample read, and bad files refused.

    ``sample_path`` must give at least one page with text (containing ``expect`` if
    given), and the same pages when read in the readers sandbox, where the app reads
    every file: the reader must pickle (a module-level class) and import in a worker
    process. An empty file, a file of random bytes and a missing file must each raise a
    :class:`~ragloom.loaders.LoaderError` with a reason, there too.
    """
    owner = type(reader).__qualname__
    if isinstance(reader, type) or not isinstance(reader, FileReader):
        fail_contract(owner, "must be a FileReader object (extensions and read())")
    extensions = reader.extensions
    if not isinstance(extensions, tuple) or not extensions:
        fail_contract(owner, "extensions must be a non-empty tuple such as ('.rst',)")
    for extension in extensions:
        if not isinstance(extension, str) or not re.fullmatch(r"\.[a-z0-9_]+", extension):
            fail_contract(owner, f"extension {extension!r} must be lower-case with its dot")
    sample = Path(sample_path)
    if sample.suffix.lower() not in extensions:
        fail_contract(owner, f"the sample {sample.name} has none of its extensions")
    pages = reader.read(sample)
    if not isinstance(pages, list) or not pages or not all(isinstance(p, Page) for p in pages):
        fail_contract(owner, "read() must return a non-empty list of ragloom.schema.Page")
    text = "\n".join(page.text for page in pages)
    if not text.strip():
        fail_contract(owner, "read() returned pages without text")
    if expect is not None and expect not in text:
        fail_contract(owner, f"expected {expect!r} in the text read")
    _check_sandboxed(owner, reader, sample, pages)
    with tempfile.TemporaryDirectory() as folder:
        empty = Path(folder) / f"empty{extensions[0]}"
        empty.write_bytes(b"")
        _refuses(owner, reader, empty, "an empty file")
        noise = Path(folder) / f"noise{extensions[0]}"
        noise.write_bytes(bytes(range(256)) * 16)
        _refuses(owner, reader, noise, "a file of random bytes")
        _refuses(owner, reader, Path(folder) / f"missing{extensions[0]}", "a missing file")
        try:
            read_in_sandbox(noise, reader)
        except LoaderError as exc:
            if not exc.reason:
                fail_contract(
                    owner, "the LoaderError for random bytes lost its reason in the sandbox"
                )
    return pages


def _check_sandboxed(owner: str, reader: FileReader, sample: Path, pages: list[Page]) -> None:
    """The sample reads the same in the readers sandbox as here."""
    try:
        there = read_in_sandbox(sample, reader)
    except ReaderFailedError as exc:
        fail_contract(owner, f"cannot run in the readers sandbox: {exc.reason}")
    except LoaderError as exc:
        fail_contract(owner, f"the sample failed in the readers sandbox: {exc.reason}")
    if there != pages:
        fail_contract(owner, "the sample reads differently in the readers sandbox")


def create_hash_index(
    cls: type[BaseIndex],
    root: Path,
    *,
    name: str = "contract",
    readers: Mapping[str, FileReader] | None = None,
    database_url: str | None = None,
    **resource_fields: Any,
) -> tuple[IndexManager, BaseIndex]:
    """An index of type ``cls`` in the folder ``root``, created as the app creates one.

    Its config is checked by the type, then ``on_create`` and ``on_start`` run. It embeds
    with :class:`HashEmbeddings` and reads with ``readers`` (default: the built-ins);
    ``resource_fields`` are other :class:`IndexResources` fields (its limits, or
    ``chroma_server``). Its database is a SQLite file in ``root`` unless ``database_url``
    names another; on PostgreSQL the full text is in it, as the app keeps it. Returns the
    manager (to delete the index with) and the index.
    """
    root.mkdir(parents=True, exist_ok=True)
    table = dict(readers or default_readers())
    engine = create_db_engine(database_url or f"sqlite:///{root / 'contract.db'}")
    if engine.dialect.name == "postgresql":
        resource_fields.setdefault("fulltext_connect", driver_connections(engine))
    manager = IndexManager(
        engine,
        lambda index_id: IndexResources(
            engine=engine,
            data_dir=root / "indices" / str(index_id),
            shared_dir=root,
            embeddings=HashEmbeddings,
            readers=table,
            **resource_fields,
        ),
        table,
    )
    type_id = f"{cls.__module__}.{cls.__qualname__}"
    manager.register_type(type_id, cls)
    index = manager.create(name, type_id, manager.normalize_config(type_id, {}))
    return manager, index


def _check_user_settings(owner: str, cls: type[BaseIndex]) -> None:
    """The runtime settings' specs, and their defaults as :meth:`resolve_settings` gives."""
    specs = cls.get_user_settings()
    check_settings_schema(specs, f"{owner}.get_user_settings()")
    defaults = {key: spec["value"] for key, spec in specs.items()}
    try:
        resolved = cls.resolve_settings({})
    except Exception as exc:
        fail_contract(owner, f"resolve_settings({{}}) raised {type(exc).__name__}: {exc}")
    if resolved != defaults:
        fail_contract(owner, f"resolve_settings({{}}) gave {resolved}, not the defaults")
    try:
        cls.resolve_settings({"no_such_setting_": 1})
    except ValueError:
        return
    fail_contract(owner, "resolve_settings() must refuse an unknown key with a ValueError")


def _setting_variants(specs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One request's settings per value other than a default: each other choice of a
    single-choice setting, each checkbox flipped."""
    variants: list[dict[str, Any]] = []
    for key, spec in specs.items():
        if spec.get("component") == "checkbox":
            variants.append({key: not spec["value"]})
        elif spec.get("component") in ("dropdown", "radio") and not spec.get("multiselect"):
            values = [c[1] if isinstance(c, tuple | list) else c for c in spec["choices"]]
            variants.extend({key: value} for value in values if value != spec["value"])
    return variants


def _search(
    owner: str, index: BaseIndex, given: Mapping[str, Any], question: str
) -> list[RetrievedChunk]:
    """Search ``index`` with the user settings ``given``, as the chat page asks it."""
    where = f"with the settings {dict(given)}" if given else "with the default settings"
    settings = {**type(index).resolve_settings(given), "top_k": 3, "llm": ReplayLLM()}
    try:
        retrievers = index.get_retriever_pipelines(settings)
    except Exception as exc:
        fail_contract(owner, f"get_retriever_pipelines() {where} raised {exc!r}")
    if not retrievers or not all(isinstance(r, Retriever) for r in retrievers):
        fail_contract(owner, "get_retriever_pipelines() must return a list of Retriever")
    found = [hit for retriever in retrievers for hit in retriever(question, top_k=3)]
    if not found or not all(isinstance(hit, RetrievedChunk) for hit in found):
        fail_contract(owner, f"searching for {question!r} {where} found no RetrievedChunk")
    return found


def _check_find_terms(owner: str, index: BaseIndex, found: Sequence[RetrievedChunk]) -> None:
    """``find_terms`` answers every term asked, True, False or None, and never False for a
    word of a passage the index just returned (the check before answering would decline a
    question about it)."""
    words = [w for w in (found[0].chunk.text.split() if found else []) if w.isalpha()][:3]
    asked = [*words, "zzqx_absent_term"]
    answer = index.find_terms(asked)
    if not isinstance(answer, dict) or set(answer) != set(asked):
        fail_contract(owner, f"find_terms() must answer each term asked, got {answer!r}")
    if any(value not in (True, False, None) for value in answer.values()):
        fail_contract(owner, f"find_terms() answers True, False or None, got {answer!r}")
    wrong = [w for w in words if answer[w] is False]
    if wrong:
        fail_contract(owner, f"find_terms() says {wrong} occur nowhere, yet search found them")


def check_index_type(
    cls: type[BaseIndex],
    sample_files: Sequence[str | Path],
    *,
    query: str | None = None,
    readers: Mapping[str, FileReader] | None = None,
) -> list[RetrievedChunk]:
    """Create an index of this type in a temporary folder, index, search, check, delete.

    Every sample file must be indexed; ``query`` (default: a word of the first sample's
    name) must find something, with the defaults of the type's ``get_user_settings`` and
    with each other value of them (each other choice; each checkbox flipped), one at a
    time, as a request gives them (resolved, plus ``llm`` and ``top_k``); ``find_terms``
    must answer each term, and never say a word of a found passage is absent. Uses
    :class:`HashEmbeddings` and a :class:`ReplayLLM`. Returns what the defaults found.
    """
    owner = getattr(cls, "__qualname__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, BaseIndex)):
        fail_contract(owner, "is not a BaseIndex subclass")
    readers = dict(readers or default_readers())
    check_settings_schema(cls.admin_settings_for(readers), f"{owner}.admin_settings_for()")
    _check_user_settings(owner, cls)
    with tempfile.TemporaryDirectory() as folder:
        manager, index = create_hash_index(cls, Path(folder), readers=readers)
        outcomes = index.get_indexing_pipeline({}).run([Path(p) for p in sample_files])
        if not all(isinstance(o, FileOutcome) for o in outcomes):
            fail_contract(owner, "the indexing pipeline must yield a FileOutcome per file")
        failed = [f"{o.name}: {o.status} ({o.reason})" for o in outcomes if o.status != "indexed"]
        if len(outcomes) != len(sample_files) or failed:
            fail_contract(owner, f"not every sample was indexed: {failed or outcomes}")
        if not isinstance(index.list_sources(), list):
            fail_contract(owner, "list_sources() must return a list")
        question = query or Path(sample_files[0]).stem.replace("_", " ")
        found = _search(owner, index, {}, question)
        for variant in _setting_variants(cls.get_user_settings()):
            _search(owner, index, variant, question)
        _check_find_terms(owner, index, found)
        if not isinstance(index.check(), CheckReport):
            fail_contract(owner, "check() must return a CheckReport")
        manager.delete(index.name)
        index.resources.engine.dispose()
    return found
