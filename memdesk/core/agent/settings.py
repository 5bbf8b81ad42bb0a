"""The agent's own settings: what the loop, its prompt and its chain rules are told, per agent."""

from __future__ import annotations

from dataclasses import dataclass, field

from memdesk.core.base.settings_table import DEFAULTS
from memdesk.core.runtime.base import SamplingParams


@dataclass(frozen=True)
class AgentSettings:
    """Defaults: the declared settings' (memdesk/core/base/settings_table.py); memdesk.app builds
    these from the settings in force (``open_agent``)."""

    max_steps: int = (
        DEFAULTS.max_chained_steps
    )  # per input event: stops runaway chains (a capable model's catalog entry may raise it)
    searches_per_turn: int = (
        DEFAULTS.max_searches_per_turn
    )  # new searches per search function and turn (paging does not count)
    heartbeat_minutes: int = (
        DEFAULTS.heartbeat_minutes
    )  # timed heartbeats while idle (0: off); the instructions say which
    login_after_minutes: int = (
        DEFAULTS.login_after_minutes
    )  # a login event when the agent opens after this gap (0: never)
    function_result_chars: int = 6000
    top_entities: int = DEFAULTS.graph_top_entities  # knowledge-graph entities shown with the memory section (0: none)
    params: SamplingParams = field(default_factory=SamplingParams)
    tool_section: str = "signatures"  # the prompt's tool list style, per model (see models/catalog.py)
    #: inner_thoughts' bound, kept by the grammar: each character is time before the reply starts
    #: (None: the runtime's default). Per model (see models/catalog.py), stated in the instructions.
    thoughts_chars: int | None = DEFAULTS.max_thought_chars
    #: Functions the model is not offered, per model (see models/catalog.py): left out of the
    #: grammar and of the prompt's tool section.
    hidden_functions: frozenset[str] = frozenset()

    @property
    def reserve(self) -> int:
        """Tokens kept free for the model's answer."""
        return self.params.max_tokens
