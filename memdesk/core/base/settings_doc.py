"""``docs/settings.md``, generated from the settings' one declaration (settings_table.py):

    python -m memdesk.core.base.settings_doc > docs/settings.md

A test compares the committed file with what this writes, so the page cannot fall behind the
declaration."""

from __future__ import annotations

from typing import Any

from memdesk.core.base.settings_table import ADVANCED, FLAG_WORDS, HIDDEN, SETTINGS, Declared

HEADER = """# Settings

Every setting MemDesk has, as declared in `memdesk/core/base/settings_table.py`. Change one in the
window (Settings), or in a terminal with `memdesk settings NAME VALUE` (`memdesk settings` lists
them with their values; `memdesk settings NAME --reset` goes back to the default). A setting you
have not set follows the active model's catalog entry where it has one (its sampling, its step cap,
its bound on the agent's thoughts); one you set wins.

This page is generated: `python -m memdesk.core.base.settings_doc > docs/settings.md`.
"""

#: The page's sections, in order: which settings each holds.
SECTIONS = (
    ("Settings", lambda item: not item.advanced and not item.hidden),
    ("Advanced settings", lambda item: item.advanced and not item.hidden),
    ("Kept by the window", lambda item: item.hidden),
)


def settings_markdown() -> str:
    """The whole page."""
    parts = [HEADER]
    for title, holds in SECTIONS:
        rows = [_row(item) for item in SETTINGS.values() if holds(item)]
        if rows:
            parts.append(
                f"\n## {title}\n\n| Setting | Default | Values | What it does |\n| --- | --- | --- | --- |\n"
                + "".join(rows)
            )
    return "".join(parts)


def _row(item: Declared) -> str:
    # The section says these flags already; the others are noted beside the description.
    flags = [FLAG_WORDS[flag] for flag in item.flags if flag not in (ADVANCED, HIDDEN)]
    about = item.description + (f" ({', '.join(flags)})" if flags else "")
    return f"| `{item.name}` | {_default(item.default)} | {item.allowed() or _kind(item)} | {_cell(about)} |\n"


def _default(value: Any) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return "`" + ",".join(value) + "`" if value else "(none)"
    if value == "":
        return "(empty)"
    return f"`{value}`"


def _kind(item: Declared) -> str:
    return {bool: "true or false", str: "text", tuple: "a comma-separated list"}.get(item.kind, item.kind.__name__)


def _cell(text: str) -> str:
    """``text`` safe inside a table cell."""
    return text.replace("|", "\\|")


if __name__ == "__main__":
    print(settings_markdown(), end="")
