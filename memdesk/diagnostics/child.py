"""Run one diagnostic probe in a child process, so a native crash becomes a result, not our end.

llama.cpp may die of SIGSEGV or SIGILL, Qt aborts when its platform plugin cannot start: both
would take ``memdesk doctor`` (or the window) down with them. The probe runs in a fresh
interpreter (multiprocessing 'spawn', which also works in a frozen bundle); its stderr goes to a
file we read afterwards, because native code writes its last words there (GGML_ASSERT, Qt's
qFatal). The probe is named by module and function so this module imports neither llama_cpp nor
Qt: the probe may be a generator, each item it yields reaches the parent as it happens, so a crash
half-way still tells how far it got.
"""

from __future__ import annotations

import importlib
import inspect
import multiprocessing
import os
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any


@dataclass
class ChildResult:
    items: list[Any] = field(default_factory=list)  # what the probe returned or yielded, in order
    finished: bool = False  # the probe ran to its end
    error: tuple[str, str, str | None] | None = None  # (type, message, hint) if it raised
    exitcode: int | None = None  # the process's exit code; negative: killed by that signal
    timed_out: bool = False
    stderr: str = ""

    @property
    def crashed(self) -> bool:
        return not self.finished and self.error is None and not self.timed_out

    def last_stderr_line(self) -> str:
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def _child_main(conn: Connection, stderr_path: str, module: str, function: str, args: tuple[Any, ...]) -> None:
    with open(stderr_path, "wb") as sink:
        os.dup2(sink.fileno(), 2)
    try:
        result = getattr(importlib.import_module(module), function)(*args)
        for item in result if inspect.isgenerator(result) else [result]:
            conn.send(("item", item))
        conn.send(("done",))
    except BaseException as error:  # reported to the parent as a result
        conn.send(("error", type(error).__name__, str(getattr(error, "message", error)), getattr(error, "hint", None)))
    finally:
        conn.close()


def run_in_child(module: str, function: str, *args: Any, timeout: float = 120.0) -> ChildResult:
    """Call ``module.function(*args)`` in a spawned child and collect what it reports."""
    context = multiprocessing.get_context("spawn")
    result = ChildResult()
    with tempfile.TemporaryDirectory(prefix="memdesk-doctor-") as folder:
        stderr_path = Path(folder) / "stderr.txt"
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(
            target=_child_main,
            args=(writer, str(stderr_path), module, function, args),
            daemon=True,
            name="memdesk-doctor",
        )
        process.start()
        writer.close()
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result.timed_out = True
                    break
                if not reader.poll(min(remaining, 0.2)):
                    continue
                try:
                    message = reader.recv()
                except EOFError:  # the child ended: normally after "done", or it crashed
                    break
                if message[0] == "item":
                    result.items.append(message[1])
                elif message[0] == "done":
                    result.finished = True
                else:
                    result.error = (message[1], message[2], message[3])
        finally:
            reader.close()
            process.join(timeout=0 if result.timed_out else 10)
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
            result.exitcode = process.exitcode
            if stderr_path.exists():
                result.stderr = stderr_path.read_text(encoding="utf-8", errors="replace")[-4000:]
    return result
