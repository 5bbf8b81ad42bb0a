"""How late the GUI thread's timer runs while work goes on (bench.history_window during an
import, bench.privacy_backup during a snapshot): a 10 ms QTimer ticks in a local event loop and
each tick's lateness is how much later than 10 ms after the previous tick it came."""

from __future__ import annotations

import time
from collections.abc import Callable

TICK_MS = 10


class StageTimeout(RuntimeError):
    """What was measured did not finish within its limit."""


def timer_lateness(until: Callable[[], bool], limit_s: float) -> list[float]:
    """Tick until ``until()`` is true; each tick's lateness in ms. StageTimeout when it is still
    false after ``limit_s`` seconds. A local loop, not ``app.exec()``: Qt 6's
    ``QApplication.quit()`` closes every window first, which would shut a window (and its session)
    down between two stages."""
    from PySide6.QtCore import QEventLoop, QTimer

    lateness: list[float] = []
    last = [time.perf_counter()]
    give_up = last[0] + limit_s
    loop = QEventLoop()

    def tick() -> None:
        now = time.perf_counter()
        lateness.append(max(0.0, (now - last[0]) * 1000 - TICK_MS))
        last[0] = now
        if until() or now > give_up:
            loop.quit()

    timer = QTimer()
    timer.setInterval(TICK_MS)
    timer.timeout.connect(tick)
    timer.start()
    loop.exec()
    timer.stop()
    if not until():
        raise StageTimeout(f"the measured stage did not finish within {limit_s:.0f} s")
    return lateness


def idle_lateness(seconds: float) -> list[float]:
    """Tick for ``seconds`` with nothing else asked of the loop: the machine's floor beside a
    measured stage (on a shared machine the idle p99 is not zero)."""
    started = time.perf_counter()
    return timer_lateness(lambda: time.perf_counter() - started > seconds, seconds + 60)
