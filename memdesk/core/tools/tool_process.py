"""Run a piece of foreign Python code (an imported tool) in a child process, never in ours.

The child is a fresh interpreter (``-I``: no user site, no PYTHON* variables) started in a new
temporary folder that is deleted afterwards, with a stripped environment (no HOME, no
MEMDESK_HOME, no tokens: a minimal PATH and the temporary folder as TMPDIR). It receives the
source, the function's name and its JSON arguments on stdin and nothing else: not the store's
path, not a connection, nothing of MemDesk (the child imports no MemDesk module). Whatever the
code prints is captured (capped); its return value comes back as text; an exception it raises
becomes a ToolError. It is killed at the time limit, or when the user stops the turn, with every
process it started (on Linux even one that left its session: see ``_CHILD_PROGRAM``).

Nor can it read MemDesk's environment, descriptors or memory through ``/proc/<ppid>``: every
MemDesk process is undumpable (memdesk/core/base/process_guard.py). This isolates MemDesk from the
code, not the user: the child runs as the user, so it can read their files, MemDesk's data folder
included, and use the network like any program they start.

In a frozen bundle ``sys.executable`` is MemDesk itself: it is started with ``CHILD_FLAG``, which
the bundle's entry point hands to ``child_main`` before anything else runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from memdesk.core.base.errors import GenerationCancelled, ToolError

if TYPE_CHECKING:  # only a type here: a frozen bundle's tool child imports this module, and no more
    from memdesk.core.runtime.base import CancelToken

CHILD_FLAG = "--memdesk-tool-child"

#: The child's whole program. It is passed with ``-c`` so that the child imports nothing of
#: MemDesk. The function is compiled with postponed annotations: Letta's tools annotate with
#: names (``List[str]``, ``"AgentState"``) they never import.
#:
#: On Linux the process started is a *reaper*, our code, that runs the tool in a child of its own:
#: it is the "child subreaper" of everything the tool starts, so a process that leaves its parent
#: or starts a new session (which ``killpg`` cannot reach) is still one of its descendants. When
#: the tool ends, or MemDesk stops it (SIGTERM, or MemDesk itself ends: the parent-death signal),
#: the reaper kills every descendant before it exits.
_CHILD_PROGRAM = r"""
import __future__, json, os, signal, sys, time

def _reply(fd, data):
    with os.fdopen(fd, "wb") as out:
        out.write(json.dumps(data).encode("utf-8"))

def _run_tool():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    # Everything the code prints, from Python or native code, goes to stderr; the saved stdout
    # carries only the reply.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    namespace = {"__name__": "memdesk_tool"}
    try:
        flags = __future__.annotations.compiler_flag
        code = compile(request["source"], request["filename"], "exec", flags=flags, dont_inherit=True)
        exec(code, namespace)
        value = namespace[request["function"]](**request["arguments"])
        text = "None" if value is None else str(value)
    except BaseException as error:
        sys.stdout.flush()
        _reply(reply_fd, {"ok": False, "error": f"{type(error).__name__}: {error}"[: request["limit"]]})
        return
    sys.stdout.flush()
    _reply(reply_fd, {"ok": True, "result": text[: request["limit"]], "length": len(text)})

def _descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append((int(entry), fields[0]))
    found, todo = [], [root]
    while todo:
        for pid, state in children.get(todo.pop(), ()):
            found.append((pid, state))
            todo.append(pid)
    return found

def _end_tree():
    for _ in range(200):
        alive = [pid for pid, state in _descendants(os.getpid()) if state != b"Z"]
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not alive:
            return
        time.sleep(0.005)

def _stopped(*_):
    _end_tree()
    os._exit(143)

def _main():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        subreaper = sys.platform.startswith("linux") and libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (ImportError, OSError, AttributeError):
        subreaper = False
    if not subreaper:
        _run_tool()  # elsewhere the tool's session, killed as a group, is all there is
        return
    signal.signal(signal.SIGTERM, _stopped)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG: MemDesk gone, the tree goes too
    tool = os.fork()
    if tool == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            _run_tool()
            sys.stdout.flush()
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(0)
    os.close(1)
    status = os.waitpid(tool, 0)[1]
    _end_tree()
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)

_main()
"""


def child_main() -> None:
    """The child's program, for a frozen bundle started with ``CHILD_FLAG``."""
    exec(compile(_CHILD_PROGRAM, "<memdesk tool child>", "exec"), {"__name__": "__memdesk_tool_child__"})  # noqa: S102


@dataclass(frozen=True)
class ProcessLimits:
    seconds: float = 30.0  # the call is killed after this long
    output_chars: int = 20_000  # of the return value and, apart, of what it printed


def child_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, CHILD_FLAG]
    return [sys.executable, "-I", "-X", "utf8", "-c", _CHILD_PROGRAM]


