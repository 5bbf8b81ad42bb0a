"""A graph change carried in an agent file is data, never SQL (issue 35, item 3): a "before" row
whose key is an SQL fragment made the first revert of the imported change copy every agent's core
memory into the imported graph. A revert writes only the table's own columns; carried rows whose
columns or types do not fit are not carried, and the change is listed but not revertible."""

from __future__ import annotations

import json

import pytest

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.errors import RevertError
from memdesk.core.memory.history import Cause

#: The key from the review: an UPDATE built from it sets the name from every block of every agent.
INJECTION = "name = (SELECT group_concat(label || '=' || value, ' | ') FROM memory_blocks), deleted"


def exported_rename(tmp_path, capsys) -> tuple[dict, dict]:
    """An .af export of an agent whose core memory holds a PIN and who renamed Bob to Robert."""
    main(["agents", "create", "Ivo", "--human", "PIN 4711"])
    services = open_services()
    record = services.agents.get_by_name("Ivo")
    graph = services.memory.graph
    graph.rename(graph.resolve(record.id, "Bob", "person"), "Robert")
    services.close()
    path = tmp_path / "ivo.af"
    assert main(["agents", "export", "Ivo", str(path)]) == 0
    capsys.readouterr()
    document = json.loads(path.read_text(encoding="utf-8"))
    [history] = [a["history"] for a in document["memdesk"]["agents"].values()]
    [rename] = [h for h in history if h["kind"] == "graph_entity" and h["action"] == "update"]
    return document, rename


def leaked(services) -> list[str]:
    return [r[0] for r in services.db.query("SELECT name FROM graph_entities WHERE name LIKE '%4711%'")]


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda row: (row.pop("deleted"), row.update({INJECTION: 0})), id="an SQL fragment as a key"),
        pytest.param(lambda row: row.update({"surprise": 1}), id="an unknown column"),
        pytest.param(lambda row: row.update({"name": ["a", "list"]}), id="a value of the wrong type"),
        pytest.param(lambda row: row.pop("key"), id="a missing column"),
    ],
)
def test_a_forged_carried_row_is_not_revertible_and_runs_no_sql(tmp_path, capsys, forge):
    document, rename = exported_rename(tmp_path, capsys)
    for _table, _id, row in rename["before_meta"]["rows"]:
        forge(row)
    forged = tmp_path / "forged.af"
    forged.write_text(json.dumps(document), encoding="utf-8")
    assert main(["agents", "import", str(forged), "--name", "Copy"]) == 0
    services = open_services()
    copy = services.agents.get_by_name("Copy")
    [change] = [c for c in services.memory.core.history.for_agent(copy.id, kind="graph_entity") if c.action == "update"]
    assert change.before_meta is None  # listed, not revertible
    services.close()
    capsys.readouterr()
    assert main(["history", "Copy", "--revert", str(change.id)]) == 1
    assert "recorded without the rows it touched" in capsys.readouterr().err
    services = open_services()
    assert leaked(services) == []
    assert services.memory.graph.find(copy.id, "Robert") is not None
    services.close()


def test_the_same_change_unforged_is_carried_and_reverts(tmp_path, capsys):
    document, _rename = exported_rename(tmp_path, capsys)
    path = tmp_path / "plain.af"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["agents", "import", str(path), "--name", "Copy"]) == 0
    services = open_services()
    copy = services.agents.get_by_name("Copy")
    [change] = [c for c in services.memory.core.history.for_agent(copy.id, kind="graph_entity") if c.action == "update"]
    services.close()
    assert main(["history", "Copy", "--revert", str(change.id)]) == 0
    services = open_services()
    assert services.memory.graph.find(copy.id, "Bob").name == "Bob"
    services.close()


def test_restore_rows_writes_only_the_tables_own_columns(services):
    """The last line of defence, whatever put the rows in the history."""
    agent_id = services.create_agent("sam", human="PIN 4711").id
    graph = services.memory.graph
    bob = graph.resolve(agent_id, "Bob", "person")
    [[table, row_id, row]] = graph.row_states([("graph_entities", bob)])
    row.pop("deleted")
    row[INJECTION] = 0
    with pytest.raises(RevertError, match="names a column it does not have"):
        graph.restore_rows(
            agent_id, "graph_entity", bob, [[table, row_id, row]], action="update", cause=Cause(note="test")
        )
    assert leaked(services) == []


def test_the_declared_columns_are_the_schemas(services):
    from memdesk.core.graph.changes import IDENTITY_COLUMNS, ROW_COLUMNS

    for table, columns in ROW_COLUMNS.items():
        schema = {r[1]: (r[2], bool(r[3]) or r[5] > 0) for r in services.db.query(f"PRAGMA table_info({table})")}
        assert set(schema) - IDENTITY_COLUMNS == set(columns), table
        for name, (kind, nullable) in columns.items():
            declared, not_null = schema[name]
            assert {"INTEGER": int, "TEXT": str}[declared] is kind and nullable is not not_null, (table, name)
