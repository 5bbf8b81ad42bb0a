"""Prompt-prefix KV states on disk, so a restarted model skips re-reading its static prompt.

On a slow CPU the agent's system message (instructions, tools, core memory: ~2,000 tokens) takes
15-30 s to evaluate, and it is the same after every restart. ``LlamaCppRuntime`` hands this store
the KV state of that prefix as opaque bytes (llama.cpp's sequence state) and asks for it back on a
cold cache. This module never imports llama_cpp; it owns the file format, validation and eviction.

A file is named by a hash of the model's identity and the prefix tokens, and holds::

    MAGIC | u32 header length | header JSON | tokens (int32 LE) | state bytes

The header repeats the key and gives the sizes and a CRC-32 of tokens + state. Anything that does
not check out (truncated, bit-flipped, renamed, another format version, other tokens) is deleted and
reported as a miss: the runtime then evaluates the prompt as if there were no cache, so a bad file
costs time, never correctness. Files are written to a temporary name and renamed, so a crash mid-
write leaves no half file under a real name. Least recently used entries (by mtime, touched on
every hit) go first when there are more than ``max_entries`` or more than ``max_bytes``.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import threading
import time
import zlib
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path

MAGIC = b"MDKVSEQ\x00"
FORMAT = 1
SUFFIX = ".kv"
_STALE_TEMP_SECONDS = 600  # a temp file this old belongs to a writer that died


def _token_bytes(tokens: Sequence[int]) -> bytes:
    packed = array("i", tokens)
    if packed.itemsize != 4:  # pragma: no cover - every platform llama.cpp runs on has 32-bit int
        raise RuntimeError("int32 tokens expected")
    if sys.byteorder != "little":  # pragma: no cover
        packed.byteswap()
    return packed.tobytes()


class KvStore:
    def __init__(
        self, folder: Path | str, identity: Mapping[str, object], *, max_entries: int = 8, max_bytes: int = 1 << 30
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._identity = json.dumps(dict(identity), sort_keys=True).encode("utf-8")
        self.max_entries = max(1, max_entries)
        self.max_bytes = max_bytes
        self._writer: threading.Thread | None = None
        self.last_error: str | None = None  # why the last load or save failed, for tests and logs
        self._remove_stale_temps()

    # --- keys -------------------------------------------------------------------------------------
    def key(self, tokens: Sequence[int]) -> str:
        digest = hashlib.sha256(self._identity)
        digest.update(b"\0")
        digest.update(_token_bytes(tokens))
        return digest.hexdigest()[:40]

    def path(self, tokens: Sequence[int]) -> Path:
        return self.folder / (self.key(tokens) + SUFFIX)

    def entries(self) -> list[Path]:
        return sorted(self.folder.glob("*" + SUFFIX))

    def has(self, tokens: Sequence[int]) -> bool:
        """Whether an entry exists for ``tokens``; a hit counts as a use for eviction."""
        path = self.path(tokens)
        try:
            os.utime(path)
            return True
        except OSError:
            return False

    # --- reading ------------------------------------------------------------------------------------
    def load(self, tokens: Sequence[int]) -> bytearray | None:
        """The state saved for exactly ``tokens``, or None. A file that fails any check is deleted."""
        path = self.path(tokens)
        try:
            with path.open("rb") as file:
                data = bytearray(os.fstat(file.fileno()).st_size)
                if file.readinto(data) != len(data):
                    return self._reject(path, "short read")
        except FileNotFoundError:
            return None
        except OSError as error:
            return self._reject(path, f"unreadable: {error}")
        view = memoryview(data)
        fixed = len(MAGIC) + 4
        if len(data) < fixed or view[: len(MAGIC)] != MAGIC:
            return self._reject(path, "not a KV cache file")
        (header_length,) = struct.unpack_from("<I", data, len(MAGIC))
        if header_length > 4096 or fixed + header_length > len(data):
            return self._reject(path, "bad header length")
        try:
            header = json.loads(bytes(view[fixed : fixed + header_length]))
            n_tokens, n_state, checksum = int(header["tokens"]), int(header["state"]), int(header["crc32"])
            if header["format"] != FORMAT or header["key"] != path.stem:
                return self._reject(path, "other format or key")
        except (ValueError, KeyError, TypeError):
            return self._reject(path, "unreadable header")
        start = fixed + header_length
        if len(data) != start + 4 * n_tokens + n_state or n_state <= 0:
            return self._reject(path, "truncated or oversized")
        body = view[start:]
        if zlib.crc32(body) != checksum:
            return self._reject(path, "checksum mismatch")
        if bytes(body[: 4 * n_tokens]) != _token_bytes(tokens):
            return self._reject(path, "saved for other tokens")
        try:
            os.utime(path)
        except OSError:
            pass
        del view, body  # a bytearray with live memoryviews cannot be resized
        del data[: start + 4 * n_tokens]
        return data

    def discard(self, tokens: Sequence[int], reason: str) -> None:
        """Forget an entry the runtime could not use (llama.cpp refused its state)."""
        self._reject(self.path(tokens), reason)

    def _reject(self, path: Path, reason: str) -> bytearray | None:
        """Delete a file that failed a check; what ``load`` answers for it (no state)."""
        self.last_error = f"{path.name}: {reason}"
        try:
            path.unlink()
        except OSError:
            pass
        return None

    # --- writing ------------------------------------------------------------------------------------
    def save_async(self, tokens: Sequence[int], state: bytearray) -> None:
        """Write in a background thread: the caller goes on generating while the file is written.
        ``state`` is handed over (not copied); one write at a time."""
        if len(state) == 0 or len(state) > self.max_bytes:
            return
        self.wait()
        thread = threading.Thread(target=self.save, args=(list(tokens), state), name="memdesk-kv-save", daemon=True)
        self._writer = thread
        thread.start()

    def save(self, tokens: Sequence[int], state: bytes | bytearray) -> Path | None:
        path = self.path(tokens)
        token_bytes = _token_bytes(tokens)
        checksum = zlib.crc32(state, zlib.crc32(token_bytes))
        header = json.dumps(
            {"format": FORMAT, "key": path.stem, "tokens": len(tokens), "state": len(state), "crc32": checksum}
        ).encode("utf-8")
        temp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            # 0600 whatever the umask: the state encodes the prompt, core memory included.
            with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
                file.write(MAGIC + struct.pack("<I", len(header)) + header + token_bytes)
                file.write(state)
            os.replace(temp, path)
        except OSError as error:  # a full disk or a read-only folder only costs the speed-up
            self.last_error = f"{path.name}: not saved: {error}"
            try:
                temp.unlink()
            except OSError:
                pass
            return None
        self.evict(keep=path)
        return path

    def evict(self, keep: Path | None = None) -> None:
        """Drop least recently used entries beyond the count and byte limits (never ``keep``)."""
        entries = []
        for path in self.entries():
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime_ns, stat.st_size, path))
        entries.sort(reverse=True)  # newest first
        total = 0
        for count, (_mtime, size, path) in enumerate(entries):
            total += size
            if path != keep and (count >= self.max_entries or total > self.max_bytes):
                try:
                    path.unlink()
                except OSError:
                    pass
                total -= size

    def wait(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.join()

    def _remove_stale_temps(self) -> None:
        now = time.time()
        for temp in self.folder.glob("*.tmp"):
            try:
                if now - temp.stat().st_mtime > _STALE_TEMP_SECONDS:
                    temp.unlink()
            except OSError:
                pass
