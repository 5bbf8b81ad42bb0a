"""A snapshot is taken before the changes to memory a user may want to take back: an agent import,
applying consolidation, a model switch (the migration one is in test_backup.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

from memdesk.app.agents import open_consolidator
from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.consolidation.prompt import FINISH
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.models.bundled import default_model_path
from memdesk.core.runtime.scripted import call, say
from memdesk.core.storage import open_database
from memdesk.core.storage.backup import AUTOMATIC


def _reasons(capsys) -> list[str]:
    capsys.readouterr()
    assert main(["backup", "list", "--json"]) == 0
    return [s["reason"] for s in json.loads(capsys.readouterr().out)["snapshots"]]


def test_an_agent_import_is_preceded_by_a_snapshot_without_the_imported_agent(capsys, tmp_path):
    main(["agents", "create", "Ivo"])
    target = tmp_path / "ivo.af"
    assert main(["agents", "export", "Ivo", "--format", "af", str(target)]) == 0
    assert main(["agents", "import", str(target), "--name", "Ivo copy"]) == 0
    assert _reasons(capsys) == ["before import of ivo.af"]
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        [snapshot] = services.backups.list()
    finally:
        services.close()
    assert snapshot.kind == AUTOMATIC
    copy = open_database(snapshot.path, migrate=False)
    assert [name for (name,) in copy.query("SELECT name FROM agents ORDER BY id")] == ["Ivo"]
    copy.close()


def test_applying_consolidation_is_preceded_by_one_snapshot_per_batch(services, runtime, make_agent, clock):
    agent = make_agent("ana", human="Lives in Portugal.")
    for text in ("My name is Ana and I moved to Porto last spring.", "I work night shifts at the children's hospital."):
        runtime.enqueue(say("Noted."))
        agent.send_user_message(text)
    runtime.enqueue(
        call("core_memory_append", "fact", label="human", content="Name: Ana."),
        call("core_memory_append", "fact", label="human", content="Works nights."),
        call(FINISH),
    )
    ask = replace(services.settings, consolidation="ask")
    open_consolidator(services, agent.record, runtime, settings=ask).run()
    assert services.backups.list() == []  # proposals change nothing yet
    review = open_consolidator(services, agent.record, None)
    for change in review.pending():
        review.accept(change.id)
    [snapshot] = services.backups.list()
    assert snapshot.reason == "before applying consolidation"
    copy = open_database(snapshot.path, migrate=False)
    assert copy.scalar("SELECT value FROM memory_blocks WHERE label = 'human'") == "Lives in Portugal."
    copy.close()


def test_a_pass_in_apply_mode_is_preceded_by_a_snapshot(services, runtime, make_agent):
    agent = make_agent("ana", human="Lives in Portugal.")
    for text in ("My name is Ana and I moved to Porto last spring.", "I work night shifts at the children's hospital."):
        runtime.enqueue(say("Noted."))
        agent.send_user_message(text)
    runtime.enqueue(call("core_memory_append", "fact", label="human", content="Name: Ana."), call(FINISH))
    apply = replace(services.settings, consolidation="apply")
    open_consolidator(services, agent.record, runtime, settings=apply).run()
    assert [s.reason for s in services.backups.list()] == ["before applying consolidation"]


def test_a_model_switch_is_preceded_by_a_snapshot(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(
        "memdesk.app.runtimes.make_runtime",
        lambda settings: type("R", (), {"info": None, "close": lambda self: None})(),
    )
    main(["agents", "create", "Ivo"])
    path = tmp_path / "mine.gguf"
    shutil.copyfile(default_model_path(), path)
    assert main(["models", "use", str(path)]) == 0
    [reason] = _reasons(capsys)
    assert reason.startswith("before switching to ")
