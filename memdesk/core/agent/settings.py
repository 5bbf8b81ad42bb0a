"""The agent's own settings: what the loop, its prompt and its chain rules are told, per agent."""

from __future__ import annotations

from dataclasses import dataclass

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import SamplingParams, sampling


@dataclass(frozen=True)
class AgentSettings:
    """Those that are settings (memdesk/core/base/settings_table.py) have no default here:
    ``from_settings`` takes them from the settings in force for the model (the model profile's
    precedence: memdesk/core/models/catalog.py's ``ModelProfile.settings_in_force``)."""

    max_steps: int  # per input event: stops runaway chains (a capable model's catalog entry may raise it)
    searches_per_turn: int  # new searches per search function and turn (paging does not count)
    heartbeat_minutes: int  # timed heartbeats while idle (0: off); the instructions say which
    login_after_minutes: int  # a login event when the agent opens after this gap (0: never)
    top_entities: int  # knowledge-graph entities shown with the memory section (0: none)
    params: SamplingParams
    #: inner_thoughts' bound, kept by the grammar: each character is time before the reply starts
    #: (None: the runtime's default). Per model (see models/catalog.py), stated in the instructions.
    thoughts_chars: int | None
    #: Recent messages a reply must not copy (0: no check); see agent/repetition.py.
    repeat_check_messages: int
    tool_section: str = "signatures"  # the prompt's tool list style, per model (see models/catalog.py)
    #: Functions the model is not offered, per model (see models/catalog.py): left out of the
    #: grammar and of the prompt's tool section.
    hidden_functions: frozenset[str] = frozenset()
    function_result_chars: int = 6000

    @classmethod
    def from_settings(
        cls, settings: Settings, *, tool_section: str = "signatures", hidden_functions: frozenset[str] = frozenset()
    ) -> AgentSettings:
        """The agent's settings from ``settings``; ``tool_section`` and ``hidden_functions`` are the
        model's (its catalog entry), not settings."""
        return cls(
            max_steps=settings.max_chained_steps,
            searches_per_turn=settings.max_searches_per_turn,
            heartbeat_minutes=settings.heartbeat_minutes,
            login_after_minutes=settings.login_after_minutes,
            # Without graph extraction there is no graph to show.
            top_entities=settings.graph_top_entities if settings.graph_extraction else 0,
            params=sampling(settings),
            thoughts_chars=settings.max_thought_chars,
            repeat_check_messages=settings.repeat_check_messages,
            tool_section=tool_section,
            hidden_functions=hidden_functions,
        )

    @property
    def reserve(self) -> int:
        """Tokens kept free for the model's answer."""
        return self.params.max_tokens
