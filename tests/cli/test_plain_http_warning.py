"""A model server on another machine over plain http is allowed (a server on the local network
may have no certificate), but never silently: setting it warns, and `memdesk doctor` says so on a
line that does not fail. Nothing here contacts the server: 192.0.2.10 is a documentation address."""

from __future__ import annotations

import json

import pytest

from memdesk.cli.main import main
from memdesk.core.net.plain_http import is_remote_plain_http, plain_http_warning

REMOTE = "http://192.0.2.10:8080/v1"


def test_setting_a_remote_plain_http_server_warns_and_still_sets_it(capsys):
    assert main(["settings", "openai_base_url", REMOTE]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("memdesk: warning: ") and "unencrypted to 192.0.2.10" in err and "https" in err
    assert f"openai_base_url = {REMOTE}" in out


@pytest.mark.parametrize(
    "url", ["https://192.0.2.10/v1", "http://127.0.0.1:8080/v1", "http://localhost:1234/v1", "http://[::1]:8080/v1"]
)
def test_https_or_a_server_on_this_machine_sets_without_a_warning(url, capsys):
    assert main(["settings", "openai_base_url", url]) == 0
    assert capsys.readouterr().err == ""


def test_choosing_the_server_runtime_warns_again_and_leaving_it_does_not(capsys):
    main(["settings", "openai_base_url", REMOTE])
    capsys.readouterr()
    assert main(["settings", "runtime", "openai"]) == 0
    assert "unencrypted" in capsys.readouterr().err
    assert main(["settings", "runtime", "llamacpp"]) == 0
    assert capsys.readouterr().err == ""


def test_doctor_warns_about_a_remote_plain_http_server_without_failing(services, capsys):
    services.settings_store.set("runtime", "openai")
    services.settings_store.set("openai_base_url", REMOTE)
    assert main(["doctor", "--check", "model"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"warn  model     served by {REMOTE}")
    assert lines[1].strip().startswith("warning: ") and "unencrypted to 192.0.2.10" in lines[1]
    assert lines[-1] == "All 1 checks passed, 1 with a warning."
    assert main(["doctor", "--json", "--check", "model"]) == 0
    (check,) = json.loads(capsys.readouterr().out)["checks"]
    assert check["ok"] is True and "unencrypted" in check["warning"]


def test_doctor_says_nothing_of_the_kind_for_https(services, capsys):
    services.settings_store.set("runtime", "openai")
    services.settings_store.set("openai_base_url", "https://192.0.2.10/v1")
    assert main(["doctor", "--check", "model"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok    model") and "warning" not in out


@pytest.mark.parametrize(
    ("url", "remote_plain"),
    [
        (REMOTE, True),
        ("HTTP://Models.Example/v1", True),
        ("http://10.0.0.5:11434/v1", True),  # the local network is still a network
        ("https://models.example/v1", False),
        ("http://127.0.0.1:8080/v1", False),
        ("http://localhost/v1", False),
        ("", False),
    ],
)
def test_what_counts_as_plain_http_off_this_machine(url, remote_plain):
    assert is_remote_plain_http(url) is remote_plain
    assert (plain_http_warning(url) is not None) is remote_plain
