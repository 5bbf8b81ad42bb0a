"""Resumable extraction: new messages and passages become entities, mentions and facts.

Two stages per source, each a row in ``graph_queue``:
  entities  the NLP pass (entities, mentions, dependency-pattern facts): fast, no chat model;
  facts     the chat model's fact under an entity grammar (memdesk.core.graph.model_facts): needs
            the model while it is idle, so it runs only when a fact model is handed in.

``enqueue`` moves sources past the per-agent watermark into the queue, a chunk a transaction; a stage
stores one source's results and deletes its queue row in another, which holds the store's write
lock for SQL only (the names are embedded before it opens), so a catch-up over many sources never
keeps another writer waiting past its busy timeout. A crash in between leaves the row, and
the stage is idempotent (a source's earlier extractor output is cleared first), so nothing is
lost or done twice. A failing source is logged and retried later with a growing delay; it never
reaches the chat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, TypedDict

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import GenerationCancelled, MemDeskError
from memdesk.core.graph.nlp import SPEAKER, Analysis
from memdesk.core.graph.store import SELF_KIND, KnowledgeGraph
from memdesk.core.graph.the_user import PLACEHOLDER
from memdesk.core.runtime.base import CancelToken, ChatMessage

log = logging.getLogger("memdesk.graph.extraction")

BATCH = 32
#: Sources ``enqueue`` moves into the queue per transaction.
ENQUEUE_CHUNK = 2000
MAX_ATTEMPTS = 5
RETRY_SECONDS = 30.0
#: Sources of a message: what people said (the agent's replies are its own inventions).
MESSAGE_KINDS = ("user_message", "imported_user")  # what the person wrote, here or in an imported chat


class Analyser(Protocol):
    def analyse(self, texts: Sequence[str]) -> list[Analysis]: ...


class FactModel(Protocol):
    def extract(
        self,
        text: str,
        speaker: str,
        entities: Sequence[str],
        *,
        prefix: Sequence[ChatMessage] = (),
        cancel: CancelToken | None = None,
    ) -> list: ...


@dataclass(frozen=True)
class ExtractionOptions:
    enabled: bool = True
    model_facts: bool = True  # queue the chat model's pass for messages
    document_facts: bool = False  # also for passages (documents are long: the model's cost)


@dataclass
class ExtractionReport:
    sources: int = 0
    entities: int = 0
    mentions: int = 0
    facts: int = 0
    model_facts: int = 0
    failed: int = 0
    seconds_nlp: float = 0.0
    seconds_model: float = 0.0
    errors: list[str] = field(default_factory=list)


class SourceRef(TypedDict, total=False):
    """Where a graph row was found, as the graph's keyword arguments take it."""

    message_id: int
    passage_id: int


@dataclass(frozen=True)
class _Source:
    queue_id: int
    kind: str
    id: int
    text: str
    at: datetime
    speaker: str | None  # None: the app's user, whose entity is the graph's (memdesk.core.graph.the_user)
    speaker_kind: str

    def where(self) -> SourceRef:
        return {"message_id": self.id} if self.kind == "message" else {"passage_id": self.id}


