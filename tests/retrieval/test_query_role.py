"""A model trained with two roles (E5: "query: " and "passage: ") embeds a search in its query role;
stored messages and passages stay in the passage role, and models with one role are unchanged."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from desktop.core.clock import ManualClock
from desktop.core.embedding import query_vector
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.memory.recall import RecallMemory

START = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


class TwoRoles(HashingEmbedder):
    """A search for "qzx" means zebras in the query role; as a passage it means nothing at all."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self.embed(["zebra stripes on the savanna" if text == "qzx" else text])[0]


def test_a_model_without_a_query_role_embeds_a_search_like_any_text():
    embedder = HashingEmbedder()
    assert np.array_equal(query_vector(embedder, "ferns in the shade"), embedder.embed(["ferns in the shade"])[0])


def test_a_model_with_a_query_role_embeds_a_search_in_it():
    embedder = TwoRoles()
    assert np.array_equal(query_vector(embedder, "qzx"), embedder.embed(["zebra stripes on the savanna"])[0])
    assert embedder.queries == ["qzx"]


def test_archival_search_embeds_the_search_in_the_query_role(db):
    embedder = TwoRoles()
    archival = ArchivalMemory(db, embedder, ManualClock(START))
    archival.insert(1, "Tomatoes in the garden need water every evening")
    [zebra] = archival.insert(1, "zebra stripes on the savanna at dawn")
    hits = archival.search(1, "qzx").hits
    assert hits and hits[0].passage.id == zebra
    assert "qzx" in embedder.queries


def test_conversation_search_embeds_the_search_in_the_query_role(db):
    embedder = TwoRoles()
    recall = RecallMemory(db, embedder)
    for minute, text in enumerate(["Tomatoes in the garden need water every evening", "zebra stripes on the savanna at dawn"]):
        recall.add(1, role="user", kind="user_message", content=text, search_text=text, author="Ana", created_at=START.replace(minute=minute))
    hits = recall.search_text(1, "qzx").hits
    assert hits and hits[0].content.startswith("zebra")
    assert "qzx" in embedder.queries
