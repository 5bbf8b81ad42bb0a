"""Memory as a folder a person can read, keep in git and edit: ``export_folder``.

    README.md                          what is where (and that the folder is plain text)
    <agent>/agent.md                   the agent: name, dates, system prompt, summary
    <agent>/core/<label>.md            one file per core memory block: limit and description in
                                       front matter, the block's text as the body (editable)
    <agent>/archival/<document>.md     passages of a document, in order (editable)
    <agent>/archival/notes-<YYYY-MM>.md  the agent's own archival notes, by month (editable)
    <agent>/conversation/<YYYY-MM>.md  the conversation, by month
    <agent>/imported/<source>/<date>-<title>.md  each conversation imported from another assistant
    <agent>/graph/<entity>.md          the knowledge graph's facts about each person, place, thing
    <agent>/history.md                 Memory history, oldest first
    data/agents.af                     everything, exactly, as a Letta agent file (what an import reads)

Names come from labels, titles, names and months, so an export of the same memory writes the
same files and a git diff shows what changed. Files are replaced one by one (written beside, then
moved over), never the folder: a ``.git`` inside it stays.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import MemoryFolderError
from memdesk.core.transfer.agentfile import EXTENSION_KEY, export_agent_file
from memdesk.core.transfer.agentfile.model import AgentFileServices, GraphTransfer
from memdesk.core.transfer.folder.graph_notes import graph_files
from memdesk.core.transfer.folder.markdown import front_matter, item, slug, unique

FORMAT = "memdesk-memory-folder"
VERSION = 1
DATA = "data/agents.af"


def export_folder(
    services: AgentFileServices,
    agent_ids: list[int],
    folder: Path,
    *,
    graph: GraphTransfer | None = None,
    llm_config: dict[str, Any] | None = None,
    encrypted: bool = False,
) -> list[Path]:
    """Write the agents' memory into ``folder`` (new, empty, or an earlier export of it); the
    files written. ``encrypted``: the store is, so the README says the folder is not."""
    folder = Path(folder)
    _check_target(folder)
    document = export_agent_file(services, agent_ids, llm_config=llm_config, graph=graph)
    files: dict[str, str] = {}
    names: set[str] = {"data"}
    listed = []
    for agent in document["agents"]:
        mine = document[EXTENSION_KEY]["agents"].get(agent["id"], {})
        directory = unique(slug(agent["name"], "agent"), names)
        listed.append((agent["name"], directory))
        blocks = [b for b in document["blocks"] if b["id"] in agent["block_ids"]]
        files.update(_agent_files(directory, agent, mine, blocks))
    files["README.md"] = _readme(listed, encrypted, services.clock.now())
    files[DATA] = json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    return _write(folder, files)


def _check_target(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise MemoryFolderError(f"{folder} is a file, not a folder")
    if folder.is_dir() and any(p.name not in (".git", ".gitignore") for p in folder.iterdir()):
        readme = folder / "README.md"
        if not (readme.is_file() and FORMAT in readme.read_text(encoding="utf-8", errors="replace")[:2000]):
            raise MemoryFolderError(
                f"{folder} is not empty and not a MemDesk memory folder", hint="choose a new or empty folder"
            )


def _write(folder: Path, files: dict[str, str]) -> list[Path]:
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(files.items()):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text:
                written.append(path)
                continue  # unchanged: its time stays, and so do tools that watch it
            part = path.with_name(f".{path.name}.part")
            with open(part, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.replace(part, path)
            written.append(path)
        keep = {folder / n for n in files}
        for old in sorted(folder.rglob("*.md"), reverse=True):  # what an earlier export wrote, gone now
            if old not in keep and ".git" not in old.relative_to(folder).parts:
                old.unlink()
    except OSError as error:
        raise MemoryFolderError(f"Could not write {folder}: {error.strerror or error}") from error
    return written


def _readme(agents: list[tuple[str, str]], encrypted: bool, now: datetime) -> str:
    lines = ["# MemDesk memory", ""]
    if encrypted:
        lines += [
            "**This folder is plain text.** The MemDesk store it came from is encrypted; anyone who can read",
            "this folder can read everything below. Keep it somewhere as private as the store.",
            "",
        ]
    lines += [
        "What a MemDesk companion remembers, readable without MemDesk. Each agent has a folder:",
        "",
        *[f"- [{name}]({directory}/agent.md) in `{directory}/`" for name, directory in agents],
        "",
        "In each agent's folder:",
        "",
        "- `core/<label>.md`: one file per core memory block, the text the model always sees; its",
        "  character limit and description are in the front matter. Edit the text here and import",
        "  the folder to change it; a file you add here becomes a new block, named after the file.",
        "- `archival/`: archival memory: a file per document (its passages in order) and the agent's",
        "  own notes by month (`notes-YYYY-MM.md`). Passage texts can be edited too.",
        "- `conversation/YYYY-MM.md`: the conversation, month by month.",
        "- `imported/<source>/`: conversations imported from other assistants, one file each.",
        "- `graph/<name>.md`: what the knowledge graph holds about each person, place and thing, a",
        "  line a fact (`- lives in [[Paris]] (since 2024-03-01)`). A line you change or add here",
        "  becomes the graph's fact on import; struck-through lines are its past and are not read.",
        "- `history.md`: Memory history, every change to memory, oldest first.",
        "",
        "`data/agents.af` holds all of it exactly, as a Letta agent file: `memdesk import FOLDER --apply`",
        "reads it back (with the edits made to core blocks, passages and graph facts here) as new agents.",
        "",
    ]
    fields = {"format": FORMAT, "version": VERSION, "agents": [name for name, _d in agents]}
    return front_matter(fields, "\n".join(lines))


def _agent_files(directory: str, agent: dict, mine: dict, blocks: list[dict]) -> dict[str, str]:
    files: dict[str, str] = {}
    created = mine.get("created_at") or ""
    summary = mine.get("summary") or ""
    body = f"# {agent['name']}\n\n## System prompt\n\n{agent.get('system', '')}\n"
    if summary:
        body += f"\n## Summary of the conversation out of its context window\n\n{summary}\n"
    files[f"{directory}/agent.md"] = front_matter({"name": agent["name"], "created_at": created}, body)
    labels: set[str] = set()
    for block in blocks:
        name = unique(slug(block["label"], "block"), labels)
        fields = {
            "label": block["label"],
            "limit": block["limit"],
            "description": block.get("description") or "",
            "read_only": bool(block.get("read_only")),
        }
        files[f"{directory}/core/{name}.md"] = front_matter(fields, block["value"])
    files.update(_archival(directory, mine))
    files.update(_conversation(directory, agent, mine))
    files.update(_imported(directory, mine))
    files.update(graph_files(directory, mine.get("graph")))
    files[f"{directory}/history.md"] = _history(mine.get("history") or [])
    return files


def _month(at: str | None) -> str:
    return at[:7] if at and len(at) >= 7 else "undated"


def _archival(directory: str, mine: dict) -> dict[str, str]:
    documents = {d["id"]: d for d in mine.get("documents") or []}
    groups: dict[str, list[str]] = defaultdict(list)
    titles: dict[str, str] = {}
    names: set[str] = set()
    by_document: dict[str, str] = {}
    for index, passage in enumerate(mine.get("passages") or []):
        document = documents.get(passage.get("document"))
        if document is not None:
            if document["id"] not in by_document:
                by_document[document["id"]] = unique(slug(document.get("title") or document["path"], "document"), names)
                titles[by_document[document["id"]]] = f"# {document.get('title')}\n\nFrom `{document['path']}`.\n\n"
            name = by_document[document["id"]]
        else:
            name = f"notes-{_month(passage.get('created_at'))}"
            titles.setdefault(name, f"# Archival notes, {_month(passage.get('created_at'))}\n\n")
        where = {k: passage[k] for k in ("page", "section") if passage.get(k) is not None}
        groups[name].append(item("passage", {"n": index, "at": passage.get("created_at"), **where}, passage["text"]))
    return {
        f"{directory}/archival/{name}.md": front_matter({"passages": len(parts)}, titles[name] + "".join(parts))
        for name, parts in groups.items()
    }


def _conversation(directory: str, agent: dict, mine: dict) -> dict[str, str]:
    details = mine.get("messages") or {}
    months: dict[str, list[str]] = defaultdict(list)
    for message in agent.get("messages") or []:
        detail = details.get(message.get("id"))
        if detail is None:
            continue
        at = message.get("created_at") or ""
        kind = detail.get("kind", "")
        who = detail.get("author") or {"user_message": "you", "assistant_call": agent["name"]}.get(kind, kind)
        text = detail.get("search_text") or ""
        if not text:
            continue  # app events and tool plumbing: in data/agents.af
        months[_month(at)].append(f"### {at[:16].replace('T', ' ')} · {who}\n\n{text}\n\n")
    return {
        f"{directory}/conversation/{month}.md": f"# Conversation, {month}\n\n" + "".join(parts)
        for month, parts in months.items()
    }


def _imported(directory: str, mine: dict) -> dict[str, str]:
    files: dict[str, str] = {}
    names: set[str] = set()
    for conversation in mine.get("imported_conversations") or []:
        started = conversation.get("started_at") or ""
        name = unique(f"{started[:10] or 'undated'}-{slug(conversation.get('title') or '', 'untitled', 50)}", names)
        lines = [f"# {conversation.get('title') or '(untitled)'}", ""]
        for message in conversation.get("messages") or []:
            who = message.get("author") or ("you" if message.get("role") == "user" else conversation.get("assistant"))
            lines += [
                f"### {str(message.get('at', ''))[:16].replace('T', ' ')} · {who}",
                "",
                message.get("text", ""),
                "",
            ]
        fields = {k: conversation.get(k) for k in ("source", "external_id", "title", "assistant", "started_at")}
        files[f"{directory}/imported/{slug(conversation.get('source') or 'other')}/{name}.md"] = front_matter(
            fields, "\n".join(lines)
        )
    return files


def _history(history: list[dict]) -> str:
    lines = ["# Memory history", "", "Every change to memory, oldest first.", ""]
    for change in history:
        at = change.get("at") or ""
        what = change.get("label") or change.get("kind")
        verb = "reverted" if change.get("reverts") is not None else change.get("action")
        line = f"- {at[:16].replace('T', ' ')} · {change.get('source')} {verb} {change.get('kind')} {what}"
        if change.get("note"):
            line += f" ({change['note']})"
        lines.append(line)
        for side in ("before", "after"):
            text = change.get(side)
            if isinstance(text, str) and text:
                quoted = "\n".join(f"    > {t}" if t else "    >" for t in text.splitlines())
                lines.append(f"  - {side}:\n{quoted}")
    return "\n".join(lines) + "\n"
