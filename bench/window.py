"""The first message of a fresh install typed into the real window, on the bundled model.

    python -m bench.window --json [--installed] [--message TEXT] [--pause 0 20] [--repeats 1]

Each run starts the real app (``desktop.ui.main``, the same composition as ``memdesk``) under
Xvfb with a new MEMDESK_HOME: nothing on disk, so the window's own warm-up and the login turn of
a new agent run as they do for a new user. The user types for ``--pause`` seconds after the window
shows (or until the model is ready, if that takes longer) and presses Enter. Reported per run: when
the model was ready, from Enter to the first character of the reply as the window receives it and
to the end of the turn, the steps the turn took and their functions, the reply, and whether the
warm-up had finished before Enter. With ``--installed`` the home first gets what ``make install``
leaves there (``memdesk warm``: the static prompt's KV state on disk). A screenshot of the window after the reply is kept beside the
figures (``--shots DIR``).

Nothing here is asserted (shared machines are noisy); the issue's target for the first message
of a fresh install (<= 5 s) is printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import emit

MESSAGE = "Hi, I am Ada. I live in Lisbon and I love gardening."
MARKER = "BENCH-WINDOW "
TARGET_SECONDS = 5.0


def _inner(message: str, pause: float, shot: str) -> int:
    """Runs inside Xvfb: the real app, driven as a user would, printing one JSON line."""
    from PySide6.QtCore import QObject, QTimer, Slot

    import desktop.ui.main as app_main

    started = time.perf_counter()

    def now() -> float:
        return round(time.perf_counter() - started, 3)

    class Probe(QObject):
        """Lives in the GUI thread, so the worker's signals reach it queued: times are when the
        window receives what the worker sends, as the user sees it."""

        def __init__(self, window, path: str, text: str) -> None:
            super().__init__(window)
            self.window, self.path, self.text = window, path, text
            self.marks: dict[str, object] = {"functions": [], "events": [], "window_shown": now()}
            self.shown = time.perf_counter()
            worker = window.worker
            window.model_ready.connect(self.ready)
            worker.streamed.connect(self.streamed)
            worker.stepped.connect(self.stepped)
            worker.event.connect(self.agent_event)
            worker.turn_finished.connect(self.finished)
            window.hub.shown.connect(self.failed)

        @Slot(str)
        def ready(self, _model: str) -> None:
            self.marks["model_ready"] = now()
            QTimer.singleShot(int(max(0.0, pause - (time.perf_counter() - self.shown)) * 1000), self.send)

        @Slot()
        def send(self) -> None:
            chat = self.window.chat
            if chat.busy or not chat.can_send:  # Send is greyed out while the model finishes loading: press it again
                QTimer.singleShot(50, self.send)
                return
            self.marks["enter"] = now()
            self.marks["warm_finished_before_enter"] = self.window.worker._warmup.finished.is_set()
            self.window.chat.compose.setPlainText(self.text)
            self.window.chat.on_send_clicked()

        @Slot(str, str)
        def streamed(self, kind: str, piece: str) -> None:
            if "enter" in self.marks and kind == "message" and piece and "first_reply_character" not in self.marks:
                self.marks["first_reply_character"] = now()

        @Slot(object)
        def stepped(self, step) -> None:
            if "enter" in self.marks:
                self.marks["functions"].append(step.function)

        @Slot(str, str)
        def agent_event(self, kind: str, piece: str) -> None:
            self.marks["events"].append(f"{now()} {kind}: {piece[:80]}")

        @Slot(object)
        def finished(self, result) -> None:
            if result is None or result.kind != "user_message" or "enter" not in self.marks:
                return
            self.marks.update(turn_end=now(), steps=len(result.steps), replies=list(result.replies))
            QTimer.singleShot(300, self.save)

        @Slot()
        def save(self) -> None:
            self.window.grab().save(self.path)
            print(MARKER + json.dumps(self.marks), flush=True)
            self.window.close()

        @Slot(str)
        def failed(self, error: str) -> None:
            print(f"error: {error}", flush=True)
            QTimer.singleShot(0, self.window.close)

    probes = []
    # The probe drives the window in place of the app's own screenshot driver (same arguments).
    app_main._schedule_screenshot = lambda window, path, text, _give_up_after_s: probes.append(Probe(window, path, text))
    return app_main.run(["--screenshot", shot, "--message", message])


def _one(message: str, pause: float, shots: Path, installed: bool) -> dict[str, object]:
    xvfb_run = shutil.which("xvfb-run")
    if xvfb_run is None:
        raise SystemExit("xvfb-run is missing: install the Debian package xvfb (make system-deps does)")
    home = tempfile.mkdtemp(prefix="memdesk-window-")
    shot = shots / f"window-pause{pause:g}-{int(time.time())}.png"
    env = {**os.environ, "MEMDESK_HOME": home, "HF_HUB_OFFLINE": "1"}
    env.pop("QT_QPA_PLATFORM", None)  # a real X server
    install_seconds = None
    if installed:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "desktop.cli.main", "warm"], env=env, check=True, capture_output=True, timeout=900)
        install_seconds = round(time.perf_counter() - started, 3)
    command = [xvfb_run, "-a", "-s", "-screen 0 1400x900x24", sys.executable, "-m", "bench.window", "--inner",
               "--message", message, "--pause", str(pause), "--shot", str(shot)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=Path(__file__).resolve().parents[1])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    line = next((l for l in done.stdout.splitlines() if l.startswith(MARKER)), None)
    if line is None:
        return {"pause": pause, "error": (done.stdout + done.stderr)[-1500:]}
    marks = json.loads(line[len(MARKER):])
    enter = marks["enter"]
    first = marks.get("first_reply_character")
    return {
        "typing_pause_seconds": pause,
        "installed": installed,
        "install_warm_seconds": install_seconds,
        "model_ready_seconds": marks.get("model_ready"),
        "warm_finished_before_enter": marks.get("warm_finished_before_enter"),
        "enter_seconds": enter,
        "enter_to_first_reply_character_seconds": round(first - enter, 3) if first is not None else None,
        "enter_to_turn_end_seconds": round(marks["turn_end"] - enter, 3),
        "steps": marks["steps"],
        "functions": marks["functions"],
        "replies": marks["replies"],
        "events": marks["events"],
        "screenshot": str(shot) if shot.exists() else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--message", default=MESSAGE)
    parser.add_argument("--pause", type=float, nargs="+", default=[0.0, 20.0], help="seconds the user types after the window shows")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--installed", action="store_true", help="run memdesk warm in the fresh home first, as make install does")
    parser.add_argument("--shots", default=tempfile.gettempdir(), help="folder for the screenshots")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--shot", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        return _inner(args.message, args.pause[0], args.shot)
    runs = [_one(args.message, pause, Path(args.shots), args.installed) for _ in range(args.repeats) for pause in args.pause]
    figures: dict[str, object] = {"message": args.message, "installed": args.installed}
    for pause in args.pause:
        mine = [r for r in runs if r.get("typing_pause_seconds") == pause and "error" not in r]
        firsts = [r["enter_to_first_reply_character_seconds"] for r in mine if r["enter_to_first_reply_character_seconds"] is not None]
        key = f"pause_{pause:g}s"
        figures[f"{key}_first_reply_seconds"] = round(statistics.median(firsts), 3) if firsts else None
        figures[f"{key}_turn_seconds"] = round(statistics.median(r["enter_to_turn_end_seconds"] for r in mine), 3) if mine else None
        figures[f"{key}_steps"] = [r["steps"] for r in mine]
    figures["first_message_target_seconds"] = TARGET_SECONDS
    figures["runs"] = runs
    emit(figures, args.json, details="runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
