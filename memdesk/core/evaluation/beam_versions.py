"""Newest version first, measured on BEAM: do automatic recall's memories show the newer of two
statements of one fact first, and mark the pair?

BEAM's knowledge-update questions name an original and an updated statement ("150 commits", later
"165 commits"), its contradiction questions a first and a second statement ("I have never used
Flask-Login" / "Flask-Login was integrated"). Each such question whose two statements are
different messages is put to automatic recall over the whole chat (every message out of the
context window, as after a long conversation), with and without recall_versions.newest_first, and
the section it would place is read:

* ``both_shown``: a message of each statement is in the section;
* ``newest_first``: ... and the newer one comes before the older;
* ``newest_first_marked``: ... and the two are marked as a pair of versions (adjacent, each with
  its mark); ``right_kind``: ... marked as the question's kind (update / contradiction).

The other questions' sections show how often a mark appears where BEAM asks for none
(``marked_elsewhere``: sections with at least one marked pair). Tokens are counted as a quarter of
the characters (no model's tokenizer is loaded); the budget is automatic recall's fifth of an
8,192-token window.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from memdesk.core.agent.recall.search import AutoRecall, RecallSettings, Visible
from memdesk.core.agent.recall.sources import ConversationSource
from memdesk.core.agent.recall.versions import newest_first
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding import Embedder
from memdesk.core.evaluation.beam import USER
from memdesk.core.evaluation.locomo import _load_conversation, category_name
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex
from memdesk.core.storage import open_database

KINDS = ("knowledge_update", "contradiction_resolution")
BUDGET_TOKENS = 8192 // 5
MEASURES = ("both_shown", "newest_first", "newest_first_marked", "right_kind")
_EXPECTED = {"knowledge_update": "update", "contradiction_resolution": "contradict"}


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def _judge(placed, older: set[int], newer_ids: set[int], kind: str) -> dict[str, bool]:
    """``older``/``newer_ids``: message ids of the question's two statements (which is newer is
    decided per pair shown, by date)."""
    refs = [int(m.ref.split(":")[1]) for m in placed]
    result = dict.fromkeys(MEASURES, False)
    for i, first in enumerate(refs):
        for j, second in enumerate(refs):
            if (
                first == second
                or not ({first, second} <= older | newer_ids)
                or {first, second} <= older
                or {first, second} <= newer_ids
            ):
                continue
            if placed[i].at < placed[j].at or (placed[i].at == placed[j].at and first < second):
                continue  # judged from the newer side
            result["both_shown"] = True
            if i < j:
                result["newest_first"] = True
                if j == i + 1 and placed[i].version and placed[j].version:
                    result["newest_first_marked"] = True
                    result["right_kind"] |= placed[i].version.startswith(_EXPECTED[kind])
    return result


class Tally:
    """Counts per variant ("before": rank order; "after": newest_first) and bucket."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, dict[str, int]]] = {v: defaultdict(lambda: defaultdict(int)) for v in VARIANTS}
        self.elsewhere = {v: [0, 0] for v in VARIANTS}  # other questions' sections: [sections, sections with a mark]

    def report(self) -> dict:
        report: dict = {}
        for name, buckets in self.counts.items():
            report[name] = {
                bucket: {"questions": c["questions"], **{m: round(c[m] / c["questions"], 4) for m in MEASURES}}
                for bucket, c in buckets.items()
            }
            sections, marked = self.elsewhere[name]
            report[name]["marked_elsewhere"] = round(marked / sections, 4) if sections else None
        return report


VARIANTS = ("before", "after")


def auto_recalls(recall: RecallMemory) -> dict[str, AutoRecall]:
    source = ConversationSource(recall)
    return {
        "before": AutoRecall([source], RecallSettings.from_settings(Settings())),
        "after": AutoRecall([source], RecallSettings.from_settings(Settings()), order=newest_first),
    }


def measure_sample(
    variants: dict[str, AutoRecall],
    agent_id: int,
    ids: dict[str, int],
    sample: dict,
    tally: Tally,
    budget_tokens: int = BUDGET_TOKENS,
) -> None:
    """One loaded chat (``ids``: BEAM message id -> store id) put through each variant."""
    beyond = max(ids.values()) + 1
    for qa in sample["qa"]:
        kind = category_name(qa["category"])
        groups = [{ids[e] for e in group if e in ids} for group in qa.get("evidence_groups", [])]
        measured = kind in KINDS and len(groups) == 2 and all(groups) and groups[0] | groups[1] != groups[0] & groups[1]
        if kind in KINDS and not measured:
            continue
        for name, auto in variants.items():
            result = auto.gather(
                agent_id,
                qa["question"],
                first_in_context=beyond,
                visible=Visible(),
                budget_tokens=budget_tokens,
                count_tokens=_tokens,
                truncate=lambda text, tokens: text[: 4 * tokens],
                inline=True,
            )
            if not measured:
                tally.elsewhere[name][0] += 1
                tally.elsewhere[name][1] += any(m.version for m in result.memories)
                continue
            judged = _judge(list(result.memories), groups[0], groups[1], kind)
            for bucket in ("all", kind, sample["sample_id"]):
                tally.counts[name][bucket]["questions"] += 1
                for measure, value in judged.items():
                    tally.counts[name][bucket][measure] += value


def evaluate_versions(
    samples: list[dict], embedder: Embedder, *, budget_tokens: int = BUDGET_TOKENS, progress=None
) -> dict:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="memdesk-beam-versions-") as folder:
        db = open_database(Path(folder) / "memdesk.sqlite3")
        recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db), user_name=lambda: USER))
        variants = auto_recalls(recall)
        try:
            for sample in samples:
                ids = _load_conversation(db, recall, sample)
                agent_id = ids.pop("agent_id")
                measure_sample(variants, agent_id, ids, sample, tally, budget_tokens)
                if progress:
                    progress(sample["sample_id"])
        finally:
            for auto in variants.values():
                auto.close()
            db.close()
    return {"budget_tokens": budget_tokens, **tally.report()}
