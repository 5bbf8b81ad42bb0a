"""Tell when a JSON object being generated left to right is complete.

The call grammar admits nothing after the closing brace, so generation can stop on that brace
instead of spending a step to sample an end-of-text token.
"""

from __future__ import annotations


class JsonEnd:
    def __init__(self) -> None:
        self._depth = 0
        self._started = False
        self._in_string = False
        self._escape = False

    def feed(self, text: str) -> bool:
        """Consume ``text``; True once the outermost object or array has closed."""
        for char in text:
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
            elif char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
                self._started = True
            elif char in "}]":
                self._depth -= 1
                if self._started and self._depth == 0:
                    return True
        return False
