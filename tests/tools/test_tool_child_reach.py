"""What an imported tool's process can reach of MemDesk: not its environment, descriptors or memory
through /proc (every MemDesk process is undumpable), and nothing it starts outlives the call, even
a process that left its session (issue 35, item 7)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memdesk.core.base.errors import ToolError
from memdesk.core.tools.tool_process import ProcessLimits, run_tool_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")

#: Root reads any process's /proc entries: as root, the scenario runs as an ordinary user (nobody),
#: keeping only the right to read and search folders, so that it can run this checkout's Python.
NOBODY = 65534


def _as_an_ordinary_user(command: list[str], home: Path) -> list[str]:
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): no ordinary user to run the check as")
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, NOBODY, NOBODY)
    return [
        setpriv,
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
        *command,
    ]


#: A tool that walks up its ancestors and takes what /proc gives it of each.
PEEK = textwrap.dedent(
    """
    import json, os

    def peek() -> str:
        seen = []
        pid = os.getpid()
        while pid > 1:
            with open(f"/proc/{pid}/status") as status:
                pid = int(status.read().split("PPid:")[1].split()[0])
            if pid <= 1:
                break
            found = {"pid": pid}
            try:
                with open(f"/proc/{pid}/environ", "rb") as environ:
                    found["environ"] = environ.read().decode("utf-8", "replace")
            except OSError as error:
                found["environ_error"] = error.errno
            try:
                found["fds"] = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError as error:
                found["fds_error"] = error.errno
            seen.append(found)
        return json.dumps(seen)
    """
)

#: A MemDesk process (any terminal command guards itself first), holding the store open and a
#: secret in its environment, that calls the tool.
SCENARIO = textwrap.dedent(
    """
    import os, sys
    from memdesk.cli.main import main
    from memdesk.core.base.paths import Paths
    from memdesk.core.storage import open_database
    from memdesk.core.tools.tool_process import run_tool_process

    assert main(["settings", "heartbeat_minutes"]) == 0
    print("scenario", os.getpid())
    db = open_database(Paths.from_environment().database)
    print(run_tool_process(sys.stdin.read(), "peek", {}))
    db.close()
    """
)


def test_the_tools_process_cannot_read_memdesks_environment_or_open_files(tmp_path):
    home = tmp_path / "home"
    environment = {
        **os.environ,
        "MEMDESK_HOME": str(home),
        "MEMDESK_PASSPHRASE_FILE": str(tmp_path / "the-secret-passphrase-file"),
    }
    done = subprocess.run(
        _as_an_ordinary_user([sys.executable, "-c", SCENARIO], home),
        input=PEEK,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    memdesk = next(found for found in seen if found["pid"] == int(done.stdout.split("scenario ")[1].split()[0]))
    assert "environ" not in memdesk and "fds" not in memdesk  # /proc refused both
    for found in seen:
        assert "the-secret-passphrase-file" not in found.get("environ", ""), found["pid"]
        assert not any("memdesk.sqlite3" in link for link in found.get("fds", [])), found["pid"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


#: Starts a process in a new session (out of the tool's process group) that records its pid and
#: sleeps, then waits (``wait``) or returns at once.
ESCAPE = textwrap.dedent(
    """
    import os, subprocess, sys, time

    def escape(record: str, wait: bool) -> str:
        code = f"import os, time; open({record!r}, 'w').write(str(os.getpid())); time.sleep(120)"
        subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
        deadline = time.monotonic() + 60
        while not os.path.exists(record) and time.monotonic() < deadline:
            time.sleep(0.01)
        while wait:
            time.sleep(1)
        return "left it running"
    """
)


@pytest.mark.parametrize("wait", [True, False], ids=["stopped at the time limit", "returned"])
def test_nothing_the_tool_started_outlives_the_call_even_in_a_new_session(tmp_path, wait):
    record = tmp_path / "escaped.pid"
    arguments = {"record": str(record), "wait": wait}
    if wait:
        with pytest.raises(ToolError, match="did not finish within 3 seconds"):
            run_tool_process(ESCAPE, "escape", arguments, limits=ProcessLimits(seconds=3))
    else:
        assert run_tool_process(ESCAPE, "escape", arguments) == "left it running"
    escaped = int(record.read_text())
    try:
        assert _gone(escaped)
    finally:
        if _alive(escaped):
            os.kill(escaped, 9)
