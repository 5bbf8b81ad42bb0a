"""The terminal commands: agents, memory, settings; errors are one line with a non-zero exit."""

from __future__ import annotations

import subprocess
import sys

from memdesk.cli.main import main


def test_agents_create_list_and_delete(capsys):
    assert main(["agents", "create", "Nora"]) == 0
    assert main(["agents", "create", "Ivo", "--persona", "I am Ivo.", "--human", "Unknown user."]) == 0
    capsys.readouterr()
    assert main(["agents"]) == 0
    listing = capsys.readouterr().out
    assert "Ivo\t0 messages" in listing and "Nora" in listing
    assert main(["agents", "delete", "Nora", "--yes"]) == 0
    capsys.readouterr()
    main(["agents", "list"])
    assert "Nora" not in capsys.readouterr().out


def test_memory_prints_blocks_and_counts(capsys):
    main(["agents", "create", "Ivo", "--persona", "I am Ivo."])
    capsys.readouterr()
    assert main(["memory", "Ivo"]) == 0
    out = capsys.readouterr().out
    assert "[persona] 9/2000 characters\nI am Ivo." in out
    assert "recall memory: 0 messages" in out and "archival memory: 0 passages" in out


def test_errors_are_one_clear_line_with_a_non_zero_exit(capsys):
    assert main(["memory", "Ghost"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "memdesk: No agent named 'Ghost' (agents: none yet)"
    main(["agents", "create", "Twin"])
    assert main(["agents", "create", "Twin"]) == 1
    assert "already exists" in capsys.readouterr().err


def test_settings_are_persisted(capsys):
    assert main(["settings", "heartbeat_minutes", "15"]) == 0
    capsys.readouterr()
    main(["settings", "heartbeat_minutes"])
    assert "heartbeat_minutes = 15" in capsys.readouterr().out
    assert main(["settings", "context_size", "lots"]) == 1
    assert "expects int" in capsys.readouterr().err


def test_the_settings_list_summarises_the_saved_window_layout(capsys):
    layout = '{"version": 1, "geometry": "' + "A" * 400 + '", "state": ""}'
    assert main(["settings", "window_layout", layout]) == 0
    capsys.readouterr()
    main(["settings"])
    listed = capsys.readouterr().out
    assert "window_layout = (saved: " in listed and "A" * 400 not in listed
    main(["settings", "window_layout"])  # asked for by name: shown whole
    assert "A" * 400 in capsys.readouterr().out


def test_the_console_script_runs_as_a_process(memdesk_home):
    completed = subprocess.run(
        [sys.executable, "-m", "memdesk.cli.main", "agents"], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0 and "No agents yet" in completed.stdout
    assert (memdesk_home / "memdesk.sqlite3").exists()
