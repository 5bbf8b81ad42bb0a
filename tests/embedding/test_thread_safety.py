"""One embedder serves four threads (GUI, job pool, agent worker, ingestion): calls take turns, each
on one BLAS thread (the model's child process has the other cores), and the pool is given back."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from memdesk.core.embedding.minilm import MiniLMEmbedder


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


class ProbeEncoder:
    """Stands in for the loaded encoder and records how many callers are inside it at once, and the
    BLAS threads it was given."""

    def __init__(self, encoder) -> None:
        self._encoder = encoder
        self.inside = 0
        self.most_inside = 0
        self.threads_seen: set[int] = set()
        self._count = threading.Lock()

    def mean_pooled(self, sequences):
        with self._count:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
            self.threads_seen.update(blas_threads())
        time.sleep(0.02)
        with self._count:
            self.inside -= 1
        return self._encoder.mean_pooled(sequences)


def test_the_model_is_used_by_one_thread_at_a_time_on_one_blas_thread():
    embedder = MiniLMEmbedder()
    embedder.load()
    before = blas_threads()
    probe = embedder._model.encoder = ProbeEncoder(embedder._model.encoder)

    def work(n: int) -> None:
        for i in range(5):
            embedder.embed([f"text {n} {i}"])
            assert embedder.count_tokens("three words here") == 3

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert probe.most_inside == 1
    assert probe.threads_seen == {1}
    assert blas_threads() == before


@pytest.mark.embedder
def test_the_real_model_embeds_and_counts_from_four_threads(real_embedder):
    errors: list[BaseException] = []
    expected = real_embedder.embed(["a quiet morning by the lake"])[0]

    def work(n: int) -> None:
        try:
            for i in range(8):
                text = f"note {n}-{i}: " + "antidisestablishmentarianism, " * (i * 30)
                assert real_embedder.count_tokens(text) > real_embedder.max_tokens or i < 2
                vector = real_embedder.embed(["a quiet morning by the lake", text])[0]
                assert np.allclose(vector, expected, atol=1e-5)
        except BaseException as error:  # noqa: BLE001 - collected for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
