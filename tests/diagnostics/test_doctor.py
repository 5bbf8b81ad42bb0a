"""`memdesk doctor`: one line per check, a clear failing line (cause and fix) for each broken
thing, exit 1 when anything fails, and nothing written to the user's data."""

from __future__ import annotations

import json
import sys

import pytest

from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.bundled import default_model_path
from memdesk.diagnostics import CHECK_NAMES, Doctor
from memdesk.diagnostics.crash import explain_exit


def doctor(capsys, *args: str) -> tuple[int, str]:
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def failing_line(output: str, name: str) -> str:
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"FAIL  {name} "):
            return line + "\n" + (lines[index + 1] if index + 1 < len(lines) else "")
    raise AssertionError(f"no failing {name} line in:\n{output}")


# --- a corrupt model -----------------------------------------------------------------------------
def test_a_truncated_model_is_a_failing_model_line_and_exit_1(services, tmp_path, capsys):
    model_path = default_model_path()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(model_path.read_bytes()[:4096])  # the header of a real model, no weights
    services.settings_store.set("model_path", str(broken))
    code, out = doctor(capsys, "--check", "model", "--check", "decode")
    assert code == 1
    model = failing_line(out, "model")
    assert "broken.gguf" in model and "truncated" in model and "fix:" in model
    assert "not run" in failing_line(out, "decode")


def test_a_file_that_is_not_a_model_is_named(services, tmp_path, capsys):
    fake = tmp_path / "notes.gguf"
    fake.write_text("these are my notes, not a model")
    services.settings_store.set("model_path", str(fake))
    code, out = doctor(capsys, "--check", "model")
    assert code == 1
    assert "notes.gguf" in failing_line(out, "model")


# --- the store -------------------------------------------------------------------------------------
def test_a_store_from_a_newer_memdesk_is_a_failing_line_not_a_crash_and_is_left_alone(services, capsys):
    services.db.execute("PRAGMA user_version = 99")
    code, out = doctor(capsys, "--check", "store")
    assert code == 1
    line = failing_line(out, "store")
    assert "newer MemDesk" in line and "schema 99" in line and "upgrade MemDesk" in line
    assert services.db.schema_version == 99  # read-only: no migration, no rewrite


def test_a_damaged_store_is_a_failing_line(memdesk_home, capsys):
    memdesk_home.mkdir(parents=True)
    Paths.from_environment().database.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    code, out = doctor(capsys, "--check", "store")
    assert code == 1
    assert "memdesk.sqlite3" in failing_line(out, "store")


def test_a_healthy_store_reports_integrity_and_schema(services, capsys):
    code, out = doctor(capsys, "--check", "store", "--check", "sqlite", "--check", "disk", "--check", "python")
    assert code == 0, out
    assert "integrity ok" in out and "schema" in out
    assert "sqlite-vec" in out and "FTS5 available" in out
    assert "free in" in out


def test_no_store_yet_passes_and_is_not_created(memdesk_home, capsys):
    code, out = doctor(capsys, "--check", "store")
    assert code == 0
    assert "does not exist yet" in out
    assert not memdesk_home.exists()


