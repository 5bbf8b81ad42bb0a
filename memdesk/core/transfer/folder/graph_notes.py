"""The knowledge graph's notes in a memory folder (``<agent>/graph/<entity>.md``): written from the
graph an export carries, and read back so that a fact line a person changed or added there becomes
the store's fact through the graph's own write path (recorded in Memory history, undoable there).

A note lists what its entity is the subject of, a line a fact: ``- lives in [[Paris]] (since
2024-03-01)``; a closed fact is struck through (``- ~~lives in [[London]]~~ (until ...)``). On
import, a current line the export did not write is an edit: when a line with the same object is
gone from that note, the person corrected that fact (its relation or date); otherwise it is a new
fact (a single-valued relation, such as "lives in", closes the older one as the graph always
does). Struck-through lines are the graph's past and are not read back; a line taken out deletes
nothing (the Knowledge panel does that), so a note mangled by an editor cannot empty the graph.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import ToolError
from memdesk.core.graph import names
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.transfer.agentfile.summary import ImportSummary
from memdesk.core.transfer.folder.markdown import front_matter, read_front_matter, slug, unique

_CURRENT = re.compile(r"^- (?P<relation>[^~\[\]].*?) \[\[(?P<object>[^\[\]]+)\]\](?: \(since (?P<since>[^)]*)\))?$")
_HEADING = re.compile(r"^# (?P<name>.+)$", re.MULTILINE)


@dataclass(frozen=True)
class FactLine:
    """A current fact as a note writes it."""

    relation: str
    obj: str
    since: str  # YYYY-MM-DD, or "" when the line gives no date

    @classmethod
    def parse(cls, line: str) -> FactLine | None:
        found = _CURRENT.match(line.strip())
        if found is None or not found["relation"].strip() or not found["object"].strip():
            return None
        return cls(found["relation"].strip(), found["object"].strip(), (found["since"] or "").strip())


def _notes(graph: Any) -> list[tuple[dict, list[str]]]:
    """Each entity that is the subject of a fact, with its note's fact lines in order."""
    if not isinstance(graph, dict):
        return []
    entities = {
        e["id"]: e for e in graph.get("entities") or [] if not e.get("deleted") and e.get("merged_into") is None
    }
    facts: dict[Any, list[str]] = defaultdict(list)
    for fact in graph.get("facts") or []:
        subject, obj = entities.get(fact.get("subject")), entities.get(fact.get("object"))
        if fact.get("deleted") or subject is None or obj is None:
            continue
        since = f" (since {fact['valid_from'][:10]})" if fact.get("valid_from") else ""
        line = f"- {fact['relation']} [[{obj['name']}]]{since}"
        if fact.get("valid_to"):
            line = f"- ~~{fact['relation']} [[{obj['name']}]]~~ (until {fact['valid_to'][:10]})"
        facts[subject["id"]].append(line)
    return [(entities[i], sorted(lines)) for i, lines in facts.items()]


def _named(graph: Any) -> list[tuple[str, dict, list[str]]]:
    """Each note: (its file name, its entity, its fact lines); names stable for the same graph."""
    taken: set[str] = set()
    return [(f"{unique(slug(entity['name'], 'entity'), taken)}.md", entity, lines) for entity, lines in _notes(graph)]


def graph_files(directory: str, graph: Any) -> dict[str, str]:
    """The agent's graph notes, one file per entity that is the subject of a fact."""
    files: dict[str, str] = {}
    for file_name, entity, lines in _named(graph):
        name = entity["name"]
        body = f"# {name}\n\nA {entity.get('kind', 'thing')}.\n\n" + "\n".join(lines) + "\n"
        files[f"{directory}/graph/{file_name}"] = front_matter({"name": name, "kind": entity.get("kind")}, body)
    return files


@dataclass(frozen=True)
class NoteEdit:
    """A fact line as the person left it (``line``), and the line of the same object the export
    wrote that is gone from the note (``replaces``; None: a new fact)."""

    where: str  # the note's file name, for what the import reports
    subject: str
    line: FactLine
    replaces: FactLine | None


def edits(directory: Path, graph: Any, read: Callable[[Path], str]) -> list[NoteEdit]:
    """The fact lines changed or added in the agent's graph notes since ``graph`` was exported.
    A note the export wrote speaks of its entity whatever its name now says (a rename there is
    not read back); a note the person added names its entity in its front matter or heading."""
    written = {file_name: (entity["name"], lines) for file_name, entity, lines in _named(graph)}
    found: list[NoteEdit] = []
    for path in sorted((directory / "graph").glob("*.md")):
        fields, body = read_front_matter(read(path))
        heading = _HEADING.search(body)
        named = str(fields.get("name") or (heading["name"].strip() if heading else path.stem))
        subject, exported = written.get(path.name, (named, []))
        present = {line.strip() for line in body.splitlines()}
        gone = [parsed for line in exported if line not in present and (parsed := FactLine.parse(line))]
        for line in body.splitlines():
            parsed = FactLine.parse(line)
            if parsed is None or line.strip() in exported:
                continue
            key = names.name_key(parsed.obj)
            replaces = next((old for old in gone if names.name_key(old.obj) == key), None)
            if replaces is not None:
                gone.remove(replaces)
            found.append(NoteEdit(path.name, subject, parsed, replaces))
    return found


def apply_edits(graph: KnowledgeGraph, agent_id: int, changed: list[NoteEdit], summary: ImportSummary) -> int:
    """Write each edit as the person's own change to the graph; the number applied. One that the
    graph refuses (an unusable name, an entity linked to itself) is reported, not applied."""
    applied = 0
    for edit in changed:
        try:
            _apply(graph, agent_id, edit)
            applied += 1
        except ToolError as error:
            line = f"- {edit.line.relation} [[{edit.line.obj}]]"
            summary.fix(f"graph/{edit.where}: {line!r} was not applied ({error.message})")
        except ValueError:
            summary.fix(f"graph/{edit.where}: {edit.line.since!r} is not a date (YYYY-MM-DD): the line was not applied")
    return applied


def _apply(graph: KnowledgeGraph, agent_id: int, edit: NoteEdit) -> None:
    since = _date(edit.line.since)
    old = _current_fact(graph, agent_id, edit.subject, edit.replaces) if edit.replaces is not None else None
    if old is None or edit.replaces is None:
        graph.insert_fact(agent_id, edit.subject, edit.line.relation, edit.line.obj, author="user", valid_from=since)
        return
    relation = edit.line.relation if edit.line.relation != edit.replaces.relation else None
    valid_from = since if edit.line.since != edit.replaces.since else None
    if relation is not None or valid_from is not None:
        graph.edit_fact(old, relation=relation, valid_from=valid_from)


def _current_fact(graph: KnowledgeGraph, agent_id: int, subject: str, line: FactLine) -> int | None:
    """The id of the subject's current fact the export wrote as ``line``."""
    entity = graph.find(agent_id, subject)
    if entity is None:
        return None
    key = names.name_key(line.obj)
    for fact in graph.facts(entity.id, current_only=True):
        if fact.subject_id == entity.id and fact.relation == line.relation and names.name_key(fact.object) == key:
            return fact.id
    return None


def _date(text: str) -> datetime | None:
    """The start of the day the line gives, in UTC (as the note writes it); None without one."""
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
