"""Contract checks for what a plugin registers; each raises ``AssertionError`` saying why.

They check what Ragloom relies on, not what a plugin does: settings that the UI can
draw, events that the UI and ``ask --json`` can render, tool failures that an agent can
read (:class:`~ragloom.agents.tools.ToolResult` with an error code, never an exception)
and readers that refuse a bad file with a :class:`~ragloom.loaders.LoaderError`.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from ragloom.agents.tools import (
    BaseTool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    check_runnable,
)
from ragloom.agents.tools.runner import tools_sandbox
from ragloom.chunking import ReaderFailedError, read_in_sandbox
from ragloom.events import (
    AnswerCollector,
    AnswerDelta,
    AnswerRevised,
    Citation,
    CitationsFound,
    Event,
    LLMCallFinished,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import ChatLLM, Usage
from ragloom.loaders import FileReader, LoaderError, default_readers
from ragloom.qa import cited_numbers
from ragloom.retrieval import Retriever
from ragloom.sandbox import Sandbox
from ragloom.schema import Page, RetrievedChunk
from ragloom_app.db.engine import create_db_engine
from ragloom_app.index.base import BaseIndex, CheckReport, FileOutcome, IndexResources
from ragloom_app.index.manager import IndexManager
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState
from ragloom_app.testing.fakes import HashEmbeddings, ReplayLLM, StaticRetriever

__all__ = [
    "COMPONENTS",
    "SAMPLE_PASSAGES",
    "check_index_type",
    "check_reader",
    "check_reasoning",
    "check_settings_schema",
    "check_tool",
    "create_hash_index",
]

COMPONENTS = ("number", "text", "checkbox", "dropdown", "radio")
"""The ``component`` values the settings forms can draw."""

SAMPLE_PASSAGES = [
    "The Zorblax reactor runs at 451 kelvin.",
    "The cooling loop is flushed every 90 days by the night shift.",
]
"""What :func:`check_reasoning` retrieves from when it is given no retrievers."""

_MODE_ID = re.compile(r"[a-z0-9][a-z0-9_-]*")
_EVENT_TYPES = get_args(Event)


def _fail(owner: str, message: str) -> None:
    raise AssertionError(f"{owner}: {message}")


def _choice_values(choices: Any) -> list[Any]:
    return [c[1] if isinstance(c, tuple | list) and len(c) == 2 else c for c in choices]


def _check_spec(owner: str, spec: Any) -> None:
    if not isinstance(spec, Mapping):
        _fail(owner, f"must be a dict, got {type(spec).__name__}")
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        _fail(owner, "needs a 'name' (its label)")
    if "value" not in spec:
        _fail(owner, "needs a 'value' (its default)")
    kind, value = spec.get("component"), spec["value"]
    if kind not in COMPONENTS:
        _fail(owner, f"'component' must be one of {', '.join(COMPONENTS)}, got {kind!r}")
    if "info" in spec and not isinstance(spec["info"], str | None):
        _fail(owner, "'info' must be text")
    if kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool):
            _fail(owner, f"a number's value must be a number, got {value!r}")
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            _fail(owner, f"the default {value!r} is outside [{low}, {high}]")
    elif kind == "checkbox" and not isinstance(value, bool):
        _fail(owner, f"a checkbox's value must be True or False, got {value!r}")
    elif kind == "text" and not isinstance(value, str):
        _fail(owner, f"a text's value must be a string, got {value!r}")
    elif kind in ("dropdown", "radio"):
        choices = spec.get("choices")
        if not isinstance(choices, Sequence) or isinstance(choices, str) or not choices:
            _fail(owner, f"a {kind} needs a non-empty list of 'choices'")
        allowed = _choice_values(choices)
        picked = value if spec.get("multiselect") else [value]
        if not isinstance(picked, list) or any(v not in allowed for v in picked):
            _fail(owner, f"the default {value!r} is not among the choices {allowed}")


def check_settings_schema(specs: Any, owner: str = "settings") -> None:
    """Check settings as ``get_user_settings()`` / ``get_admin_settings()`` return them."""
    if not isinstance(specs, Mapping):
        _fail(owner, f"must return a dict of setting id to spec, got {type(specs).__name__}")
    for key, spec in specs.items():
        if not isinstance(key, str) or not key.isidentifier():
            _fail(owner, f"setting id {key!r} must be an identifier (it names UI elements)")
        _check_spec(f"{owner}[{key!r}]", spec)


def _check_events(owner: str, events: list[Any]) -> None:
    open_steps: list[str] = []
    citations_seen = False
    for position, event in enumerate(events):
        where = f"{owner}: event {position} ({type(event).__name__})"
        if not isinstance(event, _EVENT_TYPES):
            raise AssertionError(f"{where} is not one of ragloom.events' Event types")
        if isinstance(event, StepStarted):
            open_steps.append(event.name)
        elif isinstance(event, StepFinished):
            if event.name in open_steps:
                open_steps.remove(event.name)
            elif event.name != "error":
                raise AssertionError(f"{where}: step {event.name!r} finished, never started")
            if event.seconds < 0 or not isinstance(event.error, str | None):
                raise AssertionError(f"{where}: needs seconds >= 0 and error None or text")
        elif isinstance(event, LLMCallFinished) and not isinstance(event.usage, Usage):
            raise AssertionError(f"{where}: usage must be a ragloom.llms.base.Usage")
        elif isinstance(event, CitationsFound):
            if citations_seen:
                raise AssertionError(f"{where}: the citations must come once")
            if not all(isinstance(c, Citation) for c in event.citations):
                raise AssertionError(f"{where}: citations must be ragloom.events.Citation")
            citations_seen = True
        elif isinstance(event, AnswerDelta | AnswerRevised) and citations_seen:
            raise AssertionError(f"{where}: the answer changed after its citations")
    if open_steps:
        _fail(owner, f"steps started and never finished: {', '.join(open_steps)}")


def check_reasoning(
    cls: type[BaseReasoning],
    *,
    llm: ChatLLM | None = None,
    retrievers: Sequence[Retriever] | None = None,
    question: str = "At what temperature does the Zorblax reactor run?",
    settings: Mapping[str, Any] | None = None,
    tools: ToolRegistry | None = None,
) -> dict[str, Any]:
    """Check a reasoning class, run it once and return the ``ask --json`` record.

    By default it answers with a :class:`ReplayLLM` over :data:`SAMPLE_PASSAGES`; pass
    ``llm`` (with replies your mode's prompts expect) and ``retrievers`` to run it on
    your own. The stream must be Event objects, steps must finish, an answer must come,
    and every citation must be cited as ``[n]`` in the answer.
    """
    owner = getattr(cls, "__qualname__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, BaseReasoning)):
        _fail(owner, "is not a BaseReasoning subclass")
    info = cls.get_info()
    if not isinstance(info, ReasoningInfo):
        _fail(owner, "get_info() must return a ReasoningInfo")
    if not _MODE_ID.fullmatch(info.id):
        _fail(owner, f"the id {info.id!r} must be lower-case letters, digits, '-' or '_'")
    if not info.name or not info.description:
        _fail(owner, "get_info() needs a name and a description")
    check_settings_schema(cls.get_user_settings(), f"{owner}.get_user_settings()")
    llm = llm or ReplayLLM()
    state = ReasoningState(llm=llm, tools=tools or ToolRegistry(), llm_named=lambda _: llm)
    if retrievers is None:
        retrievers = [StaticRetriever(passages=SAMPLE_PASSAGES)]
    pipeline = cls.get_pipeline(cls.resolve_settings(settings), state, list(retrievers))
    if not isinstance(pipeline, BaseReasoning):
        _fail(owner, f"get_pipeline() returned {type(pipeline).__name__}, not a BaseReasoning")
    events = list(pipeline.stream(question))
    _check_events(owner, events)
    record = AnswerCollector(info.id).extend(events).to_dict(0.0)
    if not record["answer"]:
        _fail(owner, "streamed no answer (AnswerDelta or AnswerRevised)")
    cited = cited_numbers(record["answer"], 10_000)
    for citation in record["citations"]:
        if citation["number"] not in cited:
            _fail(owner, f"citation [{citation['number']}] is not cited in the answer")
    json.dumps(record, default=str)  # what `ask --json` prints must serialise
    return record


def check_tool(
    tool_cls: type[BaseTool],
    sample_input: str | dict[str, Any],
    *,
    expect: str | None = None,
    bad_input: str | dict[str, Any] | None = None,
    context: ToolContext | None = None,
) -> ToolResult:
    """Check a tool class: its metadata, a successful call, and failures as results.

    ``sample_input`` must succeed (and its content contain ``expect`` if given);
    ``bad_input`` must fail with an error code. Garbage input must never raise. A
    sandboxed tool (the default) must also succeed with ``sample_input`` in the tool
    sandbox, as the agents call it: its class importable, it and its result picklable.
    """
    owner = getattr(tool_cls, "__qualname__", repr(tool_cls))
    if not (isinstance(tool_cls, type) and issubclass(tool_cls, BaseTool)):
        _fail(owner, "is not a BaseTool subclass")
    if not isinstance(getattr(tool_cls, "name", None), str) or not tool_cls.name.isidentifier():
        _fail(owner, "name must be an identifier (agents write it in their plans)")
    if not isinstance(getattr(tool_cls, "description", None), str) or not tool_cls.description:
        _fail(owner, "needs a description (it goes into the agents' prompts)")
    arguments = getattr(tool_cls, "Arguments", None)
    if not (isinstance(arguments, type) and issubclass(arguments, BaseModel)):
        _fail(owner, "Arguments must be a pydantic BaseModel subclass")
    schema = tool_cls.parameters_schema()
    if schema.get("type") != "object":
        _fail(owner, "the arguments' JSON schema must describe an object")
    json.dumps(schema)
    tool = tool_cls.from_context(context or ToolContext(llm=ReplayLLM()))
    if not isinstance(tool, tool_cls):
        _fail(owner, f"from_context() returned {type(tool).__name__}, not a {tool_cls.__name__}")
    result = tool.invoke(sample_input)
    if not isinstance(result, ToolResult):
        _fail(owner, f"run() must return a ToolResult, got {type(result).__name__}")
    if not result.ok or not isinstance(result.content, str) or not result.content:
        _fail(owner, f"the sample input failed or gave no content: {result.as_observation()}")
    if expect is not None and expect not in result.content:
        _fail(owner, f"expected {expect!r} in the result, got {result.content!r}")
    garbage: list[str | dict[str, Any]] = ["", "{", "[1, 2]", {"no_such_argument": [None]}]
    for raw in [*garbage, *([bad_input] if bad_input is not None else [])]:
        try:
            outcome = tool.invoke(raw)
        except Exception as exc:
            _fail(owner, f"invoke({raw!r}) raised {type(exc).__name__}: {exc}; return a failure")
        if not isinstance(outcome, ToolResult):
            _fail(owner, f"invoke({raw!r}) must return a ToolResult")
        if outcome.error is not None and not (outcome.error.code and outcome.error.message):
            _fail(owner, f"invoke({raw!r}) failed without an error code and message")
    if bad_input is not None and tool.invoke(bad_input).ok:
        _fail(owner, f"the bad input {bad_input!r} did not fail")
    if tool_cls.sandboxed:
        _check_tool_in_sandbox(owner, tool_cls, tool, sample_input)
    return result


def _check_tool_in_sandbox(
    owner: str, tool_cls: type[BaseTool], tool: BaseTool, sample_input: str | dict[str, Any]
) -> None:
    """The sample call, through a ToolRunner into the tool sandbox's worker process."""
    try:
        check_runnable(tool_cls)
    except TypeError as exc:
        _fail(owner, str(exc))
    raw = sample_input if isinstance(sample_input, str) else json.dumps(sample_input)
    # A sandbox of its own, with the app's limits: its worker starts with today's sys.path
    # (a test may have just put the plugin on it) and leaves the app's workers alone.
    limits = replace(tools_sandbox().limits, workers=1)
    box = Sandbox(f"check_tool:{tool_cls.__qualname__}", limits)
    try:
        outcome = ToolRunner(retries=0, sandbox=box).call(tool, raw).result
    finally:
        box.close()
    if not outcome.ok:
        _fail(
            owner,
            f"the sample input failed in the tool sandbox: {outcome.as_observation()} (a "
            "sandboxed tool runs in a worker process: its class must be importable and it "
            "and its result picklable; or set `sandboxed = False`)",
        )


def _refuses(owner: str, reader: FileReader, path: Path, what: str) -> None:
    try:
        reader.read(path)
    except LoaderError as exc:
        if not exc.reason:
            _fail(owner, f"the LoaderError for {what} needs a reason")
        return
    except Exception as exc:
        _fail(owner, f"{what} raised {type(exc).__name__}: {exc}; raise a LoaderError subclass")
    _fail(owner, f"{what} was read without an error; raise a LoaderError subclass")


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
        _fail(owner, "must be a FileReader object (extensions and read())")
    extensions = reader.extensions
    if not isinstance(extensions, tuple) or not extensions:
        _fail(owner, "extensions must be a non-empty tuple such as ('.rst',)")
    for extension in extensions:
        if not isinstance(extension, str) or not re.fullmatch(r"\.[a-z0-9_]+", extension):
            _fail(owner, f"extension {extension!r} must be lower-case with its dot")
    sample = Path(sample_path)
    if sample.suffix.lower() not in extensions:
        _fail(owner, f"the sample {sample.name} has none of its extensions")
    pages = reader.read(sample)
    if not isinstance(pages, list) or not pages or not all(isinstance(p, Page) for p in pages):
        _fail(owner, "read() must return a non-empty list of ragloom.schema.Page")
    text = "\n".join(page.text for page in pages)
    if not text.strip():
        _fail(owner, "read() returned pages without text")
    if expect is not None and expect not in text:
        _fail(owner, f"expected {expect!r} in the text read")
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
                _fail(owner, "the LoaderError for random bytes lost its reason in the sandbox")
    return pages


def _check_sandboxed(owner: str, reader: FileReader, sample: Path, pages: list[Page]) -> None:
    """The sample reads the same in the readers sandbox as here."""
    try:
        there = read_in_sandbox(sample, reader)
    except ReaderFailedError as exc:
        _fail(owner, f"cannot run in the readers sandbox: {exc.reason}")
    except LoaderError as exc:
        _fail(owner, f"the sample failed in the readers sandbox: {exc.reason}")
    if there != pages:
        _fail(owner, "the sample reads differently in the readers sandbox")


def create_hash_index(
    cls: type[BaseIndex],
    root: Path,
    *,
    name: str = "contract",
    readers: Mapping[str, FileReader] | None = None,
    **resource_fields: Any,
) -> tuple[IndexManager, BaseIndex]:
    """An index of type ``cls`` in the folder ``root``, created as the app creates one.

    Its config is checked by the type, then ``on_create`` and ``on_start`` run. It embeds
    with :class:`HashEmbeddings` and reads with ``readers`` (default: the built-ins);
    ``resource_fields`` are other :class:`IndexResources` fields (its limits). Returns the
    manager (to delete the index with) and the index.
    """
    root.mkdir(parents=True, exist_ok=True)
    table = dict(readers or default_readers())
    engine = create_db_engine(f"sqlite:///{root / 'contract.db'}")
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


def check_index_type(
    cls: type[BaseIndex],
    sample_files: Sequence[str | Path],
    *,
    query: str | None = None,
    readers: Mapping[str, FileReader] | None = None,
) -> list[RetrievedChunk]:
    """Create an index of this type in a temporary folder, index, search, check, delete.

    Every sample file must be indexed; ``query`` (default: a word of the first sample's
    name) must find something. Uses :class:`HashEmbeddings`. Returns what it found.
    """
    owner = getattr(cls, "__qualname__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, BaseIndex)):
        _fail(owner, "is not a BaseIndex subclass")
    readers = dict(readers or default_readers())
    check_settings_schema(cls.admin_settings_for(readers), f"{owner}.admin_settings_for()")
    with tempfile.TemporaryDirectory() as folder:
        manager, index = create_hash_index(cls, Path(folder), readers=readers)
        outcomes = index.get_indexing_pipeline({}).run([Path(p) for p in sample_files])
        if not all(isinstance(o, FileOutcome) for o in outcomes):
            _fail(owner, "the indexing pipeline must yield a FileOutcome per file")
        failed = [f"{o.name}: {o.status} ({o.reason})" for o in outcomes if o.status != "indexed"]
        if len(outcomes) != len(sample_files) or failed:
            _fail(owner, f"not every sample was indexed: {failed or outcomes}")
        if not isinstance(index.list_sources(), list):
            _fail(owner, "list_sources() must return a list")
        retrievers = index.get_retriever_pipelines({"top_k": 3})
        if not retrievers or not all(isinstance(r, Retriever) for r in retrievers):
            _fail(owner, "get_retriever_pipelines() must return a list of Retriever")
        question = query or Path(sample_files[0]).stem.replace("_", " ")
        found = [hit for retriever in retrievers for hit in retriever(question, top_k=3)]
        if not found or not all(isinstance(hit, RetrievedChunk) for hit in found):
            _fail(owner, f"searching for {question!r} found no RetrievedChunk")
        if not isinstance(index.check(), CheckReport):
            _fail(owner, "check() must return a CheckReport")
        manager.delete(index.name)
        index.resources.engine.dispose()
    return found
