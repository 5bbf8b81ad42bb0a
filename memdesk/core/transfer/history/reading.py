"""An export opened for reading, its format recognised from its content (not its name): a zip or
a JSON array of ChatGPT, Claude or Open WebUI conversations, a Markdown or text transcript, or a
folder of transcripts. ``Export.entries()`` gives its conversations one at a time, each parsed, or
the reason it could not be; a damaged file gives what comes before the damage, then says where it
stopped. (A MemDesk memory folder is recognised here and read by memdesk.core.transfer.folder.)
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from memdesk.core.base.errors import ExportShapeError, MemDeskError, UnrecognisedExportError
from memdesk.core.transfer.history import archive, chatgpt, claude, openwebui, transcript
from memdesk.core.transfer.history.model import CHATGPT, CLAUDE, OPEN_WEBUI, TRANSCRIPT, Conversation
from memdesk.core.transfer.history.stream import JsonArrayReader

#: A transcript file larger than this is not read (a conversation written out is far smaller).
MAX_TRANSCRIPT_BYTES = 64 << 20
TRANSCRIPT_SUFFIXES = (".md", ".markdown", ".txt", ".text")
#: The README of a MemDesk memory folder says this in its front matter.
MEMORY_FOLDER = "memdesk-memory-folder"
#: Elements looked at to recognise a JSON export (the first may be damaged).
_PEEK = 5
_PARSERS = {
    CHATGPT: (chatgpt.looks_like, chatgpt.parse),
    CLAUDE: (claude.looks_like, claude.parse),
    OPEN_WEBUI: (openwebui.looks_like, openwebui.parse),
}


@dataclass(frozen=True)
class Entry:
    """One conversation of the export, in file order: read (``conversation``) or not (``problem``).
    ``stopped``: reading ends here (the rest of the file cannot be read)."""

    index: int
    conversation: Conversation | None
    problem: str = ""
    stopped: bool = False

    @property
    def where(self) -> str:
        title = self.conversation.title if self.conversation else ""
        return f"conversation {self.index + 1}" + (f" ({title!r})" if title else "")


def fingerprint(path: Path) -> str:
    """Tells one export from another cheaply: the size and a hash of both ends (a folder: of its
    files' names and sizes)."""
    digest = hashlib.sha256()
    if path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{child.relative_to(path)}\0{child.stat().st_size}\0".encode())
        return f"dir:{digest.hexdigest()[:32]}"
    size = path.stat().st_size
    with open(path, "rb") as file:
        digest.update(file.read(1 << 20))
        if size > 2 << 20:
            file.seek(size - (1 << 20))
            digest.update(file.read())
    return f"{size}:{digest.hexdigest()[:32]}"


def sniff(path: Path) -> str:
    """What ``path`` holds: "zip", "json", "text", "folder" or "memory-folder"."""
    if path.is_dir():
        readme = path / "README.md"
        if readme.is_file() and MEMORY_FOLDER in readme.read_text(encoding="utf-8", errors="replace")[:2000]:
            return "memory-folder"
        return "folder"
    if not path.is_file():
        raise UnrecognisedExportError(f"{path} does not exist", hint="check the path")
    try:
        with open(path, "rb") as file:
            head = file.read(8192)
    except OSError as error:
        raise UnrecognisedExportError(f"{path.name} could not be read: {error.strerror or error}") from None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    stripped = head.lstrip(b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n")
    if stripped[:1] in (b"[", b"{"):
        return "json"
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UnrecognisedExportError(
            f"{path.name} is not an export MemDesk can read",
            hint="choose a ChatGPT or Claude export (zip or conversations.json), an Open WebUI chat export,"
            " or a transcript",
        )
    return "text"


def is_export(path: Path) -> bool:
    """Whether ``path`` is a zip or JSON export of conversations MemDesk reads (by its content; a
    dropped file that is not goes to documents instead)."""
    try:
        return sniff(path) in ("zip", "json") and bool(Export(path).format)
    except (MemDeskError, OSError, ValueError):
        return False


class Export:
    """``Export(path)`` recognises the format (``format``: chatgpt, claude, open-webui or
    transcript); ``entries()`` reads it from the start (each call anew: an import that resumes
    skips what it did). ``progress()`` is the share of the file read so far."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.kind = sniff(self.path)
        if self.kind == "memory-folder":
            raise UnrecognisedExportError(
                f"{self.path} is a MemDesk memory folder", hint="bring it back with `memdesk import DIR --apply`"
            )
        self.note = ""  # said once about the whole export (an incomplete zip)
        self._open: Callable[[], IO[bytes]] | None = None
        self._size = 1
        self._reader: JsonArrayReader | None = None
        self._files: list[Path] = []
        self._done_files = 0
        if self.kind == "zip":
            self._open, _name, self.note, unpacked = archive.member_opener(self.path)
            # The member is read inflated; without a size of it, JSON packs about eight times.
            self._size = max(1, unpacked or 8 * self.path.stat().st_size)
        elif self.kind == "json":
            self._open = lambda: open(self.path, "rb")
            self._size = max(1, self.path.stat().st_size)
        if self._open is not None:
            self.format = self._recognise()
        else:
            self._files = _transcripts(self.path) if self.kind == "folder" else [self.path]
            if not self._files:
                raise UnrecognisedExportError(f"{self.path} holds no transcripts (.md or .txt files)")
            self.format = TRANSCRIPT

    def _recognise(self) -> str:
        assert self._open is not None
        with self._open() as stream:
            for element in itertools.islice(JsonArrayReader(stream), _PEEK):
                if element.problem:
                    break
                for name, (looks_like, _parse) in _PARSERS.items():
                    if looks_like(element.value):
                        return name
        raise UnrecognisedExportError(
            f"{self.path.name} is JSON, but not a ChatGPT, Claude or Open WebUI export",
            hint="ChatGPT's conversations have a 'mapping', Claude's 'chat_messages', Open WebUI's a 'history'",
        )

    def progress(self) -> float:
        if self._reader is not None:
            return min(1.0, self._reader.position / self._size)
        return self._done_files / max(1, len(self._files))

    @property
    def replaced(self) -> int:
        """Characters that were not valid text, replaced (a non-UTF-8 JSON file)."""
        return self._reader.replaced if self._reader is not None else 0

    def entries(self) -> Iterator[Entry]:
        if self._open is None:
            yield from self._transcript_entries()
            return
        parse = _PARSERS[self.format][1]
        stream = self._open()
        try:
            self._reader = JsonArrayReader(stream)
            last = -1
            for element in self._reader:
                last = element.index
                if element.problem:
                    damaged = getattr(stream, "damaged", "")
                    why = f"the zip is damaged from here on ({damaged})" if damaged else element.problem
                    yield Entry(element.index, None, f"reading stopped: {why}", stopped=True)
                    return
                yield _parsed(element.index, element.value, parse)
            damaged = getattr(stream, "damaged", "")
            if damaged:
                yield Entry(last + 1, None, f"reading stopped: the zip is damaged from here on ({damaged})", True)
        except MemDeskError as error:  # a zip bomb found while inflating
            yield Entry(max(0, last + 1), None, f"reading stopped: {error.message}", stopped=True)
        finally:
            stream.close()

    def _transcript_entries(self) -> Iterator[Entry]:
        for index, path in enumerate(self._files):
            self._done_files = index
            name = str(path.relative_to(self.path)) if self.kind == "folder" else path.name
            try:
                size = path.stat().st_size
                if size > MAX_TRANSCRIPT_BYTES:
                    raise ExportShapeError(f"larger than {MAX_TRANSCRIPT_BYTES >> 20} MB")
                text, note = transcript.decode(path.read_bytes())
                modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
                yield Entry(index, transcript.parse_text(text, name=name, modified=modified, note=note))
            except ExportShapeError as error:
                yield Entry(index, None, f"{name}: {error.message}")
            except OSError as error:
                yield Entry(index, None, f"{name}: could not be read ({error.strerror or error})")
        self._done_files = len(self._files)


def _parsed(index: int, value: Any, parse: Callable[[Any], Conversation]) -> Entry:
    try:
        return Entry(index, parse(value))
    except ExportShapeError as error:
        return Entry(index, None, error.message)
    except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as error:
        # A shape no tool writes, met somewhere the parser did not expect it: this one is skipped.
        return Entry(index, None, f"an unexpected shape ({type(error).__name__})")


def _transcripts(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in TRANSCRIPT_SUFFIXES and not p.name.startswith(".")
    )
