"""Text from outside MemDesk (an imported agent file, the model, a snapshot's reason) shown as the
characters it holds, never as instructions to whatever shows it.

A terminal obeys control characters: ESC sequences move the cursor, erase lines, set the window's
title or the clipboard (OSC 0, OSC 52), so code printed before asking "Enable?" could erase the
lines that read a key file. Qt and terminals both obey Unicode's bidirectional controls, so
``os.system(...)`` can be drawn inside what reads as a docstring ("Trojan Source"), and invisible
format characters hide text altogether. ``visible`` replaces every such character with its escape
(``\\x1b``, ``\\u202e``): what is shown is what is there. It is the one escaping function of both
front ends; ``hidden_characters`` finds what it would replace, so code holding any of it can be
refused rather than shown escaped.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

#: Kept as they are: a line break and a tab draw nothing else.
LAYOUT = frozenset("\n\t")
#: Printable by Python's rule but drawn as nothing: the Hangul fillers, known as invisible names.
INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


def is_hidden(character: str) -> bool:
    """Whether ``character`` does something other than show itself: C0 and C1 controls (ESC, CR,
    DEL, CSI), bidi controls (U+202A-202E, U+2066-2069, U+200E/F, U+061C), invisible format
    characters (zero-width ones, tags), line and paragraph separators, unassigned and private-use
    code points (Python's ``isprintable`` rule), and the invisible letters."""
    if character in LAYOUT:
        return False
    return not character.isprintable() or character in INVISIBLE_LETTERS


def _escape(character: str) -> str:
    if not character.isprintable():
        return repr(character)[1:-1]  # Python's own spelling: \x1b, \n, \u202e
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every hidden character shown as its escape; line breaks and tabs kept."""
    if text.isprintable() and not INVISIBLE_LETTERS.intersection(text):
        return text  # the common case, without a loop
    return "".join(_escape(c) if is_hidden(c) else c for c in text)


def one_line(text: str) -> str:
    """Like ``visible``, with line breaks and tabs escaped too: a name or an action that must
    stay on its line (a crafted URL or file name cannot push the question off it)."""
    return "".join(_escape(c) if is_hidden(c) or c in LAYOUT else c for c in text)


@dataclass(frozen=True)
class HiddenCharacter:
    line: int  # 1-based
    column: int  # 1-based
    character: str

    def describe(self) -> str:
        """ "U+202E (RIGHT-TO-LEFT OVERRIDE) on line 3"."""
        name = unicodedata.name(self.character, "") or {0x1B: "ESCAPE", 0x0D: "CARRIAGE RETURN"}.get(
            ord(self.character), "a control character"
        )
        return f"U+{ord(self.character):04X} ({name}) on line {self.line}"


def hidden_characters(text: str) -> list[HiddenCharacter]:
    """Every character ``visible`` would escape, with where it is."""
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        for column, character in enumerate(line, start=1):
            if is_hidden(character):
                found.append(HiddenCharacter(number, column, character))
    return found
