"""The store's one embedding space, shared by archival passages and recall messages."""

from __future__ import annotations

from desktop.core.embedding import Embedder
from desktop.core.storage import Database
from desktop.errors import EmbeddingMismatchError


def ensure_space(db: Database, embedder: Embedder) -> None:
    """Record the embedder on first use and create both vector tables; refuse another model.

    Mirrors ArchivalMemory.ensure_space (which creates only the passages table) so either may run first."""
    row = db.query_one("SELECT model_id, dimension FROM embedding_space WHERE id = 1")
    if row is not None and (row[0], row[1]) != (embedder.model_id, embedder.dimension):
        raise EmbeddingMismatchError(
            f"This store's vectors were made by {row[0]} ({row[1]} dimensions), not {embedder.model_id}",
            hint="use the same embedding model, or re-embed the store with `memdesk ingest --reembed`",
        )
    dimension = int(embedder.dimension)
    with db.transaction():
        if row is None:
            db.execute("INSERT INTO embedding_space(id, model_id, dimension) VALUES (1, ?, ?)", (embedder.model_id, dimension))
        for table in ("passages_vec", "messages_vec"):
            db.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
                f"agent_id integer partition key, embedding float[{dimension}] distance_metric=cosine)"
            )


def reembed_store(db: Database, embedder: Embedder) -> int:
    """Switch the store to ``embedder``: drop every vector and mark all passages and messages for
    embedding again (the ingestor and the lazy message indexer then fill them in). Explicit only:
    vectors from two models are never mixed. Returns how many passages need new vectors."""
    with db.transaction():
        db.execute("DROP TABLE IF EXISTS passages_vec")
        db.execute("DROP TABLE IF EXISTS messages_vec")
        db.execute("DELETE FROM embedding_space")
        db.execute("UPDATE passages SET embedded = 0 WHERE embedded = 1")
        db.execute("UPDATE messages SET embedded = 0 WHERE embedded = 1")
        db.execute("UPDATE documents SET status = 'embedding' WHERE status = 'done'")
        db.execute("UPDATE vector_generation SET gen = gen + 1")
    ensure_space(db, embedder)
    return int(db.scalar("SELECT COUNT(*) FROM passages"))
