"""A JSON array read one element at a time: a 2 GB ``conversations.json`` is never held whole.

The exports hold a top-level array of conversations. The reader keeps a window of decoded text
and asks the standard library's decoder (C speed) for one element at a time; when an element runs
past the window, more is read and the element parsed again, the window growing by its own size,
so a large conversation costs about twice its parse, and memory stays at one conversation plus a
chunk. An element that will not parse however much is read is either damaged (the file ends
inside it: a truncated download) or malformed: what came before it has been given out already,
and the reader says where it stopped and why.

The text is UTF-8 (the JSON standard); bytes that are not are replaced and counted, a
byte-order mark of UTF-8, -16 or -32 is honoured.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

#: Bytes read at a time.
CHUNK = 1 << 20
#: An element longer than this (characters) is not read: no conversation is this large.
MAX_ELEMENT_CHARS = 128 << 20
#: A literal cut by the end of the text (``fals``) fails this close to it.
_CUT_LITERAL = 8
_WHITESPACE = " \t\r\n"
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True)
class Element:
    """One element of the array (``value``), or why the reading stopped at it (``problem``)."""

    index: int
    value: Any = None
    problem: str = ""


class JsonArrayReader:
    """``for element in JsonArrayReader(binary)``: each element of the top-level array in order.
    A top-level object is read as an array of one (an export of a single conversation).
    ``replaced``: characters that were not valid text and were replaced, so far.
    ``position``: bytes read so far (for progress)."""

    def __init__(self, binary: IO[bytes], *, chunk: int = CHUNK, max_element_chars: int = MAX_ELEMENT_CHARS) -> None:
        self._binary = binary
        self._chunk = chunk
        self._max = max_element_chars
        self._decoder: codecs.IncrementalDecoder | None = None
        self._buffer = ""
        self._pos = 0
        self._eof = False
        self.replaced = 0
        self.position = 0
        self._json = json.JSONDecoder()

    # --- reading ------------------------------------------------------------------------------
    def _read(self, size: int) -> bool:
        """Append at least ``size`` bytes' worth of text (fewer at the end); False at the end."""
        if self._eof:
            return False
        data = self._binary.read(size)
        self.position += len(data)
        if self._decoder is None:
            data = self._start(data)
        assert self._decoder is not None
        text = self._decoder.decode(data, final=not data)
        if not data:
            self._eof = True
        if text:
            self.replaced += text.count("\ufffd")
            if self._pos:  # drop what was given out already
                self._buffer = self._buffer[self._pos :]
                self._pos = 0
            self._buffer += text
        return bool(data) or bool(text)

    def _start(self, data: bytes) -> bytes:
        while len(data) < 4:  # a BOM is up to four bytes
            more = self._binary.read(4 - len(data))
            if not more:
                break
            self.position += len(more)
            data += more
        for bom, encoding in _BOMS:
            if data.startswith(bom):
                self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
                return data[len(bom) :]
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return data

    def _skip_whitespace(self) -> str | None:
        """The next character that is not white space (not consumed), None at the end."""
        while True:
            buffer, pos = self._buffer, self._pos
            while pos < len(buffer) and buffer[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buffer):
                return buffer[pos]
            if not self._read(self._chunk):
                return None

    def _value(self) -> tuple[Any, str]:
        """Parse the value that starts here: (value, "") or (None, why not)."""
        want = self._chunk
        while True:
            try:
                value, end = self._json.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError as error:
                held = len(self._buffer) - self._pos
                if not self._binary_ended_inside(error):
                    return None, f"not valid JSON ({error.msg} at character {error.pos - self._pos} of it)"
                if held > self._max:
                    return None, f"an element larger than {self._max >> 20} MB, or not valid JSON ({error.msg})"
                if not self._read(max(want, held)):
                    return None, "the file ends in the middle of it (an incomplete download?)"
                want = max(want, held)
                continue
            self._pos = end
            return value, ""

    def _binary_ended_inside(self, error: json.JSONDecodeError) -> bool:
        """The parse may have failed only because the text stopped (more may mend it): the error
        is at the very end (within a cut literal such as ``fals``), or in a string left open."""
        return error.pos >= len(self._buffer) - _CUT_LITERAL or error.msg.startswith("Unterminated")

    # --- the elements ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Element]:
        first = self._skip_whitespace()
        if first is None:
            yield Element(0, problem="the file is empty")
            return
        if first == "{":
            value, problem = self._value()
            yield Element(0, value, problem)
            return
        if first != "[":
            yield Element(0, problem="not a JSON array or object")
            return
        self._pos += 1
        index = 0
        while True:
            found = self._skip_whitespace()
            if found is None:
                yield Element(index, problem="the file ends before the list of conversations does")
                return
            if found == "]":
                return
            if index:
                if found != ",":
                    yield Element(index, problem=f"not valid JSON (expected ',' or ']' at byte {self.position})")
                    return
                self._pos += 1
                if self._skip_whitespace() is None:
                    yield Element(index, problem="the file ends before the list of conversations does")
                    return
            value, problem = self._value()
            yield Element(index, value, problem)
            if problem:
                return
            index += 1
