"""The consent question's text: one line saying what a call will do, then the data it carries.

``ConsentPolicy.allow`` takes one string. Its first line is the action ("POST https://host/notes",
"append 12 characters to notes.txt"); the lines after it, when there are any, are the data the
call would send or write, in full. Front ends show the action, a shortened preview of the data
and a way to see all of it, so what the user approves is what will be sent or written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memdesk.core.text.visible import one_line, visible

__all__ = ["ConsentText", "one_line", "visible", "with_arguments", "with_data"]

PREVIEW_CHARS = 400
PREVIEW_LINES = 8


def with_data(action: str, label: str, data: str) -> str:
    """A summary: the action on one line, then ``label`` and the data, unshortened."""
    return f"{one_line(action)}\n{label}:\n{data}"


def with_arguments(action: str, function: str, arguments: dict[str, Any]) -> str:
    """A summary for a call into code MemDesk cannot speak for (an imported tool, a user's tool):
    the action naming ``function`` and its arguments, then every argument the code will get, in
    full, as JSON (each value unambiguous, however long or many-lined)."""
    call = f"{function}({', '.join(arguments)})"
    if not arguments:
        return one_line(action.format(call=call))
    data = json.dumps(arguments, ensure_ascii=False, indent=1, default=str)
    return with_data(action.format(call=call), f"its arguments ({len(data):,} characters)", data)


@dataclass(frozen=True)
class ConsentText:
    action: str
    #: What the call carries (a label line, then the data), or "" when it carries nothing.
    data: str

    @classmethod
    def parse(cls, summary: str) -> ConsentText:
        action, _, data = summary.partition("\n")
        return cls(one_line(action), visible(data))

    @property
    def is_shortened(self) -> bool:
        return self.preview != self.data

    @property
    def preview(self) -> str:
        """The data cut to PREVIEW_LINES lines and PREVIEW_CHARS characters, saying so when cut."""
        lines = self.data.split("\n")
        shown = "\n".join(lines[:PREVIEW_LINES])[:PREVIEW_CHARS]
        if shown == self.data:
            return self.data
        return f"{shown}… [{len(self.data) - len(shown)} more characters]"
