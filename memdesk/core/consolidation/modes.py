"""Consolidation's modes and settings: off; apply (changes go straight into memory); ask (each
change is kept as a proposal the user accepts or rejects)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memdesk.core.base.errors import ConfigError
from memdesk.core.base.settings_table import DEFAULTS
from memdesk.core.runtime.base import SamplingParams

OFF, APPLY, ASK = "off", "apply", "ask"
MODES = (OFF, APPLY, ASK)


def parse_mode(value: str) -> str:
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise ConfigError(f"Consolidation mode must be one of {', '.join(MODES)}, not {value!r}")
    return mode


@dataclass(frozen=True)
class ConsolidationSettings:
    mode: str = DEFAULTS.consolidation
    every_turns: int = DEFAULTS.consolidation_every_turns  # at most one pass per this many user messages
    max_steps: int = 8  # model calls per pass (across resumes)
    params: SamplingParams = field(default_factory=SamplingParams)
