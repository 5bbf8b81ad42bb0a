"""`memdesk sync init|join|now|status` and `memdesk memory NAME --edit BLOCK --append TEXT`, as a
script drives them: two homes (MEMDESK_HOME) around one sync folder."""

from __future__ import annotations

import json

import pytest

from memdesk.cli.main import main
from memdesk.core.base.paths import HOME_ENV


@pytest.fixture
def homes(tmp_path, monkeypatch):
    def use(name: str) -> None:
        monkeypatch.setenv(HOME_ENV, str(tmp_path / name))

    return use


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_two_homes_pair_and_share_an_edit_made_at_the_terminal(homes, tmp_path, capsys):
    folder = str(tmp_path / "Sync" / "memdesk")
    homes("laptop")
    assert run(capsys, "agents", "create", "Sam")[0] == 0
    assert run(capsys, "memory", "Sam", "--edit", "human", "--append", "Lives in Porto")[0] == 0
    code, out, _ = run(capsys, "sync", "init", folder, "--name", "laptop", "--json")
    started = json.loads(out)
    assert code == 0 and len(started["code"].replace("-", "")) == 20
    assert run(capsys, "sync", "now")[0] == 0

    homes("desktop")
    code, out, _ = run(capsys, "sync", "join", folder, "--code", started["code"].lower(), "--name", "desktop")
    assert code == 0 and "Paired" in out
    code, out, _ = run(capsys, "memory", "Sam")
    assert "Lives in Porto" in out
    assert run(capsys, "memory", "Sam", "--edit", "human", "--append", "Likes green tea")[0] == 0
    assert run(capsys, "sync", "now")[0] == 0

    homes("laptop")
    code, out, _ = run(capsys, "sync", "now", "--json")
    assert json.loads(out)["received"] == {"desktop": 1}
    code, out, _ = run(capsys, "memory", "Sam")
    assert "Lives in Porto\nLikes green tea" in out
    code, out, _ = run(capsys, "history", "Sam", "--block", "human")
    assert "sync" in out  # the desktop's edit, from another device
    code, out, _ = run(capsys, "sync", "status", "--json")
    status = json.loads(out)
    assert [d["name"] for d in status["devices"]] == ["desktop"] and status["devices"][0]["applied"] == 1
    code, out, _ = run(capsys, "sync", "status")
    assert "laptop syncs through" in out and "desktop: applied 1 of 1" in out


def test_a_wrong_code_a_missing_folder_and_no_sync_say_what_to_do(homes, tmp_path, capsys):
    homes("laptop")
    folder = str(tmp_path / "shared")
    run(capsys, "sync", "init", folder, "--json")
    homes("desktop")
    code, _, err = run(capsys, "sync", "join", folder, "--code", "ABCD-EFGH-IJKL-MNOP-QRST")
    assert code == 1 and "does not open the sync folder" in err
    code, _, err = run(capsys, "sync", "join", str(tmp_path / "nowhere"), "--code", "ABCD-EFGH-IJKL-MNOP-QRST")
    assert code == 1 and "not a sync folder" in err
    code, _, err = run(capsys, "sync", "now")
    assert code == 1 and "does not sync yet" in err and "memdesk sync init" in err
    code, out, _ = run(capsys, "sync", "status", "--json")
    assert json.loads(out) == {"syncing": False}


def test_an_edit_over_the_limit_or_of_no_block_is_refused_and_changes_nothing(homes, capsys):
    homes("laptop")
    run(capsys, "agents", "create", "Sam")
    code, _, err = run(capsys, "memory", "Sam", "--edit", "diary", "--append", "x")
    assert code == 1 and "no memory block named 'diary'" in err and "human" in err
    code, _, err = run(capsys, "memory", "Sam", "--edit", "human", "--append", "x" * 5000)
    assert code == 1 and "over its limit" in err
    code, _, err = run(capsys, "memory", "Sam", "--edit", "human")
    assert code == 1 and "--append" in err
    code, out, _ = run(capsys, "history", "Sam", "--block", "human")
    assert "user updated" not in out


def test_removing_a_device_prints_the_new_pairing_code_that_the_next_device_joins_with(homes, tmp_path, capsys):
    folder = str(tmp_path / "Sync" / "memdesk")
    homes("laptop")
    code, out, _ = run(capsys, "sync", "init", folder, "--name", "laptop", "--json")
    first_code = json.loads(out)["code"]
    homes("phone")
    assert run(capsys, "sync", "join", folder, "--code", first_code, "--name", "phone")[0] == 0
    homes("laptop")
    assert run(capsys, "sync", "now")[0] == 0
    code, out, _ = run(capsys, "sync", "remove", "phone")
    assert code == 0 and "Removed phone: its key is revoked" in out
    new_code = out.strip().rsplit(" ", 1)[-1]
    assert len(new_code.replace("-", "")) == 20 and new_code != first_code
    homes("tablet")
    code, _, err = run(capsys, "sync", "join", folder, "--code", first_code, "--name", "tablet")
    assert code != 0 and "pairing code does not open" in err
    assert run(capsys, "sync", "join", folder, "--code", new_code, "--name", "tablet")[0] == 0
