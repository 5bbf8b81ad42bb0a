"""Passages are cut to what the embedder reads, counted with its own tokenizer, in one place used by
archival_memory_insert and by document ingestion."""

from __future__ import annotations

import pytest

from memdesk.core.base.clock import ManualClock
from memdesk.core.documents.ingest import Ingestor
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.storage import open_database
from memdesk.core.text.chunking import chunk_for_embedding

# Digits, hyphens and long words: several word pieces a word, where a word count says one.
DENSE = " ".join(
    f"Invoice {i}-AX/{i * 7} re-issued to Kowalczyk-Brzęczyszczykiewicz on 2026-0{i % 9 + 1}-1{i % 9}."
    for i in range(120)
)


class SyllableCounter:
    """A stand-in tokenizer: one token per three characters of each word."""

    max_tokens = 50

    def count_tokens(self, text: str) -> int:
        return sum(-(-len(word) // 3) for word in text.split())


def test_chunks_fit_the_window_by_the_embedders_count_and_cover_the_text():
    counter = SyllableCounter()
    text = DENSE + " " + "x" * 40 + "-" + "y" * 400  # one "word" alone is over the window
    chunks = chunk_for_embedding(text, counter)
    assert len(chunks) > 1
    assert all(counter.count_tokens(c.text) <= counter.max_tokens or len(c.text.split()) == 1 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_an_unpunctuated_run_is_cut_at_words_by_token_count():
    counter = SyllableCounter()
    text = " ".join(["abcdefghi"] * 100)  # 3 tokens a word, no sentence end
    chunks = chunk_for_embedding(text, counter)
    assert [counter.count_tokens(c.text) for c in chunks] == [48] * 6 + [12]


@pytest.fixture
def store(tmp_path):
    db = open_database(tmp_path / "memdesk.sqlite3")
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('a', '2026-01-01T00:00:00+00:00', '')")
    yield db
    db.close()


def test_archival_inserts_and_documents_fit_the_real_models_window(store, real_embedder, tmp_path):
    """MemGPT's 300-word inserts and the old 170-word document chunks ran past MiniLM's 254 word
    pieces on text like this: the end of each passage was never embedded."""
    clock = ManualClock()
    archival = ArchivalMemory(store, real_embedder, clock)
    archival.insert(1, DENSE)
    (tmp_path / "invoices.txt").write_text(DENSE, encoding="utf-8")
    Ingestor(store, archival, clock).ingest([tmp_path / "invoices.txt"], 1)
    texts = [row[0] for row in store.query("SELECT text FROM passages ORDER BY id")]
    sizes = [real_embedder.count_tokens(text) for text in texts]
    assert len(texts) > 4 and max(sizes) <= real_embedder.max_tokens == 254
