"""The start's fast path imports only what the first paint needs: what is used after it (numpy,
the agent's consolidation, the model catalog, documents, diagnostics...) is imported when first
used. Each check runs a fresh interpreter, whose ``sys.modules`` says what an import pulled in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, home: Path) -> dict:
    """``code`` ends by binding ``result``; its JSON comes back, with the modules loaded then."""
    script = f"import json, sys\n{code}\nprint(json.dumps({{'result': result, 'modules': sorted(sys.modules)}}))"
    env = {**os.environ, "MEMDESK_HOME": str(home), "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_reading_the_settings_before_the_model_starts_imports_no_numpy(tmp_path):
    # memdesk reads the store's settings before it starts the model's process (memdesk.app.local_model):
    # numpy there would delay the model by its import.
    _run("from memdesk.app.services import open_services\nopen_services().close()\nresult = None", tmp_path)
    ran = _run(
        "from memdesk.app.local_model import settings_before_opening\nfrom memdesk.core.base.paths import Paths\n"
        "result = settings_before_opening(Paths.from_environment()).runtime",
        tmp_path,
    )
    assert ran["result"] == "llamacpp"
    assert "numpy" not in ran["modules"]
    assert "sqlite_vec" not in ran["modules"]


def test_a_store_opened_without_the_sqlite_vec_package_still_has_its_vector_functions(tmp_path):
    ran = _run(
        "import os\nfrom memdesk.core.storage import open_database\n"
        "db = open_database(os.path.join(os.environ['MEMDESK_HOME'], 'store.db'))\n"
        "result = db.execute('SELECT vec_version()').fetchone()[0]\ndb.close()",
        tmp_path,
    )
    assert ran["result"].startswith("v")
    assert "sqlite_vec" not in ran["modules"]


def test_the_first_window_shows_with_qt_and_no_more_of_memdesk_than_the_settings(tmp_path):
    # It must show within half a second of the launch: the agent, the memory, numpy and the main
    # window's modules are imported after it shows (memdesk/ui/startup/first_window.py).
    ran = _run(
        "from memdesk.app.local_model import settings_before_opening\nfrom memdesk.core.base.paths import Paths\n"
        "from memdesk.ui.startup.first_window import open_first_window\n"
        "paths = Paths.from_environment()\nwindow = open_first_window(paths, settings_before_opening(paths))\n"
        "result = window.send_button.isEnabled()\nwindow.discard()\nwindow.lock.release()",
        tmp_path,
    )
    assert ran["result"] is True
    heavy = [
        m
        for m in ran["modules"]
        if m == "numpy"
        or m.startswith(
            (
                "memdesk.core.agent",
                "memdesk.core.memory",
                "memdesk.app.services",
                "memdesk.app.agents",
                "memdesk.ui.window.main_window",
            )
        )
    ]
    assert heavy == []


def test_the_terminal_and_an_agent_load_no_mcp_sdk_until_a_server_is_used(tmp_path):
    # Every `memdesk` command builds the whole parser, and every agent may have MCP servers: the SDK
    # (about a second) loads only when memdesk mcp serves or an agent calls a server.
    ran = _run(
        "from memdesk.cli.main import build_parser\nbuild_parser()\nimport memdesk.app.agents\nresult = None",
        tmp_path,
    )
    assert not [m for m in ran["modules"] if m == "mcp" or m.startswith(("mcp.", "mcp_types", "jsonschema"))]
