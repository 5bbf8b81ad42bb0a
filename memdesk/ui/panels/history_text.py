"""How a memory change reads in the window: who made it, how long ago, and a word-level diff of
what it changed (the history view, the revert dialog and the block editors say it the same way)."""

from __future__ import annotations

import html
from datetime import datetime

from memdesk.core.memory.diff import DELETE, INSERT, segments
from memdesk.ui.common import palette

WHO = {
    "agent": "the agent",
    "user": "you",
    "import": "an import",
    "consolidation": "memory consolidation",
    "extractor": "the knowledge extractor",
    "app": "MemDesk",
    "mcp": "an app over MCP",
}


def relative_time(moment: datetime, now: datetime) -> str:
    """ "just now", "2 min ago", "3 h ago", "yesterday", "12 days ago"."""
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 45:
        return "just now"
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min ago"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h ago"
    days = seconds // 86400
    return "yesterday" if days == 1 else f"{days} days ago"


def who(source: str) -> str:
    return WHO.get(source, source)


def diff_html(before: str | None, after: str | None) -> str:
    """Word-level diff: removed text struck through in red, added text in green."""
    if before is None and after is None:
        return f'<p style="color:{palette.muted()}">(no text)</p>'
    parts = []
    for operation, text in segments(before or "", after or ""):
        escaped = html.escape(text).replace("\n", "<br>")
        if operation == INSERT:
            colours = f"background:{palette.tint(palette.GREEN)};color:{palette.readable(palette.GREEN)}"
            parts.append(f'<span style="{colours}">{escaped}</span>')
        elif operation == DELETE:
            colours = f"background:{palette.tint(palette.RED)};color:{palette.readable(palette.RED)}"
            parts.append(f'<span style="{colours};text-decoration:line-through">{escaped}</span>')
        else:
            parts.append(escaped)
    return f'<p style="font-family:monospace;white-space:pre-wrap">{"".join(parts) or "(empty)"}</p>'
