"""The one word tokenizer (memdesk/core/text/words.py): what searching, matching, counting and
diffing take as a word, and the guard that keeps it the only one."""

from __future__ import annotations

import re
from pathlib import Path

from memdesk.core.text.words import split_pieces, split_words, words_and_marks

PACKAGE = Path(__file__).resolve().parent.parent.parent / "memdesk"
WORDS_MODULE = PACKAGE / "core" / "text" / "words.py"


def test_a_word_is_a_run_of_letters_digits_or_underscores_in_any_script():
    assert split_words("Ana's café, 3 km_away — Zürich, 東京!") == [
        "Ana",
        "s",
        "café",
        "3",
        "km_away",
        "Zürich",
        "東京",
    ]


def test_marks_count_beside_words_and_spaces_do_not():
    assert words_and_marks("Hi, Ana!  (ok)") == ["Hi", ",", "Ana", "!", "(", "ok", ")"]


def test_pieces_keep_the_spaces_so_they_join_back_into_the_text():
    text = "Name: Leo.\n  Teaches  piano!"
    assert "".join(split_pieces(text)) == text
    assert split_pieces("a  b") == ["a", "  ", "b"]


def test_no_other_module_defines_the_word_pattern():
    # Other patterns stay where they mean something else (letters only, the FTS tokenizer's cut).
    word_patterns = re.compile(r"""r["'](?:\\s\+\|)?\\w\+(?:\|\[\^\\w\\s\])?["']""")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != WORDS_MODULE and word_patterns.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
