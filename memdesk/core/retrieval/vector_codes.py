"""The persisted search form of the vectors: sign bits in blocks, and a float16 copy per row.

The vec0 tables stay the source of truth, but reading a million float32 vectors out of them takes
tens of seconds and gigabytes, and vec0 answers a lookup by rowid in about a quarter of a
millisecond. So every vector is also stored, in the same transaction, in two forms made to be read:

* ``vector_blocks``: the sign bit of each dimension (48 bytes at 384-d), ``BLOCK_ROWS`` vectors a
  row, with their ids. A million vectors are about a thousand rows (56 MB), read in a fraction of a
  second; each rewrite of a block takes the next ``stamp``, so a loaded index re-reads only the
  blocks written since it last looked (a write costs one block, whatever the index's size).
* ``passages_vec16`` / ``messages_vec16``: each vector in float16, by row id, for exact-enough
  re-scoring of the short list the bits propose (their rows go with their passage or message by
  foreign key).

Both live inside the store, so an encrypted store encrypts them too: nothing derived is written
beside it. Memory writes them through ``write`` and ``remove`` (memdesk.core.memory.space); the
index (vector_index) reads them, and fills in what is missing from vec0 (stores written before
these tables existed).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from memdesk.core.storage import Database

#: Vectors per block: small enough that rewriting one for a single write is cheap (56 KB at 384-d),
#: large enough that a million vectors are a thousand rows to read.
BLOCK_ROWS = 1024
#: The float16 copy of each kind's vectors (row id = the passage's or message's id).
HALF_TABLES = {"passages": "passages_vec16", "messages": "messages_vec16"}
#: SQLite's bound-parameter limit is far above this; the chunks keep statements short.
_IN_CHUNK = 900
#: At least this many float16 copies wanted, spread over fewer than _RANGE_SPAN ids each: read by
#: one range of ids rather than a lookup each.
_RANGE_MIN = 256
_RANGE_SPAN = 4
#: Blocks read at a time when an index opens (1.8 MB at 384-d): a million vectors' rows (56 MB) are
#: never all held at once beside the index they are placed in.
OPEN_PAGE = 32


@dataclass(frozen=True)
class Block:
    number: int
    stamp: int
    ids: np.ndarray  # int64
    bits: np.ndarray  # (len(ids), dim / 8) uint8, the sign of each dimension


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """One bit per dimension, set where the component is positive (packed, 8 dimensions a byte)."""
    return np.packbits(np.asarray(vectors) > 0, axis=-1)


def _block(row) -> Block:
    ids = np.frombuffer(row[2], dtype="<i8").astype(np.int64)
    bits = np.frombuffer(row[3], dtype=np.uint8)
    width = bits.size // len(ids) if len(ids) else 0
    return Block(int(row[0]), int(row[1]), ids, bits.reshape(len(ids), width))


def blocks(db: Database, kind: str, agent_id: int, *, after_stamp: int = 0) -> list[Block]:
    """The agent's blocks written after ``after_stamp`` (all of them by default)."""
    rows = db.query(
        "SELECT block, stamp, ids, bits FROM vector_blocks WHERE kind = ? AND agent_id = ? AND stamp > ?"
        " ORDER BY block",
        (kind, agent_id, after_stamp),
    )
    return [_block(r) for r in rows]


def every_block(db: Database, kind: str, agent_id: int) -> Iterator[Block]:
    """All the agent's blocks in order, read ``OPEN_PAGE`` at a time (each page its own read: a
    block rewritten meanwhile has a stamp above any read before, for the caller to read again)."""
    after = -1
    while True:
        rows = db.query(
            "SELECT block, stamp, ids, bits FROM vector_blocks WHERE kind = ? AND agent_id = ? AND block > ?"
            " ORDER BY block LIMIT ?",
            (kind, agent_id, after, OPEN_PAGE),
        )
        yield from (_block(r) for r in rows)
        if len(rows) < OPEN_PAGE:
            return
        after = int(rows[-1][0])


def last_block(db: Database, kind: str, agent_id: int) -> int:
    """The agent's last block number (-1: none)."""
    value = db.scalar("SELECT MAX(block) FROM vector_blocks WHERE kind = ? AND agent_id = ?", (kind, agent_id))
    return -1 if value is None else int(value)


