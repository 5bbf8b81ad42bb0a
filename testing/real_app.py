"""The real MemDesk in a fresh process and a temporary home: the one harness with which the tests
and the fault campaign start the real app (qutebrowser's end-to-end harness is the model).

    app = RealApp(folder, audit=True, xvfb=True)
    run = app.window("Hi, I am Ada.")   # sends it, waits for THE REPLY TO IT shown in the window, screenshot, quit
    run = app.chat(["Hi, I am Ada."])   # the terminal chat: the lines typed at its prompt, then /quit
    run.returncode, run.reply_shown, run.reply_in_store(message), run.screenshot, run.log, run.network_events

The window's end-to-end driver is ``testing.scripted_window --screenshot``: it sends the message once the
model is ready, waits for the turn that answers that message (a login turn the message preempts
ends first, and is not it), checks the window shows that reply, prints ``reply shown: TEXT`` and
saves the screenshot; any other end exits non-zero saying why. The harness checks the same reply
again from the store after the process has exited (``reply_in_store``), so a run is judged by
what was saved, not by what was printed.

With ``audit`` every Python process of the run, the model's child included, logs its start and its
network use (testing/socket_audit.py); the environment is then a user's plain one (no
``HF_HUB_OFFLINE``): MemDesk itself must stay offline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from testing import socket_audit
from testing.scripted_window import REPLY_SHOWN
from testing.xvfb import xvfb_run

ROOT = Path(__file__).resolve().parents[1]
SCREEN = (1400, 900)
#: The window gives up on its own this long before the harness would kill it, saying why.
GIVE_UP_MARGIN = 0.9


@dataclass
class AppRun:
    """One finished run of the real app: what it printed, left in its home and (audited) did."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    home: Path
    seconds: float
    screenshot: Path | None = None
    audit_log: Path | None = None
    sent: list[str] = field(default_factory=list)

    @property
    def reply_shown(self) -> str | None:
        """The reply the window said it showed for the message it sent, its first line (None: it
        said none)."""
        return next(
            (line[len(REPLY_SHOWN) :] for line in self.stdout.splitlines() if line.startswith(REPLY_SHOWN)), None
        )

    @property
    def log(self) -> str:
        """The run's ``memdesk.log`` (empty when it wrote none)."""
        path = self.home / "logs" / "memdesk.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    @property
    def network_events(self) -> list[str]:
        """Every network event of every audited process (only for an audited run)."""
        if self.audit_log is None:
            raise ValueError("this run was not audited: RealApp(..., audit=True)")
        return socket_audit.network_lines(self.audit_log)

    @property
    def processes(self) -> dict[str, str]:
        """The audited Python processes of the run: their command line by pid."""
        if self.audit_log is None:
            raise ValueError("this run was not audited: RealApp(..., audit=True)")
        return socket_audit.started(self.audit_log)

    @property
    def model_child_audited(self) -> bool:
        """Whether the model's child process (a multiprocessing spawn) was among the audited ones."""
        return any("--multiprocessing-fork" in argv for argv in self.processes.values())

    def reply_in_store(self, message: str) -> str | None:
        """What the agent answered to the newest user message ``message``, read from the store
        the run left (None: no such message, or no reply to it)."""
        from memdesk.core.agent import unanswered
        from memdesk.core.base.paths import Paths
        from memdesk.core.memory.recall import RecallMemory
        from memdesk.core.storage import open_database

        database = Paths(self.home).database
        if not database.exists():
            return None
        db = open_database(database, migrate=False)
        try:
            row = db.query(
                "SELECT agent_id, id FROM messages WHERE kind = 'user_message' AND search_text = ? ORDER BY id DESC"
                " LIMIT 1",
                (message,),
            )
            if not row:
                return None
            agent_id, message_id = row[0]
            reply = unanswered.reply_to(db, RecallMemory(db), agent_id, message_id)
            return reply.search_text if reply is not None else None
        finally:
            db.close()

    def explain(self) -> str:
        """For a failing assertion: the exit code, then the tails of the output and of the log."""
        return (
            f"{' '.join(self.argv)}\nexit code {self.returncode} after {self.seconds:.0f} s\n"
            f"--- stdout\n{self.stdout[-2000:]}\n--- stderr\n{self.stderr[-3000:]}\n--- memdesk.log\n{self.log[-2000:]}"
        )


