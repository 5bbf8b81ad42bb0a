"""Memory at scale: vector search, writes, open, memory, FTS, automatic recall and ingestion with
``--n`` stored passages and as many stored messages (clustered synthetic 384-d vectors, synthetic
text), each figure also against the exact NumPy product over the same vectors in the same run.

    python -m bench.scale --n 1000000 --json

The store is filled in bulk (direct inserts in the store's own tables, vec0 and the search form);
what is timed goes through MemDesk's own code: PassageRanker's dense leg, ArchivalMemory.add,
automatic recall's search, a store opened afresh.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from memdesk.core.agent.recall.search import AutoRecall, RecallSettings
from memdesk.core.agent.recall.sources import ArchivalSource, ConversationSource
from memdesk.core.base.clock import ManualClock, iso
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.graph.names import name_key
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.memory.space import EmbeddingSpace, vector_blob
from memdesk.core.retrieval import MessageRanker, PassageRanker, VectorIndex, bounded_fts, vector_codes
from memdesk.core.retrieval import messages as message_ranking
from memdesk.core.retrieval.learned import LearnedScorer, load, shipped
from memdesk.core.retrieval.messages import GRAPH_WEIGHT
from memdesk.core.retrieval.passages import LEXICAL_INDEX as PASSAGES_FTS
from memdesk.core.retrieval.passages import SEARCH_DEPTH as PASSAGE_DEPTH
from memdesk.core.retrieval.query import fts_phrases
from memdesk.core.storage import open_database

DIM = 384
K = 10
START = datetime(2016, 1, 1, tzinfo=UTC)
FILL_BLOCK = 20_000
#: Chunks per ArchivalMemory.add in the ingestion probe (what the document ingestor stores at once).
INGEST_BATCH = 64
#: Queries of the unbounded FTS5 search, the common word's baseline (0.6-2.5 s each at a million).
UNBOUNDED_QUERIES = 5
#: The learned ranking model the app ranks with (memdesk/resources/ranker.json, or the file in
#: MEMDESK_BENCH_RANKER: another model to time), None if none ships.
SHIPPED = load(Path(os.environ["MEMDESK_BENCH_RANKER"])) if os.environ.get("MEMDESK_BENCH_RANKER") else shipped()
#: Sections searched with FTS5 alone, the baseline of a common word's section.
UNBOUNDED_SECTIONS = 20


@contextmanager
def _unbounded():
    """The lexical leg as it ran before its bound: every match scored, every proposed text compared."""
    saved = bounded_fts.SCORED_ROWS, message_ranking.VERBATIM_CANDIDATES
    bounded_fts.SCORED_ROWS = message_ranking.VERBATIM_CANDIDATES = 10**12
    try:
        yield
    finally:
        bounded_fts.SCORED_ROWS, message_ranking.VERBATIM_CANDIDATES = saved


class GivenVectors(HashingEmbedder):
    """The queries' vectors are given (clustered like the store's); any other text is hashed. Names
    a 384-d space, so the store and the probes agree."""

    def __init__(self) -> None:
        super().__init__(DIM)
        self.given: dict[str, np.ndarray] = {}

    def embed(self, texts):
        out = super().embed(texts)
        for row, text in enumerate(texts):
            if text in self.given:
                out[row] = self.given[text]
        return out


class Corpus:
    """Clustered unit vectors and texts whose words follow their topic, so FTS and vectors agree."""

    def __init__(self, seed: int, topics: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self._unit(self.rng.standard_normal((topics, DIM)))
        self.words = [f"w{n}" for n in range(20_000)]

    @staticmethod
    def _unit(matrix) -> np.ndarray:
        matrix = np.asarray(matrix, dtype=np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    def vectors(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        topic = self.rng.integers(0, len(self.centres), n)
        noise = self.rng.standard_normal((n, DIM)).astype(np.float32) * (1.05 / np.sqrt(DIM))
        return self._unit(self.centres[topic] + noise), topic

    def texts(self, topics: np.ndarray) -> list[str]:
        own = self.rng.integers(0, 20, (len(topics), 4))
        common = self.rng.zipf(1.3, (len(topics), 8)) % len(self.words)
        return [
            " ".join([f"t{t}x{o}" for o in own_row] + [self.words[c] for c in common_row])
            for t, own_row, common_row in zip(topics.tolist(), own.tolist(), common.tolist(), strict=True)
        ]


def _ms(values) -> float:
    return round(float(np.percentile(values, 50)) * 1e3, 3)


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # not Linux: the peak is the best the platform offers
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _new_store(path: Path):
    db = open_database(path)
    agent_id = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('bench', ?, '')", (iso(START),)
    ).lastrowid
    EmbeddingSpace(db, GivenVectors()).ensure()
    return db, agent_id


def fill(db, agent_id: int, corpus: Corpus, n: int, *, messages: bool) -> np.ndarray:
    """``n`` passages (and as many messages) with vectors, in bulk. Returns the passages' vectors
    (row i is passage id i + 1)."""
    matrix = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, FILL_BLOCK):
        m = min(FILL_BLOCK, n - start)
        for kind in ("passages", "messages") if messages else ("passages",):
            vectors, topics = corpus.vectors(m)
            texts = corpus.texts(topics)
            ids = list(range(start + 1, start + m + 1))
            with db.transaction():
                if kind == "passages":
                    matrix[start : start + m] = vectors
                    db.executemany(
                        "INSERT INTO passages(id, agent_id, text, created_at, tags, embedded)"
                        " VALUES (?, ?, ?, ?, '[]', 1)",
                        [(i, agent_id, t, iso(START)) for i, t in zip(ids, texts, strict=True)],
                    )
                else:
                    db.executemany(
                        "INSERT INTO messages(id, agent_id, created_at, role, kind, content, search_text, embedded)"
                        " VALUES (?, ?, ?, ?, 'user_message', ?, ?, 1)",
                        [
                            (i, agent_id, iso(START + timedelta(minutes=5 * i)), "user" if i % 2 else "assistant", t, t)
                            for i, t in zip(ids, texts, strict=True)
                        ],
                    )
                db.executemany(
                    f"INSERT INTO {kind}_vec(rowid, agent_id, embedding) VALUES (?, ?, ?)",
                    [(i, agent_id, vector_blob(v)) for i, v in zip(ids, vectors, strict=True)],
                )
                vector_codes.write(db, kind, agent_id, ids, vectors)
    return matrix


def fill_graph(db, agent_id: int, topics: int) -> int:
    """A knowledge graph over the stored messages, as the extractor leaves one: an entity per topic
    word (``t{topic}x{k}``), a mention of the entities of each message's first two words, and facts
    linking each entity to the next word of its topic and to the same word of the next topic.
    Returns the number of mentions."""
    words = [f"t{t}x{k}" for t in range(topics) for k in range(20)]
    with db.transaction():
        db.executemany(
            "INSERT INTO graph_entities(agent_id, name, key, kind, created_at) VALUES (?, ?, ?, 'thing', ?)",
            [(agent_id, w, name_key(w), iso(START)) for w in words],
        )
    entity = {name: i for i, name in db.query("SELECT id, name FROM graph_entities WHERE agent_id = ?", (agent_id,))}
    mentions = 0
    last = int(db.scalar("SELECT MAX(id) FROM messages WHERE agent_id = ?", (agent_id,)) or 0)
    for start in range(0, last, FILL_BLOCK * 5):
        rows = db.query(
            "SELECT id, search_text FROM messages WHERE agent_id = ? AND id > ? AND id <= ?",
            (agent_id, start, start + FILL_BLOCK * 5),
        )
        batch = [
            (agent_id, entity[w], message_id, iso(START))
            for message_id, text in rows
            for w in text.split()[:2]
            if w in entity
        ]
        with db.transaction():
            db.executemany("INSERT INTO graph_mentions(agent_id, entity_id, message_id, at) VALUES (?, ?, ?, ?)", batch)
        mentions += len(batch)
    facts = [
        (agent_id, entity[f"t{t}x{k}"], linked, iso(START), iso(START))
        for t in range(topics)
        for k in range(20)
        for linked in (entity[f"t{t}x{(k + 1) % 20}"], entity[f"t{(t + 1) % topics}x{k}"])
    ]
    with db.transaction():
        db.executemany(
            "INSERT INTO graph_facts(agent_id, subject_id, relation, object_id, valid_from, author, created_at)"
            " VALUES (?, ?, 'goes with', ?, ?, 'extractor', ?)",
            facts,
        )
    return mentions


def _common_word(q: int) -> str:
    """A word of the synthetic text found in about one message (and passage) of ten."""
    return f"w{10 + q % 3}"


def _topic_message(q: int, topics: int) -> str:
    """A message naming a topic word (with a graph, an entity whose links graph expansion follows)."""
    return f"t{q % topics}x{q % 20} what did we say about w{300 + q}"


def _common_word_message(q: int, topics: int) -> str:
    """The same with a word found in one message of ten."""
    return f"{_topic_message(q, topics)} and {_common_word(q)}"


def _common_words_only_message(q: int, topics: int) -> str:
    """A message of common words only, which also propose thousands of texts for a verbatim match."""
    return f"and {_common_word(q)} w{13 + q % 3} then"


def _section_times(
    db,
    agent_id: int,
    index: VectorIndex,
    probe_vectors,
    topics: int,
    day: int,
    graph_weight: float,
    message=_topic_message,
    scorer: LearnedScorer | None = SHIPPED,
) -> list[float]:
    """Automatic recall before a reply: the user's message (``message(q, topics)``) is stored,
    then the section is searched (its sources side by side, as before a reply). ``scorer``: the
    learned ranking model, as the app has it (None: the hand fusion)."""
    embedder = GivenVectors()
    recall = RecallMemory(
        db,
        embedder,
        ranker=MessageRanker(db, embedder, index, scorer=scorer),
        clock=ManualClock(START),
        graph_weight=lambda: graph_weight,
    )
    sources = AutoRecall(
        [
            ConversationSource(recall),
            ArchivalSource(ArchivalMemory(db, embedder, ManualClock(START), ranker=PassageRanker(db, embedder, index))),
        ],
        RecallSettings.from_settings(Settings()),
    )
    recall.warm(agent_id)  # as the window does when it opens an agent (the timeline, the graph's counts)
    section = []
    for q, vector in enumerate(probe_vectors):
        text = message(q, topics)
        embedder.given[text] = vector
        last = recall.add(
            agent_id,
            role="user",
            kind="user_message",
            content=text,
            search_text=text,
            created_at=START + timedelta(days=day, minutes=q),
        )
        t0 = time.perf_counter()
        sources.search(agent_id, text, first_in_context=last.id - 20, parallel=True)
        section.append(time.perf_counter() - t0)
    sources.close()
    return section


def _exact_top(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, K)[:K]
    return top[np.argsort(-scores[top])] + 1


def _stored_top(
    top: np.ndarray, matrix: np.ndarray, added: list[tuple[int, np.ndarray]], query: np.ndarray
) -> np.ndarray:
    """The exact top K over the filled rows (``top``, their ids) and the notes stored since."""
    if not added:
        return top
    ids = np.concatenate([top, [i for i, _ in added]])
    scores = np.concatenate([matrix[top - 1] @ query, np.stack([v for _, v in added]) @ query])
    return ids[np.argsort(-scores, kind="stable")[:K]]


def _ingest_rates(stores: list[tuple], corpus: Corpus, chunks: int) -> list[float]:
    """Document chunks stored per second through ArchivalMemory.add, in the ingestor's batches, into
    each (db, agent_id) of ``stores``, a batch to each in turn: whatever else loads the machine
    weighs on all of them alike."""
    probes = []
    for db, agent_id in stores:
        document_id = db.execute(
            "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, status, created_at, updated_at)"
            " VALUES (?, ?, 'probe', '', 0, 'embedding', ?, ?)",
            (agent_id, f"/probe/{time.monotonic_ns()}.txt", iso(START), iso(START)),
        ).lastrowid
        probes.append((ArchivalMemory(db, GivenVectors(), ManualClock(START)), agent_id, document_id))
    vectors, topics = corpus.vectors(chunks)
    texts = corpus.texts(topics)
    spent = [0.0] * len(stores)
    for at in range(0, chunks, INGEST_BATCH):
        for n, (archival, agent_id, document_id) in enumerate(probes):
            batch = [
                NewPassage(t, START, document_id=document_id, chunk_index=at + i)
                for i, t in enumerate(texts[at : at + INGEST_BATCH])
            ]
            started = time.perf_counter()
            archival.add(agent_id, batch, vectors[at : at + INGEST_BATCH])
            spent[n] += time.perf_counter() - started
    return [chunks / s for s in spent]


def run(n: int, queries: int = 50, ingest_chunks: int = 2000, seed: int = 7, graph: bool = True) -> dict:
    topics = max(10, n // 100)
    corpus = Corpus(seed, topics=topics)
    with tempfile.TemporaryDirectory(prefix="memdesk-scale-") as folder:
        folder = Path(folder)
        path = folder / "memdesk.sqlite3"
        db, agent_id = _new_store(path)
        started = time.perf_counter()
        matrix = fill(db, agent_id, corpus, n, messages=True)
        fill_s = time.perf_counter() - started
        db.close()
        store_mb = sum(p.stat().st_size for p in folder.glob("memdesk.sqlite3*")) / 2**20

        probe_vectors, _ = corpus.vectors(queries)
        probe_vectors = probe_vectors.astype(np.float32)

        # Open afresh, then the first search: the index reads its stored form, never every vector.
        rss_before = _rss_mb()
        started = time.perf_counter()
        db = open_database(path)
        index = VectorIndex(db)
        ranker = PassageRanker(db, None, index)
        ranker.vector_candidates(agent_id, probe_vectors[0], K)
        open_s = time.perf_counter() - started
        rss_growth = _rss_mb() - rss_before
        index.warm("messages", agent_id)
        index_mb = index.memory_bytes() / 2**20  # both kinds' indexes: a million passages and a million messages

        # The exact NumPy product's own open: every vector read from vec0 into one matrix.
        started = time.perf_counter()
        rows = db.query("SELECT rowid, embedding FROM passages_vec WHERE agent_id = ?", (agent_id,))
        loaded = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
        _exact_top(loaded, probe_vectors[0])
        numpy_open_s = time.perf_counter() - started
        del rows, loaded

        # Quiet searches and searches right after storing one passage (as a live conversation
        # does), interleaved with the exact product so that load on the machine hits all three.
        archival = ArchivalMemory(db, GivenVectors(), ManualClock(START), ranker=ranker)
        after_probes, _ = corpus.vectors(queries)
        fresh, _ = corpus.vectors(queries)
        ours, baseline, recalls, after_write = [], [], [], []
        added: list[tuple[int, np.ndarray]] = []  # (id, vector) of each note stored since the fill
        for query, after_query, vector in zip(probe_vectors, after_probes, fresh, strict=True):
            t0 = time.perf_counter()
            ids, _ = ranker.vector_candidates(agent_id, query, K)
            t1 = time.perf_counter()
            truth = _exact_top(matrix, query)
            t2 = time.perf_counter()
            ours.append(t1 - t0)
            baseline.append(t2 - t1)
            truth = _stored_top(truth, matrix, added, query)  # the notes stored below count too
            recalls.append(len(set(ids.tolist()) & set(truth.tolist())) / K)
            [note] = archival.add(agent_id, [NewPassage("a new note", START)], vector[None, :])
            added.append((note, vector))
            t0 = time.perf_counter()
            ranker.vector_candidates(agent_id, after_query, K)
            after_write.append(time.perf_counter() - t0)

        lexical = PassageRanker(db, None, index)
        fts = []
        for q in range(queries):
            t0 = time.perf_counter()
            lexical.rank(agent_id, f"t{q % max(10, n // 100)}x{q % 20} w{200 + q}")
            fts.append(time.perf_counter() - t0)

        # The same with a word found in one row of ten: FTS5 alone scores every row it matches.
        common_fts, unbounded_fts = [], []
        for q in range(queries):
            text = f"t{q % topics}x{q % 20} w{200 + q} {_common_word(q)}"
            t0 = time.perf_counter()
            lexical.rank(agent_id, text)
            common_fts.append(time.perf_counter() - t0)
            if q < UNBOUNDED_QUERIES:  # seconds each at a million: a few make the baseline
                t0 = time.perf_counter()
                db.query(PASSAGES_FTS.scored(), (" OR ".join(fts_phrases(text)), agent_id, PASSAGE_DEPTH))
                unbounded_fts.append(time.perf_counter() - t0)

        section = _section_times(db, agent_id, index, probe_vectors, topics, 4000, 0.0)
        hand_section = _section_times(db, agent_id, index, probe_vectors, topics, 4900, 0.0, scorer=None)
        common_section = _section_times(db, agent_id, index, probe_vectors, topics, 4500, 0.0, _common_word_message)
        only_common_section = _section_times(
            db, agent_id, index, probe_vectors, topics, 4700, 0.0, _common_words_only_message
        )
        with _unbounded():  # the baseline: the same section as FTS5 alone ran it, every match scored
            unbounded_section = _section_times(
                db,
                agent_id,
                index,
                probe_vectors[:UNBOUNDED_SECTIONS],
                topics,
                4800,
                0.0,
                _common_word_message,
            )
        graph_section, mentions = [], 0
        if graph:  # the app's default: conversation search follows the knowledge graph too
            started = time.perf_counter()
            mentions = fill_graph(db, agent_id, topics)
            graph_fill_s = time.perf_counter() - started
            graph_section = _section_times(db, agent_id, index, probe_vectors, topics, 5000, GRAPH_WEIGHT)

        empty_db, empty_agent = _new_store(folder / "empty.sqlite3")
        empty_rate, full_rate = _ingest_rates([(empty_db, empty_agent), (db, agent_id)], corpus, ingest_chunks)
        empty_db.close()
        db.close()

    numpy_p50 = float(np.percentile(baseline, 50))
    result = {
        "n": n,
        "dim": DIM,
        "queries": queries,
        "search_p50_ms": _ms(ours),
        "search_after_write_p50_ms": _ms(after_write),
        "write_penalty_ratio": round(float(np.percentile(after_write, 50) / np.percentile(ours, 50)), 3),
        "recall_at_10_vs_exact": round(float(np.mean(recalls)), 4),
        "open_to_first_search_s": round(open_s, 3),
        "index_rss_mb": round(index_mb / 2, 1),  # per index of n vectors (two are loaded)
        "open_rss_growth_mb": round(rss_growth, 1),
        "fts_p50_ms": _ms(fts),
        "auto_recall_section_p95_ms": round(float(np.percentile(section, 95)) * 1e3, 3),
        "ranking_model": SHIPPED.name if SHIPPED is not None else None,
        "auto_recall_section_hand_fusion_p95_ms": round(float(np.percentile(hand_section, 95)) * 1e3, 3),
        "auto_recall_section_p95_vs_hand_fusion": round(
            float(np.percentile(section, 95)) / float(np.percentile(hand_section, 95)), 3
        ),
        "auto_recall_section_p50_ms": round(float(np.percentile(section, 50)) * 1e3, 3),
        "fts_common_word_p95_ms": round(float(np.percentile(common_fts, 95)) * 1e3, 3),
        "fts_common_word_p50_ms": _ms(common_fts),
        "fts_common_word_unbounded_p50_ms": _ms(unbounded_fts),
        "fts_common_word_vs_unbounded": round(
            float(np.percentile(common_fts, 50) / np.percentile(unbounded_fts, 50)), 3
        ),
        "auto_recall_section_common_word_p95_ms": round(float(np.percentile(common_section, 95)) * 1e3, 3),
        "auto_recall_section_common_word_p50_ms": round(float(np.percentile(common_section, 50)) * 1e3, 3),
        "auto_recall_section_common_word_unbounded_p95_ms": round(float(np.percentile(unbounded_section, 95)) * 1e3, 3),
        "auto_recall_section_common_word_unbounded_p50_ms": round(float(np.percentile(unbounded_section, 50)) * 1e3, 3),
        "auto_recall_section_common_word_vs_unbounded_p50": round(
            float(np.percentile(common_section, 50) / np.percentile(unbounded_section, 50)), 3
        ),
        "auto_recall_section_common_words_only_p95_ms": round(float(np.percentile(only_common_section, 95)) * 1e3, 3),
        "auto_recall_section_common_words_only_p50_ms": round(float(np.percentile(only_common_section, 50)) * 1e3, 3),
        "ingest_ratio_1m_vs_empty": round(full_rate / empty_rate, 3),
        "store_mb_per_100k": round(store_mb / (2 * n) * 100_000, 1),  # passages and messages both count
        "numpy_p50_ms": round(numpy_p50 * 1e3, 3),
        "numpy_open_to_first_search_s": round(numpy_open_s, 3),
        "numpy_matrix_mb": round(matrix.nbytes / 2**20, 1),
        "search_p50_vs_numpy": round(float(np.percentile(ours, 50)) / numpy_p50, 3),
        "search_after_write_p50_vs_numpy": round(float(np.percentile(after_write, 50)) / numpy_p50, 3),
        "open_to_first_search_vs_numpy": round(open_s / numpy_open_s, 3),
        "index_rss_vs_numpy": round(index_mb / 2 / (matrix.nbytes / 2**20), 3),
        "fts_p50_vs_numpy": round(float(np.percentile(fts, 50)) / numpy_p50, 3),
        "auto_recall_section_p95_vs_numpy": round(float(np.percentile(section, 95)) / numpy_p50, 3),
        "auto_recall_section_common_word_p95_vs_numpy": round(float(np.percentile(common_section, 95)) / numpy_p50, 3),
        "ingest_chunks_per_s_empty": round(empty_rate, 1),
        "ingest_chunks_per_s_full": round(full_rate, 1),
        "fill_s": round(fill_s, 1),
    }
    if graph:
        result.update(
            {
                "graph_mentions": mentions,
                "auto_recall_section_with_graph_p95_ms": round(float(np.percentile(graph_section, 95)) * 1e3, 3),
                "auto_recall_section_with_graph_p50_ms": round(float(np.percentile(graph_section, 50)) * 1e3, 3),
                "auto_recall_section_with_graph_p95_vs_numpy": round(
                    float(np.percentile(graph_section, 95)) / numpy_p50, 3
                ),
                "graph_fill_s": round(graph_fill_s, 1),
            }
        )
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    return result


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--ingest-chunks", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="a fast check: 20,000 rows, 10 queries")
    parser.add_argument(
        "--no-graph",
        action="store_true",
        help="skip the section with a knowledge graph (graph expansion on, the app's default)",
    )
    args = parser.parse_args()
    if args.quick:
        args.n, args.queries, args.ingest_chunks = 20_000, 10, 256
    result = run(args.n, args.queries, args.ingest_chunks, graph=not args.no_graph)
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