def latest_stamp(db: Database, kind: str, agent_id: int) -> int:
    return int(db.scalar("SELECT MAX(stamp) FROM vector_blocks WHERE kind = ? AND agent_id = ?", (kind, agent_id)) or 0)


def _next_stamp(db: Database, kind: str, agent_id: int) -> int:
    return latest_stamp(db, kind, agent_id) + 1


def _save_block(
    db: Database, kind: str, agent_id: int, number: int, stamp: int, ids: np.ndarray, bits: np.ndarray
) -> None:
    db.execute(
        "INSERT INTO vector_blocks(kind, agent_id, block, stamp, ids, bits) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(kind, agent_id, block) DO UPDATE SET stamp = excluded.stamp, ids = excluded.ids,"
        " bits = excluded.bits",
        (
            kind,
            agent_id,
            number,
            stamp,
            np.asarray(ids, dtype="<i8").tobytes(),
            np.ascontiguousarray(bits, dtype=np.uint8).tobytes(),
        ),
    )


def _in_chunks(ids: Sequence[int]):
    ids = [int(i) for i in ids]
    for start in range(0, len(ids), _IN_CHUNK):
        part = ids[start : start + _IN_CHUNK]
        yield part, ",".join("?" * len(part))


def remove(db: Database, kind: str, row_ids: Sequence[int]) -> None:
    """Take rows out of their blocks and drop their float16 copies (call inside a transaction)."""
    table = HALF_TABLES[kind]
    where: dict[tuple[int, int], set[int]] = {}
    for part, marks in _in_chunks(row_ids):
        for row_id, agent_id, number in db.query(
            f"SELECT id, agent_id, block FROM {table} WHERE id IN ({marks})", part
        ):
            where.setdefault((agent_id, number), set()).add(row_id)
        db.execute(f"DELETE FROM {table} WHERE id IN ({marks})", part)
    for (agent_id, number), gone in where.items():
        row = db.query_one(
            "SELECT block, stamp, ids, bits FROM vector_blocks WHERE kind = ? AND agent_id = ? AND block = ?",
            (kind, agent_id, number),
        )
        if row is None:
            continue
        block = _block(row)
        keep = ~np.isin(block.ids, np.fromiter(gone, dtype=np.int64))
        _save_block(db, kind, agent_id, number, _next_stamp(db, kind, agent_id), block.ids[keep], block.bits[keep])


def write(db: Database, kind: str, agent_id: int, row_ids: Sequence[int], vectors: np.ndarray) -> None:
    """Store (or replace) rows' vectors: appended to the agent's last block, float16 copies by id.
    Costs the blocks it touches, never the whole index. Call inside the transaction that writes vec0."""
    if not len(row_ids):
        return
    ids = np.asarray(row_ids, dtype=np.int64)
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
    remove(db, kind, ids.tolist())  # a rewritten row moves to the end: its old bits must not linger
    bits = sign_bits(vectors)
    tail = db.query_one(
        "SELECT block, stamp, ids, bits FROM vector_blocks WHERE kind = ? AND agent_id = ? ORDER BY block DESC LIMIT 1",
        (kind, agent_id),
    )
    stamp = _next_stamp(db, kind, agent_id)
    number, held_ids, held_bits = (
        (0, ids[:0], bits[:0]) if tail is None else (lambda b: (b.number, b.ids, b.bits))(_block(tail))
    )
    if not len(held_ids):
        held_ids, held_bits = ids[:0], bits[:0]
    elif held_bits.shape[1] != bits.shape[1]:
        held_ids, held_bits, number = ids[:0], bits[:0], number + 1  # another dimension (a reset space): start afresh
    placed = np.empty(len(ids), dtype=np.int64)
    start = 0
    while start < len(ids):
        if len(held_ids) >= BLOCK_ROWS:
            number, held_ids, held_bits = number + 1, ids[:0], bits[:0]
        take = min(BLOCK_ROWS - len(held_ids), len(ids) - start)
        held_ids = np.concatenate([held_ids, ids[start : start + take]])
        held_bits = np.concatenate([held_bits, bits[start : start + take]])
        placed[start : start + take] = number
        _save_block(db, kind, agent_id, number, stamp, held_ids, held_bits)
        start += take
    half = vectors.astype("<f2")
    db.insert_rows(
        f"INSERT INTO {HALF_TABLES[kind]}(id, agent_id, block, vector) VALUES",
        "(?, ?, ?, ?)",
        [(int(i), agent_id, int(b), v.tobytes()) for i, b, v in zip(ids, placed, half, strict=True)],
    )


