"""``memdesk agents export/import/tools`` and ``memdesk history`` in the terminal."""

from __future__ import annotations

import json

import pytest

from memdesk.cli.main import main


def test_export_af_and_import_it_back(capsys, tmp_path):
    main(["agents", "create", "Ivo", "--human", "Name: Ivo"])
    target = tmp_path / "ivo.af"
    assert main(["agents", "export", "Ivo", "--format", "af", str(target)]) == 0
    document = json.loads(target.read_text(encoding="utf-8"))
    assert document["agents"][0]["name"] == "Ivo" and "memdesk" in document
    assert document["agents"][0]["llm_config"]["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert main(["agents", "import", str(target), "--name", "Ivo copy"]) == 0
    out = capsys.readouterr().out
    assert (
        "Imported 1 agent(s) from a Letta agent file" in out
        and "Ivo copy (named 'Ivo' in the file): 2 memory blocks" in out
    )
    assert main(["agents", "export", "Ivo", str(tmp_path / "ivo.json"), "--format", "json"]) == 0
    assert main(["agents", "import", str(tmp_path / "ivo.json")]) == 0
    assert "Ivo (2) (named 'Ivo' in the file): 2 memory blocks" in capsys.readouterr().out


def test_import_letta_file_and_enable_a_tool(capsys, agentfiles, monkeypatch):
    assert main(["agents", "import", str(agentfiles / "customer_service.af")]) == 0
    out = capsys.readouterr().out
    assert (
        "4 tools imported disabled" in out and "Not imported (MemDesk has no equivalent)" in out and "LLM config" in out
    )
    main(["agents", "tools", "customer_service"])
    assert "cancel_order\tdisabled\tletta" in capsys.readouterr().out
    asked = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "n")
    assert main(["agents", "tools", "customer_service", "--enable", "escalate"]) == 1
    out = capsys.readouterr().out
    assert "def escalate(reason: str):" in out and "Left disabled." in out  # the code is shown before asking
    [question] = asked  # what enabling means, truthfully
    assert (
        "only when the agent calls escalate and you allow that call" in question
        and "separate Python process" in question
    )
    assert (
        "stopped after 30 seconds" in question
        and "MemDesk's included, and use the network" in question
        and question.endswith("[y/N] ")
    )
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["agents", "tools", "customer_service", "--enable", "escalate"]) == 0
    main(["agents", "tools", "customer_service"])
    assert "escalate\tenabled" in capsys.readouterr().out


def test_a_tool_that_cannot_run_is_refused_before_asking(capsys, agentfiles, monkeypatch):
    assert main(["agents", "import", str(agentfiles / "deep_research_agent.af")]) == 0
    capsys.readouterr()
    monkeypatch.setattr(
        "builtins.input", lambda prompt: pytest.fail(f"asked {prompt!r} about a tool that cannot be enabled")
    )
    assert main(["agents", "tools", "deep-thought-research-agent", "--enable", "reset_research"]) == 1
    assert "Cannot enable reset_research: reset_research needs Letta's agent_state" in capsys.readouterr().out


def test_a_bad_file_is_one_clear_line(capsys, tmp_path):
    bad = tmp_path / "bad.af"
    bad.write_text('{"agents": [', encoding="utf-8")
    assert main(["agents", "import", str(bad)]) == 1
    assert capsys.readouterr().err.strip() == (
        "memdesk: bad.af is not valid JSON: it ends too early (truncated?) (the file may be damaged or incomplete)"
    )


def test_history_lists_changes_and_reverts_them(capsys):
    main(["agents", "create", "Ivo", "--human", "Name: Ivo"])
    from memdesk.app.services import open_services

    services = open_services()
    record = services.agents.get_by_name("Ivo")
    services.memory.core.set_value(record.id, "human", "Name: Ivo Andric")
    change = services.memory.core.history.latest_for_block(record.id, "human")
    services.close()
    capsys.readouterr()
    assert main(["history", "Ivo", "--block", "human", "--diff"]) == 0
    out = capsys.readouterr().out
    assert f"{change.id}\t" in out and "user updated human" in out and "- Name: Ivo\n    + Name: Ivo Andric" in out
    assert main(["history", "Ivo", "--revert", str(change.id)]) == 0
    main(["memory", "Ivo"])
    assert "Name: Ivo\n" in capsys.readouterr().out


def test_history_lists_graph_changes_and_reverts_one(capsys):
    main(["agents", "create", "Ivo"])
    from memdesk.app.services import open_services

    services = open_services()
    record = services.agents.get_by_name("Ivo")
    graph = services.memory.graph
    graph.rename(graph.resolve(record.id, "Bob", "person"), "Robert")
    renamed = services.memory.core.history.for_agent(record.id, limit=1)[0]
    services.close()
    capsys.readouterr()
    assert main(["history", "Ivo", "--kind", "graph"]) == 0
    out = capsys.readouterr().out
    assert (
        f"{renamed.id}\t" in out
        and "user updated graph entity Robert" in out
        and "extractor created graph entity Bob" in out
    )
    assert "human" not in out  # the blocks' creation is another kind
    assert main(["history", "Ivo", "--revert", str(renamed.id)]) == 0
    assert f"Reverted change {renamed.id}" in capsys.readouterr().out
    services = open_services()
    assert (
        services.memory.graph.find(record.id, "Bob").name == "Bob"
        and services.memory.graph.find(record.id, "Robert") is None
    )
    services.close()
