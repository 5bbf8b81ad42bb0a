"""Connection, transactions, migrations and error translation for the one SQLite file."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from memdesk.core.base.errors import (
    DamagedStoreError,
    DiskFullError,
    NotEncryptedError,
    PassphraseRequiredError,
    SchemaTooNewError,
    StoreBusyError,
    StoreError,
    StoreReadOnlyError,
    WrongPassphraseError,
)
from memdesk.core.base.private_files import make_private
from memdesk.core.storage.cipher_pages import passphrase_fits
from memdesk.core.storage.driver import cipher_module, connect_keyed, driver_errors, file_is_encrypted, sqlite_module
from memdesk.core.storage.migrations import MIGRATIONS
from memdesk.core.storage.vector_extension import load_vector_extension

sqlite = sqlite_module()

# Primary SQLite result codes (the low byte of the extended code), used to sort failures into
# "the environment's fault" (shown to the user with advice) and bugs (re-raised).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26

#: The page cache of a connection to an encrypted store, in KiB (SQLite's default is 2 MB, SQLCipher's
#: build 8 MB). A plain store's pages, once read, stay in the operating system's file cache, so a
#: second read costs a copy; an encrypted store's pages are decrypted (AES-256 and an HMAC-SHA512
#: check) at every read that misses SQLite's own cache. Conversation search reads every message's
#: text and a thousand float16 rows, so with the default cache each search decrypted most of them
#: again. Measured on a 20,000-message store (bench/privacy_encryption.py's, 60 MB), per query:
#: the verbatim scan 335 -> 158 ms (plain 135-165), the float16 short list 96 -> 20 ms (plain 20-24).
#: Pages are allocated as they are read, so a small store uses what it needs, never more than this.
ENCRYPTED_CACHE_KIB = 64 * 1024
#: Bound parameters per statement of ``insert_rows``: SQLite's lowest limit (999 before 3.32).
MAX_PARAMETERS = 999


#: What a user can do about a damaged store (the snapshots are memdesk/core/storage/backup.py's).
RESTORE_HINT = "restore a snapshot: memdesk backup list, then memdesk backup restore ID"
#: What a user can do about a store that cannot be written.
READ_ONLY_HINT = (
    "make it writable for your user (its permissions, owner or mount), or set MEMDESK_HOME to a writable folder"
)


def translate_error(error: Exception, path: Path | str) -> Exception:
    """Map a driver exception to a typed MemDesk error, or return it unchanged when it is a bug."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is None:
        return error
    primary = code & 0xFF
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreBusyError(
            f"The database {path} is locked by another program",
            hint="close other MemDesk windows or wait a moment and try again",
        )
    if primary == _SQLITE_READONLY:
        return StoreReadOnlyError(f"The database {path} is read-only: {error}", hint=READ_ONLY_HINT)
    if primary in (_SQLITE_FULL, _SQLITE_IOERR, _SQLITE_CANTOPEN):
        return DiskFullError(
            f"Could not write to {path}: {error}",
            hint="free some disk space or check the folder's permissions; nothing saved earlier was lost",
        )
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return DamagedStoreError(f"{path} is not a MemDesk database or is damaged", hint=RESTORE_HINT)
    return error


class _DryRunDone(Exception):
    """Ends a dry run's transaction (rolled back like any failure, then swallowed)."""