class RealApp:
    """Starts the real app in ``folder / home`` (a fresh home unless an earlier run left one),
    optionally under Xvfb (a real X server; else Qt's offscreen platform) and the socket audit."""

    def __init__(
        self,
        folder: Path,
        *,
        audit: bool = False,
        xvfb: bool = False,
        screen: tuple[int, int] = SCREEN,
        env: dict[str, str] | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.home = self.folder / "home"
        self.audit = audit
        self.xvfb = xvfb
        self.screen = screen
        self.base_env = dict(os.environ if env is None else env)
        self.runs = 0

    def environment(self, audit_log: Path | None) -> dict[str, str]:
        env = {
            **self.base_env,
            "MEMDESK_HOME": str(self.home),
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), self.base_env.get("PYTHONPATH", "")) if p),
        }
        if self.xvfb:
            env.pop("QT_QPA_PLATFORM", None)
        else:
            env["QT_QPA_PLATFORM"] = "offscreen"
        if audit_log is None:
            env["HF_HUB_OFFLINE"] = "1"
            return env
        env.pop("HF_HUB_OFFLINE", None)  # a user's plain environment: MemDesk itself must stay offline
        return socket_audit.audit_environment(audit_log, env)

    def run(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout: float = 900,
        screenshot: Path | None = None,
        sent: list[str] | None = None,
    ) -> AppRun:
        """Run ``argv`` in the app's environment (its home, display and audit) until it exits or
        ``timeout`` seconds pass; what it printed is kept either way."""
        self.runs += 1
        audit_log = self.folder / f"sockets-{self.runs}.log" if self.audit else None
        if self.xvfb:
            argv = [xvfb_run(), "-a", "-s", f"-screen 0 {self.screen[0]}x{self.screen[1]}x24", *argv]
        self.folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        # Its own process group, so that a run the harness has to kill leaves nothing behind (Xvfb,
        # the model's child process).
        process = subprocess.Popen(
            argv,
            env=self.environment(audit_log),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:  # reported as a failed run, with what it printed
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended meanwhile
                pass
            out, err = process.communicate()
            err += f"\n[killed by the harness after {timeout:.0f} s]"
        code = process.returncode
        return AppRun(
            list(argv),
            code,
            out,
            err,
            self.home,
            time.perf_counter() - started,
            screenshot,
            audit_log,
            list(sent or []),
        )

    def window(self, message: str, *, timeout: float = 900) -> AppRun:
        """The window, started as ``memdesk`` starts it (its first window, then the main one): send
        ``message`` once the model is ready, wait for the reply to it to be shown, save a
        screenshot, quit (``testing.scripted_window --screenshot``)."""
        shot = self.folder / f"window-{self.runs + 1}.png"
        argv = [
            sys.executable,
            "-m",
            "testing.scripted_window",
            "--screenshot",
            str(shot),
            "--message",
            message,
            "--give-up-after",
            str(round(timeout * GIVE_UP_MARGIN)),
        ]
        return self.run(argv, timeout=timeout, screenshot=shot, sent=[message])

    def chat(self, lines: list[str], *, agent: str = "sam", timeout: float = 900) -> AppRun:
        """The terminal chat: ``lines`` typed at the prompt, each answered before the next, then /quit."""
        argv = [sys.executable, "-m", "memdesk.cli.main", "chat", "--agent", agent]
        return self.run(argv, stdin="".join(f"{line}\n" for line in [*lines, "/quit"]), timeout=timeout, sent=lines)
