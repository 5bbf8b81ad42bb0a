"""What MemDesk learned from imported conversations: proposals for core memory, never written
unreviewed.

Two readers find facts about the person in what they wrote in their imported conversations: the
person's own first-person statements ("my name is", "I live in", "I work at", "my daughter Mia",
"I'm allergic to") read here, and the knowledge graph's facts about the user that the background
extraction drew from those messages. A fact that holds one value at a time (where they live, where
they work, their name) is proposed in its newest version, the older ones named after it ("earlier:
Berlin"). Each proposal keeps the messages it came from. Accepting one (as proposed or edited)
appends it to the human block through core memory, so Memory history records it and undo takes
it back; rejecting it keeps it from being proposed again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from memdesk.core.base.clock import day_month_year, iso, parse_iso
from memdesk.core.base.errors import MemDeskError, ToolError
from memdesk.core.graph.relations import relation_key
from memdesk.core.memory.history import USER, Cause
from memdesk.core.memory.recall import IMPORTED_USER
from memdesk.core.memory.services import MemoryServices

PENDING, ACCEPTED, REJECTED, SUPERSEDED = "pending", "accepted", "rejected", "superseded"
#: The block learned facts go to when the agent has one of that name (else its first writable one).
BLOCK = "human"
#: Messages read per step (a step is short: a message the person sends goes first).
STEP_MESSAGES = 2000
#: Source messages kept per proposal (the newest).
MAX_SOURCES = 5
_NAME = r"([A-Z][\w'’-]+(?: [A-Z][\w'’-]+){0,2})"
_PLACE = r"([A-Z][\w'’-]+(?:[ -][A-Z][\w'’-]+){0,3})"
_THING = r"([\w'’ -]{2,40}?)"
_END = r"(?=\s*(?:[.!?;,)]|\band\b|\bbut\b|\bsince\b|\bfor\b|\bnow\b|$))"
_PEOPLE = (
    "wife|husband|partner|son|daughter|mother|mom|mum|father|dad|brother|sister|boyfriend|girlfriend"
    "|best friend|friend|boss|grandmother|grandfather|dog|cat"
)
_I_AM = r"I(?:'m| am|’m)"


def _said(lead: str, rest: str) -> re.Pattern:
    """``lead`` in any case (a sentence may begin with it), then ``rest`` as written (a name
    begins with a capital)."""
    return re.compile(rf"\b(?i:{lead})\s+{rest}")


#: (kind, key, pattern, how the fact reads): a key holds one value at a time (a newer one replaces
#: it) unless it ends in "*" (many at once: each as it reads).
_PATTERNS: tuple[tuple[str, str, re.Pattern, str], ...] = (
    ("name", "name", _said("my name is", _NAME), "Name: {0}"),
    ("name", "name", _said(rf"call me|{_I_AM} called", _NAME), "Name: {0}"),
    ("place", "lives in", _said(r"I (?:live|am living|'m living|’m living) in", _PLACE), "Lives in {0}"),
    ("place", "lives in", _said(r"I (?:just |recently )?(?:moved|relocated) to", _PLACE), "Lives in {0}"),
    ("place", "from", _said(rf"{_I_AM} (?:originally )?from", _PLACE), "Is from {0}"),
    ("work", "works at", _said(r"I (?:work|am working|'m working|’m working) (?:at|for)", _PLACE), "Works at {0}"),
    ("work", "works as", _said(r"I work as an?", _THING + _END), "Works as a {0}"),
    ("work", "works as", _said(r"my job is", _THING + _END), "Job: {0}"),
    ("people", "people*", _said(rf"my ({_PEOPLE})(?:'s name is| is called| named|,)?", _NAME), "{0}: {1}"),
    ("preference", "allergy*", _said(rf"{_I_AM} allergic to", _THING + _END), "Allergic to {0}"),
    ("preference", "diet", _said(rf"{_I_AM}(?: a)?", r"(vegetarian|vegan|pescatarian)\b"), "Eats {0}"),
    (
        "preference",
        "favourite*",
        _said(r"my fav(?:ou)?rite", r"([a-z]+(?: [a-z]+)?) is " + _THING + _END),
        "Favourite {0}: {1}",
    ),
    ("preference", "loves*", _said(r"I (?:really )?love", _THING + _END), "Loves {0}"),
    ("fact", "born", _said(r"I was born(?: on| in)?", r"([\w ,]{4,30}?)(?=[.!?;]|$)"), "Born {0}"),
)
#: The graph's relations about the user worth a proposal, as a fact reads ("lives in" Berlin).
_GRAPH = {
    "live in": ("place", "lives in", "Lives in {0}"),
    "work at": ("work", "works at", "Works at {0}"),
    "work as": ("work", "works as", "Works as a {0}"),
    "be named": ("name", "name", "Name: {0}"),
    "married to": ("people", "married to", "Married to {0}"),
    "study at": ("work", "studies at", "Studies at {0}"),
}
_NOT_A_THING = frozenset({"it", "that", "this", "them", "you", "to", "the idea", "your", "how"})


@dataclass(frozen=True)
class Proposal:
    id: int
    agent_id: int
    kind: str
    label: str
    text: str
    key: str
    valid_from: datetime | None
    sources: list[int]
    status: str
    change_id: int | None


@dataclass
class _Found:
    kind: str
    key: str
    text: str
    at: datetime
    sources: list[int]


_COLUMNS = "id, agent_id, kind, label, text, key, valid_from, sources, status, change_id"


def _proposal(row) -> Proposal:
    return Proposal(
        row[0], row[1], row[2], row[3], row[4], row[5], parse_iso(row[6]) if row[6] else None, json.loads(row[7]),
        row[8], row[9],
    )  # fmt: skip


class Learning:
    def __init__(self, memory: MemoryServices, *, user_name: str = "") -> None:
        self.memory = memory
        self.user_name = user_name

    # --- finding --------------------------------------------------------------------------------
    def propose(self, agent_id: int) -> int:
        """Read every imported conversation and propose what is new; how many proposals wait."""
        for _ in self.steps(agent_id):
            pass
        return len(self.pending(agent_id))

    def steps(self, agent_id: int) -> Iterator[int]:
        """``propose`` a step at a time (yields the messages read so far)."""
        found: dict[tuple[str, str], _Found] = {}
        db, after, read = self.memory.db, 0, 0
        while True:
            rows = db.query(
                "SELECT id, search_text, created_at FROM messages WHERE agent_id = ? AND kind = ? AND id > ?"
                " ORDER BY id LIMIT ?",
                (agent_id, IMPORTED_USER, after, STEP_MESSAGES),
            )
            if not rows:
                break
            for message_id, text, created in rows:
                for kind, key, said in _statements(text):
                    _keep(found, _Found(kind, key, said, parse_iso(created), [message_id]))
            after, read = rows[-1][0], read + len(rows)
            yield read
        for fact in self._graph_facts(agent_id):
            _keep(found, fact)
        self._store(agent_id, list(found.values()))
        yield read

    def _graph_facts(self, agent_id: int) -> list[_Found]:
        graph = self.memory.graph
        user = graph.user_entity(agent_id) if graph is not None else None
        if user is None:
            return []
        rows = self.memory.db.query(
            "SELECT f.relation, o.name, f.valid_from, m.created_at, m.id FROM graph_facts f"
            " JOIN graph_entities o ON o.id = f.object_id JOIN messages m ON m.id = f.message_id"
            " WHERE f.agent_id = ? AND f.subject_id = ? AND f.deleted = 0 AND m.conversation_id IS NOT NULL",
            (agent_id, user),
        )
        found = []
        for relation, obj, valid_from, created, message_id in rows:
            known = _GRAPH.get(relation_key(relation))
            if known is not None:
                kind, key, form = known
                at = parse_iso(valid_from) if valid_from else parse_iso(created)
                found.append(_Found(kind, key, form.format(obj), at, [message_id]))
        return found

    def _store(self, agent_id: int, found: list[_Found]) -> None:
        """Single-valued facts: the newest version, with the earlier ones named; the rest as found.
        What core memory says already, or the person rejected, is not proposed again."""
        db, now = self.memory.db, iso(self.memory.clock.now())
        label = self._label(agent_id)
        holding = self.memory.core.get(agent_id, label) if label else None
        block = holding.value.casefold() if holding is not None else ""
        by_key: dict[str, list[_Found]] = {}
        for fact in found:
            by_key.setdefault(fact.key, []).append(fact)
        with db.transaction():
            for key, versions in by_key.items():
                versions.sort(key=lambda f: f.at, reverse=True)
                newest = versions[0]
                text = newest.text
                if "*" not in key and newest.kind in ("place", "work"):
                    text += f" (since {day_month_year(newest.at).split(' ', 1)[1]})"  # month and year
                older = [v.text.split(" ", 2)[-1] for v in versions[1:] if v.text != newest.text]
                if older:
                    text += f"; earlier: {', '.join(dict.fromkeys(older))}"
                if newest.text.casefold() in block:
                    continue
                sources = sorted({s for v in versions for s in v.sources}, reverse=True)[:MAX_SOURCES]
                cursor = db.execute(
                    "INSERT OR IGNORE INTO learned_proposals(agent_id, kind, label, text, key, valid_from, sources,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (agent_id, newest.kind, label or BLOCK, text, key, iso(newest.at), json.dumps(sources), now),
                )
                if cursor.rowcount:
                    db.execute(
                        "UPDATE learned_proposals SET status = ?"
                        " WHERE agent_id = ? AND key = ? AND status = ? AND id != ?",
                        (SUPERSEDED, agent_id, key, PENDING, cursor.lastrowid),
                    )

    def _label(self, agent_id: int) -> str | None:
        blocks = self.memory.core.blocks(agent_id)
        named = [b for b in blocks if b.label == BLOCK and not b.read_only]
        writable = named or [b for b in blocks if not b.read_only]
        return writable[0].label if writable else None

    # --- the person's review ------------------------------------------------------------------
    def pending(self, agent_id: int) -> list[Proposal]:
        return self.listed(agent_id, (PENDING,))

    def listed(self, agent_id: int, statuses: tuple[str, ...] = (PENDING,)) -> list[Proposal]:
        marks = ",".join("?" * len(statuses))
        rows = self.memory.db.query(
            f"SELECT {_COLUMNS} FROM learned_proposals WHERE agent_id = ? AND status IN ({marks})"
            " ORDER BY kind, valid_from DESC, id",
            (agent_id, *statuses),
        )
        return [_proposal(r) for r in rows]

    def get(self, proposal_id: int) -> Proposal:
        row = self.memory.db.query_one(f"SELECT {_COLUMNS} FROM learned_proposals WHERE id = ?", (proposal_id,))
        if row is None:
            raise MemDeskError(f"No proposal {proposal_id}", hint="`memdesk learned` lists them")
        return _proposal(row)

    def sources(self, proposal: Proposal) -> list[tuple[datetime, str, str]]:
        """Where it came from: (when, the conversation's title and source, what the person wrote)."""
        marks = ",".join("?" * len(proposal.sources)) or "NULL"
        rows = self.memory.db.query(
            f"SELECT m.created_at, c.title, c.source, m.search_text FROM messages m"
            f" LEFT JOIN imported_conversations c ON c.id = m.conversation_id"
            f" WHERE m.id IN ({marks}) ORDER BY m.id DESC",
            tuple(proposal.sources),
        )
        return [(parse_iso(r[0]), f"{r[1] or '(untitled)'} ({r[2] or 'chat'})", r[3]) for r in rows]

    def accept(self, proposal_id: int, text: str | None = None) -> Proposal:
        """Write it (or the person's edit of it) into core memory, through the normal path."""
        proposal = self._open(proposal_id)
        words = (text if text is not None else proposal.text).strip()
        if not words:
            raise MemDeskError("An accepted proposal needs some text", hint="reject it instead")
        cause = Cause(
            message_id=proposal.sources[0] if proposal.sources else None,
            note="learned from an imported conversation, accepted by you",
        )
        db = self.memory.db
        try:
            with db.transaction():
                self.memory.core.append(proposal.agent_id, proposal.label, words, cause=cause, source=USER)
                db.execute(
                    "UPDATE learned_proposals SET status = ?, text = ?, change_id = ?, decided_at = ? WHERE id = ?",
                    (
                        ACCEPTED,
                        words,
                        cause.recorded[-1] if cause.recorded else None,
                        iso(self.memory.clock.now()),
                        proposal.id,
                    ),
                )
        except ToolError as error:
            raise MemDeskError(
                f"Could not add it to the {proposal.label} block: {error.message}",
                hint="make room in the block, or accept a shorter edit of it",
            ) from None
        return self.get(proposal.id)

    def reject(self, proposal_id: int) -> Proposal:
        proposal = self._open(proposal_id)
        with self.memory.db.transaction():
            self.memory.db.execute(
                "UPDATE learned_proposals SET status = ?, decided_at = ? WHERE id = ?",
                (REJECTED, iso(self.memory.clock.now()), proposal.id),
            )
        return self.get(proposal.id)

    def _open(self, proposal_id: int) -> Proposal:
        proposal = self.get(proposal_id)
        if proposal.status != PENDING:
            raise MemDeskError(f"Proposal {proposal_id} was already {proposal.status}")
        return proposal


def _statements(text: str) -> Iterator[tuple[str, str, str]]:
    """(kind, key, how it reads) for each first-person statement about the person in ``text``."""
    for kind, key, pattern, form in _PATTERNS:
        for found in pattern.finditer(text):
            values = [g.strip(" ,") for g in found.groups()]
            if (
                not all(values)
                or values[-1].casefold() in _NOT_A_THING
                or values[-1].casefold().startswith(("to ", "the way", "how ", "that ", "it "))
            ):
                continue
            said = form.format(*values)
            yield kind, key if not key.endswith("*") else f"{key}{said.casefold()}", said


def _keep(found: dict[tuple[str, str], _Found], fact: _Found) -> None:
    """One entry per fact as it reads; its sources gathered, its date the newest mention."""
    entry = found.get((fact.key, fact.text.casefold()))
    if entry is None:
        found[(fact.key, fact.text.casefold())] = fact
    else:
        entry.sources += fact.sources
        entry.at = max(entry.at, fact.at)
