"""Markdown and plain-text transcripts: a conversation written as speaker lines, as exporters and
people write them:

    ## User                        **You:** how do I ...          [2024-03-01 10:00] User: hi
    how do I ...                   **ChatGPT:** You can ...       [2024-03-01 10:01] Claude: hello
    ## ChatGPT (2024-03-01 10:01)

A heading, a bold name or a ``Name:`` at the start of a line names the speaker of what follows; a
name used once is taken for prose ("Note: ..."), unless it is a known speaker. You, User, Me and
Human are the person; any other name is the other assistant. Front matter (``title:``, ``date:``)
or a first ``# Title`` names the conversation; times come from the speaker lines, else the date,
else the file's time, a second apart so the order holds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memdesk.core.base.errors import ExportShapeError
from memdesk.core.transfer.history.model import TRANSCRIPT, Conversation, Said, timestamp

USER_WORDS = frozenset({"you", "user", "me", "human", "i", "prompt", "question"})
KNOWN = USER_WORDS | {"assistant", "ai", "chatgpt", "gpt", "claude", "bot", "model", "gemini", "copilot", "answer"}
_WHEN = r"(?P<when>\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?(?:Z|[+-]\d{2}:?\d{2})?)"
_NAME = r"(?P<who>[^\W\d_][\w .'+-]{0,38}?)"
_HEADING = re.compile(rf"^#{{2,6}}\s*(?:[^\w\s]+\s*)?{_NAME}\s*(?:\(\s*{_WHEN}\s*\))?\s*:?\s*$")
_BOLD = re.compile(rf"^\*\*{_NAME}\s*:?\s*\*\*\s*:?\s*(?P<rest>.*)$")
_PLAIN = re.compile(rf"^(?:\[\s*{_WHEN}\s*\]\s*)?{_NAME}:\s+(?P<rest>.*)$")
_FRONT = re.compile(r"\A---\r?\n(?P<body>.*?)\r?\n---\r?\n", re.DOTALL)
_DATE_LINE = re.compile(rf"^(?:date|created|exported)\s*:\s*{_WHEN}", re.IGNORECASE)


def decode(data: bytes) -> tuple[str, str]:
    """The text, and a note when it was not UTF-8 (read as Windows-1252, which maps every byte)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), ""
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), "not UTF-8: read as Windows-1252"


def _speaker_line(line: str) -> tuple[str, str | None, str] | None:
    for pattern in (_HEADING, _BOLD, _PLAIN):
        found = pattern.match(line.strip())
        if found:
            groups = found.groupdict()
            return found["who"].strip(), groups.get("when"), groups.get("rest") or ""
    return None


def parse_text(text: str, *, name: str, modified: datetime | None, note: str = "") -> Conversation:
    """One transcript file (``name``: its file name, which identifies it on a later import)."""
    title, date = "", None
    front = _FRONT.match(text)
    if front:
        for line in front["body"].splitlines():
            key, _, value = line.partition(":")
            if key.strip().lower() == "title":
                title = value.strip().strip("\"'")
            elif key.strip().lower() in ("date", "created"):
                date = _time(value.strip().strip("\"'"))
        text = text[front.end() :]
    lines = text.splitlines()
    counts: dict[str, int] = {}
    for line in lines:
        found = _speaker_line(line)
        if found:
            counts[found[0].casefold()] = counts.get(found[0].casefold(), 0) + 1
    speakers = {who for who, n in counts.items() if n >= 2 or who in KNOWN}
    turns: list[tuple[str, datetime | None, list[str]]] = []
    for line in lines:
        found = _speaker_line(line)
        if found and found[0].casefold() in speakers:
            who, when, rest = found
            turns.append((who, _time(when), [rest] if rest else []))
        elif turns:
            turns[-1][2].append(line)
        else:
            if not title and line.startswith("# "):
                title = line[2:].strip()
            dated = _DATE_LINE.match(line.strip())
            if dated and date is None:
                date = _time(dated["when"])
    if not turns:
        raise ExportShapeError("no speaker lines (such as 'User:', '## Assistant' or '**You:**') in it")
    start = date or modified or datetime.now(UTC)
    conversation = Conversation(TRANSCRIPT, name, title or name.rsplit(".", 1)[0], "", [], start, None)
    assistants = [who for who, _when, _body in turns if who.casefold() not in USER_WORDS]
    conversation.assistant = assistants[0] if assistants else "Assistant"
    if note:
        conversation.left_out[note] += 1
    at = start
    for index, (who, said_at, body) in enumerate(turns):
        at = max(said_at or at + timedelta(seconds=1 if index else 0), at)
        words = "\n".join(body).strip()
        if not words:
            continue
        user = who.casefold() in USER_WORDS
        conversation.messages.append(
            Said(f"#{index}", "user" if user else "assistant", None if user else who, words, at)
        )
    if not conversation.messages:
        raise ExportShapeError("speaker lines with nothing said after them")
    conversation.updated_at = conversation.messages[-1].at
    return conversation


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return timestamp(text.replace(" ", "T", 1) if len(text) > 10 else text + "T00:00:00")
    except ExportShapeError:
        return None
