"""``visible``: the one escaping function both front ends show outside text through."""

from __future__ import annotations

import pytest

from memdesk.core.text.visible import hidden_characters, one_line, visible
from tests.tools.test_forged_tool_code import FORGERIES, SAFE


def test_ordinary_text_is_unchanged():
    for text in (SAFE, "Olá, Zoë! 你好 🙂 ❤️ مرحبا", "tabs\tand\nlines"):
        assert visible(text) == text and hidden_characters(text) == []


@pytest.mark.parametrize("line", FORGERIES.values(), ids=FORGERIES.keys())
def test_hidden_characters_are_shown_as_escapes(line):
    shown = visible(line)
    assert shown != line and hidden_characters(shown) == []
    assert "\\" in shown and shown.endswith("\n")


def test_one_line_escapes_line_breaks_and_tabs_too():
    assert one_line("a\nb\tc\x1b") == "a\\nb\\tc\\x1b"
    assert visible("\u2067x\u2069") == "\\u2067x\\u2069"
    assert hidden_characters("ok\n  \u202e")[0].describe() == "U+202E (RIGHT-TO-LEFT OVERRIDE) on line 2"
