"""Shared fixtures. Every test runs with MEMDESK_HOME in its own temporary folder."""

from __future__ import annotations

import dataclasses
import gc
import os
import shutil
import sys
from pathlib import Path

import pytest

from memdesk.app.agents import open_agent
from memdesk.app.services import Services, open_services
from memdesk.core.base.clock import ManualClock
from memdesk.core.base.paths import HOME_ENV, Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.core.storage import open_database
from memdesk.core.tools.context import AllowAll

pytest_plugins = ["tests.worker_crashes"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

#: Automatic recall's deadline in agents built by ``make_agent``: long enough for any loaded machine.
PATIENT_RECALL_MS = 600_000


#: The lanes' marks (pyproject.toml) that a fixture brings to every test using it.
FIXTURE_MARKS = {
    "real_embedder": ("embedder",),
    "bundled_runtime": ("model",),
    "real_app": ("processes",),
    "real_chat_run": ("model", "processes"),
    "real_window_run": ("model", "xvfb", "processes"),
    "wheel": ("wheel",),
}
BENCH_TESTS = Path(__file__).resolve().parent / "bench"


#: In a parallel run (make test: pytest-xdist's loadgroup), the tests sharing a real part that a
#: session fixture starts once run in the same worker, so that it starts once: the audited runs of
#: the real app, and the bundled model's processes and the real embedder.
SHARED_PARTS = {
    "real_window_run": "real-app-runs",
    "real_chat_run": "real-app-runs",
    "bundled_runtime": "bundled-model",
    "llama": "bundled-model",
    "server": "bundled-model",
    "real_embedder": "bundled-model",
}


def _worker_group(item) -> str | None:
    """The xdist group of ``item``: a shared real part's, else its module's when it starts a real
    model or builds the wheel (their module-scoped fixtures start once), else none (any worker)."""
    for fixture, group in SHARED_PARTS.items():
        if fixture in item.fixturenames:
            return group
    if item.get_closest_marker("model") or item.get_closest_marker("wheel"):
        return item.module.__name__
    return None


def pytest_collection_modifyitems(config, items) -> None:
    parallel = config.pluginmanager.hasplugin("xdist")
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            for mark in FIXTURE_MARKS.get(fixture, ()):
                item.add_marker(mark)
        if BENCH_TESTS in Path(item.path).parents:
            item.add_marker("bench")
        group = _worker_group(item) if parallel else None
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def memdesk_home(tmp_path, monkeypatch):
    home = tmp_path / "memdesk-home"
    monkeypatch.setenv(HOME_ENV, str(home))
    return home


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory) -> Path:
    """A plain store with every migration applied, made once per test session: a copy of it is
    what a new store is once migrated, in a millisecond instead of 17 migrations."""
    path = tmp_path_factory.mktemp("migrated") / "memdesk.sqlite3"
    open_database(path).close()
    return path


@pytest.fixture
def new_store(migrated_store):
    """``new_store(path)``: a new, migrated, plain store at ``path`` (a copy of ``migrated_store``);
    a store already there is left as it is."""

    def make(path: Path) -> Path:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(migrated_store, path)
        return path

    return make


@pytest.fixture
def services(memdesk_home, clock, new_store) -> Services:
    """Real store on disk under the temp home, with the fast hashing embedder."""
    paths = Paths.from_environment().ensure()
    new_store(paths.database)
    services = open_services(paths, embedder=HashingEmbedder(), clock=clock)
    yield services
    services.close()


@pytest.fixture
def runtime() -> ScriptedRuntime:
    return ScriptedRuntime(context_window=16384)


@pytest.fixture
def make_agent(services, runtime):
    """Build an agent named ``name`` on the scripted runtime. Automatic recall waits for its search
    unless ``settings`` say otherwise: its 300 ms deadline is a property of the app, not of the
    logic under test, and a loaded machine missed it (the turn then placed nothing)."""

    def build(name: str = "sam", *, runtime=runtime, consent=None, observer=None, settings=None, **create):
        settings = settings or dataclasses.replace(services.settings, auto_recall_timeout_ms=PATIENT_RECALL_MS)
        record = services.agents.find(name) or services.create_agent(name, **create)
        return open_agent(
            services, record, runtime, consent=consent or AllowAll(), observer=observer, settings=settings
        )

    return build


