"""Damaged and hostile exports: what can be read is imported, what cannot is listed with its
reason, nothing half-imported stays behind, and no traceback reaches the person."""

from __future__ import annotations

import json
import zipfile

import pytest

from memdesk.core.base.errors import UnrecognisedExportError, UnsafeArchiveError
from memdesk.core.transfer.history.preview import preview
from memdesk.core.transfer.history.reading import Export
from tests.history.conftest import imported, zipped


def chat(number: int, words: int = 3) -> dict:
    """A small ChatGPT conversation: a question and its answer."""
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": [f"q{number}"]}}
    for node, parent, role, text, child in (
        (f"q{number}", "root", "user", f"question {number} " + "word " * words, f"a{number}"),
        (f"a{number}", f"q{number}", "assistant", f"answer {number}", None),
    ):
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [child] if child else [],
            "message": {
                "id": node,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": 1.7e9 + number * 60,
                "content": {"content_type": "text", "parts": [text]},
                "recipient": "all",
                "metadata": {},
            },
        }
    return {"id": f"conv-{number}", "title": f"Chat {number}", "create_time": 1.7e9, "mapping": mapping,
            "current_node": f"a{number}"}  # fmt: skip


def whole_conversations(services, agent_id) -> dict[str, int]:
    rows = services.db.query(
        "SELECT c.external_id, COUNT(m.id) FROM imported_conversations c"
        " LEFT JOIN messages m ON m.conversation_id = c.id WHERE c.agent_id = ? GROUP BY c.id",
        (agent_id,),
    )
    return {r[0]: r[1] for r in rows}


def test_a_truncated_zip_imports_the_conversations_before_the_cut(services, agent_id, tmp_path, run_import):
    whole = zipped(tmp_path, [chat(n, words=200) for n in range(40)])
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])  # a download that stopped half-way
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(cut)
    job = run_import(cut)
    counts = whole_conversations(services, agent_id)
    assert 5 < len(counts) < 40 and set(counts.values()) == {2}  # whole conversations only
    assert any("reading stopped" in line for line in job.tally.skipped_lines())
    assert "incomplete" in job.export.note


def test_a_zip_bomb_is_refused_before_anything_is_inflated(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("conversations.json", "[" + " " * (64 << 20) + "]")
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(UnsafeArchiveError, match="zip bomb"):
        Export(bomb)


def test_conversations_of_unexpected_shapes_are_listed_and_the_rest_imported(services, agent_id, tmp_path, run_import):
    damaged = chat(2)
    damaged["mapping"]["q2"]["message"] = "not an object"
    no_time = chat(3)
    no_time["mapping"]["q3"]["message"]["create_time"] = "yesterday"
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([chat(1), damaged, {"mapping": {}}, no_time, 42, chat(4)]), encoding="utf-8")
    job = run_import(export)
    assert set(whole_conversations(services, agent_id)) == {"conv-1", "conv-4"}
    lines = job.tally.skipped_lines()
    assert any(line.startswith("conversation 2") and "is not an object" in line for line in lines)
    assert any(line.startswith("conversation 3") and "without an id" in line for line in lines)
    assert any(line.startswith("conversation 4") and "not a time" in line for line in lines)
    assert any(line.startswith("conversation 5") for line in lines)


def test_a_loop_in_chatgpts_tree_is_cut_and_the_conversation_kept(services, agent_id, tmp_path, run_import):
    looped = chat(1)
    looped["mapping"]["root"]["parent"] = "a1"  # root -> ... -> a1 -> root
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([looped]), encoding="utf-8")
    job = run_import(export)
    assert [text for *_r, text in imported(services, agent_id)] == ["question 1 word word word", "answer 1"]
    assert "a loop in the message tree was cut" in job.tally.skipped_lines()


def test_text_that_is_not_utf8_is_read_and_said(services, agent_id, tmp_path, run_import):
    latin = tmp_path / "conversations.json"
    latin.write_bytes(json.dumps([chat(1)]).replace("question", "caf\u00e9 question").encode("latin-1"))
    job = run_import(latin)
    assert imported(services, agent_id)[0][3].startswith("caf\ufffd question")
    assert "1 characters that were not valid UTF-8 were replaced" in job.tally.skipped_lines()
    assert "1 characters that were not valid UTF-8 were replaced" in preview(Export(latin)).tally.skipped_lines()
    transcript = tmp_path / "notes.txt"
    transcript.write_bytes("User: Je suis all\u00e9 \u00e0 Lyon.\nAssistant: Tr\u00e8s bien.\n".encode("cp1252"))
    job = run_import(transcript)
    assert ("notes", "user", None, "Je suis all\u00e9 \u00e0 Lyon.") in imported(services, agent_id)
    assert "not UTF-8: read as Windows-1252" in job.tally.skipped_lines()


def test_a_file_that_is_no_export_says_so(tmp_path):
    other = tmp_path / "photo.jpg"
    other.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(200))
    with pytest.raises(UnrecognisedExportError):
        Export(other)
    json_other = tmp_path / "data.json"
    json_other.write_text('[{"name": "not a conversation"}]', encoding="utf-8")
    with pytest.raises(UnrecognisedExportError, match="not a ChatGPT, Claude or Open WebUI export"):
        Export(json_other)


def test_a_kill_in_the_middle_leaves_no_half_conversation_and_the_import_goes_on(services, agent_id, tmp_path):
    from memdesk.core.transfer.history.importer import HistoryImport

    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([chat(n) for n in range(30)]), encoding="utf-8")
    job = HistoryImport.start(services.memory, agent_id, export)
    steps = job.steps()
    for _ in range(12):
        next(steps)
    steps.close()  # the process dies here: no stop, no finish
    assert set(whole_conversations(services, agent_id).values()) == {2}
    again = HistoryImport.start(services.memory, agent_id, export)
    assert again.id == job.id  # the same import goes on
    progress = again.run()
    assert progress.finished and len(whole_conversations(services, agent_id)) == 30
    assert services.memory.recall.imported_count(agent_id) == 60  # nothing twice


def test_an_export_of_100000_conversations_is_read_without_holding_it(tmp_path):
    export = tmp_path / "conversations.json"
    with open(export, "w", encoding="utf-8") as handle:
        handle.write("[")
        for n in range(100_000):
            handle.write(("," if n else "") + json.dumps(chat(n, words=1)))
        handle.write("]")
    seen = preview(Export(export))
    assert seen.tally.conversations == 100_000 and seen.tally.messages == 200_000
    assert not seen.tally.skipped_lines()
