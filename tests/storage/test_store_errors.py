"""A locked or full store gives a clear message and loses nothing already saved."""

from __future__ import annotations

import pytest

from memdesk.core.base.errors import DiskFullError, StoreBusyError
from memdesk.core.runtime.scripted import say
from memdesk.core.storage import open_database


def test_a_store_locked_by_another_program_is_reported(tmp_path):
    path = tmp_path / "store.sqlite3"
    holder = open_database(path)
    waiter = open_database(path, busy_timeout=0.2)
    with holder.transaction():
        holder.execute("INSERT INTO settings(key, value) VALUES ('a', '1')")
        with pytest.raises(StoreBusyError, match="locked by another program"):
            with waiter.transaction():
                waiter.execute("INSERT INTO settings(key, value) VALUES ('b', '1')")
    assert waiter.scalar("SELECT COUNT(*) FROM settings") == 1
    holder.close()
    waiter.close()


def test_a_full_disk_is_reported_and_earlier_turns_survive(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("First reply"))
    agent.send_user_message("first message")
    db = services.db
    # Cap the file at its current size: the next write fails as on a full disk.
    db.execute(f"PRAGMA max_page_count = {db.scalar('PRAGMA page_count')}")
    runtime.enqueue(say("never saved"))
    with pytest.raises(DiskFullError) as failure:
        agent.send_user_message("x" * 200_000)
    assert "database or disk is full" in failure.value.user_message
    assert "free some disk space" in failure.value.user_message
    db.execute("PRAGMA max_page_count = 1073741823")
    kinds = [m.kind for m in services.memory.recall.all(agent.id)]
    assert kinds == ["user_message", "assistant_call", "function_result"]
    assert db.scalar("PRAGMA integrity_check") == "ok"


def test_a_dry_run_writes_nothing_and_lets_errors_through(tmp_path):
    db = open_database(tmp_path / "store.sqlite3")
    with db.dry_run():
        db.execute("INSERT INTO settings(key, value) VALUES ('tried', '1')")
        assert db.scalar("SELECT value FROM settings WHERE key = 'tried'") == "1"
    assert db.scalar("SELECT COUNT(*) FROM settings WHERE key = 'tried'") == 0
    with pytest.raises(ValueError):
        with db.dry_run():
            raise ValueError("seen by the caller")
    assert not db.in_transaction
    db.close()
