"""The prompt-prefix KV states of an encrypted store, kept encrypted under a key derived from the store's.

A saved state encodes its prompt, core memory included, so next to an encrypted store the plain
``.kv`` files of ``kv_store.KvStore`` would leave that text readable. This store keeps the same
entries as rows of one SQLCipher file in the same folder (``states.db``), under a raw 32-byte key
the app derives from the store's page key (HKDF, storage/driver.py: ``kv_cache_key``): no second
crypto library, no key derivation in the model's process (a raw key opens at once), and that
process never holds the passphrase, which a crash of it would leave in a core file. Not writing
states at all would cost every start the static prompt's evaluation again (15-30 s on a 2-core
machine for the bundled model, see bench.coldstart).

The contract is ``KvStore``'s: a state is found only for exactly its tokens and model identity,
anything unreadable (a file left under another key, a damaged one) is dropped and costs
time, never correctness, and least recently used states go first beyond the limits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memdesk.core.runtime.llamacpp.kv_store import SUFFIX, KvStore, _token_bytes

log = logging.getLogger("memdesk.kv")

FILE = "states.db"


def _raw_key(key: bytes) -> str:
    """SQLCipher's raw key literal: hex digits only, so nothing to quote."""
    return f"\"x'{key.hex()}'\""


class EncryptedKvStore(KvStore):
    def __init__(
        self,
        folder: Path | str,
        identity: Mapping[str, object],
        key: bytes,
        *,
        max_entries: int = 8,
        max_bytes: int = 1 << 30,
    ) -> None:
        super().__init__(folder, identity, max_entries=max_entries, max_bytes=max_bytes)
        self.file = self.folder / FILE
        self._lock = threading.Lock()
        # States an unencrypted run left here hold the prompt in the clear.
        for plain in self.folder.glob("*" + SUFFIX):
            plain.unlink(missing_ok=True)
        self._conn = self._open(key)

    def _open(self, key: bytes) -> Any:
        import sqlcipher3

        for attempt in range(2):
            conn = sqlcipher3.connect(str(self.file), isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA cipher_log_level = NONE")
            conn.execute(f"PRAGMA key = {_raw_key(key)}")
            conn.execute("PRAGMA cipher_page_size = 65536")  # states are tens of MB: fewer, larger pages
            try:
                conn.execute("PRAGMA auto_vacuum = FULL")  # an evicted state gives its space back
                conn.execute("PRAGMA secure_delete = ON")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS states (key TEXT PRIMARY KEY, tokens BLOB NOT NULL, state BLOB"
                    " NOT NULL, used INTEGER NOT NULL)"
                )
                return conn
            except sqlcipher3.DatabaseError as error:
                conn.close()
                if attempt:
                    raise
                # Saved under another key (another passphrase), or damaged: a cache, so start it afresh.
                self.last_error = f"{FILE}: unreadable ({error}); started afresh"
                for suffix in ("", "-journal", "-wal", "-shm"):
                    Path(f"{self.file}{suffix}").unlink(missing_ok=True)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.wait()
        with self._lock:
            self._conn.close()

    # --- the KvStore contract, on rows ---------------------------------------------------------
    # Keys, not files: the states are rows here (KvStore.entries lists paths). Callers only count
    # them and test them for a key, so the narrower base type is the one overridden.
    def entries(self) -> list[str]:  # type: ignore[override]
        with self._lock:
            return [row[0] for row in self._conn.execute("SELECT key FROM states ORDER BY key")]

    def has(self, tokens: Sequence[int]) -> bool:
        with self._lock:
            cursor = self._conn.execute("UPDATE states SET used = ? WHERE key = ?", (time.time_ns(), self.key(tokens)))
            return cursor.rowcount > 0

    def load(self, tokens: Sequence[int]) -> bytearray | None:
        key = self.key(tokens)
        try:
            with self._lock:
                row = self._conn.execute("SELECT tokens, state FROM states WHERE key = ?", (key,)).fetchone()
                if row is None:
                    return None
                if bytes(row[0]) != _token_bytes(tokens) or not row[1]:
                    self._delete(key, "saved for other tokens")
                    return None
                self._conn.execute("UPDATE states SET used = ? WHERE key = ?", (time.time_ns(), key))
                return bytearray(row[1])
        except Exception as error:  # noqa: BLE001 - a cache failure only costs the speed-up
            self.last_error = f"{key}: unreadable: {error}"
            return None

    def discard(self, tokens: Sequence[int], reason: str) -> None:
        with self._lock:
            self._delete(self.key(tokens), reason)

    def _delete(self, key: str, reason: str) -> None:
        self.last_error = f"{key}: {reason}"
        try:
            self._conn.execute("DELETE FROM states WHERE key = ?", (key,))
        except Exception:  # noqa: BLE001
            log.debug("could not delete KV state %s", key, exc_info=True)

    def save(self, tokens: Sequence[int], state: bytes | bytearray) -> Path | None:
        key = self.key(tokens)
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO states(key, tokens, state, used) VALUES (?, ?, ?, ?)",
                    (key, _token_bytes(tokens), bytes(state), time.time_ns()),
                )
                self._evict(keep=key)
        except Exception as error:  # noqa: BLE001 - a full disk only costs the speed-up
            self.last_error = f"{key}: not saved: {error}"
            return None
        return self.file

    def evict(self, keep: Path | None = None) -> None:
        with self._lock:
            self._evict(keep=None)

    def _evict(self, keep: str | None) -> None:
        rows = self._conn.execute("SELECT key, length(state) FROM states ORDER BY used DESC").fetchall()
        total = 0
        for count, (key, size) in enumerate(rows):
            total += size
            if key != keep and (count >= self.max_entries or total > self.max_bytes):
                self._conn.execute("DELETE FROM states WHERE key = ?", (key,))
                total -= size
