"""A conversation imported from a ChatGPT export searches as well as the same conversation stored
directly: the import keeps what search needs (times, speakers, words)."""

from __future__ import annotations

import json

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.evaluation.locomo_import import as_chatgpt_export, evaluate_through_import
from memdesk.core.transfer.history.importer import HistoryImport
from tests.history.conftest import DATA


def samples() -> list[dict]:
    return json.loads((DATA / "locomo_style_conversation.json").read_text(encoding="utf-8"))


def test_the_export_has_chatgpts_shape_with_the_speakers_named():
    export = as_chatgpt_export(samples()[0])
    assert len(export) == 3 and all(c["mapping"][c["current_node"]]["message"] for c in export)
    first = export[0]["mapping"]["D1:1"]["message"]
    assert first["author"] == {"role": "user", "name": "Rosa", "metadata": {}}


def test_imported_and_directly_stored_conversations_give_the_same_recall():
    report = evaluate_through_import(
        samples(), HashingEmbedder(), lambda memory, agent_id, path: HistoryImport.start(memory, agent_id, path).run()
    )
    assert report["direct"]["questions"] == report["imported"]["questions"] == 12
    assert report["imported"] == report["direct"]
    assert report["direct"]["recall@10"] > 0.5  # the check is about a search that finds things
