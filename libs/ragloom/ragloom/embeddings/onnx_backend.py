"""Run a sentence-transformers model with onnxruntime: exported once, cached, then torch-free.

The first use exports the model's transformer with ``torch.onnx.export`` into the model
cache (``$RAGLOOM_MODEL_CACHE``, else ``~/.cache/ragloom/models``), under a name keyed by the
sha256 of the weights, so a changed model never meets a stale graph. Mean pooling and L2
normalisation are part of the exported graph, as in the sentence-transformers pipeline
(Transformer, mean Pooling, Normalize); other poolings are refused. The graph is then fused
by onnxruntime's transformer optimizer (one ``Attention``, ``SkipLayerNormalization`` and
``BiasGelu`` node per layer instead of dozens of small ones) and checked against torch on a
padded batch before it is written: a graph that disagrees is never cached. The file appears
atomically (temporary file, then rename), so a killed export leaves nothing a later run
would trust.

``quantized=True`` runs an int8 copy of that graph instead: its MatMul weights quantized
per output channel, activations quantized on the fly (onnxruntime's dynamic quantization),
made once from the fp32 graph and cached beside it. About twice as fast on the CPUs
measured; its vectors are not equal to fp32's (cosine about 0.99), so it is judged by
retrieval recall (docs/performance.md), and a copy whose vectors drift past
:data:`MIN_INT8_COSINE` on the probe batch is refused.

Later loads read only the ``.onnx`` file and ``tokenizer.json``: no torch import, which also
makes start-up faster. Tokenization uses the model's own tokenizer file with the model's
``max_seq_length`` truncation (the file itself says 128 tokens and fixed padding, which
sentence-transformers overrides, and so do we).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.embeddings.base import EmbeddingsError, unit_rows

__all__ = [
    "EXPORT_FORMAT",
    "MIN_INT8_COSINE",
    "OnnxEncoder",
    "export_onnx",
    "load_onnx",
    "onnx_model_file",
    "quantize_onnx",
]

logger = logging.getLogger(__name__)

#: Part of every cached file's name: bump it whenever the exported graph changes.
EXPORT_FORMAT = 1
_OPSET = 17
#: The int8 copy's vectors must keep at least this cosine to fp32's on the probe batch: a
#: sanity bar against a broken quantization, far below what retrieval needs (measured 0.98).
MIN_INT8_COSINE = 0.95
_EXPORT_LOCK = threading.Lock()


@dataclass
class OnnxEncoder:
    """An onnxruntime session with the model's tokenizer; ``encode`` embeds one batch."""

    session: Any  # onnxruntime.InferenceSession, imported lazily
    tokenizer: Any  # tokenizers.Tokenizer: truncates to max_tokens, no padding
    counter: Any  # tokenizers.Tokenizer: no truncation, for counting
    dimension: int
    max_tokens: int
    path: Path
    input_names: frozenset[str] = field(default_factory=frozenset)
    lowercase: bool = False  # sentence_bert_config's do_lower_case, applied before tokenizing

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors of ``texts``, padded to the longest text of the batch."""
        if self.lowercase:
            texts = [t.lower() for t in texts]
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (vectors,) = self.session.run(
            None, {k: v for k, v in feed.items() if k in self.input_names}
        )
        return unit_rows(np.asarray(vectors, dtype=np.float32))

    def count_one(self, text: str) -> int:
        """Tokens of ``text``, special tokens excluded, never truncated."""
        return len(self.counter.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """:meth:`count_one` of each text."""
        encodings = self.counter.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]


def _read_json(path: Path) -> Any:
    """The parsed JSON of ``path``: an object or a list, as the model's file format has it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingsError(f"cannot read {path}: {exc}") from exc


def _check_pipeline(model_dir: Path) -> tuple[int, bool]:
    """``(max_seq_length, do_lower_case)`` of a Transformer, mean Pooling, Normalize model."""
    modules = model_dir / "modules.json"
    if modules.is_file():
        listed = _read_json(modules)
        kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in listed]
        # The weights must be at the top of the folder, where the export reads them.
        if kinds[:2] != ["Transformer", "Pooling"] or listed[0].get("path", "") != "":
            raise EmbeddingsError(f"the onnx backend needs Transformer then Pooling, got {kinds}")
        pooling = _read_json(model_dir / listed[1]["path"] / "config.json")
        modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
        if modes != ["pooling_mode_mean_tokens"]:
            raise EmbeddingsError(f"the onnx backend supports mean pooling only, got {modes}")
        if any(kind not in ("Transformer", "Pooling", "Normalize") for kind in kinds):
            raise EmbeddingsError(f"the onnx backend cannot run the modules {kinds}")
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        values = _read_json(config)
        return int(values.get("max_seq_length") or 512), bool(values.get("do_lower_case"))
    hf_config = _read_json(model_dir / "config.json")
    return int(hf_config.get("max_position_embeddings", 512)), False


