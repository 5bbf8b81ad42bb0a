"""``memdesk import``, ``memdesk learned`` and ``memdesk export --format folder`` at the terminal:
a preview writes nothing, --apply imports, proposals are reviewed, the folder comes back."""

from __future__ import annotations

import json

import pytest

from memdesk.app.services import open_services
from memdesk.cli import folder_cmd, import_cmd, learned_cmd
from memdesk.cli.main import main
from memdesk.core.embedding.hashing import HashingEmbedder
from tests.history.conftest import DATA


@pytest.fixture
def terminal(services, monkeypatch):
    opener = lambda: open_services(embedder=HashingEmbedder(), clock=services.clock)  # noqa: E731
    for module in (import_cmd, learned_cmd, folder_cmd):
        monkeypatch.setattr(module, "open_services", opener)
    services.create_agent("sam")
    return services


def test_without_apply_the_import_only_previews(terminal, capsys):
    assert main(["import", str(DATA / "claude_conversations.json")]) == 0
    out = capsys.readouterr().out
    assert "a Claude export: 2 conversations, 6 messages" in out and "Trip planning" in out
    assert "tool calls are not imported" in out and "--apply" in out
    assert terminal.db.scalar("SELECT COUNT(*) FROM messages") == 0


def test_apply_imports_and_proposals_are_reviewed_at_the_terminal(terminal, capsys):
    assert main(["import", str(DATA / "claude_conversations.json"), "--apply", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["applied"] and report["messages_added"] == 6 and report["proposals"] >= 2
    assert main(["learned"]) == 0
    listing = capsys.readouterr().out
    assert "Allergic to peanuts" in listing and "from 5 Mar 2024, (untitled) (claude)" in listing
    number = next(line.split()[0] for line in listing.splitlines() if "Allergic to peanuts" in line)
    assert main(["learned", "accept", number]) == 0
    assert "Added to the human block: Allergic to peanuts" in capsys.readouterr().out
    sam = terminal.agents.find("sam")
    assert "Allergic to peanuts" in terminal.memory.core.get(sam.id, "human").value


def test_a_memory_folder_goes_out_and_comes_back_into_an_empty_home(terminal, tmp_path, capsys, monkeypatch):
    assert main(["import", str(DATA / "transcript.md"), "--apply"]) == 0
    folder = tmp_path / "memory"
    assert main(["export", str(folder)]) == 0
    assert "Wrote" in capsys.readouterr().out and (folder / "sam" / "core" / "human.md").is_file()
    (folder / "sam" / "graph").mkdir(exist_ok=True)
    (folder / "sam" / "graph" / "my-notes.md").write_text("# Ada\n\n- grows [[basil]]\n", encoding="utf-8")
    monkeypatch.setenv("MEMDESK_HOME", str(tmp_path / "empty-home"))
    assert main(["import", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "a MemDesk memory folder with 1 agent(s)" in out and "1 graph fact line(s) changed or added" in out
    assert main(["import", str(folder), "--apply"]) == 0
    assert "Imported sam" in capsys.readouterr().out
    with open_services(embedder=HashingEmbedder()) as home:
        sam = home.agents.find("sam")
        assert home.memory.recall.search_text(sam.id, "tomatoes heatwave").hits
        assert ("Ada", "grows", "basil") in {
            (f.subject, f.relation, f.object) for f in home.memory.graph.all_facts(sam.id)
        }


def test_an_unreadable_file_is_one_line_not_a_traceback(terminal, tmp_path, capsys):
    other = tmp_path / "data.json"
    other.write_text('{"name": "not a conversation"}', encoding="utf-8")
    assert main(["import", str(other)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memdesk: data.json is JSON, but not a ChatGPT, Claude or Open WebUI export")
    assert "Traceback" not in err
