"""Every setting MemDesk has, declared once: its type (that of its default), default, allowed
values, one-line description and flags. The declaration is the ``Settings`` dataclass below, one
field per setting (qutebrowser's ``configdata.yml`` is the model).

Everything else reads it from here: the store converts and checks what is set
(``memdesk/core/storage/settings_store.py``), the settings dialog generates its rows
(``memdesk/ui/dialogs/settings.py``), ``memdesk settings`` lists and validates them, and
``docs/settings.md`` is generated from it (``settings_doc.py``). The components' own settings types
(``SamplingParams``, ``LlamaSettings``, ``AgentSettings``, ``RecallSettings``...) keep no default
for a value that is a setting: each is built from a ``Settings`` by one function beside it
(``sampling``, ``X.from_settings``), so a default lives here and nowhere else.

One way to read a value: the composition root and the front ends read the store
(``SettingsStore.load``, which ``Services.settings`` is); the core is handed a ``Settings``, the
values it needs, or, where a change must reach it while it runs, a function that reads them again.
No core module reads the store's settings itself (a test holds it to that).

This module sits low in the core's layers (only the clock below it), so every layer may read it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from memdesk.core.base.clock import zone_named
from memdesk.core.base.errors import ConfigError

#: The flags a setting may carry, in the order they are shown.
RESTART = "restart"  # the model is loaded again when it changes
ADVANCED = "advanced"  # a tuning knob: the dialog keeps it on its own tab
HIDDEN = "hidden"  # kept by the app itself (the window's state): not in the dialog
SECRET = "secret"  # never printed: the terminal says whether it is set
FLAGS = (RESTART, ADVANCED, HIDDEN, SECRET)
#: How each flag reads where settings are listed (the terminal, docs/settings.md).
FLAG_WORDS = {RESTART: "reloads the model", ADVANCED: "advanced", HIDDEN: "kept by the window", SECRET: "secret"}


@dataclass(frozen=True)
class Declared:
    """One setting as declared. ``kind`` is bool, int, float, str or tuple (a list of words,
    written comma-separated). ``minimum``/``maximum`` bound a number, ``choices`` a word;
    ``check`` refuses what neither can express (it raises ConfigError)."""

    name: str
    kind: type
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    restart: bool = False
    advanced: bool = False
    hidden: bool = False
    secret: bool = False
    #: It decides what MemDesk runs or loads, or where it sends or keeps data: only this machine's
    #: user sets it, so a snapshot from elsewhere (memdesk/core/storage/foreign_snapshots.py) does
    #: not bring it.
    local_only: bool = False
    check: Callable[[Any], None] | None = None

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(flag for flag in FLAGS if getattr(self, flag))

    def convert(self, value: Any) -> Any:
        """``value`` (typed, or as the terminal and a text field give it) as this setting's type."""
        try:
            if self.kind is bool and isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes", "on")
            if self.kind is tuple:
                if isinstance(value, str):
                    return tuple(v.strip() for v in value.split(",") if v.strip())
                return tuple(value)
            return self.kind(value)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"Setting {self.name} expects {self.kind.__name__}, got {value!r}") from error

    def validate(self, value: Any) -> Any:
        """The converted value, or ConfigError naming what is allowed."""
        converted = self.convert(value)
        if self.kind is float and not math.isfinite(converted):  # NaN passes every comparison below
            raise ConfigError(f"Setting {self.name} expects a number, got {value!r}")
        if self.choices and converted not in self.choices:
            raise ConfigError(f"Setting {self.name} must be one of {', '.join(self.choices)}, got {value!r}")
        if (
            self.minimum is not None
            and converted < self.minimum
            or self.maximum is not None
            and converted > self.maximum
        ):
            raise ConfigError(f"Setting {self.name} must be {self.allowed()}, got {value!r}")
        if self.check is not None:
            self.check(converted)
        return converted

    def allowed(self) -> str:
        """The values it takes, in words: "from 0 to 1", "one of off, apply, ask", ""."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.minimum is not None and self.maximum is not None:
            return f"from {_number(self.minimum)} to {_number(self.maximum)}"
        if self.minimum is not None:
            return f"at least {_number(self.minimum)}"
        if self.maximum is not None:
            return f"at most {_number(self.maximum)}"
        return ""


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _backup_folder(value: str) -> None:
    if value and not Path(value).expanduser().is_absolute():
        raise ConfigError(
            f"backup_folder must be a full path, got {value!r}",
            hint="for example /media/usb/memdesk-backups, or empty for the default",
        )


def _time_zone(value: str) -> None:
    zone_named(value)


def _setting(default: Any, description: str, **declared: Any) -> Any:
    """A field of ``Settings``: its default, and the rest of its declaration (see ``Declared``)."""
    return field(default=default, metadata={"description": description, **declared})


@dataclass(frozen=True)
class Settings:
    """The values in force; frozen (the store's ``set`` returns a new one)."""

    # --- the model ---
    model_path: str = _setting(
        "", "GGUF model file (empty: the bundled SmolLM2-135M-Instruct)", restart=True, local_only=True
    )
    runtime: str = _setting(
        "llamacpp",
        "Model runtime: llamacpp (local) or openai (an OpenAI-compatible server)",
        choices=("llamacpp", "openai"),
        restart=True,
        local_only=True,
    )
    openai_base_url: str = _setting(
        "http://127.0.0.1:8080/v1", "Base URL of the OpenAI-compatible server", restart=True, local_only=True
    )
    openai_model: str = _setting(
        "", "Model name to ask the OpenAI-compatible server for", restart=True, local_only=True
    )
    # "none": the server ignores or refuses schemas (found out by models/servers.py).
    openai_schema: str = _setting(
        "json_schema",
        "How the server is asked for call-shaped JSON (none: it ignores schemas; calls are checked after)",
        choices=("json_schema", "json_object", "none"),
        restart=True,
        advanced=True,
    )
    context_size: int = _setting(
        8192,
        "Context window in tokens (capped at the model's training context)",
        minimum=256,
        maximum=1 << 20,
        restart=True,
    )
    threads: int = _setting(
        0, "CPU threads for llama.cpp (0: automatic)", minimum=0, maximum=1024, restart=True, advanced=True
    )
    gpu_layers: int = _setting(
        0, "Layers to offload to a GPU (0: CPU only)", minimum=0, maximum=10_000, restart=True, advanced=True
    )
    chat_template: str = _setting(
        "", "Jinja chat template overriding the model's own", restart=True, advanced=True, local_only=True
    )
    # --- sampling (the active model's catalog entry refines those the user has not set) ---
    temperature: float = _setting(0.7, "Sampling temperature", minimum=0.0, maximum=5.0)
    top_k: int = _setting(40, "Top-k sampling (0: off)", minimum=0, maximum=10_000, advanced=True)
    top_p: float = _setting(0.95, "Top-p (nucleus) sampling", minimum=0.0, maximum=1.0, advanced=True)
    min_p: float = _setting(0.05, "Min-p sampling", minimum=0.0, maximum=1.0, advanced=True)
    repeat_penalty: float = _setting(1.1, "Repeat penalty (1: none)", minimum=0.1, maximum=5.0, advanced=True)
    seed: int = _setting(-1, "Sampling seed (-1: random)", minimum=-1, maximum=(1 << 31) - 1, advanced=True)
    max_answer_tokens: int = _setting(
        384, "Most tokens the model may generate per step (kept free in the context)", minimum=16, maximum=32_768
    )
    # --- the agent ---
    max_chained_steps: int = _setting(
        4,
        "Most steps the agent may chain after one event (the last one must answer)",
        minimum=1,
        maximum=64,
        advanced=True,
    )
    # Each character is time before the reply; the active model's catalog entry may set its own.
    max_thought_chars: int = _setting(
        160,
        "Most characters of the agent's private thoughts before each call "
        "(the grammar cuts them there; each is time before the reply)",
        minimum=0,
        maximum=4000,
        advanced=True,
    )
    # Small models often answer with the user's message or an earlier reply, word for word; a copy
    # is generated once more with the copied words penalised (memdesk/core/agent/repetition.py).
    repeat_check_messages: int = _setting(
        6,
        "How many recent messages (yours and its replies) a reply must not copy; "
        "a reply that does is generated once more, the copied words penalised (0: off)",
        minimum=0,
        maximum=50,
        advanced=True,
    )
    max_searches_per_turn: int = _setting(
        2,
        "Most new searches per search function in one turn (paging through results does not count)",
        minimum=0,
        maximum=100,
        advanced=True,
    )
    auto_recall: bool = _setting(
        True, "Before each reply, search memory out of view and show the model the best hits (automatic recall)"
    )
    # LoCoMo at 8192, section alone, by share of the window for a question: 0.20 0.851, 0.30 0.869 (multi-hop 0.44 ->
    # 0.54); agent/recall/budget.py
    auto_recall_budget: float = _setting(
        0.30,
        "Share of the context window the memories recalled for a question may take (0.30; a"
        " statement gets a sixth of that)",
        minimum=0.0,
        maximum=0.9,
        advanced=True,
    )
    auto_recall_timeout_ms: int = _setting(
        300,
        "Longest the reply waits for automatic recall, in milliseconds (it goes ahead without it)",
        minimum=0,
        maximum=600_000,
        advanced=True,
    )
    heartbeat_minutes: int = _setting(
        60,
        "Timed heartbeat interval in minutes while idle (0: off); the agent's instructions say which",
        minimum=0,
        maximum=10_080,
    )
    login_after_minutes: int = _setting(
        60,
        "Send the agent a login event when it is opened after this many minutes without a message (0: never)",
        minimum=0,
        maximum=525_600,
    )
    http_enabled: bool = _setting(False, "Allow the http_request function (asks before each request)", local_only=True)
    http_allowlist: tuple[str, ...] = _setting((), "Hosts http_request may reach", local_only=True)
    last_agent: str = _setting("", "Agent the window opens on start (empty: the first one)", hidden=True)
    time_zone: str = _setting(
        "",
        "Time zone for the times you and the agent see, e.g. Europe/Lisbon (empty: the system's; the store keeps UTC)",
        check=_time_zone,
    )
    user_name: str = _setting(
        "",
        'Your name (optional): memory search then reads a question that names you, such as "what did Ana say '
        'about the trip?", as one about your own messages, and the knowledge graph calls you by it',
    )
    # --- memory over time (see memdesk/core/consolidation/) ---
    consolidation: str = _setting(
        "ask",
        "Idle-time memory consolidation: off, apply (edit memory directly) or ask (propose changes for review)",
        choices=("off", "apply", "ask"),
    )
    consolidation_idle_minutes: int = _setting(
        5, "Minutes without activity before a consolidation pass may run", minimum=0, maximum=1440
    )
    consolidation_every_turns: int = _setting(
        8, "At most one consolidation pass per this many user messages", minimum=1, maximum=10_000, advanced=True
    )
    graph_extraction: bool = _setting(
        True, "Build the knowledge graph from your messages and documents in the background"
    )
    graph_model_facts: bool = _setting(True, "Let the chat model add facts to the knowledge graph while it is idle")
    graph_document_facts: bool = _setting(
        False, "Also extract facts (not only entities) from documents (slow: uses the model)"
    )
    graph_top_entities: int = _setting(
        8,
        "Knowledge-graph entities shown to the model below the messages (0: none)",
        minimum=0,
        maximum=100,
        advanced=True,
    )
    graph_search_expansion: bool = _setting(
        True,
        "Conversation search also follows the knowledge graph to linked entities (LoCoMo recall@10 0.701 -> 0.711)",
        advanced=True,
    )
    history_max_changes: int = _setting(
        10_000,
        "Memory changes kept in each agent's history for each kind (blocks, passages, graph...), "
        "oldest dropped first (0: keep all)",
        minimum=0,
        maximum=100_000_000,
        advanced=True,
    )
    # Measured with all-MiniLM-L6-v2: texts about "Eva", "my sister Eva", "Mark's divorce", "the knee
    # surgery" scored 0.45-0.80 against those requests, unrelated everyday sentences at most 0.45 (most
    # below 0.30). Texts that name the request are found by their words anyway; this adds paraphrases.
    forget_similarity: float = _setting(
        0.5,
        "Forget also removes messages and passages this similar in meaning to what you name "
        "(cosine 0-1; 1: words only)",
        minimum=0.0,
        maximum=1.0,
        advanced=True,
    )
    # --- backups ---
    backup_folder: str = _setting(
        "",
        "Folder for snapshots of the store, e.g. another disk or a synced folder: they go in a memdesk-snapshots "
        "folder of their own inside it (empty: backups/ in the data folder)",
        check=_backup_folder,
        local_only=True,
    )
    backup_keep_daily: int = _setting(
        7, "Automatic snapshots kept: the newest of each of this many most recent days", minimum=0, maximum=3650
    )
    backup_keep_weekly: int = _setting(
        4, "Automatic snapshots kept besides: the newest of each of this many most recent weeks", minimum=0, maximum=520
    )
    sync_interval_s: int = _setting(
        60,
        "How often the window syncs with your other devices, in seconds (0: only with Sync now), once paired",
        minimum=0,
        maximum=86_400,
    )
    # --- kept by the window itself ---
    welcome_done: bool = _setting(
        False, "The first-run welcome was shown (false: show it at the next start)", hidden=True
    )
    bundled_model_hint: bool = _setting(
        True, "Show the hint that the bundled model is a small demo and a better one is in File > Models", hidden=True
    )
    window_layout: str = _setting(
        "", "The window's size and panel layout as you left it (empty: the default layout)", hidden=True
    )


#: Every setting's declaration, by name, in the order declared.
SETTINGS: dict[str, Declared] = {
    f.name: Declared(f.name, type(f.default), f.default, **f.metadata) for f in fields(Settings)
}


def declared(name: str) -> Declared:
    """The declaration of setting ``name``; ConfigError naming the known ones when there is none."""
    try:
        return SETTINGS[name]
    except KeyError:
        raise ConfigError(f"Unknown setting {name!r}; known settings: {', '.join(SETTINGS)}") from None
