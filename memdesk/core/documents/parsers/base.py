"""What every parser returns, and the text decoding they share."""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from memdesk.core.base.errors import DocumentError


@dataclass(frozen=True)
class Section:
    text: str
    page: int | None = None  # 1-based, for paged formats
    section: str | None = None  # heading, sheet or symbol the text sits under
    #: Where ``text`` starts in the file's decoded text (text formats); None where the extracted text
    #: is not a slice of the file (then offsets count through the extracted text; PDF: within the page).
    offset: int | None = None


@dataclass
class ParsedDocument:
    title: str
    mime: str
    sections: list[Section] = field(default_factory=list)


def looks_binary(data: bytes) -> bool:
    """NUL bytes do not occur in text files (UTF-16 is recognised by its BOM before this check)."""
    return b"\x00" in data[:8192]


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (with or without BOM) or BOM-marked UTF-16; anything else is refused rather than
    guessed, because a wrong guess silently stores garbage in memory."""
    if not data.strip():
        raise DocumentError(f"{name}: the file is empty")
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as error:
                raise DocumentError(
                    f"{name}: text is not valid {encoding} ({error.reason} at byte {error.start})"
                ) from error
    if looks_binary(data):
        raise DocumentError(f"{name}: this is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentError(
            f"{name}: text is not UTF-8 ({error.reason} at byte {error.start})",
            hint="save the file as UTF-8 and add it again",
        ) from error
