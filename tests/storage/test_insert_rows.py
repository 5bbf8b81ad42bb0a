"""Many rows in few statements: ``Database.insert_rows`` keeps the rows' order, stays within the
parameter limit and fires each row's triggers, and a failing row takes its whole batch back."""

from __future__ import annotations

import pytest

from memdesk.core.storage import database, open_database


@pytest.fixture
def db(tmp_path):
    store = open_database(tmp_path / "rows.sqlite3", migrate=False)
    store.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b INTEGER)")
    store.execute("CREATE TABLE fired (id INTEGER)")
    store.execute("CREATE TRIGGER t_ai AFTER INSERT ON t BEGIN INSERT INTO fired VALUES (new.id); END")
    yield store
    store.close()


def test_rows_are_inserted_in_order_across_statements_and_fire_their_triggers(db, monkeypatch):
    monkeypatch.setattr(database, "MAX_PARAMETERS", 7)  # two rows of three a statement
    rows = [(i, f"row {i}", i * i) for i in range(1, 8)]
    with db.transaction():
        db.insert_rows("INSERT INTO t(id, a, b) VALUES", "(?, ?, ?)", rows)
    assert db.query("SELECT id, a, b FROM t ORDER BY rowid") == rows
    assert [r[0] for r in db.query("SELECT id FROM fired ORDER BY rowid")] == list(range(1, 8))


def test_an_expression_in_the_row_is_evaluated_for_each_row(db):
    db.insert_rows("INSERT INTO t(id, a) VALUES", "(?, lower(hex(randomblob(8))))", [(1,), (2,), (3,)])
    assert len({r[0] for r in db.query("SELECT a FROM t")}) == 3


def test_nothing_to_insert_runs_no_statement(db):
    db.insert_rows("INSERT INTO t(id, a) VALUES", "(?, ?)", [])
    assert db.scalar("SELECT COUNT(*) FROM t") == 0


def test_a_failing_row_takes_back_the_rows_of_its_transaction(db, monkeypatch):
    monkeypatch.setattr(database, "MAX_PARAMETERS", 4)
    with pytest.raises(Exception, match="NOT NULL"), db.transaction():
        db.insert_rows("INSERT INTO t(id, a) VALUES", "(?, ?)", [(1, "x"), (2, "y"), (3, None)])
    assert db.scalar("SELECT COUNT(*) FROM t") == 0 and db.scalar("SELECT COUNT(*) FROM fired") == 0
