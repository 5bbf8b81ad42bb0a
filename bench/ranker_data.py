"""The learned ranker's data: every question's candidates, their features and which are evidence.

    python -m bench.ranker_data --locomo locomo_dev.json --beam .bench/beam/1 ... .bench/beam/20 \
        --vectors .bench/vectors --out .bench/ranker_data --json

Each conversation (LoCoMo's, or a BEAM chat in LoCoMo's shape) is loaded into a fresh temporary
store as ``memdesk eval`` loads it, and each question is put to the message ranker's
``candidates``: the pool the learned scorer would rank at run time (memdesk.core.retrieval.features)
with its feature rows and the hand fusion's scores. A candidate's label is 1 when it is one of the
question's evidence messages; for BEAM's knowledge-update questions the updated statement is 2 and
the original 1, so that a ranking objective learns to put the newer value first. Questions with
no evidence (LoCoMo's adversarial ones have evidence, asked of the wrong speaker; BEAM's
abstentions have none) are kept for the "nothing on that" judge. The conversation's texts and
speakers are kept too, so the judge's support score can be computed for any ranking.

Also measured here, per question, is where the evidence stands in the whole conversation by the
hand fusion and by each leg alone: how wide the pool must be to still hold it (``--pool-report``).
The vectors come from ``bench.embedding_cache`` (the real all-MiniLM-L6-v2, cached on disk).
"""

from __future__ import annotations

import json
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from bench.embedding_cache import CachedEmbedder
from bench.report import emit
from memdesk.core.retrieval import features

#: Pool sizes whose share of the evidence is reported (the hand fusion's top N, and with each leg's top N/3).
POOL_SIZES = (50, 100, 200, 300, 500, 1000)


def _ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.arange(values.size)
    return ranks


def collect(sample: dict, embedder, *, user_name: str, kind: str) -> dict:
    """One conversation's questions with their candidates, in a temporary store."""
    from memdesk.core.evaluation.locomo import UNANSWERABLE, _load_conversation, category_name
    from memdesk.core.memory.recall import RecallMemory
    from memdesk.core.retrieval import MessageRanker, VectorIndex
    from memdesk.core.storage import open_database

    with tempfile.TemporaryDirectory(prefix="memdesk-ranker-data-") as folder:
        db = open_database(Path(folder) / "memdesk.sqlite3")
        ranker = MessageRanker(db, embedder, VectorIndex(db), user_name=lambda: user_name)
        recall = RecallMemory(db, embedder, ranker=ranker)
        try:
            ids = _load_conversation(db, recall, sample)
            agent_id = ids.pop("agent_id")
            recall.index_pending(agent_id)
            rows = db.query("SELECT id, search_text, author FROM messages WHERE agent_id = ? ORDER BY id", (agent_id,))
            texts = {r[0]: (r[1], r[2] or "") for r in rows}
            speakers = sorted({a for _, a in texts.values() if a})
            questions = []
            for qa in sample["qa"]:
                category = category_name(qa["category"])
                evidence = [ids[e] for e in qa.get("evidence", []) if e in ids]
                labels_of = dict.fromkeys(evidence, 1)
                groups = qa.get("evidence_groups") or []
                if category == "knowledge_update" and len(groups) == 2:
                    for e in groups[1]:  # the updated info
                        if e in ids:
                            labels_of[ids[e]] = 2
                unanswerable = category in UNANSWERABLE
                if not evidence and not unanswerable:
                    continue
                question = qa["question"]
                saved = features.POOL, features.LEG_POOL
                features.POOL = features.LEG_POOL = 10**9  # the whole conversation: where the evidence stands
                try:
                    all_ids, all_rows, _ = ranker.candidates(agent_id, question)
                finally:
                    features.POOL, features.LEG_POOL = saved
                standing = {}
                if evidence:
                    where = {int(m): k for k, m in enumerate(all_ids)}
                    for leg in ("fused", "lexical", "cosine"):
                        values = all_rows[:, features.INDEX[leg]]
                        if leg == "lexical":
                            values = np.where(values > 0, values, -1.0)
                        ranks = _ranks(values)
                        standing[leg] = [int(ranks[where[e]]) if e in where else 10**9 for e in evidence]
                pool_ids, pool_rows, fused = ranker.candidates(agent_id, question)
                questions.append(
                    {
                        "question": question,
                        "category": category,
                        "unanswerable": unanswerable,
                        "evidence": evidence,
                        "ids": pool_ids.astype(np.int64),
                        "rows": pool_rows.astype(np.float32),
                        "fused": fused.astype(np.float32),
                        "labels": np.asarray([labels_of.get(int(m), 0) for m in pool_ids], dtype=np.int8),
                        "groups": [[ids[e] for e in g if e in ids] for g in groups],
                        "standing": standing,
                        "size": len(all_ids),
                    }
                )
        finally:
            db.close()
    return {
        "sample_id": sample["sample_id"],
        "kind": kind,
        "texts": texts,
        "speakers": speakers,
        "questions": questions,
        "features": list(features.FEATURES),
    }


