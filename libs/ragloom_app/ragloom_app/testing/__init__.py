"""Contract tests for plugin authors: check a reasoning, index type, tool or reader.

Run these in your plugin's own tests; each raises ``AssertionError`` naming what breaks
Ragloom's expectations::

    from ragloom_app.testing import check_plugin, check_reader, check_reasoning, check_tool

    check_plugin(my_plugin_module)          # its hooks return what Ragloom can register
    check_reasoning(MyReasoning)            # settings, events, answer, citations
    check_tool(MyTool, {"x": 1}, bad_input={"x": "?"})
    check_reader(MyReader(), "tests/sample.rst")

Nothing here loads a model: :class:`ReplayLLM`, :class:`HashEmbeddings` and
:class:`StaticRetriever` stand in for the LLM, the embeddings and the indices.
"""

from __future__ import annotations

from typing import Any

from ragloom_app.plugins.manager import (
    LoadedPlugin,
    PluginError,
    check_hooks,
    collect_plugins,
    create_plugin_manager,
)
from ragloom_app.plugins.slots import slots_of
from ragloom_app.testing.contracts import (
    COMPONENTS,
    SAMPLE_PASSAGES,
    check_reasoning,
    check_settings_schema,
    check_tool,
)
from ragloom_app.testing.fakes import HashEmbeddings, ReplayLLM, StaticRetriever
from ragloom_app.testing.index_contracts import check_index_type, check_reader, create_hash_index

__all__ = [
    "COMPONENTS",
    "SAMPLE_PASSAGES",
    "HashEmbeddings",
    "ReplayLLM",
    "StaticRetriever",
    "check_index_type",
    "check_plugin",
    "check_reader",
    "check_reasoning",
    "check_settings_schema",
    "check_tool",
    "create_hash_index",
]


def check_plugin(plugin: object, name: str = "plugin-under-test", app: Any = None) -> LoadedPlugin:
    """Register ``plugin`` alone, call its hooks, and check what they return.

    A hook that names the argument ``app`` gets ``app`` (a
    :class:`~ragloom_app.app.BaseApp`, for one that reads ``app.plugin_settings(name)``;
    None if not given).

    Every hook is called, the ``ragloom`` command's (``commands``) as well as the app's.
    Fails on an unknown hook, a hook that raises or returns the wrong kind of thing, a
    reasoning's info or settings, a tool's metadata or an index type's settings. Returns
    what the plugin contributes, for further checks with the other ``check_*``.
    """
    manager = create_plugin_manager()
    manager.register(plugin, name=name)
    try:
        check_hooks(manager, plugin)
    except PluginError as exc:
        raise AssertionError(f"{name}: {exc}") from None
    (loaded,) = collect_plugins(manager, given={"app": app})
    if loaded.info.error:
        raise AssertionError(f"{name}: {loaded.info.error}")
    found = loaded.contributions
    # The ``ragloom`` command's hooks too, which an app's start never calls.
    (commands,) = collect_plugins(manager, given={"app": app}, stage="cli")
    if commands.info.error:
        raise AssertionError(f"{name}: {commands.info.error}")
    for slot in slots_of("cli"):
        entries = commands.contributions.entries[slot.kind]
        found.add(slot.kind, entries)
        loaded.info.registered[slot.kind] = list(dict.fromkeys(key for key, _ in entries))
    for tool in found.tools:
        if not tool.description or tool.parameters_schema().get("type") != "object":
            raise AssertionError(f"{tool.__qualname__}: needs a description and object arguments")
    return loaded
