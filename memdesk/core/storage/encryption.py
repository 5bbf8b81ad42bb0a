"""Encrypt, decrypt or re-key an existing store, so that a crash at any moment leaves one readable store.

The store is exported (``sqlcipher_export``) into a new file beside it, that file is checked
(integrity, the same row count in every table, the same schema version) and flushed to disk, the
old file's WAL is checkpointed away, and only then does the new file replace the old one in one
``os.replace``. Until that rename the old store is untouched; after it the new one is complete. A
copy left half-made by a crash is removed by the next conversion.

Nothing else may use the store meanwhile: callers hold the instance lock (the CLI) or have closed
every connection (the window converts between closing and reopening). A change by another
connection during the export is detected (``PRAGMA data_version``) and refused, losing nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import PassphraseError, StoreBusyError, StoreError, WrongPassphraseError
from memdesk.core.base.private_files import make_private
from memdesk.core.storage.database import check_passphrase_fits
from memdesk.core.storage.driver import SALT_BYTES, cipher_module, connect_keyed, file_is_encrypted, key_pragma_value
from memdesk.core.storage.vector_extension import load_vector_extension

#: Suffix of the new file while a conversion builds it.
CONVERTING = ".converting"
_COMPANIONS = ("-wal", "-shm", "-journal")
_NOTADB = 26

#: Called with each step's name once it is done ("exported", "verified", "synced", "closed",
#: "replaced"): tests inject failures there to prove a crash at any point loses nothing.
StepHook = Callable[[str], None]


def encrypt_store(path: Path | str, new_key: str, *, hook: StepHook | None = None) -> None:
    """Encrypt a plain store with the passphrase ``new_key``."""
    _require_key(new_key)
    _convert(Path(path), None, new_key, hook)


def decrypt_store(path: Path | str, key: str, *, hook: StepHook | None = None) -> None:
    """Turn an encrypted store back into a plain one (``key`` is its passphrase)."""
    _convert(Path(path), key, None, hook)


def change_key(path: Path | str, old: str, new: str, *, hook: StepHook | None = None) -> None:
    """Re-encrypt a store under a new passphrase (and a new salt)."""
    _require_key(new)
    _convert(Path(path), old, new, hook)


def convert_file(path: Path | str, old_key: str | None, new_key: str | None) -> None:
    """Any one file of the store's family (a snapshot) from ``old_key`` to ``new_key`` (None:
    plain), the same way: a checked copy, then one rename."""
    if new_key is not None:
        _require_key(new_key)
    _convert(Path(path), old_key, new_key, None)


def is_encrypted(path: Path | str) -> bool:
    return file_is_encrypted(path)


def remove_leftovers(path: Path | str) -> list[Path]:
    """Delete a half-made copy an interrupted conversion left beside the store. Returns what went."""
    removed = []
    temp = _temp_path(Path(path))
    for candidate in (temp, *(Path(f"{temp}{suffix}") for suffix in _COMPANIONS)):
        if candidate.exists():
            candidate.unlink()
            removed.append(candidate)
    return removed


def _require_key(key: str) -> None:
    if not key:
        raise PassphraseError("The passphrase is empty", hint="choose a passphrase of at least one character")


def _temp_path(path: Path) -> Path:
    return path.with_name(path.name + CONVERTING)


def _step(hook: StepHook | None, name: str) -> None:
    if hook is not None:
        hook(name)


def _convert(path: Path, old_key: str | None, new_key: str | None, hook: StepHook | None) -> None:
    if not path.exists() or path.stat().st_size == 0:
        raise StoreError(f"There is no store at {path}", hint="start MemDesk once to create it")
    check_passphrase_fits(path, old_key)
    remove_leftovers(path)
    temp = _temp_path(path)
    source = _open_source(path, old_key)
    try:
        try:
            before = source.execute("PRAGMA data_version").fetchone()[0]
            counts = _row_counts(source, "main")
            version = source.execute("PRAGMA user_version").fetchone()[0]
            _export(source, temp, new_key, version)
            _step(hook, "exported")
            _verify(temp, new_key, counts, version)
            _step(hook, "verified")
            _fsync(temp)
            _step(hook, "synced")
            source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if source.execute("PRAGMA data_version").fetchone()[0] != before:
                raise StoreBusyError(
                    f"{path} changed while it was being converted; nothing was lost",
                    hint="close other MemDesk windows and commands, then try again",
                )
        finally:
            source.close()
        _drop_companions(path)
        _step(hook, "closed")
        os.replace(temp, path)
        _fsync_folder(path.parent)
        _step(hook, "replaced")
    except BaseException:
        # Before the rename the old store is whole: drop the half-made copy. After it, the new
        # store is whole and the copy no longer exists under its temporary name.
        with contextlib.suppress(OSError):
            remove_leftovers(path)
        raise
    make_private(path)


def _open_source(path: Path, key: str | None) -> Any:
    module = cipher_module()
    if key is None:
        conn = module.connect(str(path), isolation_level=None, check_same_thread=False)
    else:
        conn, module = connect_keyed(path, key, timeout=5.0)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except module.DatabaseError as error:
        conn.close()
        if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == _NOTADB:
            raise WrongPassphraseError(
                f"Wrong passphrase for {path}", hint="type it again exactly as you set it; upper and lower case differ"
            ) from None
        raise
    load_vector_extension(conn)
    return conn


def _export(source: Any, temp: Path, new_key: str | None, version: int) -> None:
    """Copy every table, index, trigger and virtual table (with its shadow tables) into ``temp``."""
    if new_key is None:
        key = ""
    else:
        # The new file's key, and its salt, derived from the passphrase the way SQLCipher would.
        key = key_pragma_value(new_key, os.urandom(SALT_BYTES), new_file=True)[1:-1]
    source.execute("ATTACH DATABASE ? AS converted KEY ?", (str(temp), key))
    try:
        make_private(temp)
        source.execute("SELECT sqlcipher_export('converted')")
        source.execute(f"PRAGMA converted.user_version = {int(version)}")
    finally:
        source.execute("DETACH DATABASE converted")


def _row_counts(conn: Any, schema: str) -> dict[str, int]:
    """Rows of every real table (virtual tables' data lives in their shadow tables, counted here)."""
    names = [
        row[0]
        for row in conn.execute(
            f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' AND rootpage > 0 ORDER BY name"
        )
    ]
    return {name: conn.execute(f'SELECT count(*) FROM {schema}."{name}"').fetchone()[0] for name in names}


def _verify(temp: Path, key: str | None, counts: dict[str, int], version: int) -> None:
    conn = _open_source(temp, key)
    try:
        problems = []
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            problems.append(f"integrity check: {integrity}")
        copied = _row_counts(conn, "main")
        if copied != counts:
            differing = sorted(name for name in set(counts) | set(copied) if counts.get(name) != copied.get(name))
            problems.append(f"row counts differ in {', '.join(differing)}")
        if conn.execute("PRAGMA user_version").fetchone()[0] != version:
            problems.append("schema version differs")
        if file_is_encrypted(temp) != (key is not None):
            problems.append("the copy is not in the expected form")
    finally:
        conn.close()
    if problems:
        raise StoreError(
            f"The converted copy of the store failed its check ({'; '.join(problems)}); the store was left as it was",
            hint="report this bug",
        )


def _drop_companions(path: Path) -> None:
    """The old store's WAL is checkpointed and empty by now; a WAL left beside the new file would
    be replayed into it."""
    for suffix in _COMPANIONS:
        companion = Path(f"{path}{suffix}")
        if companion.exists():
            if suffix == "-wal" and companion.stat().st_size > 0:
                raise StoreBusyError(
                    f"{path} is still in use by another program",
                    hint="close other MemDesk windows and commands, then try again",
                )
            companion.unlink()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    if os.name == "nt":  # pragma: no cover - folders cannot be opened for fsync on Windows
        return
    _fsync(folder)
