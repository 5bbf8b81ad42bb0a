"""One embedder serves four threads (GUI, job pool, agent worker, ingestion): calls take turns."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from memdesk.core.embedding.sentence_transformer import DIMENSION, SentenceTransformerEmbedder


class ProbeModel:
    """Stands in for the loaded model and records how many callers are inside it at once."""

    max_seq_length = 256

    def __init__(self) -> None:
        self.inside = 0
        self.most_inside = 0
        self._count = threading.Lock()

    def _enter(self):
        with self._count:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        time.sleep(0.02)
        with self._count:
            self.inside -= 1

    def encode(self, texts, **_options):
        self._enter()
        return np.zeros((len(texts), DIMENSION), dtype=np.float32)

    def tokenizer(self, text, **_options):
        self._enter()
        return {"input_ids": text.split()}


def test_the_model_and_its_tokenizer_are_used_by_one_thread_at_a_time():
    embedder = SentenceTransformerEmbedder()
    probe = embedder._model = ProbeModel()  # loaded: load() returns at once

    def work(n: int) -> None:
        for _ in range(5):
            embedder.embed([f"text {n}"])
            assert embedder.count_tokens("three words here") == 3

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert probe.most_inside == 1


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
        thread.join()
    assert errors == []
