"""Imported tools (a Letta tool's Python code): enabling reads the code and refuses anything that
would run on loading; opening the agent runs nothing; a call asks once, outside the step's
transaction, and runs in a child process (temporary folder, stripped environment, time limit,
killed when the turn stops)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from memdesk.core.base.errors import ConfigError, GenerationCancelled
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.scripted import call, say
from memdesk.core.storage import open_database
from memdesk.core.tools.imported import ImportedTools, build_tool
from memdesk.core.tools.tool_process import ProcessLimits, run_tool_process


class RecordingConsent:
    """The user's answers to consent questions, and the questions asked."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        self.asked.append((tool, summary))
        return self.answer


def add_tool(services, agent_id: int, name: str, source: str, **parameters: str) -> ImportedTools:
    store = ImportedTools(services.db, services.clock)
    schema = {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": {p: {"type": t} for p, t in parameters.items()},
            "required": list(parameters),
        },
    }
    store.add(
        agent_id,
        name=name,
        description=f"The {name} tool.",
        source_code=source,
        json_schema=schema,
        origin="test.af",
        original={},
    )
    return store


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie waiting to be reaped by someone else."""
    if Path("/proc/self/stat").exists():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(pid: int, seconds: float = 10.0) -> bool:
    """Whether the process ends within ``seconds`` (a killed grandchild is reaped by init)."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for_file(path: Path, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize(
    ("source", "line", "what"),
    [
        ("def mark():\n    return 1\n\nopen({marker!r}, 'w').write('ran')\n", 4, "open("),
        (
            "import os\n\nif __name__ == '__main__':\n    open({marker!r}, 'w')\n\ndef mark():\n    return 1\n",
            3,
            "if __name__",
        ),
        ("import functools\n\n@functools.lru_cache\ndef mark():\n    return 1\n", 3, "@functools.lru_cache"),
        ("import os\n\ndef mark(path=os.getcwd()):\n    return path\n", 3, "os.getcwd()"),
        ("class Helper:\n    open({marker!r}, 'w')\n\ndef mark():\n    return 1\n", 1, "class Helper"),
        ("LIMIT = len('abc')\n\ndef mark():\n    return LIMIT\n", 1, "LIMIT = len"),
    ],
)
def test_enabling_refuses_code_that_would_run_something_when_it_loads(services, tmp_path, source, line, what):
    marker = tmp_path / "marker"
    agent = services.create_agent("sam")
    store = add_tool(services, agent.id, "mark", source.format(marker=str(marker)))
    with pytest.raises(ConfigError, match=f"line {line}") as refused:
        store.set_enabled(agent.id, "mark", True)
    assert what in refused.value.message and "Cannot enable mark" in refused.value.message
    assert not store.get(agent.id, "mark").enabled and not marker.exists()


def test_imports_functions_constants_and_a_docstring_may_stand_at_the_top(services):
    source = (
        '"""Order tools."""\nfrom __future__ import annotations\nimport json\nfrom typing import List\n\n'
        "LIMIT = 3\nNAMES: tuple = ('a', 'b')\nLOW, HIGH = -1, {'x': [1, 2.5]}\n\n"
        "def _helper(x):\n    return x\n\n"
        "def look(order: int, note: str = 'none', *, flag=None) -> str:\n    return json.dumps([order, note])\n"
    )
    agent = services.create_agent("sam")
    store = add_tool(services, agent.id, "look", source, order="integer")
    assert store.set_enabled(agent.id, "look", True).enabled


def test_opening_the_agent_runs_none_of_the_stored_code_even_if_it_changed_after_enabling(
    services, tmp_path, make_agent
):
    marker = tmp_path / "marker"
    agent = services.create_agent("sam")
    store = add_tool(services, agent.id, "mark", "def mark():\n    return 1\n")
    store.set_enabled(agent.id, "mark", True)
    changed = f"def mark():\n    return 1\n\nopen({str(marker)!r}, 'w').write('ran')\n"
    services.db.execute("UPDATE imported_tools SET source_code = ? WHERE agent_id = ?", (changed, agent.id))
    opened = make_agent("sam")
    assert not marker.exists()
    assert "mark" not in opened.tools.names()  # its code no longer passes the check: left out


