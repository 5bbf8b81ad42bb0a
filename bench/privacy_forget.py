"""Forget on a large store: how long "forget NAME" takes, and how many bytes of the name are left.

    python -m bench.privacy_forget --json            # 100,000 messages
    python -m bench.privacy_forget --quick --json    # 5,000

A store with N synthetic conversation messages, written through the real write path (RecallMemory
with its FTS5 triggers) and embedded (hashing embedder, MiniLM's 384 dimensions, through the same
EmbeddingSpace that writes every vector); about 1% of them name a person, who is also in core
memory and the knowledge graph. Then the forget the user would run (preview, then apply: remove,
FTS merge, secure_delete, VACUUM, WAL truncate) and a count of the name's bytes (any case, UTF-8
and UTF-16) left in the store file and its WAL: the goal is 0. ``measure`` is what bench.privacy
calls.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser
from memdesk.core.agent import events
from memdesk.core.base.clock import ManualClock
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.memory.forget import Forgetting
from memdesk.core.memory.history import MemoryHistory
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.memory.space import EmbeddingSpace
from memdesk.core.storage import open_database

NAME = "Ottoline"  # in no generated word, so every byte of it found is hers
SHARE = 0.01
BATCH = 5_000
_WORDS = (
    "garden letter morning station window engine harbour violin recipe journey mountain library signal market "
    "lantern winter summer planet ocean bridge castle doctor teacher painter farmer writes reads builds carries "
    "finds remembers follows opens closes paints quiet bright ancient modern careful sudden gentle heavy narrow "
    "distant golden silver wooden hidden tea bike train weekend"
).split()


def residual_occurrences(data: bytes, name: str = NAME) -> int:
    """The name's bytes in any case, as UTF-8 or UTF-16 (SQLite may store text either way)."""
    found = 0
    for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
        pattern = b"".join(
            b"(?:" + re.escape(ch.lower().encode(encoding)) + b"|" + re.escape(ch.upper().encode(encoding)) + b")"
            for ch in name
        )
        found += len(re.findall(pattern, data))
    return found


def _disk_bytes(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def build_store(path: Path, messages: int, seed: int = 7) -> tuple[int, int]:
    """The store; returns (agent id, messages naming the person)."""
    rng = random.Random(seed)
    clock = ManualClock()
    embedder = HashingEmbedder()
    db = open_database(path)
    history = MemoryHistory(db, clock)
    core = CoreMemory(db, clock, history)
    recall = RecallMemory(db, embedder, clock=clock)
    space = EmbeddingSpace(db, embedder)
    agent_id = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')"
    ).lastrowid
    core.create(agent_id, "human", f"Likes tea\nFriend: {NAME}, a painter", limit=2000)
    naming = 0
    for start in range(0, messages, BATCH):
        ids, texts = [], []
        with db.transaction():
            for _ in range(start, min(messages, start + BATCH)):
                words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 18))]
                if rng.random() < SHARE:
                    words.insert(rng.randrange(len(words)), NAME)
                    naming += 1
                text = " ".join(words).capitalize() + "."
                message = recall.add(
                    agent_id,
                    role="user",
                    kind="user_message",
                    content=events.user_message(text, clock.now()),
                    search_text=text,
                    created_at=clock.now(),
                )
                ids.append(message.id)
                texts.append(text)
            space.write("messages", agent_id, ids, embedder.embed(texts))
    graph = KnowledgeGraph(db, clock, history=history)
    with db.transaction():
        entity = graph.resolve(agent_id, NAME, "person")
        first = db.scalar("SELECT id FROM messages WHERE search_text LIKE ? LIMIT 1", (f"%{NAME}%",))
        if first is not None:
            graph.add_mention(agent_id, entity, at=clock.now(), message_id=first)
    db.query_one("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return agent_id, naming


def measure(quick: bool = False, *, messages: int | None = None) -> dict:
    count = messages or (5_000 if quick else 100_000)
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-forget-") as folder:
        path = Path(folder) / "memdesk.sqlite3"
        started = time.perf_counter()
        agent_id, naming = build_store(path, count)
        build_seconds = time.perf_counter() - started
        before = residual_occurrences(_disk_bytes(path))
        size_mb = path.stat().st_size / 1e6
        db = open_database(path)
        clock = ManualClock()
        forgetting = Forgetting(
            db,
            clock,
            embedder=HashingEmbedder(),
            history=MemoryHistory(db, clock),
            kv_cache=Path(folder) / "kv",
            threshold=Settings().forget_similarity,
        )
        started = time.perf_counter()
        preview = forgetting.preview(agent_id, NAME)
        preview_seconds = time.perf_counter() - started
        started = time.perf_counter()
        result = forgetting.apply(agent_id, NAME)
        forget_seconds = time.perf_counter() - started
        db.close()
        after = residual_occurrences(_disk_bytes(path))
    return {
        "messages": count,
        "messages_naming": naming,
        "messages_forgotten": result.removed.counts["messages"],
        "store_mb": round(size_mb, 1),
        "build_seconds": round(build_seconds, 2),
        "preview_seconds": round(preview_seconds, 3),
        "forget_seconds": round(forget_seconds, 3),
        "forget_seconds_100k": round(forget_seconds, 3) if count == 100_000 else None,
        "occurrences_before": before,
        "residual_occurrences": after,
        "wal_emptied": result.checkpointed,
        "previewed_messages": preview.counts().get("messages", 0),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="5,000 messages instead of 100,000")
    parser.add_argument("--messages", type=int, help="another store size")
    args = parser.parse_args()
    report = measure(args.quick, messages=args.messages)
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
