"""Every setting, declared once (type, default, description), persisted in the store.

The CLI and the settings dialog are generated from ``SETTINGS``; code reads a frozen ``Settings``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from desktop.core.agent.auto_recall import RecallSettings
from desktop.core.agent.forget.finder import DEFAULT_THRESHOLD as FORGET_THRESHOLD
from desktop.core.clock import zone_named
from desktop.core.runtime.base import SamplingParams
from desktop.core.storage import Database
from desktop.errors import ConfigError


@dataclass(frozen=True)
class Settings:
    model_path: str = ""  # empty: the bundled default model
    runtime: str = "llamacpp"  # "llamacpp" | "openai"
    openai_base_url: str = "http://127.0.0.1:8080/v1"
    openai_model: str = ""
    openai_schema: str = "json_schema"  # "json_schema" | "json_object" | "none" (the server ignores schemas)
    context_size: int = 8192
    threads: int = 0  # 0: let llama.cpp choose
    gpu_layers: int = 0
    chat_template: str = ""  # empty: the GGUF's own template
    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    seed: int = -1  # -1: random
    max_answer_tokens: int = 384
    max_chained_steps: int = 4
    max_thought_chars: int = 160  # inner_thoughts' bound in the grammar (the active model's catalog entry may set its own)
    max_searches_per_turn: int = 2
    # Automatic recall's defaults are stated once, where they were measured (agent/auto_recall.py).
    auto_recall: bool = RecallSettings.enabled
    auto_recall_budget: float = RecallSettings.budget_fraction
    auto_recall_timeout_ms: int = RecallSettings.timeout_ms
    heartbeat_minutes: int = 60  # 0: timed heartbeats off (the system prompt says which)
    login_after_minutes: int = 60  # 0: never send a login event
    http_enabled: bool = False
    http_allowlist: tuple[str, ...] = ()
    last_agent: str = ""  # the window reopens this agent on start
    time_zone: str = ""  # empty: the system's
    user_name: str = ""  # what the person is called: memory search reads a question naming them as about their own words
    consolidation: str = "ask"  # "off" | "apply" | "ask" (see desktop/core/agent/consolidation.py)
    consolidation_idle_minutes: int = 5
    consolidation_every_turns: int = 8
    graph_extraction: bool = True
    graph_model_facts: bool = True
    graph_document_facts: bool = False
    graph_top_entities: int = 8
    graph_search_expansion: bool = True
    history_max_changes: int = 10_000  # memory changes kept per agent (0: all)
    forget_similarity: float = FORGET_THRESHOLD  # measured where it is defined (agent/forget/finder.py)
    backup_folder: str = ""  # empty: the data folder's backups/
    backup_keep_daily: int = 7
    backup_keep_weekly: int = 4
    # Kept by the window itself (not in the settings dialog):
    welcome_done: bool = False  # the first-run welcome was shown (Help > Welcome shows it again)
    bundled_model_hint: bool = True  # the hint that the bundled model is a small demo (off once dismissed)
    window_layout: str = ""  # the window's size and panels as the user left them (Qt state, base64)

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, min_p=self.min_p,
            repeat_penalty=self.repeat_penalty, seed=None if self.seed < 0 else self.seed, max_tokens=self.max_answer_tokens,
        )


DESCRIPTIONS: dict[str, str] = {
    "model_path": "GGUF model file (empty: the bundled SmolLM2-135M-Instruct)",
    "runtime": "Model runtime: llamacpp (local) or openai (an OpenAI-compatible server)",
    "openai_base_url": "Base URL of the OpenAI-compatible server",
    "openai_model": "Model name to ask the OpenAI-compatible server for",
    "openai_schema": "How the server is asked for call-shaped JSON: json_schema, json_object or none",
    "context_size": "Context window in tokens (capped at the model's training context)",
    "threads": "CPU threads for llama.cpp (0: automatic)",
    "gpu_layers": "Layers to offload to a GPU (0: CPU only)",
    "chat_template": "Jinja chat template overriding the model's own",
    "temperature": "Sampling temperature",
    "top_k": "Top-k sampling",
    "top_p": "Top-p (nucleus) sampling",
    "min_p": "Min-p sampling",
    "repeat_penalty": "Repeat penalty",
    "seed": "Sampling seed (-1: random)",
    "max_answer_tokens": "Most tokens the model may generate per step (kept free in the context)",
    "max_chained_steps": "Most steps the agent may chain after one event (the last one must answer)",
    "max_thought_chars": "Most characters of the agent's private thoughts before each call (the grammar cuts them there; each is time before the reply)",
    "auto_recall": "Before each reply, search memory out of view and show the model the best hits (automatic recall)",
    "auto_recall_budget": "Share of the context window the memories recalled for a question may take (0.30; a statement gets a sixth of that)",
    "auto_recall_timeout_ms": "Longest the reply waits for automatic recall, in milliseconds (it goes ahead without it)",
    "max_searches_per_turn": "Most new searches per search function in one turn (paging through results does not count)",
    "heartbeat_minutes": "Timed heartbeat interval in minutes while idle (0: off); the agent's instructions say which",
    "login_after_minutes": "Send the agent a login event when it is opened after this many minutes without a message (0: never)",
    "http_enabled": "Allow the http_request function (asks before each request)",
    "http_allowlist": "Hosts http_request may reach",
    "last_agent": "Agent the window opens on start (empty: the first one)",
    "time_zone": "Time zone for the times you and the agent see, e.g. Europe/Lisbon (empty: the system's; the store keeps UTC)",
    "consolidation": "Idle-time memory consolidation: off, apply (edit memory directly) or ask (propose changes for review)",
    "consolidation_idle_minutes": "Minutes without activity before a consolidation pass may run",
    "consolidation_every_turns": "At most one consolidation pass per this many user messages",
    "graph_extraction": "Build the knowledge graph from your messages and documents in the background",
    "graph_model_facts": "Let the chat model add facts to the knowledge graph while it is idle",
    "graph_document_facts": "Also extract facts (not only entities) from documents (slow: uses the model)",
    "graph_top_entities": "Knowledge-graph entities shown to the model below the messages (0: none)",
    "graph_search_expansion": "Conversation search also follows the knowledge graph to linked entities (LoCoMo recall@10 0.701 -> 0.711)",
    "user_name": "Your name (optional): memory search then reads a question that names you, such as \"what did Ana say about the trip?\", as one about your own messages",
    "forget_similarity": "Forget also removes messages and passages this similar in meaning to what you name (cosine 0-1; 1: words only)",
    "history_max_changes": "Memory changes kept in each agent's history for each kind (blocks, passages, graph...), oldest dropped first (0: keep all)",
    "backup_folder": "Folder for snapshots of the store, e.g. another disk or a synced folder (empty: backups/ in the data folder)",
    "backup_keep_daily": "Automatic snapshots kept: the newest of each of this many most recent days",
    "backup_keep_weekly": "Automatic snapshots kept besides: the newest of each of this many most recent weeks",
    "welcome_done": "The first-run welcome was shown (false: show it at the next start)",
    "bundled_model_hint": "Show the hint that the bundled model is a small demo and a better one is in File > Models",
    "window_layout": "The window's size and panel layout as you left it (empty: the default layout)",
}


#: Settings that take one of a few words (the settings dialog shows a list; other values are refused).
CHOICES: dict[str, tuple[str, ...]] = {
    "consolidation": ("off", "apply", "ask"),
}


def _convert(name: str, kind: type, value: Any) -> Any:
    try:
        if kind is bool and isinstance(value, str):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes", "on")
        if kind is tuple:
            if isinstance(value, str):
                return tuple(v.strip() for v in value.split(",") if v.strip())
            return tuple(value)
        return kind(value)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"Setting {name} expects {kind.__name__}, got {value!r}") from error


_TYPES = {f.name: type(f.default) for f in fields(Settings)}
def _backup_folder(value: str) -> None:
    if value and not Path(value).expanduser().is_absolute():
        raise ConfigError(f"backup_folder must be a full path, got {value!r}", hint="for example /media/usb/memdesk-backups, or empty for the default")


def _not_negative(name: str):
    def check(value: int) -> None:
        if value < 0:
            raise ConfigError(f"Setting {name} cannot be negative, got {value}")

    return check


#: Values a type cannot check, refused before they are stored (each raises ConfigError).
_CHECKS = {
    "time_zone": zone_named, "backup_folder": _backup_folder,
    "backup_keep_daily": _not_negative("backup_keep_daily"), "backup_keep_weekly": _not_negative("backup_keep_weekly"),
}


class SettingsStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def load(self) -> Settings:
        stored = dict(self._db.query("SELECT key, value FROM settings"))
        values = {}
        for name, raw in stored.items():
            if name in _TYPES:
                values[name] = _convert(name, _TYPES[name], json.loads(raw))
        return replace(Settings(), **values)

    def stored_names(self) -> frozenset[str]:
        """The settings the user has set (the rest are defaults, which a model's catalog entry may refine)."""
        return frozenset(name for (name,) in self._db.query("SELECT key FROM settings") if name in _TYPES)

    def set(self, name: str, value: Any) -> Settings:
        if name not in _TYPES:
            raise ConfigError(f"Unknown setting {name!r}; known settings: {', '.join(_TYPES)}")
        converted = _convert(name, _TYPES[name], value)
        if name in CHOICES and converted not in CHOICES[name]:
            raise ConfigError(f"Setting {name} must be one of {', '.join(CHOICES[name])}, got {value!r}")
        if name in _CHECKS:
            _CHECKS[name](converted)
        stored = list(converted) if isinstance(converted, tuple) else converted
        self._db.execute(
            "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (name, json.dumps(stored)),
        )
        return self.load()
