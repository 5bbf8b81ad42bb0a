"""The window's model process is started before the window is built (``RuntimeAhead``), so the
model loads while Qt paints; the worker takes that runtime when it asks with the same settings."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memdesk.app.local_model import StartedModel, settings_before_opening, start_with
from memdesk.app.runtimes import RuntimeAhead
from memdesk.app.services import open_services
from memdesk.core.base.errors import ModelError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.core.storage import open_database


class Factory:
    """Builds scripted runtimes and remembers each, and which were closed."""

    def __init__(self, *, fail: bool = False) -> None:
        self.built: list[tuple[Settings, ScriptedRuntime]] = []
        self.closed: list[ScriptedRuntime] = []
        self.fail = fail

    def __call__(self, settings: Settings) -> ScriptedRuntime:
        if self.fail:
            raise ModelError("The model file is missing")
        runtime = ScriptedRuntime()
        runtime.close = lambda runtime=runtime: self.closed.append(runtime)
        self.built.append((settings, runtime))
        return runtime


def test_the_local_model_is_started_before_anyone_asks_and_handed_to_the_first_who_does():
    factory = Factory()
    settings = Settings()
    runtimes = RuntimeAhead(factory, settings)
    assert len(factory.built) == 1  # started at once, before the window exists
    early = factory.built[0][1]
    assert runtimes(settings) is early
    assert len(factory.built) == 1 and factory.closed == []
    later = runtimes(settings)  # a model switch, a reload: built as usual
    assert later is not early and len(factory.built) == 2


def test_settings_that_do_not_change_the_runtime_still_get_the_early_one():
    factory = Factory()
    runtimes = RuntimeAhead(factory, Settings())
    # Opening the first agent records it as the last one used: not a reason to load the model again.
    assert runtimes(replace(Settings(), last_agent="Companion", temperature=0.3)) is factory.built[0][1]
    assert factory.closed == []


def test_other_model_settings_close_the_early_runtime_and_build_one_for_them():
    factory = Factory()
    runtimes = RuntimeAhead(factory, Settings())
    other = replace(Settings(), context_size=2048)
    runtime = runtimes(other)
    assert factory.closed == [factory.built[0][1]]
    assert runtime is factory.built[1][1] and factory.built[1][0] == other


def test_an_early_runtime_nobody_took_is_closed_by_discard_and_a_taken_one_is_not():
    factory = Factory()
    RuntimeAhead(factory, Settings()).discard()
    assert factory.closed == [factory.built[0][1]]

    factory = Factory()
    runtimes = RuntimeAhead(factory, Settings())
    runtimes(Settings())
    runtimes.discard()  # the worker owns it now, and closes it itself
    assert factory.closed == []


def test_a_model_server_is_not_contacted_before_the_window_asks():
    factory = Factory()
    settings = replace(Settings(), runtime="openai", openai_base_url="http://127.0.0.1:1234/v1", openai_model="m")
    runtimes = RuntimeAhead(factory, settings)
    assert factory.built == []
    runtimes(settings)
    assert len(factory.built) == 1


def test_a_model_that_cannot_start_ahead_fails_where_the_window_reports_it():
    factory = Factory(fail=True)
    runtimes = RuntimeAhead(factory, Settings())  # no error while the window is not there to show it
    with pytest.raises(ModelError):
        runtimes(Settings())  # the worker's attempt: its error reaches the window's error bar


# --- started by memdesk before the window's modules are imported (memdesk.app.local_model) ----------
def test_the_window_takes_the_model_memdesk_started_instead_of_starting_another():
    factory = Factory()
    started = StartedModel(Settings(), ScriptedRuntime())
    early = started._runtime
    runtimes = RuntimeAhead(factory, replace(Settings(), last_agent="Companion"), started=started)
    assert factory.built == []  # nothing started twice
    closed: list[ScriptedRuntime] = []
    early.close = lambda: closed.append(early)
    assert runtimes(Settings()) is early
    started.discard()  # taken: the window's worker owns it, and closes it itself
    assert closed == []


def test_a_model_started_for_other_settings_is_closed_and_the_window_starts_its_own():
    factory = Factory()
    closed: list[ScriptedRuntime] = []
    early = ScriptedRuntime()
    early.close = lambda: closed.append(early)
    # The store's settings as the window read them after a migration changed the context size.
    runtimes = RuntimeAhead(factory, replace(Settings(), context_size=2048), started=StartedModel(Settings(), early))
    assert closed == [early]
    assert runtimes(replace(Settings(), context_size=2048)) is factory.built[0][1]


def test_a_started_model_is_taken_once_and_closed_when_nobody_took_it():
    closed: list[ScriptedRuntime] = []
    runtime = ScriptedRuntime()
    runtime.close = lambda: closed.append(runtime)
    started = StartedModel(Settings(), runtime)
    assert started.take(Settings()) is runtime
    assert started.take(Settings()) is None  # a second window starts its own
    started.discard()
    assert closed == []
    unused = StartedModel(Settings(), runtime)
    unused.discard()
    assert closed == [runtime]


def test_settings_are_read_early_from_a_plain_store_and_are_the_defaults_before_it_exists(memdesk_home):
    paths = Paths.from_environment().ensure()
    assert settings_before_opening(paths) == Settings()  # a fresh install: the window creates the store
    with open_services(paths, embedder=HashingEmbedder()) as services:
        services.settings_store.set("context_size", 4096)
    assert settings_before_opening(paths).context_size == 4096
    assert paths.database.exists()


def test_nothing_is_started_early_for_an_encrypted_or_unreadable_store(memdesk_home, tmp_path):
    paths = Paths.from_environment().ensure()
    open_database(paths.database, key="a passphrase that is long enough").close()
    assert settings_before_opening(paths) is None  # its passphrase is asked by the window
    assert start_with(settings_before_opening(paths)) is None
    paths.database.unlink()
    paths.database.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)  # damaged: the window offers a snapshot
    assert settings_before_opening(paths) is None


def test_a_model_server_is_not_started_early(memdesk_home):
    paths = Paths.from_environment().ensure()
    with open_services(paths, embedder=HashingEmbedder()) as services:
        services.settings_store.set("runtime", "openai")
    assert start_with(settings_before_opening(paths)) is None