class Database:
    """One connection to the store. Thread-safe through a re-entrant lock; long work should
    open its own ``Database`` on the same file (WAL lets readers and one writer coexist)."""

    def __init__(
        self, connection: Any, path: Path | str, *, driver: ModuleType = sqlite, key: str | None = None
    ) -> None:
        self._conn = connection
        self.path = path
        self._driver = driver
        self._key = key
        self._lock = threading.RLock()
        self._depth = 0

    @property
    def key(self) -> str | None:
        """The passphrase this store was opened with (held in memory only), None for a plain store.
        Another connection a thread opens on the same store passes it to ``open_database``."""
        return self._key

    @property
    def encrypted(self) -> bool:
        return self._key is not None

    # --- statements ------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        with self._lock, self._translated():
            return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        with self._lock, self._translated():
            return self._conn.executemany(sql, rows)

    def insert_rows(self, head: str, row: str, rows: Sequence[Sequence[Any]]) -> None:
        """``head`` (``INSERT INTO t(a, b) VALUES``) with one ``row`` (``(?, ?)``) per row, in as few
        statements as the parameter limit allows, rows in order. executemany runs a statement a
        row, and each statement that fires triggers opens a statement journal, at which FTS5 writes
        its pending terms out as a segment of their own: a thousand passages took 44 ms one a
        statement, 11 ms this way."""
        if not rows:
            return
        per = max(1, MAX_PARAMETERS // len(rows[0]))
        with self._lock, self._translated():
            for start in range(0, len(rows), per):
                part = rows[start : start + per]
                self._conn.execute(f"{head} {', '.join([row] * len(part))}", [value for r in part for value in r])

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        with self._lock, self._translated():
            return self._conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        with self._lock, self._translated():
            return self._conn.execute(sql, params).fetchone()

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    def set_busy_timeout(self, seconds: float) -> None:
        """How long a write waits for another connection's write lock before failing."""
        self.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def create_function(self, name: str, arity: int, function) -> None:
        """Register a deterministic SQL function on this connection."""
        with self._lock:
            self._conn.create_function(name, arity, function, deterministic=True)

    def run_script(self, script: str) -> None:
        """Run several statements inside the current transaction.

        ``executescript`` would commit first, breaking "one migration, one transaction", so the
        script is split into complete statements and run one by one.
        """
        buffer = ""
        for line in script.splitlines(keepends=True):
            buffer += line
            if sqlite.complete_statement(buffer):
                self.execute(buffer)
                buffer = ""
        if buffer.strip():
            raise StoreError(f"Incomplete SQL statement in script: {buffer.strip()[:80]}")

    # --- transactions ----------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        """All or nothing. Nested calls become savepoints inside the outer transaction."""
        with self._lock:
            if self._depth == 0:
                self.execute("BEGIN IMMEDIATE")
                name = None
            else:
                name = f"sp{self._depth}"
                self.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                with contextlib.suppress(Exception):
                    if name is None:
                        self._conn.execute("ROLLBACK")
                    else:
                        self._conn.execute(f"ROLLBACK TO {name}")
                        self._conn.execute(f"RELEASE {name}")
                raise
            else:
                self._depth -= 1
                self.execute("COMMIT" if name is None else f"RELEASE {name}")

    @contextlib.contextmanager
    def dry_run(self) -> Iterator[Database]:
        """A transaction that is always rolled back: check that writes would succeed, or look at
        a state that must not last (errors inside still propagate)."""
        try:
            with self.transaction():
                yield self
                raise _DryRunDone
        except _DryRunDone:
            pass

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def has_table(self, name: str) -> bool:
        """Whether the store has this table (or index, or view): optional ones come with features."""
        return bool(self.scalar("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)))

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except self._driver.Error as error:
            translated = translate_error(error, self.path)
            if translated is error:
                raise
            raise translated from error

    # --- schema ----------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        return int(self.scalar("PRAGMA user_version"))

    def migrate(self, migrations: Sequence = MIGRATIONS, *, before: Callable[[int], None] | None = None) -> list[str]:
        """Apply pending migrations in order, each in its own transaction. Returns their names.
        ``before(first_number)`` runs once before they do on a store that has data (a snapshot)."""
        current = self.schema_version
        if current > len(migrations):
            raise SchemaTooNewError(
                f"{self.path} was written by a newer MemDesk (schema {current}; this version knows {len(migrations)})",
                hint="upgrade MemDesk to open it",
            )
        applied = []
        if before is not None and 0 < current < len(migrations):
            before(current + 1)
        for number, migration in enumerate(migrations[current:], start=current + 1):
            with self._foreign_keys_off(getattr(migration, "rebuilds_tables", False)), self.transaction():
                migration(self)
                # user_version is transactional in SQLite: it rolls back with a failed migration.
                self.execute(f"PRAGMA user_version = {number}")
                self.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, datetime('now'))",
                    (number, migration.__name__),
                )
            applied.append(migration.__name__)
        return applied

    @contextlib.contextmanager
    def _foreign_keys_off(self, off: bool) -> Iterator[None]:
        """Around a migration that rebuilds a table others reference: with foreign keys on, dropping
        the old table would cascade to every referencing row. The migration checks them itself
        (PRAGMA foreign_key_check) before its transaction commits."""
        if not off:
            yield
            return
        # The pragma is a no-op inside a transaction: refuse rather than cascade.
        self.execute("PRAGMA foreign_keys = OFF")
        try:
            if self.in_transaction or self.scalar("PRAGMA foreign_keys"):
                raise StoreError("Cannot rebuild a table while foreign keys are enforced", hint="report this bug")
            yield
        finally:
            self.execute("PRAGMA foreign_keys = ON")

    def copy_into(self, target: Database) -> None:
        """Copy every page of this store into ``target`` with SQLite's online backup API (a
        consistent snapshot, other connections keep writing meanwhile)."""
        with self._lock, target._lock:
            self._conn.backup(target._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _connect(path: Path | str, busy_timeout: float, key: str | None) -> tuple[Any, ModuleType]:
    if str(path) == ":memory:":
        # Nothing to encrypt, but a copy of an encrypted store (a private chat's) needs SQLCipher's
        # ATTACH ... KEY and sqlcipher_export, so a key picks the driver that has them.
        driver = sqlite if key is None else cipher_module()
        conn = driver.connect(":memory:", isolation_level=None, check_same_thread=False, timeout=busy_timeout)
    elif key is None:
        conn, driver = (
            sqlite.connect(str(path), isolation_level=None, check_same_thread=False, timeout=busy_timeout),
            sqlite,
        )
    else:
        conn, driver = connect_keyed(path, key, timeout=busy_timeout)
        _check_key(conn, driver, path, key)
    try:
        _configure(conn, path, busy_timeout)
        if key is not None and str(path) != ":memory:":
            conn.execute(f"PRAGMA cache_size = -{ENCRYPTED_CACHE_KIB}")
    except BaseException:
        conn.close()
        raise
    return conn, driver


def _check_key(conn: Any, driver: ModuleType, path: Path | str, key: str) -> None:
    """The first read decrypts page 1: a wrong key fails here, before anything else touches the file.
    SQLCipher says the same of a damaged page 1; the other pages tell which it is (cipher_pages)."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except driver.DatabaseError as error:
        conn.close()
        if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == _SQLITE_NOTADB:
            if passphrase_fits(path, key):
                raise DamagedStoreError(
                    f"{path} is damaged: the passphrase is right, but the start of the file cannot be read",
                    hint=RESTORE_HINT,
                ) from None
            raise WrongPassphraseError(
                f"Wrong passphrase for {path}", hint="type it again exactly as you set it; upper and lower case differ"
            ) from None
        raise


def _configure(conn: Any, path: Path | str, busy_timeout: float) -> None:
    load_vector_extension(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    # A deleted row's bytes are overwritten, not left in free space for anyone who reads the file
    # (memdesk/core/storage/scrubbing.py removes the other copies).
    conn.execute("PRAGMA secure_delete = ON")
    # The schema's views and triggers may not call functions with side effects nor virtual tables
    # not marked innocuous: a restored snapshot's schema is as trustworthy as whoever wrote it.
    conn.execute("PRAGMA trusted_schema = OFF")
    # A WAL that a reader kept from being emptied (after a forget, say) is cut back to nothing the
    # next time it starts over, so old pages do not linger in it.
    conn.execute("PRAGMA journal_size_limit = 0")
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    if str(path) != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a power cut may lose the last commit, never corrupt earlier ones.
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT"
        " NOT NULL, applied_at TEXT NOT NULL)"
    )


def require_writable(path: Path) -> None:
    """Refuse a store that could be read but never written, with the reason, instead of letting its
    first write fail with a disk-space hint. Asked of the kernel (access(2)), which also knows about
    read-only mounts and immutable files, which stop root too. The file is never opened here:
    closing a descriptor of it would drop the locks SQLite holds on it in this process."""
    checks = (
        (path.parent, os.W_OK | os.X_OK, f"The folder {path.parent} holding the database is read-only"),
        (path, os.W_OK, f"The database {path} is read-only"),
    )
    for target, mode, message in checks:
        if target.exists() and not os.access(target, mode, effective_ids=os.access in os.supports_effective_ids):
            raise StoreReadOnlyError(message, hint=READ_ONLY_HINT)


def check_passphrase_fits(path: Path | str, key: str | None) -> None:
    """Refuse, with what to do, an encrypted store opened without a passphrase or a plain one with."""
    encrypted = file_is_encrypted(path)
    if encrypted and key is None:
        # Without the key an encrypted file and a damaged one look alike (no SQLite header).
        raise PassphraseRequiredError(
            f"{path} is encrypted, or is not a MemDesk database",
            hint=(
                "if you encrypted it, give its passphrase: the window asks for it,"
                " the terminal asks or reads MEMDESK_PASSPHRASE_FILE"
            ),
        )
    if not encrypted and key is not None and Path(path).exists() and Path(path).stat().st_size > 0:
        raise NotEncryptedError(
            f"{path} is not encrypted", hint="open it without a passphrase, or encrypt it with `memdesk encrypt`"
        )


def open_database(
    path: Path | str, *, key: str | None = None, migrate: bool = True, busy_timeout: float = 5.0
) -> Database:
    """Open (creating if needed) the store at ``path``, load sqlite-vec and bring the schema up to
    date. The file and its WAL are readable by their owner only.

    ``key`` is the passphrase of an encrypted store (a new file given one is created encrypted);
    a wrong one raises ``WrongPassphraseError`` and leaves nothing open. An in-memory store is
    never encrypted; given a key it runs on SQLCipher, so that it can read an encrypted store
    (``ATTACH ... KEY``, ``sqlcipher_export``)."""
    on_disk = str(path) != ":memory:"
    if on_disk:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        require_writable(Path(path))
        check_passphrase_fits(path, key)
    try:
        conn, driver = _connect(path, busy_timeout, key)
    except driver_errors() as error:
        translated = translate_error(error, path)
        raise translated from error
    if on_disk:
        # SQLite gives a WAL or journal it creates later the database file's own mode.
        for suffix in ("", "-wal", "-shm", "-journal"):
            make_private(Path(f"{path}{suffix}"))
    db = Database(conn, path, driver=driver, key=key if on_disk else None)
    if migrate:
        try:
            db.migrate()
        except BaseException:
            db.close()
            raise
    return db