@pytest.fixture(scope="session")
def real_embedder():
    """The bundled all-MiniLM-L6-v2 as the app runs it (NumPy), loaded once per test session."""
    from memdesk.core.embedding.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def bundled_runtime(tmp_path_factory):
    """The bundled model in its child process, as the app builds it (make_runtime, a 4096-token
    window), started once for the tests that only talk to it: each start loads llama.cpp and the
    weights again. The KV states it keeps on disk stay under a temporary folder."""
    from memdesk.app.runtimes import make_runtime
    from memdesk.core.base.settings_table import Settings

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(HOME_ENV, str(tmp_path_factory.mktemp("bundled-runtime")))
        runtime = make_runtime(Settings(context_size=4096))
    yield runtime
    runtime.close()


@pytest.fixture(scope="session")
def socket_audit():
    """``with socket_audit: ...`` records every internet socket call made through Python
    (testing/socket_audit.py: the one hook, also used in the real app's processes)."""
    from testing.socket_audit import SocketAudit

    return SocketAudit()


@pytest.fixture
def real_app(tmp_path):
    """``real_app(audit=..., xvfb=...)``: the real app (window or terminal) in fresh processes and
    a home under ``tmp_path`` (testing/real_app.py, the one harness for the real app)."""
    from testing.real_app import RealApp

    return lambda **options: RealApp(tmp_path / "real-app", **options)


#: What the shared real-app runs send: a user introducing herself, as a first message does.
REAL_APP_MESSAGE = "Hi, I am Ada."


@pytest.fixture(scope="session")
def real_window_run(tmp_path_factory):
    """One run of the real window on the bundled model, under Xvfb (a real X server) and the socket
    audit, a fresh home: REAL_APP_MESSAGE sent, the reply to it shown, a screenshot saved, closed.
    Started once for the tests that only read what it did (its exit code, screenshot, reply,
    network use): each used to start the real app for itself."""
    from testing.real_app import RealApp

    return RealApp(tmp_path_factory.mktemp("real-window"), audit=True, xvfb=True).window(REAL_APP_MESSAGE)


@pytest.fixture(scope="session")
def real_chat_run(tmp_path_factory):
    """One audited run of the real terminal chat on the bundled model, a fresh home:
    REAL_APP_MESSAGE typed, answered, /quit. Shared like ``real_window_run``."""
    from testing.real_app import RealApp

    return RealApp(tmp_path_factory.mktemp("real-chat"), audit=True).chat([REAL_APP_MESSAGE])


#: Letta's published agent files (Apache-2.0; tests/data/agentfiles/README.md says where they come from).
AGENTFILES = Path(__file__).resolve().parent / "data" / "agentfiles"


@pytest.fixture(scope="session")
def agentfiles() -> Path:
    """The folder holding Letta's memgpt_agent.af and friends, in the repository's test data."""
    return AGENTFILES


@pytest.fixture(autouse=True)
def no_window_outlives_its_test():
    """Every window or dialog without a parent is deleted at the end of its test, in the GUI thread.
    Closed is not deleted: a window (its signals and lambdas make reference cycles) would otherwise
    be destroyed whenever Python's cyclic garbage collector happens to run, inside a later test's
    widget constructor or in a worker thread, where Qt crashes (segmentation faults seen in test
    workers, e.g. in a BackupsDialog's constructor). What survives that collection is frozen out of
    the collector's later passes (gc.freeze): it is long-lived (modules, session fixtures), and a
    collection then scans only what later tests make, so it costs milliseconds, not 0.2 s a test."""
    yield
    if "PySide6.QtWidgets" not in sys.modules:
        return
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        return
    left = [w for w in QApplication.topLevelWidgets() if w.parent() is None]
    for widget in left:
        widget.close()
        widget.deleteLater()
    if left:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
        gc.freeze()
