"""The NumPy embedder gives sentence-transformers' vectors for the bundled all-MiniLM-L6-v2.

sentence-transformers (torch) is the reference: the vectors MemDesk stored before this embedder
came from it, under the same model id, so they must stay comparable with the ones made now.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.bert import erf
from memdesk.core.embedding.minilm import BATCH_TOKENS, DIMENSION, MODEL_ID, MiniLMEmbedder, bundled_model_path

LONG = " ".join(
    f"On day {n} the expedition crossed another ridge and counted its remaining supplies." for n in range(80)
)
TEXTS = [
    "",
    "   ",
    "\n\t \n",
    "a",
    "What did I tell you about my sister's wedding in Lisbon?",
    "Ich heiße Jürgen, wohne in Köln und trinke gern Kölsch.",
    "東京で友達と寿司を食べました。とても美味しかった！",
    "我明天要去北京出差，下周三回来。",
    "Привет! Как прошёл твой отпуск на Байкале?",
    "مرحبا، أين تقع أقرب صيدلية؟",
    "मुझे कल सुबह डॉक्टर के पास जाना है।",
    "다음 주에 부산으로 여행을 갑니다.",
    "🙂🎉 party at 8pm 🍕",
    "def embed(texts): return model.encode(texts)  # code, too",
    "x" * 3000,  # one word longer than WordPiece reads: [UNK]
    LONG,  # far past the 256-token window: both cut it at the same place
    LONG[: len(LONG) // 3],
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def reference():
    """The bundled model through sentence-transformers and torch, as MemDesk ran it before."""
    # The test extra (requirements.lock; make installs it): missing, the comparison fails, never skips.
    import sentence_transformers

    return sentence_transformers.SentenceTransformer(str(bundled_model_path()), device="cpu")


def reference_vectors(reference, texts: list[str]) -> np.ndarray:
    return reference.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


@pytest.mark.embedder
def test_vectors_equal_sentence_transformers_on_the_same_texts(real_embedder, reference):
    ours = real_embedder.embed(TEXTS)
    theirs = reference_vectors(reference, TEXTS)
    assert ours.shape == (len(TEXTS), DIMENSION) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    agreement = cosines(ours, theirs)
    assert agreement.min() >= 0.9999, dict(zip(TEXTS, agreement.round(6), strict=True))


@pytest.mark.embedder
def test_a_text_gets_the_same_vector_alone_and_in_any_batch(real_embedder, reference):
    # More tokens than one pass takes, of mixed lengths, so the texts are split across passes.
    rng = np.random.default_rng(33)
    words = LONG.split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(1, 400, size=32)]
    assert sum(min(real_embedder.count_tokens(t), real_embedder.max_tokens) for t in texts) > BATCH_TOKENS
    batched = real_embedder.embed(texts)
    assert cosines(batched, reference_vectors(reference, texts)).min() >= 0.9999
    alone = np.vstack([real_embedder.embed([t]) for t in texts[:12]])
    assert cosines(alone, batched[:12]).min() >= 0.9999
    reversed_order = real_embedder.embed(texts[::-1])[::-1]
    assert cosines(reversed_order, batched).min() >= 0.9999


@pytest.mark.embedder
def test_the_window_and_token_counts_are_sentence_transformers(real_embedder, reference):
    assert real_embedder.max_tokens == reference.max_seq_length - 2 == 254
    for text in TEXTS:
        expected = len(
            reference.tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        )
        assert real_embedder.count_tokens(text) == expected, text
    assert real_embedder.count_tokens(LONG) > real_embedder.max_tokens


@pytest.mark.embedder
def test_a_store_embedded_by_sentence_transformers_is_searched_with_the_numpy_embedder(tmp_path, reference, clock):
    class TorchEmbedder(MiniLMEmbedder):
        """The embedder MemDesk had before: the same model id, vectors from sentence-transformers."""

        def embed(self, texts):
            return reference_vectors(reference, list(texts)).astype(np.float32)

    facts = [
        "The user's daughter was born in March 2019.",
        "The user works as a nurse on night shifts at the city hospital.",
        "The user's favourite film is a 1950s Japanese drama.",
    ]
    paths = Paths(tmp_path / "home")
    with open_services(paths, embedder=TorchEmbedder(), clock=clock) as before:
        agent = before.create_agent("kept").id
        for fact in facts:
            before.memory.archival.insert(agent, fact)
    with open_services(paths, embedder=MiniLMEmbedder(), clock=clock) as after:
        page = after.memory.archival.search(agent, "What is their profession?", page_size=1)
        assert "nurse" in page.hits[0].passage.text
        assert tuple(after.db.query_one("SELECT model_id, dimension FROM embedding_space")) == (MODEL_ID, DIMENSION)


def test_the_gelu_uses_erf_to_float32_precision():
    xs = np.linspace(-8, 8, 20001, dtype=np.float32)
    exact = np.array([math.erf(float(x)) for x in xs])
    assert np.abs(erf(xs) - exact).max() < 1e-6
