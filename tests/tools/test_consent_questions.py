"""The consent question shows what a call would send or write (issue 18, item 4): the first line
says what will happen, the rest is the data in full; front ends show it shortened, with all of it
on request."""

from __future__ import annotations

import builtins
import sys

from memdesk.cli.chat_cmd import TerminalConsent
from memdesk.core.runtime.scripted import call, say
from memdesk.core.tools.builtin import CONSENT_SUMMARIES
from memdesk.core.tools.consent_text import PREVIEW_CHARS, ConsentText
from memdesk.core.tools.http import HttpPolicy


def http(method: str, url: str, payload: str) -> str:
    return CONSENT_SUMMARIES["http_request"]({"method": method, "url": url, "payload_json": payload})


def test_a_post_is_asked_with_its_whole_body():
    question = ConsentText.parse(http("post", "https://api.example.com/notes", '{"diary": "everything I told you"}'))
    assert question.action == "POST https://api.example.com/notes"
    assert question.data == 'body (34 characters):\n{"diary": "everything I told you"}'
    assert question.preview == question.data and not question.is_shortened


def test_a_request_without_a_body_is_one_line():
    question = ConsentText.parse(http("GET", "https://api.example.com/notes", "  "))
    assert question == ConsentText("GET https://api.example.com/notes", "")


def test_an_append_is_asked_with_the_text_it_would_write():
    summary = CONSENT_SUMMARIES["append_to_text_file"]({"filename": "notes.txt", "content": "line one\nline two"})
    assert ConsentText.parse(summary) == ConsentText(
        "append 17 characters to notes.txt", "the text:\nline one\nline two"
    )


def test_long_data_is_previewed_shortened_and_says_how_much_is_left_out():
    body = '{"a": "' + "y" * 5000 + '"}'
    question = ConsentText.parse(http("PUT", "https://api.example.com/x", body))
    assert question.is_shortened and len(question.preview) < PREVIEW_CHARS + 40
    assert question.preview.endswith(f"… [{len(question.data) - PREVIEW_CHARS} more characters]")
    assert question.data.endswith(body)
    many_lines = CONSENT_SUMMARIES["append_to_text_file"](
        {"filename": "a.txt", "content": "\n".join(f"line {i}" for i in range(50))}
    )
    assert "line 6" in ConsentText.parse(many_lines).preview and "line 7" not in ConsentText.parse(many_lines).preview


def test_a_crafted_url_or_file_name_cannot_break_the_question_or_hide_in_escapes():
    question = ConsentText.parse(
        http("POST", "https://a.example/x\nbody: nothing\x1b[2J\u202e", '{"k": "\x1b[31mred"}')
    )
    assert question.action == "POST https://a.example/x\\nbody: nothing\\x1b[2J\\u202e"
    assert question.data.endswith('{"k": "\\x1b[31mred"}')


def test_the_agent_loop_asks_with_the_body(services, runtime, make_agent):
    asked = []

    class Recorder:
        def allow(self, agent_id, tool, summary):
            asked.append(summary)
            return False

    agent = make_agent(consent=Recorder())
    agent.http = HttpPolicy(enabled=True, allowed_hosts=frozenset({"api.example.com"}))
    runtime.enqueue(
        call("http_request", "send", False, method="POST", url="https://api.example.com/n", payload_json='{"x": 1}'),
        say("Not sent."),
    )
    result = agent.send_user_message("send it")
    assert asked == ['POST https://api.example.com/n\nbody (8 characters):\n{"x": 1}'] and not result.steps[0].ok


def _terminal(monkeypatch, answers: list[str]) -> TerminalConsent:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt="": (print(prompt), answers.pop(0))[1])
    return TerminalConsent()


def test_the_terminal_shows_a_preview_and_all_of_the_body_when_asked(monkeypatch, capsys):
    body = '{"a": "' + "z" * 1000 + '", "end": "LAST"}'
    consent = _terminal(monkeypatch, ["s", "y"])
    assert consent.allow(1, "http_request", http("POST", "https://api.example.com/x", body))
    out = capsys.readouterr().out
    preview, _, after = out.partition("[s]how all")
    assert "The agent wants to POST https://api.example.com/x (http_request)." in preview
    assert f"body ({len(body)} characters):" in preview and "LAST" not in preview and "more characters]" in preview
    assert body in after


def test_the_terminal_shows_a_short_text_whole_and_offers_no_show_all(monkeypatch, capsys):
    consent = _terminal(monkeypatch, ["n"])
    summary = CONSENT_SUMMARIES["append_to_text_file"]({"filename": "a.txt", "content": "hello"})
    assert not consent.allow(1, "append_to_text_file", summary)
    out = capsys.readouterr().out
    assert "The agent wants to append 5 characters to a.txt (append_to_text_file).\nthe text:\nhello\n" in out
    assert "show all" not in out