def _weights(model_dir: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (model_dir / name).is_file():
            return model_dir / name
    raise EmbeddingsError(f"no model weights (model.safetensors) in {model_dir}")


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def onnx_model_file(
    model_dir: Path, cache_dir: Path | None = None, *, quantized: bool = False
) -> Path:
    """Where the exported graph of ``model_dir`` (its int8 copy if ``quantized``) is, or
    will be, cached.

    Keyed by the weights' sha256, the export format and onnxruntime's version (the fused
    graph uses onnxruntime's own operators).
    """
    import onnxruntime

    if cache_dir is None:
        from ragloom.llms.bundled import default_cache_dir

        cache_dir = default_cache_dir()
    digest = _sha256(_weights(model_dir))
    kind = "-int8pc" if quantized else ""
    name = f"{digest[:32]}-v{EXPORT_FORMAT}-ort{onnxruntime.__version__}{kind}.onnx"
    return Path(cache_dir) / "embeddings" / name


def _mean_pooled(model_dir: Path) -> Any:
    """The transformer with mean pooling and normalisation on top, as a torch module."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    # "eager" attention exports as plain MatMul/Softmax, which the fusion below recognises;
    # sdpa exports as a longer graph that measured slower and does not fuse.
    model = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    return MeanPooled().eval()


def _probe(vocab_size: int) -> dict[str, np.ndarray]:
    """A padded batch: the trace must see a mask with zeros, or transformers may drop it."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, min(vocab_size, 30000), size=(3, 19)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 11:] = 0
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _agrees(path: Path, probe: dict[str, np.ndarray], expected: np.ndarray) -> float:
    """Largest absolute difference between the graph at ``path`` and torch on ``probe``."""
    return float(np.abs(_outputs(path, probe) - expected).max())


def export_onnx(model_dir: Path, target: Path, *, fuse: bool = True) -> Path:
    """Export ``model_dir`` to ``target`` (see the module docs); returns ``target``.

    Needs torch and transformers. ``fuse=False`` keeps the plain exported graph (kept for
    benchmarks). Raises :class:`EmbeddingsError` if the exported graph disagrees with torch.
    """
    import torch

    started = time.perf_counter()
    module = _mean_pooled(model_dir)
    probe = _probe(int(module.model.config.vocab_size))
    tensors = tuple(torch.from_numpy(probe[k]) for k in probe)
    with torch.no_grad():
        expected = module(*tensors).numpy()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        plain = work / "plain.onnx"
        with warnings.catch_warnings(), torch.no_grad():
            # The legacy (TorchScript) exporter needs no onnxscript; its deprecation and
            # tracer warnings are about control flow this model does not have.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                tensors,
                str(plain),
                input_names=list(probe),
                output_names=["embedding"],
                dynamic_axes={
                    **{name: {0: "batch", 1: "tokens"} for name in probe},
                    "embedding": {0: "batch"},
                },
                opset_version=_OPSET,
                dynamo=False,
            )
        chosen = plain
        if fuse:
            fused = _fuse(plain, module.model.config)
            if fused is not None and _agrees(fused, probe, expected) < 1e-4:
                chosen = fused
            else:
                logger.warning("fusing the ONNX graph of %s failed; keeping it unfused", model_dir)
        error = _agrees(chosen, probe, expected)
        if error >= 1e-4:
            raise EmbeddingsError(f"the ONNX export of {model_dir} differs from torch by {error}")
        os.replace(chosen, target)
    finally:
        for leftover in work.glob("*"):
            leftover.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            work.rmdir()
    logger.info(
        "exported %s to ONNX at %s in %.1f s", model_dir, target, time.perf_counter() - started
    )
    return target


