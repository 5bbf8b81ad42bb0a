"""read_from_text_file / append_to_text_file stay inside the agent's files folder."""

from __future__ import annotations

import os

import pytest

from desktop.core.tools.files import FileSandbox
from desktop.errors import ToolError


@pytest.fixture
def sandbox(tmp_path) -> FileSandbox:
    box = FileSandbox(tmp_path / "files" / "agent-1")
    box.root.mkdir(parents=True)
    return box


@pytest.mark.parametrize(
    "name",
    ["../secret.txt", "notes/../../secret.txt", "/etc/passwd", "C:\\Windows\\win.ini", "..\\secret.txt", "", "a\x00b"],
)
def test_escapes_are_refused(sandbox, name):
    with pytest.raises(ToolError):
        sandbox.resolve(name)


def test_a_symlink_pointing_outside_is_refused(sandbox, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    os.symlink(outside, sandbox.root / "link.txt")
    with pytest.raises(ToolError, match="outside"):
        sandbox.read_lines("link.txt", 1, 1)
    with pytest.raises(ToolError, match="outside"):
        sandbox.append("link.txt", "overwrite")
    assert outside.read_text() == "private"


def test_a_symlinked_folder_pointing_outside_is_refused(sandbox, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", sandbox.root / "sub")
    with pytest.raises(ToolError):
        sandbox.append("sub/new.txt", "x")
    assert not (tmp_path / "elsewhere" / "new.txt").exists()


def test_append_then_read_lines(sandbox):
    sandbox.append("notes/diary.txt", "first line")
    sandbox.append("notes/diary.txt", "second line\nthird line")
    assert sandbox.read_lines("notes/diary.txt", 2, 2) == "second line\nthird line"
    assert sandbox.read_lines("notes/diary.txt", 1, 1) == "first line"
    with pytest.raises(ToolError, match="fewer than 10 lines"):
        sandbox.read_lines("notes/diary.txt", 10, 1)
    with pytest.raises(ToolError, match="No file"):
        sandbox.read_lines("missing.txt", 1, 1)


def test_append_asks_for_consent_and_a_denial_is_a_failed_call(services, runtime, make_agent):
    from desktop.core.runtime.scripted import call, say
    from desktop.core.tools.context import DenyAll

    agent = make_agent(consent=DenyAll())
    runtime.enqueue(call("append_to_text_file", "write", False, filename="a.txt", content="hi"), say("ok"))
    result = agent.send_user_message("write a file")
    assert not result.steps[0].ok and "did not allow" in result.steps[0].result
    assert not (agent.files.root / "a.txt").exists()


def test_append_runs_after_consent(services, runtime, make_agent):
    from desktop.core.runtime.scripted import call, say

    asked = []

    class Recorder:
        def allow(self, agent_id, tool, summary):
            asked.append((tool, summary))
            return True

    agent = make_agent(consent=Recorder())
    runtime.enqueue(call("append_to_text_file", "write", False, filename="a.txt", content="hello"), say("Done."))
    agent.send_user_message("write a file")
    assert asked == [("append_to_text_file", "append 5 characters to a.txt\nthe text:\nhello")]
    assert (agent.files.root / "a.txt").read_text() == "hello\n"
