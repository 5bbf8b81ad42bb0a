"""The prompt texts, read from ``desktop/resources/prompts`` (data files, not Python strings)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources.abc import Traversable

from desktop.errors import ConfigError

SUMMARY_WORD_LIMIT = 100


@dataclass(frozen=True)
class Prompts:
    system: str
    persona: str
    human: str
    summarizer: str
    plain_assistant: str
    consolidation: str  # instructions of the idle-time consolidation pass

    @classmethod
    def load(cls, folder: Traversable) -> "Prompts":
        def read(name: str) -> str:
            path = folder / name
            try:
                return path.read_text(encoding="utf-8").strip()
            except OSError as error:
                raise ConfigError(f"Missing prompt file {path}: {error.strerror or error}") from error

        return cls(
            system=read("system.txt"),
            persona=read("persona.txt"),
            human=read("human.txt"),
            summarizer=read("summarizer.txt").replace("{word_limit}", str(SUMMARY_WORD_LIMIT)),
            plain_assistant=read("plain_assistant.txt"),
            consolidation=read("consolidation.txt"),
        )
