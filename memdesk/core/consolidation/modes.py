"""Consolidation's modes and settings: off; apply (changes go straight into memory); ask (each
change is kept as a proposal the user accepts or rejects)."""

from __future__ import annotations

from dataclasses import dataclass

from memdesk.core.base.errors import ConfigError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import SamplingParams, sampling

OFF, APPLY, ASK = "off", "apply", "ask"
MODES = (OFF, APPLY, ASK)


def parse_mode(value: str) -> str:
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise ConfigError(f"Consolidation mode must be one of {', '.join(MODES)}, not {value!r}")
    return mode


@dataclass(frozen=True)
class ConsolidationSettings:
    """Those that are settings (memdesk/core/base/settings_table.py) have no default here:
    ``from_settings`` takes them from a ``Settings``."""

    mode: str
    every_turns: int  # at most one pass per this many user messages
    params: SamplingParams
    max_steps: int = 8  # model calls per pass (across resumes)

    @classmethod
    def from_settings(cls, settings: Settings) -> ConsolidationSettings:
        return cls(settings.consolidation, settings.consolidation_every_turns, sampling(settings))
