"""The model's runtime the settings ask for, and the one started ahead of the window."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memdesk.app.local_model import StartedModel, same_runtime, start_local_model
from memdesk.app.services import Services
from memdesk.core.base.errors import ConfigError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import Runtime

log = logging.getLogger("memdesk.app")


def make_runtime(settings: Settings, *, key: str | None = None) -> Runtime:
    """Build the runtime the settings ask for. Imports are local: llama.cpp loads only when used.
    ``key``: the store's passphrase, when it is encrypted; the KV states saved on disk (which hold
    the prompt's memory) are then encrypted with it."""
    if settings.runtime == "llamacpp":
        return start_local_model(settings, key=key)
    if settings.runtime == "openai":
        from memdesk.core.runtime.openai_http import OpenAIHttpRuntime, OpenAISettings

        return OpenAIHttpRuntime(OpenAISettings.from_settings(settings))
    raise ConfigError(f"Unknown runtime {settings.runtime!r}; choose llamacpp or openai")


def runtime_factory(key: str | None, factory: Callable[..., Runtime] | None = None) -> Callable[[Settings], Runtime]:
    """``make_runtime`` (or ``factory``) for a store opened with ``key`` (the front ends pass
    settings only)."""

    def build(settings: Settings) -> Runtime:
        made = factory or make_runtime
        return made(settings) if key is None else made(settings, key=key)

    return build


def open_runtime(services: Services, settings: Settings | None = None) -> Runtime:
    """The runtime ``settings`` (by default the store's) ask for, for the store of ``services``:
    on an encrypted store the KV states it saves are encrypted with the store's passphrase."""
    return runtime_factory(services.key)(settings or services.settings)


def runtimes_ahead(services: Services, *, started: StartedModel | None = None) -> RuntimeAhead:
    """The window's runtime factory for the store of ``services``: the local model its settings
    choose starts now (or is ``started`` already), while the window is built."""
    return RuntimeAhead(runtime_factory(services.key), services.settings, started=started)


class RuntimeAhead:
    """A runtime factory whose first runtime was started before anyone asked for it: the window
    starts the local model's process before it builds itself (or takes the one ``memdesk``
    started before importing the window: ``started``, see memdesk.app.local_model), so the
    interpreter, llama.cpp and the weights load while Qt builds and paints, not after. Asked
    first for other settings (changed meanwhile), it closes the early runtime and builds anew;
    ``discard`` closes one nobody took (a window closed before its model loaded). Only a local
    model is started ahead: an HTTP runtime costs nothing to build, and is not built before the
    window asks."""

    def __init__(
        self,
        factory: Callable[[Settings], Runtime],
        settings: Settings,
        *,
        started: StartedModel | None = None,
    ) -> None:
        self._factory = factory
        self._lock = threading.Lock()  # taken by the window's worker thread, discarded by the GUI thread
        self._early: tuple[Settings, Runtime] | None = None
        if settings.runtime != "llamacpp":
            if started is not None:
                started.discard()
            return
        early = started.take(settings) if started is not None else None
        try:
            self._early = (settings, early or factory(settings))
        except Exception:  # noqa: BLE001 - the worker's own attempt meets it again and reports it in the window
            log.debug("the model was not started ahead", exc_info=True)

    def __call__(self, settings: Settings) -> Runtime:
        with self._lock:
            early, self._early = self._early, None
        if early is not None:
            if same_runtime(early[0], settings):
                return early[1]
            early[1].close()
        return self._factory(settings)

    def discard(self) -> None:
        with self._lock:
            early, self._early = self._early, None
        if early is not None:
            early[1].close()
