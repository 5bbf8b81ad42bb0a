"""The prompt texts, read from ``memdesk/resources/prompts`` (data files, not Python strings)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources.abc import Traversable

from memdesk.core.base.errors import ConfigError

SUMMARY_WORD_LIMIT = 100


@dataclass(frozen=True)
class Prompts:
    system: str
    #: The default persona, with ``{name}`` where the agent's name goes (see ``persona_for``).
    persona: str
    human: str
    summarizer: str
    plain_assistant: str
    consolidation: str  # instructions of the idle-time consolidation pass

    @classmethod
    def load(cls, folder: Traversable) -> Prompts:
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

    def persona_for(self, name: str) -> str:
        """The default persona of an agent called ``name``: it must not call itself anything else."""
        return persona_text(self.persona, name)


NAME_PLACEHOLDER = "{name}"


def persona_text(template: str, name: str) -> str:
    """``template`` with the agent's name in place of ``{name}`` (no other brace is touched)."""
    return template.replace(NAME_PLACEHOLDER, name.strip())


def renamed_persona(persona: str, old_name: str, new_name: str) -> str | None:
    """The persona with the agent's old name replaced by the new one where it names itself
    ("My name is Sam", "I am Sam"), or None when the text does not mention the old name."""
    old, new = old_name.strip(), new_name.strip()
    if not old or old == new:
        return None
    pattern = re.compile(rf"(?<![\w]){re.escape(old)}(?![\w])")
    if not pattern.search(persona):
        return None
    return pattern.sub(lambda _m: new, persona)