def drop_all(db: Database) -> None:
    """Forget every vector (the store switches embedding model). Blocks are emptied, not deleted, with
    a new stamp, so indexes already loaded see the change."""
    for table in HALF_TABLES.values():
        db.execute(f"DELETE FROM {table}")
    db.execute(
        "UPDATE vector_blocks SET ids = x'', bits = x'', stamp = (SELECT COALESCE(MAX(stamp), 0) + 1"
        " FROM vector_blocks)"
    )


def drop_agent(db: Database, agent_id: int) -> None:
    for table in HALF_TABLES.values():
        db.execute(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,))
    db.execute("DELETE FROM vector_blocks WHERE agent_id = ?", (agent_id,))


def half_vectors(db: Database, kind: str, row_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The float16 copies of these rows as float32: (ids found, matrix). Rows without one are left out."""
    ids, matrix = half_rows(db, kind, row_ids)
    return ids, matrix.astype(np.float32)


def half_rows(db: Database, kind: str, row_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The float16 copies of these rows as stored: (ids found, a read-only float16 matrix). Rows
    without one are left out."""
    found_ids: list[int] = []
    blobs: list[bytes] = []
    wanted = np.unique(np.asarray(row_ids, dtype=np.int64))
    if len(wanted) >= _RANGE_MIN and wanted[-1] - wanted[0] < _RANGE_SPAN * len(wanted):
        # Many rows close together (a block, a whole small index): one walk along the table's id
        # order reads them several times faster than a lookup each; the few others met are skipped.
        for row_id, blob in db.query(
            f"SELECT id, vector FROM {HALF_TABLES[kind]} WHERE id BETWEEN ? AND ?", (int(wanted[0]), int(wanted[-1]))
        ):
            found_ids.append(row_id)
            blobs.append(blob)
        keep = np.isin(np.asarray(found_ids, dtype=np.int64), wanted)
        found_ids = [i for i, k in zip(found_ids, keep, strict=True) if k]
        blobs = [b for b, k in zip(blobs, keep, strict=True) if k]
    else:
        for part, marks in _in_chunks(wanted.tolist()):
            for row_id, blob in db.query(f"SELECT id, vector FROM {HALF_TABLES[kind]} WHERE id IN ({marks})", part):
                found_ids.append(row_id)
                blobs.append(blob)
    if not blobs:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float16)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f2").reshape(len(blobs), -1)  # read-only
    return np.asarray(found_ids, dtype=np.int64), matrix


def present(db: Database, kind: str, row_ids: Sequence[int]) -> set[int]:
    """Which of these rows still have their float16 copy (a row deleted without going through
    memory lost it by cascade)."""
    return {
        r[0]
        for part, marks in _in_chunks(row_ids)
        for r in db.query(f"SELECT id FROM {HALF_TABLES[kind]} WHERE id IN ({marks})", part)
    }


def known_complete(db: Database, kind: str, agent_id: int) -> bool:
    """Whether every row the store says has a vector has its search form (two counters the m012
    triggers keep, so no row is read)."""
    row = db.query_one("SELECT embedded, formed FROM vector_counts WHERE kind = ? AND agent_id = ?", (kind, agent_id))
    return row is None or row[0] == row[1]


def missing(db: Database, kind: str, agent_id: int) -> list[int]:
    """Rows the store says have a vector but that have no search form (written before it existed)."""
    return [
        r[0]
        for r in db.query(
            f"SELECT t.id FROM {kind} t WHERE t.agent_id = ? AND t.embedded = 1"
            f" AND NOT EXISTS (SELECT 1 FROM {HALF_TABLES[kind]} h WHERE h.id = t.id) ORDER BY t.id",
            (agent_id,),
        )
    ]