def pool_report(conversations: list[dict]) -> dict:
    """The share of evidence messages within the hand fusion's top N, and within it or a leg's top N/3."""
    report: dict = {}
    for name, chosen in (
        ("locomo", [c for c in conversations if c["kind"] == "locomo"]),
        ("beam", [c for c in conversations if c["kind"] == "beam"]),
    ):
        standing = [q["standing"] for c in chosen for q in c["questions"] if q["evidence"]]
        if not standing:
            continue
        fused = np.concatenate([s["fused"] for s in standing])
        lexical = np.concatenate([s["lexical"] for s in standing])
        cosine = np.concatenate([s["cosine"] for s in standing])
        report[name] = {"evidence": int(fused.size)}
        for size in POOL_SIZES:
            report[name][f"fused top {size}"] = round(float((fused < size).mean()), 4)
            legs = (fused < size) | (lexical < size // 3) | (cosine < size // 3)
            report[name][f"fused top {size} or a leg's top {size // 3}"] = round(float(legs.mean()), 4)
        runtime = (fused < features.POOL) | (lexical < features.LEG_POOL) | (cosine < features.LEG_POOL)
        report[name]["the pool"] = round(float(runtime.mean()), 4)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--beam", type=Path, nargs="*", default=[])
    parser.add_argument("--vectors", type=Path, required=True, help="bench.embedding_cache's folder")
    parser.add_argument("--out", type=Path, required=True, help="a folder: one file per conversation")
    args = parser.parse_args(argv)
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.beam import USER, load_chats

    embedder = CachedEmbedder(default_embedder(), args.vectors)
    jobs = []
    if args.locomo:
        jobs += [(s, "", "locomo") for s in json.loads(args.locomo.read_text(encoding="utf-8"))]
    if args.beam:
        jobs += [(s, USER, "beam") for s in load_chats(args.beam)]
    args.out.mkdir(parents=True, exist_ok=True)
    done = []
    started = time.perf_counter()
    for sample, user_name, kind in jobs:
        target = args.out / f"{kind}-{sample['sample_id']}.pkl"
        if target.exists():
            done.append(pickle.loads(target.read_bytes()))
            continue
        found = collect(sample, embedder, user_name=user_name, kind=kind)
        target.write_bytes(pickle.dumps(found))
        done.append(found)
        print(f"  {kind} {sample['sample_id']}: {len(found['questions'])} questions", file=sys.stderr, flush=True)
    emit(
        {
            "conversations": len(done),
            "questions": sum(len(c["questions"]) for c in done),
            "seconds": round(time.perf_counter() - started, 1),
            "texts_embedded": embedder.embedded,
            "evidence_within": pool_report(done),
        },
        args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
