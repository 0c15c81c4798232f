"""An index's runtime settings: each value checked against its spec, typed, or refused."""

from __future__ import annotations

from typing import Any

import pytest

from ragloom_app.index.base import BaseIndex
from ragloom_app.index.file import FileIndex
from ragloom_app.index.settings import (
    MAX_TEXT_SETTING_CHARS,
    IndexSettingsError,
    parse_index_setting,
    resolve_values,
    typed_setting_value,
)

SPECS = {
    "k": {"name": "K", "value": 3, "component": "number", "minimum": 1, "maximum": 10},
    "weight": {"name": "W", "value": 0.5, "component": "number", "minimum": 0.0, "step": 0.1},
    "on": {"name": "On", "value": False, "component": "checkbox"},
    "how": {"name": "How", "value": "a", "component": "dropdown", "choices": [("A", "a"), "b"]},
    "many": {
        "name": "Many",
        "value": ["x"],
        "component": "dropdown",
        "choices": ["x", "y"],
        "multiselect": True,
    },
    "note": {"name": "Note", "value": "", "component": "text"},
}


def test_values_are_typed_as_their_specs_say() -> None:
    given = {"k": "4", "weight": 1, "on": "yes", "how": "b", "many": ["y", "x"], "note": "hi"}
    assert resolve_values(SPECS, given) == {
        "k": 4,
        "weight": 1.0,
        "on": True,
        "how": "b",
        "many": ["y", "x"],
        "note": "hi",
    }
    assert resolve_values(SPECS, {}) == {k: spec["value"] for k, spec in SPECS.items()}
    assert typed_setting_value("k", SPECS["k"], 2.0) == 2
    assert typed_setting_value("on", SPECS["on"], "OFF") is False


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("k", 11, "k must be between 1 and 10, got 11"),
        ("k", 0, "k must be between 1 and 10, got 0"),
        ("k", 2.5, "k must be a whole number, got 2.5"),
        ("k", "three", "k must be a number, got 'three'"),
        ("k", True, "k must be a number, got True"),
        ("weight", float("nan"), "weight must be a number"),
        ("weight", -0.1, "weight must be between 0.0 and None, got -0.1"),
        ("on", "maybe", "on must be true or false, got 'maybe'"),
        ("how", "A", "how must be one of a, b, got 'A'"),
        ("many", "x", "many must be one of x, y, got 'x'"),
        ("many", ["x", "z"], "many must be one of x, y"),
        ("note", 3, "note must be text, got 3"),
        ("note", "n" * (MAX_TEXT_SETTING_CHARS + 1), "note is 1,001 characters long; the limit"),
    ],
)
def test_a_value_the_spec_does_not_allow_is_refused_in_words(
    key: str, value: object, words: str
) -> None:
    with pytest.raises(IndexSettingsError, match=words.replace("(", r"\(").replace("?", r"\?")):
        typed_setting_value(key, SPECS[key], value)


def test_an_unknown_key_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(IndexSettingsError, match=r"no such setting: kk \(this index's settings"):
        resolve_values(SPECS, {"kk": 1})
    with pytest.raises(IndexSettingsError, match=r"no such setting: top_k \(.*: none\)"):
        BaseIndex.resolve_settings({"top_k": 1})


def test_the_file_index_declares_its_search_settings() -> None:
    assert list(FileIndex.get_user_settings()) == [
        "retrieval_mode",
        "definition_prior",
        "mmr",
        "mmr_lambda",
        "rerank",
    ]
    assert FileIndex.resolve_settings({"mmr": "true", "mmr_lambda": "0.3"})["mmr_lambda"] == 0.3
    assert BaseIndex.get_user_settings() == {} and BaseIndex.resolve_settings() == {}


def test_an_index_setting_on_the_command_line_is_index_key_value() -> None:
    assert parse_index_setting("My files:top_k=3") == ("My files", "top_k", "3")
    assert parse_index_setting(" a:b:mmr = true ") == ("a:b", "mmr", "true")
    assert parse_index_setting("x:note=a=b") == ("x", "note", "a=b")
    for bad in ("My files=3", "top_k=3", ":k=1", "x:=1", "x:k"):
        with pytest.raises(IndexSettingsError, match="an index setting is INDEX:KEY=VALUE"):
            parse_index_setting(bad)


class DepthIndex(BaseIndex):
    """A plugin-style index type that keeps the default normalize_config."""

    @classmethod
    def get_admin_settings(cls) -> dict[str, dict[str, Any]]:
        return {
            "depth": {
                "name": "Depth",
                "value": 2,
                "component": "number",
                "minimum": 1,
                "maximum": 10,
            },
            "label": {"name": "Label", "value": "", "component": "text"},
        }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"depth": 50}, "depth must be between 1 and 10, got 50"),
        ({"depth": "deep"}, "depth must be a number, got 'deep'"),
        ({"label": 7}, "label must be text, got 7"),
        ({"colour": "red"}, "unknown index settings: colour"),
    ],
)
def test_the_default_normalize_config_checks_values_against_the_admin_settings(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        DepthIndex.normalize_config(config)


def test_the_default_normalize_config_types_what_it_is_given_and_adds_no_default() -> None:
    assert DepthIndex.normalize_config({"depth": "3"}) == {"depth": 3}
