"""The window's responsiveness while another app searches memory through it: how late a 10 ms Qt
timer fires in the real main window (offscreen, a scripted model: no generation) while a client
in another process searches ten times a second over the loopback HTTP the window serves (from
its child process, memdesk/mcp/serving.py), against the same window with no client, in one run.
Part of ``python -m bench.mcp --json``. A client that cannot keep ten a second (each search
waits for the one before) searches as fast as answers come: ``ui_searches_answered`` says.

    python -m bench.mcp_window --client URL TOKEN SECONDS   (the client's side, started by the bench)
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.common import percentile
from testing.children import Lines, die_with_parent, ended

#: Searches a second the client asks for (the issue's "ten times a second").
RATE = 10.0
TICK_MS = 10
#: Bound of any one wait (the window serving, the client's first answer, its end after its seconds).
WAIT_S = 120


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def client(url: str, token: str, seconds: float, queries: list[str]) -> int:
    """Search ``RATE`` times a second for ``seconds``; returns how many searches were answered."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> int:
        answered = 0
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT_S) as http:
            async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=WAIT_S) as session:
                await session.call_tool("memory_search", {"query": queries[0]})  # warmed before the clock
                print("ready", flush=True)
                started = time.perf_counter()
                n = 0
                while time.perf_counter() - started < seconds:
                    due = started + n / RATE
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                    result = await session.call_tool("memory_search", {"query": queries[n % len(queries)]})
                    answered += not result.is_error
                    n += 1
        return answered

    # started by lateness(), which ends this process if it outlives its seconds by WAIT_S
    return asyncio.run(run())


def lateness(home: Path, seconds: float, queries: list[str]) -> dict:
    """The window's timer lateness (p99, ms) idle and while a client searches through it."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QApplication

    from memdesk.app.services import default_embedder, open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.connections.apps import Apps
    from memdesk.core.runtime.scripted import ScriptedRuntime
    from memdesk.ui.window.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    paths = Paths(home)
    embedder = default_embedder()
    services = open_services(paths, embedder=embedder)
    port = _free_port()
    services.settings_store.set("mcp_http", True)
    services.settings_store.set("mcp_http_port", port)
    services.settings_store.set("login_after_minutes", 0)
    apps = Apps(services.db, services.clock)
    token = apps.new_token((apps.find("bench") or apps.register("bench")).id)
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(paths, embedder=embedder),
        make_runtime=lambda _settings: ScriptedRuntime(context_window=32768),
        warm_embedder=False,
    )
    window.show()
    window.start()
    try:
        return _measured(app, window, token, seconds)
    finally:
        window.close()
        # Deleted now, not whenever the garbage collector meets it: run inside pytest (the bench's
        # test), a window left to the collector was destroyed in the middle of a later test.
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        services.close()


def _measured(app, window, token: str, seconds: float) -> dict:
    from PySide6.QtCore import QElapsedTimer, QTimer

    deadline = time.monotonic() + WAIT_S
    while not (window.state.model_ready and window.connections.url):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the window did not serve MCP within {WAIT_S} s")
        app.processEvents()
        time.sleep(0.01)

    def measure(until) -> list[float]:
        late: list[float] = []
        clock = QElapsedTimer()
        last = [0.0]
        timer = QTimer()
        timer.setInterval(TICK_MS)

        def tick() -> None:
            now = clock.nsecsElapsed() / 1e6
            late.append(max(0.0, now - last[0] - TICK_MS))
            last[0] = now

        timer.timeout.connect(tick)
        clock.start()
        timer.start()
        while not until():
            app.processEvents()
            time.sleep(0.001)
        timer.stop()
        return late[1:]

    idle_started = time.monotonic()
    idle = measure(lambda: time.monotonic() - idle_started > seconds)
    searcher = subprocess.Popen(
        [sys.executable, "-m", "bench.mcp_window", "--client", str(window.connections.url), token, str(seconds)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        preexec_fn=die_with_parent,
    )
    with ended(searcher):
        said = Lines(searcher.stdout)
        ready = said.next(WAIT_S)  # the client's first search (the server's warm-up) is not timed
        client_ends = time.monotonic() + seconds + WAIT_S
        busy = (
            measure(lambda: searcher.poll() is not None or time.monotonic() > client_ends)
            if ready.startswith("ready")
            else []
        )
        try:
            answered = int(said.next(WAIT_S).strip() or 0) if ready.startswith("ready") else 0
        except EOFError:  # the client ended without its count: it failed, and says so on stderr
            answered = 0
    return {
        "ui_timer_lateness_p99_ms": round(percentile(busy, 0.99), 2) if busy else None,
        "ui_timer_lateness_idle_p99_ms": round(percentile(idle, 0.99), 2) if idle else None,
        # the same window idle, in the same run: on a shared machine the idle p99 is the floor
        "ui_timer_lateness_vs_idle_p99": (
            round(percentile(busy, 0.99) / max(percentile(idle, 0.99), 0.01), 3) if busy and idle else None
        ),
        "ui_searches_answered": answered,
        "ui_seconds": seconds,
    }


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--client":
        from bench.mcp import queries

        print(client(sys.argv[2], sys.argv[3], float(sys.argv[4]), queries(50)), flush=True)
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
