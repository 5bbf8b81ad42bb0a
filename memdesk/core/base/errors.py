"""Every error a user may see, defined once.

Library exceptions are translated into these at the boundary where they happen; callers never
parse error strings. ``MemDeskError.user_message`` is what the CLI prints and the window shows.
"""

from __future__ import annotations


class MemDeskError(Exception):
    """Base of all user-facing errors. ``hint`` says what the user can do about it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def user_message(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


# --- storage ---------------------------------------------------------------------------------
class StoreError(MemDeskError):
    """The database could not be used."""


class SchemaTooNewError(StoreError):
    """The file was written by a newer MemDesk."""


class StoreBusyError(StoreError):
    """Another process holds the database lock."""


class DiskFullError(StoreError):
    """The disk is full or the file cannot be written."""


class StoreReadOnlyError(StoreError):
    """The store, or the data folder holding it, cannot be written (permissions, a read-only
    mount, an immutable file): found when opening, not at the first write."""


class AlreadyRunningError(StoreError):
    """Another MemDesk window or terminal chat is using the same data folder."""

    def __init__(self, message: str, *, hint: str | None = None, pid: int | None = None, program: str = "") -> None:
        super().__init__(message, hint=hint)
        self.pid = pid
        self.program = program


class InstanceLockError(StoreError):
    """The data folder's instance lock (or the window's come-forward request) is not a plain file
    of its own: a symbolic link or a hard link planted there would make MemDesk overwrite another file."""


class DamagedStoreError(StoreError):
    """The store is damaged or not a database, or could not be brought up to date. ``snapshot`` is
    the newest good snapshot offered in its place (its id and date), when there is one."""

    def __init__(self, message: str, *, hint: str | None = None, snapshot: object | None = None) -> None:
        super().__init__(message, hint=hint)
        self.snapshot = snapshot


class BackupError(StoreError):
    """A snapshot could not be taken, checked or restored; the store itself is unchanged."""


class ForeignSnapshotError(BackupError):
    """A snapshot this store did not record (planted, copied from elsewhere, or changed since): it
    is restored only on request, after its differences are shown, with what it may not bring reset."""


class EmbeddingMismatchError(StoreError):
    """The store's vectors were made by a different embedding model."""


class PassphraseError(StoreError):
    """The store's encryption and the passphrase given do not fit together."""


class WrongPassphraseError(PassphraseError):
    """The passphrase does not decrypt the store."""


class PassphraseRequiredError(PassphraseError):
    """The store is encrypted and no passphrase was given."""


class NotEncryptedError(PassphraseError):
    """A passphrase was given for a store that is not encrypted."""


# --- agents ----------------------------------------------------------------------------------
class AgentNotFoundError(MemDeskError):
    pass


class AgentExistsError(MemDeskError):
    pass


# --- memory history and agent files -----------------------------------------------------------
class StalePassageError(MemDeskError):
    """An archival passage changed since the editor read it."""


class RevertError(MemDeskError):
    """A memory change cannot be reverted (its target is gone, or a later change is in the way)."""


class AgentFileError(MemDeskError):
    """An agent file (.af or MemDesk JSON) cannot be imported: nothing of it was saved."""


# --- model runtimes --------------------------------------------------------------------------
class ModelError(MemDeskError):
    """The model runtime failed."""


class ModelFileError(ModelError):
    """A model file is missing, truncated or not a GGUF."""


class ModelCrashedError(ModelError):
    """The model's process died (a native crash, or killed); ``exit_code`` is negative for a signal.
    The window offers Help -> Diagnostics for it, which names the cause and the fix."""

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = exit_code


class ContextOverflowError(ModelError):
    """A prompt would not fit in the model's context window even after eviction."""


class GenerationCancelled(ModelError):
    """The user stopped generation."""


class UnknownModelError(ModelError):
    """A model name matches nothing in the catalog or the model folders."""


class DownloadError(ModelError):
    """A model download failed; nothing was installed and the working model is unchanged."""


class DownloadCancelled(DownloadError):
    """The user stopped a download; what arrived is kept to resume from."""


class ChecksumMismatchError(DownloadError):
    """A downloaded file is not the one the catalog or the hub promised."""


class NotEnoughSpaceError(DownloadError):
    """The disk cannot hold the model."""


class LocalServerError(ModelError):
    """An Ollama or LM Studio server could not be used."""


# --- tools -----------------------------------------------------------------------------------
class ToolError(MemDeskError):
    """A function call failed; the message goes back to the model as a failed call."""


class ConsentDenied(ToolError):
    """The user refused to let a tool run."""


# --- documents -------------------------------------------------------------------------------
class DocumentError(MemDeskError):
    """A document could not be read; reported per file, never stopping a batch."""


class FileTransferError(MemDeskError):
    """A file the user chose for an import or an export could not be read or written."""


class ConfigError(MemDeskError):
    pass


class PrivateChatRefusal(MemDeskError):
    """Something that would save what a private chat holds (adding documents) was asked during one."""


# --- sync --------------------------------------------------------------------------------------
class SyncError(MemDeskError):
    """Sync could not run (no folder, not paired, a folder that cannot be written)."""


class SyncFileRefused(SyncError):
    """A change file was altered, truncated, replayed, foreign or from an unpaired device: never
    applied, reported, and kept where it is."""


class SyncSchemaTooNewError(SyncFileRefused):
    """A change file was written by a newer MemDesk; kept until this device is upgraded."""


class DuplicateDeviceError(SyncError):
    """Another device writes under this device's id (a store copied by hand, then both synced)."""


class PairingCodeError(SyncError):
    """The pairing code does not open this sync folder."""


# --- conversations from other assistants, memory as a folder -----------------------------------
class HistoryImportError(FileTransferError):
    """An export of another assistant's conversations could not be read at all. (What can be read
    of a damaged one is imported; each part that cannot is listed with its reason instead.)"""


class UnrecognisedExportError(HistoryImportError):
    """Neither a ChatGPT, Claude or Open WebUI export, a transcript nor a MemDesk memory folder."""


class UnsafeArchiveError(HistoryImportError):
    """A zip that would unpack to far more than it holds (a zip bomb), or to more than is sensible."""


class ExportShapeError(HistoryImportError):
    """One conversation of an export has a shape its tool never writes: it is skipped and listed."""


class MemoryFolderError(FileTransferError):
    """A MemDesk memory folder could not be written, or read back (a damaged or foreign file)."""
