"""What counts as text about the request: its phrases as whole words, in any case and script."""

from __future__ import annotations

from memdesk.core.memory.forget.matching import Phrases


def test_whole_words_in_any_case_and_script():
    phrases = Phrases(["Zoë", "Jürgen Weiß"])
    assert phrases.matches("ZOË's cat") and phrases.matches("met jürgen   weiss? no: Jürgen Weiß!")
    assert not phrases.matches("Zoëlle") and not phrases.matches("Jürgen alone")
    assert Phrases(["Анна"]).matches("Я видел АННУ и Анна пришла") and not Phrases(["Анна"]).matches("Аннушка")


def test_lines_go_from_blocks_and_sentences_from_one_line_text():
    phrases = Phrases(["Eva"])
    assert phrases.without("Likes tea\nSister: Eva, in Lisbon\nWorks nights") == "Likes tea\nWorks nights"
    assert phrases.without("They talked about tea. Eva moved. Then jazz!") == "They talked about tea. Then jazz!"
    assert phrases.matching_parts("Likes tea\nSister: Eva") == ["Sister: Eva"]


def test_an_empty_request_matches_nothing():
    assert not Phrases(["  ", "?!"]) and not Phrases([]).matches("anything")