class GraphExtractor:
    def __init__(
        self,
        graph: KnowledgeGraph,
        analyser: Analyser,
        clock: Clock,
        options: ExtractionOptions = ExtractionOptions(),
        *,
        user_name: Callable[[], str] = lambda: "",
    ) -> None:
        """``user_name``: the user's name (the setting, read at each source), which the user's own
        entity bears."""
        self.graph = graph
        self._db = graph.db
        self._analyser = analyser
        self._clock = clock
        self.options = options
        self._user_name = user_name

    def _current_user_name(self) -> str:
        return (self._user_name() or "").strip()

    def follow_user_name(self, agent_id: int) -> bool:
        """Rename the user's entity after a name set or changed since the graph last took one;
        True when the graph changed."""
        return self.graph.follow_user_name(agent_id, self._current_user_name())

    # --- the queue -------------------------------------------------------------------------
    def enqueue(self, agent_id: int) -> int:
        """Queue the agent's sources added since the last call; returns how many. With extraction
        off they are passed over for good (turning it back on does not reach into the past; the
        Knowledge panel's "Rebuild" does)."""
        added = 0
        for kind, table, where in (
            ("message", "messages", f"kind IN ({','.join('?' * len(MESSAGE_KINDS))}) AND search_text != ''"),
            ("passage", "passages", "1"),
        ):
            while True:  # a chunk of sources a transaction: a long history is no long write lock
                with self._db.transaction():
                    last = (
                        self._db.scalar(
                            "SELECT last_id FROM graph_progress WHERE agent_id = ? AND source_kind = ?",
                            (agent_id, kind),
                        )
                        or 0
                    )
                    params = (agent_id, last, *(MESSAGE_KINDS if kind == "message" else ()))
                    upto = self._db.scalar(
                        f"SELECT MAX(id) FROM (SELECT id FROM {table} WHERE agent_id = ? AND id > ? ORDER BY id"
                        " LIMIT ?)",
                        (agent_id, last, ENQUEUE_CHUNK),
                    )
                    if upto is None:
                        break
                    if self.options.enabled:
                        cursor = self._db.execute(
                            f"INSERT OR IGNORE INTO graph_queue(agent_id, source_kind, source_id, stage)"
                            f" SELECT agent_id, '{kind}', id, 'entities' FROM {table} WHERE agent_id = ? AND id > ?"
                            f" AND id <= {int(upto)}"
                            f" AND {where}",
                            params,
                        )
                        added += max(0, cursor.rowcount)
                    self._db.execute(
                        "INSERT INTO graph_progress(agent_id, source_kind, last_id) VALUES (?, ?, ?)"
                        " ON CONFLICT(agent_id, source_kind) DO UPDATE SET last_id = excluded.last_id",
                        (agent_id, kind, upto),
                    )
        return added

    def rebuild(self, agent_id: int) -> int:
        """Extract the agent's whole history again (user-written facts and edits stay)."""
        with self._db.transaction():
            self._db.execute("DELETE FROM graph_progress WHERE agent_id = ?", (agent_id,))
            self._db.execute("DELETE FROM graph_queue WHERE agent_id = ?", (agent_id,))
        enabled = self.options
        self.options = ExtractionOptions(True, enabled.model_facts, enabled.document_facts)
        try:
            return self.enqueue(agent_id)
        finally:
            self.options = enabled

    def pending(self, agent_id: int | None = None, stage: str | None = None, *, due_only: bool = False) -> int:
        where = ["attempts < ?"]
        params: list[Any] = [MAX_ATTEMPTS]
        if agent_id is not None:
            where.append("agent_id = ?")
            params.append(agent_id)
        if stage is not None:
            where.append("stage = ?")
            params.append(stage)
        if due_only:
            where.append("not_before <= ?")
            params.append(iso(self._clock.now()))
        return int(self._db.scalar(f"SELECT COUNT(*) FROM graph_queue WHERE {' AND '.join(where)}", tuple(params)))

    def failures(self, agent_id: int) -> list[tuple[str, int, int, str]]:
        """Sources whose extraction failed: (kind, id, attempts, last error)."""
        rows = self._db.query(
            "SELECT source_kind, source_id, attempts, last_error FROM graph_queue WHERE agent_id = ? AND last_error IS"
            " NOT NULL ORDER BY id",
            (agent_id,),
        )
        return [(r[0], int(r[1]), int(r[2]), r[3]) for r in rows]

    def _due(self, stage: str, agent_id: int | None, limit: int) -> list[tuple[int, int, str, int]]:
        where, params = "stage = ? AND attempts < ? AND not_before <= ?", [stage, MAX_ATTEMPTS, iso(self._clock.now())]
        if agent_id is not None:
            where += " AND agent_id = ?"
            params.append(agent_id)
        rows = self._db.query(
            f"SELECT id, agent_id, source_kind, source_id FROM graph_queue WHERE {where} ORDER BY id LIMIT ?",
            (*params, limit),
        )
        return [(int(r[0]), int(r[1]), r[2], int(r[3])) for r in rows]

    def _fail(self, queue_id: int, error: BaseException) -> None:
        attempts = int(self._db.scalar("SELECT attempts FROM graph_queue WHERE id = ?", (queue_id,)) or 0) + 1
        delay = timedelta(seconds=RETRY_SECONDS * 2 ** (attempts - 1))
        self._db.execute(
            "UPDATE graph_queue SET attempts = ?, not_before = ?, last_error = ? WHERE id = ?",
            (attempts, iso(self._clock.now() + delay), f"{type(error).__name__}: {error}"[:500], queue_id),
        )

    def _load(self, row: tuple[int, int, str, int]) -> _Source | None:
        queue_id, _agent, kind, source_id = row
        if kind == "message":
            found = self._db.query_one(
                "SELECT search_text, created_at, author FROM messages WHERE id = ?", (source_id,)
            )
            if found is None:
                return None
            return _Source(
                queue_id,
                kind,
                source_id,
                found[0],
                parse_iso(found[1]),
                found[2] or None,
                "person" if found[2] else SELF_KIND,
            )
        found = self._db.query_one("SELECT text, created_at FROM passages WHERE id = ?", (source_id,))
        if found is None:
            return None
        return _Source(queue_id, kind, source_id, found[0], parse_iso(found[1]), None, SELF_KIND)

    def _fact_entity(self, agent_id: int, source: _Source, where: SourceRef, speaker: str, name: str) -> int | None:
        """The entity a model fact names: the source's speaker, or a thing found by its name."""
        if name == speaker:
            return self._speaker_id(agent_id, source, where)
        return self.graph.resolve(agent_id, name, "thing", at=source.at, **where)

    def _speaker_id(self, agent_id: int, source: _Source, where: SourceRef) -> int | None:
        if source.speaker is None:
            return self.graph.the_user(agent_id, self._current_user_name(), at=source.at, **where)
        return self.graph.resolve(agent_id, source.speaker, source.speaker_kind, at=source.at, **where)

    def _speaker_name(self, agent_id: int, source: _Source) -> str:
        """The speaker as the chat model is told: a person's name, or the name of the user's entity."""
        if source.speaker is not None:
            return source.speaker
        user = self.graph.user_entity(agent_id)
        return self.graph.entity(user).name if user is not None else self._current_user_name() or PLACEHOLDER

    # --- running ---------------------------------------------------------------------------
    def run_entities(
        self,
        agent_id: int | None = None,
        *,
        limit: int | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        report: ExtractionReport | None = None,
    ) -> ExtractionReport:
        """The NLP stage for due sources, a batch at a time, until none is left (or ``limit``)."""
        report = report or ExtractionReport()
        done = 0
        while not should_stop() and (limit is None or done < limit):
            rows = self._due("entities", agent_id, min(BATCH, (limit - done) if limit else BATCH))
            if not rows:
                break
            self._entities_batch(rows, report)
            done += len(rows)
        return report

    def _entities_batch(self, rows: list[tuple[int, int, str, int]], report: ExtractionReport) -> None:
        started = self._clock_seconds()
        sources, gone = [], []
        for row in rows:
            source = self._load(row)
            if source is None:  # the message or passage is gone
                gone.append(row[0])
            else:
                sources.append((row[1], source))
        if gone:
            with self._db.transaction():
                self._db.executemany("DELETE FROM graph_queue WHERE id = ?", [(queue_id,) for queue_id in gone])
        if not sources:
            return
        try:
            analyses = self._analyser.analyse([s.text for _a, s in sources])
        except Exception as error:  # noqa: BLE001 - one bad text must not stop the others
            if len(sources) == 1:
                self._record_failure(sources[0][1].queue_id, error, report)
                return
            for agent_id, source in sources:  # find the culprit one source at a time
                self._entities_batch([(source.queue_id, agent_id, source.kind, source.id)], report)
            return
        for (agent_id, source), analysis in zip(sources, analyses, strict=True):
            try:
                # One source a transaction, with the names embedded before it opens: the write
                # lock is held for SQL only, never for a model on a busy CPU, so an idle pass or
                # a turn waiting for it waits a fraction of a second, not for the whole catch-up.
                speaker = (
                    [(source.speaker, source.speaker_kind)]
                    if source.speaker and any(SPEAKER in (f.subject, f.object) for f in analysis.facts)
                    else []
                )
                self.graph.prepare_names(agent_id, [(e.name, e.kind) for e in analysis.entities] + speaker)
                with self._db.transaction():
                    self._store(agent_id, source, analysis, report)
                    self._db.execute("DELETE FROM graph_queue WHERE id = ?", (source.queue_id,))
                    facts_wanted = self.options.model_facts and (
                        source.kind == "message" or self.options.document_facts
                    )
                    if facts_wanted and analysis.entities:
                        self._db.execute(
                            "INSERT OR IGNORE INTO graph_queue(agent_id, source_kind, source_id, stage)"
                            " VALUES (?, ?, ?, 'facts')",
                            (agent_id, source.kind, source.id),
                        )
                report.sources += 1
            except MemDeskError:
                raise  # the store itself failed (disk full, locked): stop and let the caller report it
            except Exception as error:  # noqa: BLE001
                self._record_failure(source.queue_id, error, report)
        report.seconds_nlp += self._clock_seconds() - started

    def _record_failure(self, queue_id: int, error: BaseException, report: ExtractionReport) -> None:
        log.warning("graph extraction failed for queue item %s; it will be retried", queue_id, exc_info=error)
        with self._db.transaction():
            self._fail(queue_id, error)
        report.failed += 1
        report.errors.append(f"{type(error).__name__}: {error}")

    def _store(self, agent_id: int, source: _Source, analysis: Analysis, report: ExtractionReport) -> None:
        where = source.where()
        self.graph.clear_source(**where)
        before = int(self._db.scalar("SELECT COUNT(*) FROM graph_entities WHERE agent_id = ?", (agent_id,)))
        ids: dict[str, int] = {}
        for entity in analysis.entities:
            entity_id = self.graph.resolve(agent_id, entity.name, entity.kind, at=source.at, **where)
            if entity_id is not None:
                ids[entity.name] = entity_id
        mentioned = sorted(set(ids.values()))
        for entity_id in mentioned:
            self.graph.add_mention(agent_id, entity_id, at=source.at, **where)
        report.mentions += len(mentioned)
        speaker_used = any(SPEAKER in (f.subject, f.object) for f in analysis.facts)
        if speaker_used:
            speaker_id = self._speaker_id(agent_id, source, where)
            if speaker_id is not None:
                ids[SPEAKER] = speaker_id
        for found in analysis.facts:
            subject, obj = ids.get(found.subject), ids.get(found.object)
            if subject is not None and obj is not None:
                if self._new_fact(agent_id, subject, found.relation, obj, source.at, where):
                    report.facts += 1
        report.entities += (
            int(self._db.scalar("SELECT COUNT(*) FROM graph_entities WHERE agent_id = ?", (agent_id,))) - before
        )

    def run_facts(
        self,
        model: FactModel,
        agent_id: int | None = None,
        *,
        limit: int | None = None,
        cancel: CancelToken | None = None,
        prefix: Callable[[int], Sequence[ChatMessage]] = lambda _agent: (),
        report: ExtractionReport | None = None,
    ) -> ExtractionReport:
        """The chat model's stage for due sources. A cancelled call leaves its row for later."""
        report = report or ExtractionReport()
        done = 0
        while (limit is None or done < limit) and not (cancel is not None and cancel.cancelled):
            rows = self._due("facts", agent_id, 1)
            if not rows:
                break
            done += 1
            row = rows[0]
            started = self._clock_seconds()
            source = self._load(row)
            if source is None:
                self._db.execute("DELETE FROM graph_queue WHERE id = ?", (row[0],))
                continue
            agent = row[1]
            where = source.where()
            column = next(iter(where))
            names = [
                r[0]
                for r in self._db.query(
                    "SELECT DISTINCT COALESCE(root.name, e.name) FROM graph_mentions m JOIN graph_entities e"
                    " ON e.id = m.entity_id"
                    f" LEFT JOIN graph_entities root ON root.id = e.merged_into WHERE m.{column} = ? AND e.deleted = 0"
                    " ORDER BY m.id",
                    (source.id,),
                )
            ]
            speaker = self._speaker_name(agent, source)
            try:
                triples = model.extract(source.text, speaker, names, prefix=prefix(agent), cancel=cancel)
            except GenerationCancelled:
                break  # the user is waiting for the model: try this one again later
            except Exception as error:  # noqa: BLE001 - a model failure is retried, never a chat error
                self._record_failure(row[0], error, report)
                continue
            self.graph.prepare_names(
                agent,
                [
                    (name, source.speaker_kind if name == speaker else "thing")
                    for triple in triples
                    for name in (triple.subject, triple.object)
                ],
            )
            with self._db.transaction():
                for triple in triples:
                    subject = self._fact_entity(agent, source, where, speaker, triple.subject)
                    obj = self._fact_entity(agent, source, where, speaker, triple.object)
                    if (
                        subject is not None
                        and obj is not None
                        and self._new_fact(agent, subject, triple.relation, obj, source.at, where)
                    ):
                        report.model_facts += 1
                self._db.execute("DELETE FROM graph_queue WHERE id = ?", (row[0],))
            report.sources += 1
            report.seconds_model += self._clock_seconds() - started
        return report

    def _new_fact(self, agent_id: int, subject: int, relation: str, obj: int, at: datetime, where: SourceRef) -> bool:
        """Add an extractor fact; True when it is new (not one the graph already holds)."""
        newest = int(self._db.scalar("SELECT COALESCE(MAX(id), 0) FROM graph_facts"))
        fact_id = self.graph.add_fact(agent_id, subject, relation, obj, author="extractor", valid_from=at, **where)
        return fact_id is not None and fact_id > newest

    @staticmethod
    def _clock_seconds() -> float:
        import time

        return time.perf_counter()
