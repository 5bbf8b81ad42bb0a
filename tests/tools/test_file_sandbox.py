"""read_from_text_file / append_to_text_file stay inside the agent's files folder."""

from __future__ import annotations

import os

import pytest

from memdesk.core.base.errors import ToolError
from memdesk.core.tools.files import (
    MAX_APPEND_BYTES,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    MAX_READ_BYTES,
    MAX_READ_LINES,
    FileSandbox,
)


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
    from memdesk.core.runtime.scripted import call, say
    from memdesk.core.tools.context import DenyAll

    agent = make_agent(consent=DenyAll())
    runtime.enqueue(call("append_to_text_file", "write", False, filename="a.txt", content="hi"), say("ok"))
    result = agent.send_user_message("write a file")
    assert not result.steps[0].ok and "did not allow" in result.steps[0].result
    assert not (agent.files.root / "a.txt").exists()


def test_append_runs_after_consent(services, runtime, make_agent):
    from memdesk.core.runtime.scripted import call, say

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


# --- hard links and caps ----------------------------------------------------------------------------
def test_a_hard_link_to_a_file_outside_is_neither_read_nor_appended_to(sandbox, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")
    os.link(outside, sandbox.root / "diary.txt")
    with pytest.raises(ToolError, match="hard link"):
        sandbox.read_lines("diary.txt", 1, 1)
    with pytest.raises(ToolError, match="hard link"):
        sandbox.append("diary.txt", "overwrite")
    assert outside.read_text() == "private\n"


def test_an_append_over_the_cap_is_refused_and_creates_nothing(sandbox):
    with pytest.raises(ToolError, match="at most"):
        sandbox.append("new.txt", "x" * (MAX_APPEND_BYTES + 1))
    assert not (sandbox.root / "new.txt").exists()
    with pytest.raises(ToolError, match="at most"):
        sandbox.append("new.txt", "é" * (MAX_APPEND_BYTES // 2 + 1))  # the cap counts bytes, not characters
    sandbox.append("new.txt", "x" * (MAX_APPEND_BYTES - 1))  # newline included: exactly the cap
    assert (sandbox.root / "new.txt").stat().st_size == MAX_APPEND_BYTES


def test_a_file_stops_growing_at_the_file_cap(sandbox):
    path = sandbox.root / "log.txt"
    with open(path, "wb") as handle:
        handle.truncate(MAX_FILE_BYTES - 10)
    with pytest.raises(ToolError, match="would grow beyond"):
        sandbox.append("log.txt", "a line longer than ten bytes")
    assert path.stat().st_size == MAX_FILE_BYTES - 10
    sandbox.append("log.txt", "ok")
    assert path.stat().st_size == MAX_FILE_BYTES - 7


def test_a_30_mib_line_comes_back_cut_with_a_note_and_the_next_line_is_reachable(sandbox):
    with open(sandbox.root / "dump.txt", "wb") as handle:
        handle.write(b"a" * (30 * 1024 * 1024) + b"\nsecond line\n")
    text = sandbox.read_lines("dump.txt", 1, 2)
    first, second = text.split("\n")
    assert first.startswith("a" * MAX_LINE_BYTES) and "line 1 is longer than" in first
    assert len(first) < MAX_LINE_BYTES + 200
    assert second == "second line"
    assert sandbox.read_lines("dump.txt", 2, 1) == "second line"


def test_a_read_returns_a_bounded_amount_of_text_and_says_where_to_go_on(sandbox):
    sandbox.append("long.txt", "\n".join(f"{n:04d} " + "b" * 995 for n in range(1, MAX_READ_LINES + 1)))
    text = sandbox.read_lines("long.txt", 1, MAX_READ_LINES)
    lines = text.split("\n")
    assert len(text.encode()) < MAX_READ_BYTES + 200
    assert lines[0].startswith("0001 ") and lines[-1].startswith("[... stopped after")
    go_on = len(lines)  # the note names the first line left out
    assert f"read on from line {go_on}" in lines[-1]
    assert sandbox.read_lines("long.txt", go_on, 1).startswith(f"{go_on:04d} ")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
def test_a_named_pipe_in_the_folder_does_not_hang_a_read_or_an_append(sandbox):
    os.mkfifo(sandbox.root / "pipe")
    with pytest.raises(ToolError):
        sandbox.read_lines("pipe", 1, 1)
    with pytest.raises(ToolError):
        sandbox.append("pipe", "x")