def test_a_call_asks_once_and_runs_in_a_child_process_in_a_temporary_folder_with_a_stripped_environment(
    services, runtime, make_agent, memdesk_home, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    source = (
        "import json, os\n\n"
        "def where(note: str) -> str:\n"
        "    open('scratch.txt', 'w').write(note)\n"
        "    print('looked around')\n"
        "    return json.dumps({'pid': os.getpid(), 'cwd': os.getcwd(), 'env': dict(os.environ)})\n"
    )
    agent = services.create_agent("sam")
    add_tool(services, agent.id, "where", source, note="string").set_enabled(agent.id, "where", True)
    consent = RecordingConsent()
    opened = make_agent("sam", consent=consent)
    runtime.enqueue(call("where", "look", False, note="hi"), say("done"))
    step = opened.send_user_message("where do you run?").steps[0]
    assert step.ok, step.result
    assert consent.asked == [
        (
            "where",
            "run the imported tool where(note) in a separate process\n"
            'its arguments (17 characters):\n{\n "note": "hi"\n}',
        )
    ]
    reply, printed = step.result.split("\n\nPrinted output:\n")
    seen = json.loads(reply)
    assert printed == "looked around"
    assert seen["pid"] != os.getpid()
    assert seen["cwd"] != os.getcwd() and not Path(seen["cwd"]).exists()  # its own folder, removed afterwards
    assert not {"HOME", "MEMDESK_HOME", "OPENAI_API_KEY"} & set(seen["env"])
    assert str(memdesk_home) not in step.result and str(services.db.path) not in step.result


def test_the_tools_exception_goes_back_to_the_model_as_a_failed_call(services, runtime, make_agent):
    agent = services.create_agent("sam")
    source = "def look(order: int):\n    raise LookupError(f'no order {order}')\n"
    add_tool(services, agent.id, "look", source, order="integer").set_enabled(agent.id, "look", True)
    runtime.enqueue(call("look", "look", False, order=7), say("sorry"))
    step = make_agent("sam").send_user_message("order 7?").steps[0]
    assert not step.ok and step.result == "look raised LookupError: no order 7"


def test_one_consent_question_and_the_store_stays_writable_while_the_tool_runs(services, runtime, make_agent, tmp_path):
    started, go = tmp_path / "started", tmp_path / "go"
    source = (
        "import os, time\n\n"
        "def wait(started: str, go: str) -> str:\n"
        "    open(started, 'w').close()\n"
        "    deadline = time.monotonic() + 60\n"
        "    while not os.path.exists(go) and time.monotonic() < deadline:\n"
        "        time.sleep(0.02)\n"
        "    return 'went on'\n"
    )
    agent = services.create_agent("sam")
    add_tool(services, agent.id, "wait", source, started="string", go="string").set_enabled(agent.id, "wait", True)
    consent = RecordingConsent()
    opened = make_agent("sam", consent=consent)
    outcome: list[object] = []

    def another_writer() -> None:
        try:
            assert wait_for_file(started)
            other = open_database(services.db.path, migrate=False, busy_timeout=0.2)
            try:
                other.execute("INSERT INTO settings(key, value) VALUES ('written_meanwhile', '1')")
            finally:
                other.close()
            outcome.append("wrote")
        except Exception as error:  # noqa: BLE001 - the assertion below shows it
            outcome.append(error)
        finally:
            go.touch()

    writer = threading.Thread(target=another_writer)
    writer.start()
    runtime.enqueue(call("wait", "wait", False, started=str(started), go=str(go)), say("done"))
    step = opened.send_user_message("wait, please").steps[0]
    writer.join(timeout=90)
    assert outcome == ["wrote"]
    assert step.ok and step.result == "went on"
    assert [tool for tool, _ in consent.asked] == ["wait"]


def test_a_tool_that_runs_too_long_is_killed_with_what_it_started(services, runtime, make_agent, tmp_path):
    pids = tmp_path / "pids"
    source = (
        "import subprocess, sys, time\n\n"
        "def slow(pids: str) -> str:\n"
        "    helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "    open(pids, 'w').write(f'{__import__(\"os\").getpid()} {helper.pid}')\n"
        "    time.sleep(120)\n"
        "    return 'finished'\n"
    )
    agent = services.create_agent("sam")
    store = add_tool(services, agent.id, "slow", source, pids="string")
    store.set_enabled(agent.id, "slow", True)
    opened = make_agent("sam")
    opened.tools.remove("slow")
    opened.tools.add(build_tool(store.get(agent.id, "slow"), ProcessLimits(seconds=3)))
    runtime.enqueue(call("slow", "wait", False, pids=str(pids)), say("too slow"))
    began = time.monotonic()
    step = opened.send_user_message("go slowly").steps[0]
    assert time.monotonic() - began < 60  # well before its sleep would have ended
    assert not step.ok and step.result == "slow did not finish within 3 seconds and was stopped"
    tool_pid, helper_pid = map(int, pids.read_text().split())
    assert gone(tool_pid) and gone(helper_pid)


def test_stopping_the_turn_kills_the_running_tool(services, runtime, make_agent, tmp_path):
    pids = tmp_path / "pids"
    source = (
        "import os, time\n\ndef slow(pids: str) -> str:\n"
        "    open(pids, 'w').write(str(os.getpid()))\n    time.sleep(120)\n    return 'finished'\n"
    )
    agent = services.create_agent("sam")
    add_tool(services, agent.id, "slow", source, pids="string").set_enabled(agent.id, "slow", True)
    opened = make_agent("sam")
    cancel = CancelToken()
    stopper = threading.Thread(target=lambda: wait_for_file(pids) and cancel.cancel())
    stopper.start()
    runtime.enqueue(call("slow", "wait", False, pids=str(pids)), say("never"))
    began = time.monotonic()
    with pytest.raises(GenerationCancelled):
        opened.send_user_message("go slowly", cancel=cancel)
    stopper.join(timeout=60)
    assert time.monotonic() - began < 60
    assert pids.read_text() and gone(int(pids.read_text()))


@pytest.mark.skipif(os.name == "nt", reason="the stand-in bundle is a script started through its #! line")
def test_a_frozen_bundle_runs_the_call_through_its_own_entry_point(tmp_path, monkeypatch):
    """In a bundle ``sys.executable`` is MemDesk itself: packaging/entry.py must hand the call to
    the tool child before anything else (here a script stands in for the frozen executable)."""
    root = Path(__file__).resolve().parents[2]
    bundle = tmp_path / "MemDesk"
    bundle.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.path.insert(0, {str(root)!r})\n"
        f"runpy.run_path({str(root / 'packaging' / 'entry.py')!r}, run_name='__main__')\n"
    )
    bundle.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(bundle))
    source = "import os\n\ndef double(x: int) -> str:\n    return f'{2 * x} from {os.getpid()}'\n"
    doubled, pid = run_tool_process(source, "double", {"x": 21}).split(" from ")
    assert doubled == "42" and int(pid) != os.getpid()


def test_what_a_call_returns_and_prints_is_capped():
    source = "def chatty() -> str:\n    print('p' * 1_000_000)\n    return 'r' * 50_000\n"
    text = run_tool_process(source, "chatty", {}, limits=ProcessLimits(output_chars=1000))
    result, printed = text.split("\n\nPrinted output:\n")
    assert result == "r" * 1000 + "\n[... the result had 50000 characters; only the first 1000 are kept]"
    assert printed == "p" * 1000 + "\n[... printed output cut at 1000 characters]"
