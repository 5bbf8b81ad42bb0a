"""Agent files on disk: import either format (detected), export as .af or MemDesk JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import AgentExistsError, AgentFileError, ConfigError
from memdesk.core.transfer import memdesk_json
from memdesk.core.transfer.agentfile.checks import MALFORMED, damaged
from memdesk.core.transfer.agentfile.exporting import export_agent_file
from memdesk.core.transfer.agentfile.importing import import_agent_file
from memdesk.core.transfer.agentfile.model import AgentFileServices, GraphTransfer
from memdesk.core.transfer.agentfile.reading import MEMDESK_JSON, detect_format, read_agent_file
from memdesk.core.transfer.agentfile.summary import ImportedAgent, ImportSummary

FORMATS = ("af", "json")


def import_path(
    services: AgentFileServices, path: Path, *, name: str | None = None, graph: GraphTransfer | None = None
) -> ImportSummary:
    """Import every agent in the file at ``path`` in one transaction; the summary says what came in."""
    path = Path(path)
    data, fixups = read_agent_file(path)
    if detect_format(data) != MEMDESK_JSON:
        return import_agent_file(services, data, name=name, fixups=fixups, graph=graph, origin=path.name)
    try:
        record = memdesk_json.import_agent(services, data, name=name, fixups=fixups)
    except (AgentExistsError, ConfigError) as error:
        raise AgentFileError(error.message, hint=error.hint) from error
    except MALFORMED as error:
        raise damaged(error, f"{path.name}, a MemDesk export,") from error
    summary = ImportSummary(MEMDESK_JSON, fixups=fixups)
    memory = services.memory
    summary.agents.append(
        ImportedAgent(
            record.name,
            record.id,
            file_name=str(data.get("agent", {}).get("name", "")),
            blocks=len(memory.core.blocks(record.id)),
            messages=memory.recall.count(record.id),
            in_context=len(memory.recall.since(record.id, record.context_start_id)),
            passages=memory.archival.count(record.id),
        )
    )
    return summary


def export_document(
    services: AgentFileServices,
    agent_id: int,
    fmt: str = "af",
    *,
    llm_config: dict[str, Any] | None = None,
    graph: GraphTransfer | None = None,
) -> dict[str, Any]:
    if fmt == "af":
        return export_agent_file(services, [agent_id], llm_config=llm_config, graph=graph)
    if fmt == "json":
        return memdesk_json.export_agent(services, agent_id)
    raise AgentFileError(f"Unknown agent file format {fmt!r}; choose {' or '.join(FORMATS)}")


def export_path(services: AgentFileServices, agent_id: int, path: Path, fmt: str = "af", **options: Any) -> Path:
    """Write the export next to ``path`` first and move it in place: a failure never leaves half a file."""
    path = Path(path)
    document = export_document(services, agent_id, fmt, **options)
    temporary = path.with_name(f".{path.name}.part")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(document, handle, ensure_ascii=False, indent=1)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise AgentFileError(f"Could not write {path}: {error.strerror or error}") from error
    return path
