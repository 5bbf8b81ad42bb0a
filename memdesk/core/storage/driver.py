"""The SQLite bindings: sqlean.py for plain stores, sqlcipher3 for encrypted ones.

Many Pythons (pyenv and macOS builds among them, and this project's CI machine) ship a ``sqlite3``
without ``enable_load_extension``. ``sqlean.py`` is a drop-in replacement with the same DB-API and
extension loading built in, so it serves plain stores; the standard module is used only when it can
load extensions itself.

Why two drivers and not SQLCipher for everything: sqlcipher3-binary 0.6.0 (SQLCipher 4.12 on SQLite
3.51) serves a plain store correctly (sqlite-vec 0.1.9 loads, FTS5 with porter works) but its build
is slower at the same work. Measured on a plain 10,000-message store with FTS5 and sqlite-vec rows
(3 interleaved rounds, 2-core machine): opening 1.4x, inserting 1.22x, an FTS5 query 1.59x, a vec0
query 1.14x sqlean's time; a bare table scan 2.6x and a CPU-only recursive query 1.5x. Plain stores
keep the faster build; only an encrypted store pays for SQLCipher.

A passphrase becomes SQLCipher's key exactly as SQLCipher 4 derives it (PBKDF2-HMAC-SHA512, 256,000
iterations, the 16-byte salt at the start of the file), done here once per passphrase and salt and
handed to SQLCipher as a raw key: every later connection of the process (worker threads, the graph
extractor) opens in about a millisecond instead of a quarter of a second, and the file still opens
with the passphrase in any SQLCipher 4 tool.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from memdesk.core.base.errors import StoreError

#: The first 16 bytes of every plain SQLite file; an encrypted file starts with its random salt.
PLAIN_HEADER = b"SQLite format 3\x00"
SALT_BYTES = 16
KDF_ITERATIONS = 256_000  # SQLCipher 4's default


def sqlite_module() -> ModuleType:
    """The driver of plain stores."""
    try:
        import sqlean

        return sqlean
    except ImportError:  # pragma: no cover - sqlean.py is a pinned dependency
        import sqlite3

        if not hasattr(sqlite3.Connection, "enable_load_extension"):
            raise
        return sqlite3


def cipher_module() -> ModuleType:
    """The driver of encrypted stores."""
    try:
        import sqlcipher3
    except ImportError:
        raise StoreError(
            "Encrypted stores need SQLCipher, which is not installed here",
            hint="install the sqlcipher3-binary package (Linux x86-64) or sqlcipher3 built against SQLCipher 4",
        ) from None
    return sqlcipher3


def driver_errors() -> tuple[type[Exception], ...]:
    """The base error class of each driver (that is installed), for code that must catch either."""
    try:
        return (sqlite_module().Error, cipher_module().Error)
    except StoreError:
        return (sqlite_module().Error,)


def file_is_encrypted(path: Path | str) -> bool:
    """Whether the file holds a store that is not plain SQLite (read from its header; no key
    needed). A missing or empty file is not encrypted: it is a store yet to be created."""
    if str(path) == ":memory:":
        return False
    try:
        with open(path, "rb") as file:
            header = file.read(len(PLAIN_HEADER))
            size = os.fstat(file.fileno()).st_size
    except FileNotFoundError:
        return False
    # A database file is whole pages (a power of two of at least 512 bytes): a file without the
    # SQLite header that is not is damaged, not encrypted, and is offered a snapshot instead of a
    # passphrase question.
    return len(header) > 0 and header != PLAIN_HEADER and size % 512 == 0


#: Derived page keys by (passphrase, salt): every connection after the first opens at once. The
#: passphrases are its keys, so it keeps only what is in use: ``forget_derived_keys`` after an
#: unlock (the wrong ones tried) and after a conversion (the old one).
_DERIVED: dict[tuple[str, bytes], bytes] = {}
_DERIVED_LIMIT = 8
_DERIVED_LOCK = threading.Lock()


def derived_key(passphrase: str, salt: bytes) -> bytes:
    """The 32-byte page key SQLCipher 4 derives from ``passphrase`` and a file's salt (cached)."""
    with _DERIVED_LOCK:
        known = _DERIVED.get((passphrase, salt))
    if known is not None:
        return known
    key = hashlib.pbkdf2_hmac("sha512", passphrase.encode("utf-8"), salt, KDF_ITERATIONS, 32)
    with _DERIVED_LOCK:
        _DERIVED[(passphrase, salt)] = key
        while len(_DERIVED) > _DERIVED_LIMIT:
            del _DERIVED[next(iter(_DERIVED))]
    return key


def forget_derived_keys(keep: str | None = None) -> None:
    """Drop the cached keys of every passphrase but ``keep`` (None: all of them)."""
    with _DERIVED_LOCK:
        for cached in [cached for cached in _DERIVED if cached[0] != keep]:
            del _DERIVED[cached]


def hkdf_sha256(key: bytes, info: bytes, length: int = 32) -> bytes:
    """RFC 5869 HKDF (extract with an empty salt, then expand): a key for one purpose, from which
    neither ``key`` nor a key for another purpose can be computed."""
    pseudorandom = hmac.new(b"\x00" * hashlib.sha256().digest_size, key, hashlib.sha256).digest()
    output, block, counter = b"", b"", 1
    while len(output) < length:
        block = hmac.new(pseudorandom, block + info + bytes([counter]), hashlib.sha256).digest()
        output += block
        counter += 1
    return output[:length]


#: What the model's process is given for its encrypted KV states (encrypted_kv_store.py).
KV_CACHE_PURPOSE = b"memdesk: prompt KV states v1"


def kv_cache_key(store: Path | str, passphrase: str) -> bytes | None:
    """The key of the encrypted store's KV states file: derived (HKDF) from the store's page key, so
    the model's process never holds the passphrase, and a new salt (a changed passphrase) gives a
    new one. None when ``store`` is not an encrypted file (nothing to derive it from)."""
    if not file_is_encrypted(store):
        return None
    return hkdf_sha256(derived_key(passphrase, _read_salt(store)), KV_CACHE_PURPOSE)


def key_pragma_value(passphrase: str, salt: bytes, *, new_file: bool) -> str:
    """The value of ``PRAGMA key``: a raw key in hex (hex digits only, so no quoting problem with
    any passphrase). A new file is also told its salt, so that its key matches the passphrase."""
    derived = derived_key(passphrase, salt).hex()
    return f"\"x'{derived}{salt.hex() if new_file else ''}'\""


def connect_keyed(path: Path | str, passphrase: str, *, timeout: float) -> tuple[Any, ModuleType]:
    """A SQLCipher connection to ``path`` keyed with ``passphrase`` (the file is created encrypted
    when it does not exist or is empty). The key is not checked here: the caller's first read is."""
    module = cipher_module()
    new_file = not os.path.exists(path) or os.path.getsize(path) == 0
    salt = os.urandom(SALT_BYTES) if new_file else _read_salt(path)
    conn = module.connect(str(path), isolation_level=None, check_same_thread=False, timeout=timeout)
    # SQLCipher writes a wrong key's HMAC failures to stderr; the caller reports it instead.
    conn.execute("PRAGMA cipher_log_level = NONE")
    conn.execute(f"PRAGMA key = {key_pragma_value(passphrase, salt, new_file=new_file)}")
    return conn, module


def _read_salt(path: Path | str) -> bytes:
    with open(path, "rb") as file:
        return file.read(SALT_BYTES)
