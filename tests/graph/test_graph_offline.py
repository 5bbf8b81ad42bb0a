"""Loading spaCy and its model opens no socket (urllib3, which spaCy's download command imports,
would bind one to probe for IPv6)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.processes
def test_the_nlp_pipeline_loads_and_runs_without_any_socket():
    code = textwrap.dedent(
        """
        import sys
        events = []
        sys.addaudithook(lambda event, args: events.append(event) if event.startswith("socket.") else None)
        from memdesk.core.graph.nlp import SpacyAnalyser
        result = SpacyAnalyser().analyse(["My sister Ann moved to Lisbon last year."])[0]
        assert {e.name for e in result.entities} >= {"Ann", "Lisbon"}, result
        print("EVENTS", events)
        """
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "EVENTS []" in completed.stdout