# --- the window ----------------------------------------------------------------------------------
def test_a_missing_display_is_a_failing_window_line_and_exit_1(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("QT_QPA_PLATFORM", "wayland")
    code, out = doctor(capsys, "--check", "window")
    assert code == 1
    line = failing_line(out, "window")
    assert "no display" in line and "DISPLAY" in line and "fix:" in line


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 displays are a Linux matter")
def test_an_unreachable_display_is_qts_own_complaint_caught_in_a_child(monkeypatch, capsys):
    from memdesk.diagnostics import system_libs

    monkeypatch.setenv("DISPLAY", ":987")  # no X server there
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    code, out = doctor(capsys, "--check", "window")
    assert code == 1  # and the doctor itself survived Qt's abort
    line = failing_line(out, "window")
    if not system_libs.missing_libraries():
        assert "could not connect to display :987" in line and "SIGABRT" in line


def test_the_offscreen_platform_passes_and_says_nothing_will_be_visible(monkeypatch, capsys):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    code, out = doctor(capsys, "--check", "window")
    assert code == 0, out
    assert "platform plugin offscreen" in out and "headless" in out


# --- the model process --------------------------------------------------------------------------
def run_probe(probe: str, *checks: str, timeout: float = 60.0):
    return Doctor(Paths.from_environment(), decode_probe=("doctor_probes", probe), timeout=timeout).run(checks)


def test_a_segfault_in_the_model_process_names_the_cause_and_the_rebuild():
    report = run_probe("segfault_at_decode", "decode")
    (check,) = report.checks
    assert not check.ok
    assert "while decoding" in check.detail and "segmentation fault (SIGSEGV)" in check.detail and "AMX" in check.detail
    assert check.fix == "rebuild portable: make clean-venv && make install"


def test_an_illegal_instruction_names_the_cpu_mismatch():
    report = run_probe("illegal_instruction", "cpu", "decode")
    cpu, decode = report.checks
    assert cpu.ok  # the build reported itself before dying
    assert not decode.ok and "while loading the model" in decode.detail and "SIGILL" in decode.detail
    assert "make clean-venv && make install" in decode.fix


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/cpuinfo")
def test_a_build_using_features_this_cpu_lacks_fails_the_cpu_line():
    from doctor_probes import AMX_BUILD

    from memdesk.diagnostics.cpu import build_features, cpu_flags, missing_features

    # What the stand-in build lacks here depends on this CPU (an AVX2-only EPYC also lacks AVX512,
    # an Arm CPU lacks all of it): the expected line is derived from /proc/cpuinfo, not written down.
    lacking = missing_features(build_features(AMX_BUILD["system_info"]), cpu_flags()[1])
    report = run_probe("amx_build", "cpu")
    (check,) = report.checks
    if lacking:
        assert not check.ok and f"lacks {' '.join(lacking)}" in check.detail
        assert "make clean-venv && make install" in check.fix
    else:  # a CPU with AMX and AVX-512 runs the stand-in build: the line passes
        assert check.ok and "has them all" in check.detail


def test_the_cpu_line_names_every_feature_a_build_uses_and_the_cpu_lacks():
    from memdesk.diagnostics.cpu import build_features, missing_features

    features = build_features("CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |")
    assert features == ["SSE3", "AVX2", "AVX512", "AMX_INT8"]  # REPACK is no CPU feature
    avx2_only = frozenset({"pni", "avx2"})
    assert missing_features(features, avx2_only) == ["AVX512", "AMX_INT8"]
    assert missing_features(features, avx2_only | {"avx512f", "amx_int8"}) == []


@pytest.mark.processes
def test_a_hung_model_process_times_out_and_is_killed():
    report = run_probe("hangs", "decode", timeout=5)
    (check,) = report.checks
    assert not check.ok and "did not finish in time" in check.detail


def test_exit_codes_become_causes():
    assert "lack of memory" in explain_exit(-9)[0] and "smaller model" in explain_exit(-9)[1]
    assert "aborted" in explain_exit(-6)[0]
    assert "illegal instruction" in explain_exit(0xC000001D)[0]  # Windows reports codes, not signals
    assert "exited with code 3" in explain_exit(3)[0]


# --- the whole report -----------------------------------------------------------------------------
def test_json_has_one_entry_per_check_and_the_verdict(services, capsys):
    code, out = doctor(capsys, "--json", "--check", "python", "--check", "store")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True
    assert [check["name"] for check in data["checks"]] == ["python", "store"]
    assert set(data["checks"][0]) == {"name", "ok", "detail", "fix", "warning"}


@pytest.mark.model
@pytest.mark.embedder
def test_this_machine_passes_every_check_with_the_real_model_and_embedder(services, monkeypatch, capsys):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    code, out = doctor(capsys)
    assert code == 0, out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("ok  ")] == list(CHECK_NAMES)
    assert "tokens in" in out and "SmolLM2" in out and "all-MiniLM-L6-v2" in out


@pytest.mark.model
def test_a_killed_model_process_raises_the_typed_crash_the_window_offers_diagnostics_for():
    import os
    import signal

    from memdesk.core.base.errors import ModelCrashedError
    from memdesk.core.runtime.isolated import isolated_llama
    from memdesk.core.runtime.llamacpp.settings import LlamaSettings

    runtime = isolated_llama(LlamaSettings.from_settings(Settings(context_size=512, threads=1), default_model_path()))
    try:
        os.kill(runtime.pid, signal.SIGSEGV)
        with pytest.raises(ModelCrashedError) as caught:
            runtime.count_tokens("hello")
        assert caught.value.exit_code == -signal.SIGSEGV
        assert "memdesk doctor" in caught.value.user_message
    finally:
        runtime.close()


def test_a_server_runtime_that_is_down_is_a_failing_decode_line(services, capsys):
    services.settings_store.set("runtime", "openai")
    services.settings_store.set("openai_base_url", "http://127.0.0.1:9/v1")  # the discard port: nothing listens
    code, out = doctor(capsys, "--check", "model", "--check", "cpu", "--check", "decode")
    assert code == 1
    assert "ok    model     served by http://127.0.0.1:9/v1" in out
    assert "http://127.0.0.1:9/v1" in failing_line(out, "decode")


def test_a_damaged_store_is_told_the_newest_good_snapshot_and_its_command(services, capsys):
    snapshot = services.backups.create("daily")
    path = services.paths.database
    services.close()
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    code, out = doctor(capsys, "--check", "store")
    assert code == 1
    assert f"memdesk backup restore {snapshot.id}" in failing_line(out, "store")


def test_a_damaged_store_without_snapshots_is_told_to_move_it_aside(memdesk_home, capsys):
    memdesk_home.mkdir(parents=True)
    Paths.from_environment().database.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    code, out = doctor(capsys, "--check", "store")
    assert code == 1 and "no snapshot to restore" in failing_line(out, "store")
