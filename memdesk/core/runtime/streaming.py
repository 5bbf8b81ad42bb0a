"""Pull the user-visible parts out of a function call while its JSON is still being generated.

Runtimes feed raw text deltas in; out come ``StreamEvent``s carrying the decoded characters of the
``inner_thoughts`` value (kind "thought") and of the ``message`` argument (kind "message"). A
character-level scanner is enough because the call's JSON is generated left to right.
"""

from __future__ import annotations

from memdesk.core.runtime.base import StreamEvent, StreamKind

_STREAMED_KEYS: dict[str, StreamKind] = {"inner_thoughts": "thought", "message": "message"}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class CallStreamParser:
    def __init__(self) -> None:
        self._in_string = False
        self._escape = False
        self._unicode: str | None = None  # hex digits of a pending \\uXXXX escape
        self._string = ""  # the current string literal, decoded
        self._last_string: str | None = None  # the last complete string (a key, if ':' follows)
        self._expect_value_for: str | None = None
        self._streaming: StreamKind | None = None
        self._depth = 0
        self._last_kind: StreamKind = "message"
        self._function: str | None = None  # the called function's name, once generated
        self._value_of: str | None = None  # the key whose value the current string is

    def feed(self, text: str) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        pending: list[str] = []
        for char in text:
            decoded = self._consume(char)
            if decoded is not None and self._streaming is not None:
                pending.append(decoded)
            elif pending:
                events.append(StreamEvent(self._last_kind, "".join(pending)))
                pending = []
            if self._streaming is not None:
                self._last_kind = self._streaming
        if pending:
            events.append(StreamEvent(self._last_kind, "".join(pending)))
        return events

    def _consume(self, char: str) -> str | None:
        """Advance by one character; return the decoded character when it belongs to a string."""
        if self._in_string:
            if self._unicode is not None:
                self._unicode += char
                if len(self._unicode) == 4:
                    try:
                        decoded = chr(int(self._unicode, 16))
                    except ValueError:
                        decoded = ""
                    self._unicode = None
                    self._string += decoded
                    return decoded
                return None
            if self._escape:
                self._escape = False
                if char == "u":
                    self._unicode = ""
                    return None
                decoded = _ESCAPES.get(char, char)
                self._string += decoded
                return decoded
            if char == "\\":
                self._escape = True
                return None
            if char == '"':
                self._in_string = False
                if self._value_of == "function":
                    self._function = self._string
                self._last_string = self._string
                self._streaming = None
                return None
            self._string += char
            return char
        if char == '"':
            self._in_string = True
            self._string = ""
            self._value_of = self._expect_value_for
            if self._expect_value_for is not None:
                self._streaming = _STREAMED_KEYS.get(self._expect_value_for)
                # Only send_message's "message" is meant for the user (message_chatgpt has one too).
                if self._streaming == "message" and self._function != "send_message":
                    self._streaming = None
                self._last_kind = self._streaming or "message"
                self._expect_value_for = None
            return None
        if char == ":":
            self._expect_value_for = self._last_string
        elif char in "{[":
            self._depth += 1
            self._expect_value_for = None
        elif char in "}],":
            self._depth -= char != ","
            self._expect_value_for = None
        elif not char.isspace():
            self._expect_value_for = None  # a number, true/false/null value
        return None
