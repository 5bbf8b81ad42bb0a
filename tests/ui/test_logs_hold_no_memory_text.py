"""Issue 19, "logs follow the store": after failures whose messages quote what was said, no plain
file under the data folder (the log, the crash log, anything else) holds that text, while the
store itself is encrypted. The logs still say what failed and where."""

from __future__ import annotations

import faulthandler
import logging
import sys
import threading

import pytest

from memdesk.app.agents import open_agent
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll
from memdesk.ui.common.errors import CRASH_LOG, CrashCapture, ErrorHub
from memdesk.ui.startup.main import _setup_logging

PASSPHRASE = "correct horse battery staple"
SECRET = "zanzibarquokka"  # one word, so the store's full-text index holds it too


@pytest.fixture
def window_logging(memdesk_home):
    """The window's log file and crash capture, as ``memdesk`` installs them at start."""
    paths = Paths.from_environment().ensure()
    root = logging.getLogger()
    level, before = root.level, list(root.handlers)
    _setup_logging(paths)
    hub = ErrorHub()
    capture = CrashCapture(paths.logs, hub).install()
    yield paths, hub, capture
    capture.uninstall()
    for handler in root.handlers[:]:
        if handler not in before:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def _raise(text: str):
    raise ValueError(f"could not file {text!r}")


def test_failures_quoting_memory_leave_no_trace_of_it_in_any_plain_file(window_logging, monkeypatch):
    paths, hub, capture = window_logging
    services = open_services(paths, key=PASSPHRASE, embedder=HashingEmbedder())
    try:
        runtime = ScriptedRuntime(context_window=16384)
        agent = open_agent(services, services.create_agent("sam"), runtime, consent=AllowAll())
        # A turn whose tool fails with the user's words in its message (the agent loop's path).
        monkeypatch.setattr(services.memory.archival, "search", lambda _agent_id, query, **_options: _raise(query))
        runtime.enqueue(
            call("archival_memory_search", "look it up", heartbeat=True, query=SECRET), say("I could not find it.")
        )
        agent.send_user_message(f"Where did I put the {SECRET} notes?")
        # A window slot's unexpected error (the error hub's path).
        hub.report(RuntimeError(f"rendering {SECRET} failed"))
        # A background load that fails (a core module logging the exception).
        services.vectors.warm_in_background(agent.id, lambda _agent_id: _raise(SECRET)).join()
        # Uncaught exceptions, in a thread and in the main thread (the crash log's path).
        thread = threading.Thread(target=_raise, args=(SECRET,), name="worker")
        thread.start()
        thread.join()
        try:
            try:
                _raise(SECRET)
            except ValueError as error:
                raise KeyError(SECRET) from error
        except KeyError:
            sys.excepthook(*sys.exc_info())
        faulthandler.dump_traceback(capture._file)  # noqa: SLF001 - what a native crash writes there
        assert SECRET in str(services.db.query("SELECT content FROM messages"))
    finally:
        services.close()
    for handler in logging.getLogger().handlers:
        handler.flush()

    log_text = (paths.logs / "memdesk.log").read_text(encoding="utf-8")
    crash_text = (paths.logs / CRASH_LOG).read_text(encoding="utf-8")
    # Each failure was recorded, by type and place...
    assert "function archival_memory_search raised ValueError" in log_text
    assert "RuntimeError" in log_text and "loading the vector index" in log_text
    assert crash_text.count("uncaught exception") == 2 and "KeyError" in crash_text and "_raise" in crash_text
    # ...and no file under the data folder holds what was said, in any encoding SQLite or a log writes.
    files = [path for path in paths.home.rglob("*") if path.is_file()]
    assert paths.database in files and paths.logs / CRASH_LOG in files
    for path in files:
        data = path.read_bytes()
        for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
            assert SECRET.encode(encoding) not in data, f"{path.relative_to(paths.home)} holds the text ({encoding})"
