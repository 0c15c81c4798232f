"""Hash embeddings that take their time: for tests that stop a process mid-job."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from theflow import Param

from ragloom_app.testing import HashEmbeddings

__all__ = ["SlowEmbeddings"]


class SlowEmbeddings(HashEmbeddings):
    """:class:`HashEmbeddings` whose every embedding of documents takes ``delay`` seconds."""

    delay: float = Param(2.0, help="Seconds each embed_documents call takes.")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.delay)
        return super().embed_documents(texts)