def _outputs(path: Path, probe: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    (got,) = session.run(None, {k: v for k, v in probe.items() if k in names})
    return np.asarray(got)


def quantize_onnx(fp32: Path, target: Path, vocab_size: int = 30522) -> Path:
    """Write the int8 copy of the graph ``fp32`` to ``target`` (see the module docs).

    Raises :class:`EmbeddingsError` if its vectors drift from fp32's past
    :data:`MIN_INT8_COSINE`. Needs only onnxruntime (and onnx).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        made = work / "int8.onnx"
        quiet = logging.getLogger()  # the quantizer warns on the root logger
        level = quiet.level
        quiet.setLevel(max(level, logging.ERROR))
        try:
            quantize_dynamic(
                str(fp32),
                str(made),
                weight_type=QuantType.QInt8,
                per_channel=True,
                # The fused graph's own operators carry no types the quantizer infers.
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            quiet.setLevel(level)
        probe = _probe(vocab_size)
        cosine = float((_outputs(made, probe) * _outputs(fp32, probe)).sum(axis=1).min())
        if cosine < MIN_INT8_COSINE:
            raise EmbeddingsError(
                f"the int8 copy of {fp32.name} drifts from fp32 (cosine {cosine:.3f} < "
                f"{MIN_INT8_COSINE}); use precision fp32"
            )
        os.replace(made, target)
    finally:
        for leftover in work.glob("*"):
            leftover.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            work.rmdir()
    logger.info("made the int8 copy %s in %.1f s", target, time.perf_counter() - started)
    return target


def _fuse(plain: Path, config: Any) -> Path | None:
    """onnxruntime's BERT fusions of ``plain``, or None if the optimizer fails."""
    try:
        from onnxruntime.transformers import optimizer

        # The optimizer's modules log every fusion at INFO under top-level names.
        quiet = [logging.getLogger(n) for n in ("onnx_model", "onnx_model_bert", "fusion_base")]
        levels = [q.level for q in quiet]
        for q in quiet:
            q.setLevel(max(q.getEffectiveLevel(), logging.WARNING))
        try:
            model = optimizer.optimize_model(
                str(plain),
                model_type="bert",
                num_heads=int(config.num_attention_heads),
                hidden_size=int(config.hidden_size),
                opt_level=0,  # fusions only; the session applies its own at load
            )
        finally:
            for q, level in zip(quiet, levels, strict=True):
                q.setLevel(level)
        fused = plain.with_name("fused.onnx")
        model.save_model_to_file(str(fused))
        logger.debug("ONNX fusions: %s", model.get_fused_operator_statistics())
        return fused
    except Exception as exc:  # the optimizer is best effort; the plain graph is exact
        logger.warning("onnxruntime's transformer optimizer failed: %s", exc)
        return None


def load_onnx(
    model_dir: Path,
    *,
    cache_dir: Path | None = None,
    onnx_file: Path | None = None,
    threads: int = 0,
    spinning: bool = False,
    quantized: bool = False,
) -> OnnxEncoder:
    """An encoder for ``model_dir``, exporting it into the cache first if needed
    (``quantized``: its int8 copy, made from the fp32 graph first if needed).

    ``onnx_file`` runs that graph instead of the cached one (benchmarks compare graphs).
    ``threads`` is onnxruntime's intra-op thread count (0: one per physical core).
    ``spinning`` lets idle worker threads spin: onnxruntime's default, but it burns the
    cores other work (the LLM, the UI) needs; it measured no faster on 2 shared cores.
    """
    max_tokens, lowercase = _check_pipeline(model_dir)
    try:
        import onnxruntime
        import tokenizers

        target = onnx_file or onnx_model_file(model_dir, cache_dir)
        if not target.is_file():
            # One export per process at a time; another process exporting the same model
            # concurrently writes its own temporary file and one rename wins, both valid.
            with _EXPORT_LOCK:
                if not target.is_file():
                    export_onnx(model_dir, target)
        if quantized and onnx_file is None:
            fp32, target = target, onnx_model_file(model_dir, cache_dir, quantized=True)
            with _EXPORT_LOCK:
                if not target.is_file():
                    vocab = int(_read_json(model_dir / "config.json").get("vocab_size", 30522))
                    quantize_onnx(fp32, target, vocab)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spinning else "0"
        )
        session = onnxruntime.InferenceSession(
            str(target), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        counter = tokenizers.Tokenizer.from_str(tokenizer.to_str())
    except EmbeddingsError:
        raise
    except Exception as exc:
        raise EmbeddingsError(f"cannot load the ONNX model of {model_dir}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    counter.no_padding()
    counter.no_truncation()
    output = session.get_outputs()[0]
    dimension = output.shape[-1]
    if not isinstance(dimension, int):
        dimension = int(_read_json(model_dir / "config.json")["hidden_size"])
    return OnnxEncoder(
        session=session,
        tokenizer=tokenizer,
        counter=counter,
        dimension=dimension,
        max_tokens=max_tokens,
        path=target,
        input_names=frozenset(i.name for i in session.get_inputs()),
        lowercase=lowercase,
    )
