"""Fixtures for imports of other assistants' conversations: the exports in tests/data/history,
zipped as their tools send them, and an import run through."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from memdesk.core.transfer.history.importer import HistoryImport
from memdesk.core.transfer.history.preview import Selection

DATA = Path(__file__).resolve().parent.parent / "data" / "history"


@pytest.fixture
def agent_id(services) -> int:
    return services.create_agent("sam").id


def zipped(folder: Path, conversations, name: str = "chatgpt-export.zip", member: str = "conversations.json") -> Path:
    """An export zip as ChatGPT and Claude send it (conversations.json beside other files)."""
    path = folder / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        text = conversations if isinstance(conversations, str) else json.dumps(conversations)
        archive.writestr(member, text)
        archive.writestr("chat.html", "<html>the same, for reading</html>")
        archive.writestr("user.json", json.dumps({"id": "user-1"}))
    return path


@pytest.fixture
def chatgpt_zip(tmp_path) -> Path:
    return zipped(tmp_path, (DATA / "chatgpt_conversations.json").read_text(encoding="utf-8"))


@pytest.fixture
def run_import(services, request):
    """Import ``path`` into the agent (``agent_id``'s unless given) through; returns the import
    (its tally says what was left out)."""

    def run(path: Path, selection: Selection | None = None, agent: int | None = None) -> HistoryImport:
        agent = agent or request.getfixturevalue("agent_id")
        job = HistoryImport.start(services.memory, agent, Path(path), selection)
        job.run()
        return job

    return run


def imported(services, agent_id: int) -> list[tuple[str, str, str | None, str]]:
    """(conversation title, role, author, text) of every imported message, in order."""
    rows = services.db.query(
        "SELECT c.title, m.role, m.author, m.search_text FROM messages m JOIN imported_conversations c"
        " ON c.id = m.conversation_id WHERE m.agent_id = ? ORDER BY m.id",
        (agent_id,),
    )
    return [tuple(r) for r in rows]
