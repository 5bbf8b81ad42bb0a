"""Memory owns its rows: every write to messages, passages and their vectors goes through the stores
in memdesk/core/memory (so a rule such as "vectors go with their rows" lives in one place)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memdesk"
OWNER = PACKAGE / "core" / "memory"
#: Schema changes are the migrations' job.
MIGRATIONS = PACKAGE / "core" / "storage" / "migrations"

WRITE = re.compile(
    r"\b(INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|DROP\s+TABLE(?:\s+IF\s+EXISTS)?)\s+(messages|passages|messages_vec|passages_vec)\b",
    re.IGNORECASE,
)


def writes(text: str) -> list[str]:
    return [f"{m.group(1).split()[0].upper()} {m.group(2)}" for m in WRITE.finditer(text)]


def test_only_memory_writes_messages_passages_and_vectors():
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if OWNER not in path.parents
        and MIGRATIONS not in path.parents
        and (found := writes(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_write_check_sees_sql():
    assert writes('db.execute("DELETE FROM passages_vec WHERE rowid = ?")') == ["DELETE passages_vec"]
    assert writes("INSERT INTO passages(agent_id) VALUES (1); update messages set embedded = 0") == [
        "INSERT passages",
        "UPDATE messages",
    ]
    assert writes("SELECT id FROM passages; UPDATE documents SET status = 'done'") == []
