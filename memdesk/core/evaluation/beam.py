"""BEAM (github mohammadtavakoli78/BEAM) as a second evaluation set, in LoCoMo's shape.

BEAM's chats are long multi-session technical conversations between a user and an assistant
(messages of thousands of characters with code and plans), each with probing questions of ten
kinds whose ``source_chat_ids`` name the evidence messages. A chat folder (``chats/100K/N``) holds
``chat.json`` (batches of turns; a batch's first user message carries its ``time_anchor`` date) and
``probing_questions/probing_questions.json`` (or ``probing_questions.json`` beside ``chat.json``).

Each chat becomes one LoCoMo sample: a batch is a session dated by its anchor, a message is a turn
whose ``dia_id`` is its BEAM id, and a question's evidence is its ``source_chat_ids`` flattened
(some kinds split them into first/second statement or original/updated info). Questions without
evidence (abstention) are skipped by the recall measures, as LoCoMo's are. The LoCoMo machinery
then measures it unchanged: search recall@k (memdesk.core.evaluation.locomo) and the evidence in
the prompt after a replay (memdesk.core.evaluation.locomo_replay).

BEAM's user messages end with a generation marker (``->-> 1,2``) no person types; it is dropped.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

from memdesk.core.base.clock import MONTHS, parse_month

#: Chats 1-10 of ``chats/100K`` are the development set (tuned on); the others are held out.
DEVELOPMENT = tuple(str(n) for n in range(1, 11))
#: Speaker names: people's names that no BEAM chat uses, so no question names a speaker by
#: accident (the search treats a speaker's name in a query specially).
USER, ASSISTANT = "Ada", "Orla"
KINDS = (
    "information_extraction",
    "multi_session_reasoning",
    "knowledge_update",
    "temporal_reasoning",
    "event_ordering",
    "contradiction_resolution",
    "summarization",
    "preference_following",
    "instruction_following",
    "abstention",
)
_MARKER = re.compile(r"\s*->->\s*[\d,\s]*$")
_ANCHOR = re.compile(r"([A-Za-z]+)-(\d{1,2})-(\d{4})")
#: A batch without an anchor starts this long after the previous one.
UNANCHORED_GAP = timedelta(days=7)
#: Sessions start at noon: a date-only anchor, read in any time zone, stays on its day.
SESSION_HOUR = 12


def chat_folders(paths: list[Path]) -> list[Path]:
    """Each path is a chat folder (with chat.json) or a folder of them (``chats/100K``), taken in
    numeric order."""
    found: list[Path] = []
    for path in paths:
        if (path / "chat.json").is_file():
            found.append(path)
            continue
        children = [c for c in path.iterdir() if (c / "chat.json").is_file()] if path.is_dir() else []
        if not children:
            raise ValueError(f"{path} is not a BEAM chat folder (no chat.json in it or in its sub-folders)")
        found.extend(
            sorted(children, key=lambda c: (not c.name.isdigit(), int(c.name) if c.name.isdigit() else 0, c.name))
        )
    return found


def _anchor(text: str) -> datetime | None:
    found = _ANCHOR.fullmatch(text.strip())
    if found is None:
        return None
    month, day, year = found.groups()
    return datetime(int(year), parse_month(month), int(day), SESSION_HOUR)


def _locomo_time(at: datetime) -> str:
    """LoCoMo's ``12:00 pm on 15 March, 2024``."""
    return (
        f"{(at.hour - 1) % 12 + 1}:{at.minute:02d} {'pm' if at.hour >= 12 else 'am'} on {at.day}"
        f" {MONTHS[at.month - 1]}, {at.year}"
    )


def _flatten(value) -> list[int]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [i for v in value.values() for i in _flatten(v)]
    if isinstance(value, list):
        return [i for v in value for i in _flatten(v)]
    return [int(value)]


def message_text(message: dict) -> str:
    return _MARKER.sub("", message.get("content", "")).strip()


def load_chat(folder: Path) -> dict:
    """One BEAM chat folder as a LoCoMo sample (``sample_id``: the folder's name)."""
    chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    questions_file = folder / "probing_questions" / "probing_questions.json"
    if not questions_file.is_file():
        questions_file = folder / "probing_questions.json"
    probing = json.loads(questions_file.read_text(encoding="utf-8"))
    conversation: dict = {"speaker_a": USER, "speaker_b": ASSISTANT}
    start: datetime | None = None
    for number, batch in enumerate(chat, start=1):
        messages = [m for turn in batch.get("turns", []) for m in turn]
        anchors = [a for a in (_anchor(m.get("time_anchor") or "") for m in messages) if a is not None]
        if anchors:
            start = anchors[0]
        else:
            start = start + UNANCHORED_GAP if start is not None else datetime(2024, 1, 1, SESSION_HOUR)
        conversation[f"session_{number}_date_time"] = _locomo_time(start)
        conversation[f"session_{number}"] = [
            {"speaker": USER if m["role"] == "user" else ASSISTANT, "dia_id": str(m["id"]), "text": message_text(m)}
            for m in messages
        ]
    qa = []
    for kind in [k for k in KINDS if k in probing] + sorted(set(probing) - set(KINDS)):
        for question in probing[kind]:
            evidence = sorted({str(i) for i in _flatten(question.get("source_chat_ids"))}, key=int)
            answer = (
                question.get("answer")
                or question.get("ideal_answer")
                or question.get("ideal_response")
                or question.get("ideal_summary")
            )
            ids = question.get("source_chat_ids")
            # knowledge updates and contradictions name their two statements apart (original/updated info)
            groups = (
                [sorted({str(i) for i in _flatten(v)}, key=int) for v in ids.values()] if isinstance(ids, dict) else []
            )
            qa.append(
                {
                    "question": question["question"],
                    "answer": answer,
                    "evidence": evidence,
                    "category": kind,
                    "evidence_groups": groups,
                }
            )
    return {"sample_id": folder.name, "conversation": conversation, "qa": qa}


def load_chats(paths: list[Path]) -> list[dict]:
    return [load_chat(folder) for folder in chat_folders(paths)]
