"""A memory folder read back: ``read_folder`` gives the agent-file document it holds, with the
edits a person made to core blocks (and the block files they added) and archival passages in the
Markdown files applied, and
``import_folder`` imports it as new agents (memdesk.core.transfer.agentfile: one transaction,
ids remapped, history and graph carried), then writes the fact lines changed or added in the
graph notes through the graph's own write path (graph_notes.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import AgentFileError, MemoryFolderError
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.core_memory import DEFAULT_LIMIT
from memdesk.core.transfer.agentfile import EXTENSION_KEY, ImportSummary, import_agent_file
from memdesk.core.transfer.agentfile.model import AgentFileServices, GraphTransfer
from memdesk.core.transfer.folder import graph_notes
from memdesk.core.transfer.folder.markdown import items, read_front_matter
from memdesk.core.transfer.folder.writing import DATA, FORMAT, VERSION


def _read(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise MemoryFolderError(f"Could not read {path}: {error}") from None


def read_folder(folder: Path) -> dict[str, Any]:
    folder = Path(folder)
    fields, _body = read_front_matter(_read(folder / "README.md")) if (folder / "README.md").is_file() else ({}, "")
    if fields.get("format") != FORMAT:
        raise MemoryFolderError(f"{folder} is not a MemDesk memory folder (its README.md does not say so)")
    if not isinstance(fields.get("version"), int) or fields["version"] > VERSION:
        raise MemoryFolderError(
            f"{folder} was written by a newer MemDesk (folder version {fields.get('version')})",
            hint="upgrade MemDesk to import it",
        )
    try:
        document = json.loads(_read(folder / DATA))
    except ValueError as error:
        raise MemoryFolderError(
            f"{folder / DATA} is damaged ({error})", hint="restore it from git or a backup"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("agents"), list):
        raise MemoryFolderError(f"{folder / DATA} is not an agent file")
    for agent in document["agents"]:
        directory = _directory(folder, agent)
        if directory is not None:
            _apply_blocks(document, agent, directory)
            _apply_passages(document, agent, directory)
    return document


def _directory(folder: Path, agent: dict) -> Path | None:
    """The agent's folder: the one whose agent.md names it."""
    for candidate in sorted(folder.iterdir()):
        marker = candidate / "agent.md"
        if marker.is_file() and read_front_matter(_read(marker))[0].get("name") == agent.get("name"):
            return candidate
    return None


def _apply_blocks(document: dict, agent: dict, directory: Path) -> None:
    """A block's file, edited, changes the block (its text and, from the front matter, its limit,
    description and read-only flag). A file the person added (a label the agent has no block of;
    without front matter, the file's name is the label) becomes a new block: the import checks it
    as it checks any block of an agent file."""
    blocks = {b["label"]: b for b in document.get("blocks", []) if b.get("id") in agent.get("block_ids", [])}
    for path in sorted((directory / "core").glob("*.md")):
        fields, body = read_front_matter(_read(path))
        label = fields.get("label", path.stem)
        block = blocks.get(label)
        if block is None:
            block = blocks[label] = _new_block(document, agent, label, body)
        block["value"] = body
        for key in ("limit", "description", "read_only"):
            if key in fields:
                block[key] = fields[key]


def _new_block(document: dict, agent: dict, label: Any, body: str) -> dict:
    taken = {b.get("id") for b in document.get("blocks", [])}
    number = len(taken)
    while f"block-folder-{number}" in taken:
        number += 1
    block = {
        "id": f"block-folder-{number}",
        "label": label,
        "value": body,
        "limit": max(DEFAULT_LIMIT, len(body)),
        "description": "",
        "read_only": False,
    }
    document.setdefault("blocks", []).append(block)
    agent.setdefault("block_ids", []).append(block["id"])
    return block


def _apply_passages(document: dict, agent: dict, directory: Path) -> None:
    passages = document.get(EXTENSION_KEY, {}).get("agents", {}).get(agent.get("id"), {}).get("passages") or []
    for path in sorted((directory / "archival").glob("*.md")):
        _fields, body = read_front_matter(_read(path))
        for kind, data, text in items(body):
            index = data.get("n")
            if kind == "passage" and isinstance(index, int) and 0 <= index < len(passages) and text.strip():
                passages[index]["text"] = text


def import_folder(services: AgentFileServices, folder: Path, *, graph: GraphTransfer | None = None) -> ImportSummary:
    """Bring the folder's agents back as new agents (a name taken gets a number)."""
    document = read_folder(folder)
    try:
        summary = import_agent_file(services, document, graph=graph, origin=Path(folder).name)
    except AgentFileError as error:
        raise MemoryFolderError(f"{folder}: {error.message}", hint=error.hint) from error
    if graph is not None and services.memory.graph is not None:
        _apply_graph_notes(services.memory.graph, Path(folder), document, summary)
    return summary


def graph_edits(folder: Path, document: dict) -> list[list[graph_notes.NoteEdit]]:
    """For each agent of ``document`` (read from ``folder``), the fact lines changed or added in
    its graph notes."""
    extension = document.get(EXTENSION_KEY, {}).get("agents", {})
    found = []
    for agent in document["agents"]:
        directory = _directory(Path(folder), agent)
        graph = extension.get(agent.get("id"), {}).get("graph")
        found.append(graph_notes.edits(directory, graph, _read) if directory is not None else [])
    return found


def _apply_graph_notes(store: KnowledgeGraph, folder: Path, document: dict, summary: ImportSummary) -> None:
    """After the agents are in: the graph notes' edits, each its own change in Memory history."""
    if len(summary.agents) != len(document["agents"]):
        return  # not one new agent per agent of the file: nothing to pair the notes with
    for changed, imported in zip(graph_edits(folder, document), summary.agents, strict=True):
        applied = graph_notes.apply_edits(store, imported.agent_id, changed, summary)
        if applied:
            summary.fix(f"{imported.name}: {applied} graph fact(s) changed or added in the folder were written")