def child_environment(folder: str) -> dict[str, str]:
    """Only what an interpreter needs: nothing that points at the user's data or holds a secret."""
    environment = {"TMPDIR": folder, "TEMP": folder, "TMP": folder}
    if os.name == "nt":
        root = os.environ.get("SYSTEMROOT", r"C:\Windows")
        environment.update(SYSTEMROOT=root, PATH=os.path.join(root, "System32"))
    else:
        environment["PATH"] = os.defpath
    return environment


def run_tool_process(
    source: str,
    function: str,
    arguments: dict[str, Any],
    *,
    limits: ProcessLimits = ProcessLimits(),
    cancel: CancelToken | None = None,
) -> str:
    """Call ``function(**arguments)`` defined by ``source`` in a child process; its result as text.

    Raises ToolError when the code raises, crashes or runs out of time, GenerationCancelled when
    ``cancel`` fires first (the child is killed either way)."""
    request = json.dumps(
        {
            "source": source,
            "function": function,
            "arguments": arguments,
            "filename": f"<tool {function}>",
            "limit": limits.output_chars,
        }
    ).encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="memdesk-tool-", ignore_cleanup_errors=True) as folder:
        process = subprocess.Popen(
            child_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=folder,
            env=child_environment(folder),
            start_new_session=os.name != "nt",
        )
        assert process.stdout is not None and process.stderr is not None  # both are pipes
        reply = _Capture(process.stdout, limits.output_chars * 4 + 4096)
        printed = _Capture(process.stderr, limits.output_chars * 4)
        feeder = threading.Thread(target=_feed, args=(process.stdin, request), daemon=True, name="memdesk-tool-stdin")
        for thread in (reply, printed, feeder):
            thread.start()
        try:
            stopped = _wait(process, limits.seconds, cancel)
        finally:
            _kill(process)
            process.wait()
            for thread in (reply, printed, feeder):
                thread.join(timeout=5)
    if stopped == "cancelled":
        raise GenerationCancelled(f"Stopped {function} when the turn was stopped")
    if stopped == "timeout":
        raise ToolError(f"{function} did not finish within {limits.seconds:g} seconds and was stopped")
    return _result(function, reply.text(), printed.text(), process.returncode, limits.output_chars)


def _result(function: str, reply: str, printed: str, returncode: int, limit: int) -> str:
    printed = printed.strip()
    if len(printed) > limit:
        printed = printed[:limit] + f"\n[... printed output cut at {limit} characters]"
    try:
        data = json.loads(reply)
    except ValueError:
        last = f": {printed.splitlines()[-1]}" if printed else ""
        raise ToolError(f"{function} ended without a result (exit code {returncode}){last}") from None
    if not data["ok"]:
        raise ToolError(f"{function} raised {data['error']}")
    text = data["result"]
    if data["length"] > len(text):
        text += f"\n[... the result had {data['length']} characters; only the first {len(text)} are kept]"
    return f"{text}\n\nPrinted output:\n{printed}" if printed else text


def _wait(process: subprocess.Popen, seconds: float, cancel: CancelToken | None) -> str | None:
    deadline = time.monotonic() + seconds
    while not _exited(process):
        if cancel is not None and cancel.cancelled:
            return "cancelled"
        if time.monotonic() >= deadline:
            return "timeout"
        time.sleep(0.02)
    return None


def _exited(process: subprocess.Popen) -> bool:
    """Whether the child ended, without reaping it: while it is a zombie its process group id
    cannot be reused, so ``_kill`` can never reach a stranger."""
    if hasattr(os, "waitid"):
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    return process.poll() is not None


def _kill(process: subprocess.Popen) -> None:
    """Kill the child and, on POSIX, every process it started: on Linux every descendant of the
    reaper (which holds them all while it lives, see _CHILD_PROGRAM), then its session's group."""
    if os.name != "nt":
        if not _exited(process):
            _kill_descendants(process.pid)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    elif process.poll() is None:
        process.kill()


def _kill_descendants(root: int) -> None:
    """SIGKILL every process below ``root`` (read from /proc), until none is left running."""
    if not os.path.isdir("/proc/self"):
        return
    for _ in range(200):
        alive = [pid for pid, state in _descendants(root) if state != b"Z"]
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def _descendants(root: int) -> list[tuple[int, bytes]]:
    """(pid, state) of every process below ``root``."""
    children: dict[int, list[tuple[int, bytes]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append((int(entry), fields[0]))
    found, todo = [], [root]
    while todo:
        for pid, state in children.get(todo.pop(), ()):
            found.append((pid, state))
            todo.append(pid)
    return found


def _feed(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except OSError:  # the child ended (or was killed) before reading everything
        pass


class _Capture(threading.Thread):
    """Reads a pipe to its end, keeping the first ``limit`` bytes (the rest is drained, so a
    chatty child never blocks on a full pipe nor fills our memory)."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True, name="memdesk-tool-output")
        self.stream = stream
        self.limit = limit
        self.data = bytearray()

    def run(self) -> None:
        try:
            while chunk := self.stream.read1(65536):  # type: ignore[attr-defined]
                room = self.limit - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")
