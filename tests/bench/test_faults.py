"""A quick run of the fault campaign, so the script itself cannot rot (the full run is
`python -m bench.faults --json`, with the issue's trial counts)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bench import faults

ROOT = Path(__file__).resolve().parents[2]


def test_fuzzed_calls_are_all_invalid_and_each_answered_as_a_failed_call():
    rng = random.Random(3)
    assert all(not _valid(faults.fuzz_call(rng)) for _ in range(500))
    report = faults.fuzz(40, random.Random(4))
    assert report["ok"] and report["calls"] == report["steps"] == 40


def _valid(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("function") == "send_message" and isinstance(data.get("params"), dict) and isinstance(data["params"].get("message"), str) and len(data["params"]) == 1


def test_a_quick_run_of_the_kill_campaigns_meets_its_targets():
    result = subprocess.run(
        [sys.executable, "-m", "bench.faults", "--json", "--trials", "2", "--skip", "model_kill", "--skip", "sockets", "--skip", "fuzz"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    report = json.loads(result.stdout)
    assert report["agent_kill"]["ok"] and report["ingest_kill"]["ok"], report
    assert result.returncode == 1 and not report["all_targets_met"]  # skipped campaigns never pass


@pytest.mark.model
def test_a_quick_run_of_the_model_and_socket_campaigns():
    result = subprocess.run(
        [sys.executable, "-m", "bench.faults", "--json", "--trials", "1", "--skip", "agent_kill", "--skip", "ingest_kill", "--skip", "fuzz"],
        capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )
    report = json.loads(result.stdout)
    assert report["sockets"]["ok"], report["sockets"]
    assert report["model_kill"]["ok"], report["model_kill"]
