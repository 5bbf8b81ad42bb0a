"""Starting the local model's process, and starting it before the window's modules are imported.

Importing Qt and the window takes most of a start (about 0.9 s of CPU on the 2-core development
machine), and the model's process needs about as long to load llama.cpp and the weights. So
``memdesk`` starts the model first (``start_with``), from the store's settings read with nothing
but the storage layer loaded, and both happen at once on two cores; the window then takes that
runtime if its settings still ask for it (``StartedModel.take``). Nothing is started this early
when the settings cannot be read yet: an encrypted store waits for its passphrase, a damaged one
for the window's offer to restore it. This module imports no Qt and none of the agent.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import Runtime
from memdesk.core.storage.settings_store import SettingsStore

if TYPE_CHECKING:
    from memdesk.core.runtime.llamacpp.settings import LlamaSettings

log = logging.getLogger("memdesk.local_model")

#: The settings a runtime is built from: one built for some settings serves any equal in these.
RUNTIME_SETTINGS = (
    "runtime",
    "model_path",
    "context_size",
    "threads",
    "gpu_layers",
    "chat_template",
    "openai_base_url",
    "openai_model",
    "openai_schema",
)


def same_runtime(a: Settings, b: Settings) -> bool:
    return all(getattr(a, name) == getattr(b, name) for name in RUNTIME_SETTINGS)


def resolve_model_path(settings: Settings) -> Path:
    from memdesk.core.models.bundled import default_model_path

    return Path(settings.model_path).expanduser() if settings.model_path else default_model_path()


def start_local_model(settings: Settings, *, key: str | None = None) -> Runtime:
    """The llama.cpp runtime in its own process (a native abort there becomes a ModelError here,
    never a crash of the window: see memdesk/core/runtime/isolated.py). Returns at once, while the
    model loads. ``key``: the store's passphrase, when it is encrypted (see ``llama_settings``)."""
    from memdesk.core.runtime.isolated import isolated_llama

    return isolated_llama(llama_settings(settings, key=key))


def llama_settings(settings: Settings, *, key: str | None = None) -> LlamaSettings:
    """What the model's process is given. The system message's KV state survives restarts, so a
    start does not re-read it; an encrypted store's states (which hold the prompt's memory) are
    encrypted under a key derived from the store's, never its passphrase, which the model's
    process must not hold. An encrypted store not on disk yet has no key to derive from: no state
    is saved then."""
    from memdesk.core.runtime.llamacpp.settings import LlamaSettings
    from memdesk.core.storage.driver import kv_cache_key

    paths = Paths.from_environment()
    cache_key = None if key is None else kv_cache_key(paths.database, key)
    return LlamaSettings.from_settings(
        settings,
        resolve_model_path(settings),
        cache_dir=paths.kv_cache if key is None or cache_key is not None else None,
        cache_key=cache_key,
    )


class StartedModel:
    """A local model started before anyone asked for it: taken once, by the first window."""

    def __init__(self, settings: Settings, runtime: Runtime) -> None:
        self.settings = settings
        self._runtime: Runtime | None = runtime
        self._lock = threading.Lock()

    def take(self, settings: Settings) -> Runtime | None:
        """The runtime, when it was started for what ``settings`` ask; otherwise (and when taken
        already) None, and a runtime nobody can use any more is closed."""
        with self._lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None and same_runtime(self.settings, settings):
            return runtime
        if runtime is not None:
            runtime.close()
        return None

    def discard(self) -> None:
        """Close the runtime unless it was taken (the start ended before a window asked)."""
        with self._lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()


def settings_before_opening(paths: Paths) -> Settings | None:
    """The store's settings read without migrating or creating anything (the defaults for a store
    yet to be created), or None when they cannot be read before the window opens the store."""
    from memdesk.core.storage import open_database
    from memdesk.core.storage.driver import file_is_encrypted

    if not paths.database.exists():
        return Settings()  # a fresh install: the window creates the store with the defaults
    try:
        if file_is_encrypted(paths.database):
            return None
        db = open_database(paths.database, migrate=False)
        try:
            return SettingsStore(db).load() if db.schema_version > 0 else Settings()
        finally:
            db.close()
    except Exception:  # noqa: BLE001 - the window opens the store itself and reports what is wrong
        log.debug("settings not read before the window", exc_info=True)
        return None


def start_with(settings: Settings | None) -> StartedModel | None:
    """Start the local model now, when the store's settings (read with ``settings_before_opening``;
    None when they cannot be read yet: nothing starts then) choose one."""
    if settings is None or settings.runtime != "llamacpp":
        return None
    try:
        return StartedModel(settings, start_local_model(settings))
    except Exception:  # noqa: BLE001 - the window's own attempt meets it again and reports it
        log.debug("the model was not started ahead", exc_info=True)
        return None
