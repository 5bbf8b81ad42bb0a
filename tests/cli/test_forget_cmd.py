"""`memdesk forget AGENT "TEXT" [--apply] [--purge-backups] [--json]`."""

from __future__ import annotations

import json
from datetime import timedelta

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.agent import events
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder


def _conversation(name: str, *texts: str, days_ago: int = 0) -> None:
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        record = services.create_agent(name)
        now = services.clock.now() - timedelta(days=days_ago)
        with services.db.transaction():
            for text in texts:
                services.memory.recall.add(
                    record.id,
                    role="user",
                    kind="user_message",
                    content=events.user_message(text, now),
                    search_text=text,
                    created_at=now,
                )
        services.memory.core.set_value(record.id, "human", "Likes tea\nSister: Eva")
    finally:
        services.close()


def _texts(name: str) -> list[str]:
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        record = services.agents.get_by_name(name)
        return [m.search_text for m in services.memory.recall.all(record.id)] + [
            services.memory.core.get(record.id, "human").value
        ]
    finally:
        services.close()


def test_forget_previews_by_default_and_changes_nothing(capsys):
    _conversation("Ivo", "My sister Eva lives in Paris.", "I bought a bike.")
    assert main(["forget", "Ivo", "Eva"]) == 0
    out = capsys.readouterr().out
    assert "would remove from Ivo's memory" in out
    assert "conversation messages" in out and "· My sister Eva lives in Paris." in out
    assert "core-memory lines" in out and "human: Sister: Eva" in out
    assert "--apply" in out
    assert _texts("Ivo")[0] == "My sister Eva lives in Paris."


def test_forget_apply_removes_and_reports_counts_as_json(capsys):
    _conversation("Ivo", "My sister Eva lives in Paris.", "I bought a bike.")
    assert main(["forget", "Ivo", "Eva", "--json"]) == 0
    preview = json.loads(capsys.readouterr().out)
    assert preview["applied"] is False and preview["kinds"]["messages"]["count"] == 1
    assert main(["forget", "Ivo", "Eva", "--apply", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["applied"] is True and result["removed"]["messages"] == 1 and result["removed"]["core_memory"] == 1
    assert "eva" not in json.dumps(result).casefold()
    assert _texts("Ivo") == ["[forgotten]", "I bought a bike.", "Likes tea"]
    assert main(["forget", "Ivo", "Eva", "--apply"]) == 0
    assert "Nothing in Ivo's memory is about 'Eva'" in capsys.readouterr().out


def test_forget_errors_are_one_clear_line(capsys):
    assert main(["forget", "Ghost", "Eva"]) == 1
    assert "No agent named 'Ghost'" in capsys.readouterr().err
    _conversation("Ivo")
    assert main(["forget", "Ivo", "  ?! "]) == 1
    assert "Say what to forget" in capsys.readouterr().err


def test_retention_shows_then_applies_only_when_confirmed(capsys):
    _conversation("Ivo", "An old line", "Another old line")
    assert main(["retention", "Ivo"]) == 0
    assert "Retention is off for Ivo" in capsys.readouterr().out
    assert main(["retention", "Ivo", "0", "--apply"]) == 0
    assert main(["retention", "Ivo", "30"]) == 0
    out = capsys.readouterr().out
    assert "keeps 30 days" in out and "memdesk retention Ivo --apply" in out
    assert main(["retention", "Ivo", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["days"] == 30 and report["confirmed"] is False and report["removed"] is None
    assert main(["retention", "Ivo", "--apply", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["confirmed"] is True and report["removed"] == 0  # nothing is older than 30 days yet
    assert main(["retention", "Ivo", "soon"]) == 1
    assert "number of days" in capsys.readouterr().err


def test_retention_apply_forgets_messages_older_than_the_days(capsys):
    _conversation("Ivo", "A line from spring", "Another from spring", days_ago=100)
    assert main(["retention", "Ivo", "30"]) == 0
    assert "2 conversation messages older than 30 days" in capsys.readouterr().out
    assert _texts("Ivo") == ["A line from spring", "Another from spring", "Likes tea\nSister: Eva"]
    assert main(["retention", "Ivo", "--apply"]) == 0
    assert "Forgot 2 conversation messages older than 30 days" in capsys.readouterr().out
    assert _texts("Ivo") == ["Likes tea\nSister: Eva"]  # core memory is kept


def test_forget_apply_shows_its_progress_on_stderr(capsys):
    _conversation("Ivo", "Eva called.")
    assert main(["forget", "Ivo", "Eva", "--apply"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("Forgot 1 conversation messages, 1 core-memory lines")
    assert "Removing…" in captured.err and "Wiping the freed space…" in captured.err


def _snapshot_bytes() -> bytes:
    folder = Paths.from_environment().backups
    return b"".join(path.read_bytes() for path in sorted(folder.glob("*")) if path.is_file())


def test_forget_with_purge_removes_the_text_from_the_store_s_real_snapshots(capsys):
    _conversation("Ivo", "My sister Eva lives in Paris.", "I bought a bike.")
    assert main(["backup", "create"]) == 0
    assert b"Eva lives" in _snapshot_bytes()
    capsys.readouterr()
    assert main(["forget", "Ivo", "Eva", "--json"]) == 0
    preview = json.loads(capsys.readouterr().out)
    assert len(preview["backups"]) == 1
    assert main(["forget", "Ivo", "Eva", "--apply", "--purge-backups"]) == 0
    assert b"Eva" not in _snapshot_bytes()
    assert main(["backup", "verify"]) == 0


def test_forget_without_purge_takes_a_snapshot_first_so_it_can_be_undone(capsys):
    _conversation("Ivo", "My sister Eva lives in Paris.")
    assert main(["forget", "Ivo", "Eva", "--apply"]) == 0
    capsys.readouterr()
    assert main(["backup", "list", "--json"]) == 0
    assert "before forget" in capsys.readouterr().out
    assert b"Eva lives" in _snapshot_bytes()
