"""What an import did, for the person who asked for it: what came in, what was fixed on the way,
and what MemDesk could not map (reported, never dropped in silence)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ImportedAgent:
    name: str
    agent_id: int = 0
    file_name: str = ""  # the name in the file, when it had to change
    blocks: int = 0
    messages: int = 0
    in_context: int = 0
    passages: int = 0
    documents: int = 0
    tools_disabled: list[str] = field(default_factory=list)  # imported with their code, not enabled
    tools_builtin: list[str] = field(default_factory=list)  # provided by MemDesk's own functions
    history: int = 0
    graph: str = ""

    def line(self) -> str:
        parts = [f"{self.blocks} memory blocks", f"{self.messages} messages ({self.in_context} in context)"]
        if self.passages:
            parts.append(f"{self.passages} archival passages")
        if self.documents:
            parts.append(f"{self.documents} documents")
        if self.tools_builtin:
            parts.append(f"{len(self.tools_builtin)} tools provided by MemDesk")
        if self.tools_disabled:
            parts.append(f"{len(self.tools_disabled)} tools imported disabled ({', '.join(self.tools_disabled)})")
        if self.history:
            parts.append(f"{self.history} history entries")
        if self.graph:
            parts.append(self.graph)
        renamed = f" (named {self.file_name!r} in the file)" if self.file_name and self.file_name != self.name else ""
        return f"{self.name}{renamed}: " + ", ".join(parts)


@dataclass
class ImportSummary:
    source: str  # "letta" or "memdesk-json"
    agents: list[ImportedAgent] = field(default_factory=list)
    fixups: list[str] = field(default_factory=list)  # changed to fit, and said so
    unmapped: list[str] = field(default_factory=list)  # not imported: MemDesk has no place for it

    def fix(self, text: str) -> None:
        if text not in self.fixups:
            self.fixups.append(text)

    def skip(self, text: str) -> None:
        if text not in self.unmapped:
            self.unmapped.append(text)

    def text(self) -> str:
        lines = [
            f"Imported {len(self.agents)} agent(s) from a"
            f" {'Letta agent file' if self.source == 'letta' else 'MemDesk export'}:"
        ]
        lines += [f"  - {agent.line()}" for agent in self.agents]
        if self.fixups:
            lines.append("Adjusted on import:")
            lines += [f"  - {item}" for item in self.fixups]
        if self.unmapped:
            lines.append("Not imported (MemDesk has no equivalent):")
            lines += [f"  - {item}" for item in self.unmapped]
        return "\n".join(lines)
