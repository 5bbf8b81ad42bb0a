"""The Models page, driven like a user would: open it, download from the loopback hub with
progress, cancel, switch models (memory kept, budget following the new model), a model that fails
to load leaving the previous one active, and a model on a local server."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from memdesk.app.services import open_services
from memdesk.core.base.errors import ModelFileError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.models import hub as hub_module
from memdesk.core.models import library as library_module
from memdesk.core.models import servers
from memdesk.core.models.catalog import Catalog, load_catalog
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.ui.window.main_window import MainWindow
from tests.models.conftest import PLAIN_TEMPLATE, entry_for, gguf_payload, payload, write_gguf
from tests.models.test_local_servers import FakeServer

BIG = 3 * 1024 * 1024


class Runtimes:
    """make_runtime for the window: a scripted model per settings; files named alien*.gguf fail to
    load the way llama.cpp refuses an unknown architecture."""

    def __init__(self) -> None:
        self.built: list[tuple[str, ScriptedRuntime]] = []
        self.gate = threading.Event()  # files named slow*.gguf load once it is set
        self.gate.set()

    def __call__(self, settings) -> ScriptedRuntime:
        name = settings.openai_model if settings.runtime == "openai" else Path(settings.model_path).name
        if name.startswith("slow"):
            self.gate.wait(30)
        if name.startswith("alien"):
            raise ModelFileError(f"llama.cpp could not load model file {settings.model_path}")
        window = 12288 if name == "tiny.gguf" else 16384
        runtime = ScriptedRuntime([say("Hello again!")] * 4, context_window=window)
        self.built.append((name, runtime))
        return runtime


@pytest.fixture
def models_window(qtbot, services, monkeypatch, fake_hub, wait_for_signal):
    """The window on scripted runtimes, with the hub at HF_ENDPOINT = the loopback imitation and a
    catalog that also lists files it serves."""
    monkeypatch.setattr(hub_module, "_AT_START", {"HF_ENDPOINT": fake_hub.url})
    entries = list(load_catalog())
    monkeypatch.setattr(library_module, "load_catalog", lambda: Catalog(entries))
    runtimes = Runtimes()
    embedder = HashingEmbedder()
    # The scripted models answer what the tests queued: the knowledge graph must not take those
    # answers for its facts between turns (as make_window in conftest.py does).
    services.settings_store.set("graph_model_facts", False)
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
        make_runtime=runtimes,
        warm_embedder=False,
    )
    window.show()
    with wait_for_signal(window.worker.ready, timeout=10_000):
        window.start()
    qtbot.waitUntil(lambda: window.chat.send_button.isEnabled(), timeout=10_000)
    window.runtimes = runtimes
    window.entries = entries
    yield window
    window.close()
    window.deleteLater()
    QApplication.processEvents()


def open_models(qtbot, window):
    window.menus.models.trigger()
    page = window.model_actions.page
    qtbot.waitUntil(lambda: window.model_actions.dialog.isVisible(), timeout=30_000)
    return page


def row_texts(page, model_id: str) -> list[str]:
    index = next(i for i, row in enumerate(page.rows) if row.id == model_id)
    return [page.table.item(index, column).text() for column in range(page.table.columnCount())]


def test_the_page_lists_the_catalog_and_the_active_model_without_opening_a_socket(qtbot, models_window, socket_audit):
    with socket_audit:
        page = open_models(qtbot, models_window)
    assert socket_audit.events == []
    assert "SmolLM2 135M Instruct" in page.active_label.text()
    bundled = row_texts(page, "smollm2-135m")
    assert bundled[1] == "Bundled · active" and bundled[5] == "Apache-2.0" and bundled[4] == "8,192"
    qwen = row_texts(page, "qwen3-4b")
    assert qwen[1] == "Not downloaded · best for 16GB" and qwen[2] == "2.5 GB" and qwen[3] == "3.7 GB"
    assert "sha256: " in page.table.item(2, 0).toolTip()
    page.select("qwen3-4b")
    assert page.download_button.isEnabled() and not page.use_button.isEnabled()
    page.select("smollm2-135m")
    assert not page.download_button.isEnabled() and not page.remove_button.isEnabled()
    assert page.servers_box.server_list.count() == 0  # no server looked for until asked


def test_download_then_switch_keeps_memory_and_the_budget_follows(
    qtbot, models_window, fake_hub, send, wait_for_signal
):
    window = models_window
    send(window, "I'm Ada.")
    content = gguf_payload(BIG)
    fake_hub.add("tiny.gguf", content, mode="slow")
    fake_hub.slow_chunk_seconds = 0.01
    window.entries.append(entry_for("tiny.gguf", content, id="tiny", name="Tiny"))
    page = open_models(qtbot, window)
    page.select("tiny")
    seen = []
    page._relay.progressed.connect(lambda progress: seen.append(progress))
    qtbot.mouseClick(page.download_button, Qt.MouseButton.LeftButton)
    assert page.cancel_button.isEnabled() and page.progress.isVisible()
    qtbot.waitUntil(lambda: not page.downloading, timeout=60_000)
    assert any(p.phase == "downloading" and p.bytes_per_second > 0 for p in seen)
    assert "Tiny is installed" in page.progress_label.text()
    assert row_texts(page, "tiny")[1] == "Downloaded" and "published sha256" in row_texts(page, "tiny")[6]

    agent_id = window.state.agent_id
    memory_before = window.services.memory.core.render(agent_id)
    messages_before = len(window.services.memory.recall.all(agent_id))
    page.select("tiny")
    with wait_for_signal(window.worker.switch_finished, timeout=20_000) as finished:
        qtbot.mouseClick(page.use_button, Qt.MouseButton.LeftButton)
    assert finished.args[0] is True
    qtbot.waitUntil(lambda: "Tiny" in page.active_label.text(), timeout=30_000)
    assert window.services.settings.model_path == str(window.services.paths.user_models / "tiny.gguf")
    assert row_texts(page, "tiny")[1] == "Downloaded · active"
    qtbot.waitUntil(lambda: window.budget.budget is not None and window.budget.budget.window == 12288, timeout=10_000)
    assert window.services.memory.core.render(agent_id) == memory_before
    assert len(window.services.memory.recall.all(agent_id)) == messages_before
    send(window, "Still there?")
    assert window.runtimes.built[-1][0] == "tiny.gguf"
    assert any(
        "I'm Ada." in message.content for message in window.runtimes.built[-1][1].prompts[0]
    )  # the history followed


def test_a_message_sent_while_another_model_loads_is_saved_at_once_and_answered_by_it(qtbot, models_window, services):
    window = models_window
    write_gguf(
        window.services.paths.user_models / "slow.gguf",
        {"general.architecture": "llama", "tokenizer.chat_template": PLAIN_TEMPLATE},
    )
    page = open_models(qtbot, window)
    page.select("slow.gguf")
    window.runtimes.gate.clear()
    qtbot.mouseClick(page.use_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "loading the model" in window.chat.status.text(), timeout=30_000)
    assert window.chat.send_button.isEnabled()  # a switch does not take Send away
    qtbot.keyClicks(window.chat.compose, "Are you the new one?")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    users = [m.search_text for m in services.memory.recall.all(window.state.agent_id) if m.kind == "user_message"]
    assert users == ["Are you the new one?"]  # saved the moment it was sent
    assert "will be answered when the model has loaded" in window.chat.transcript.toPlainText()
    with qtbot.waitSignal(window.turn_done, timeout=30_000):
        window.runtimes.gate.set()
    assert window.runtimes.built[-1][0] == "slow.gguf"
    assert window.runtimes.built[-1][1].pending == 3  # the new model gave the reply
    assert window.chat.transcript.toPlainText().split("Are you the new one?")[1].count("Hello again!") == 1
    qtbot.waitUntil(lambda: window.services.settings.model_path.endswith("slow.gguf"), timeout=10_000)


def test_cancel_stops_a_download_and_installs_nothing(qtbot, models_window, fake_hub):
    content = payload(BIG)
    fake_hub.add("slow.gguf", content, mode="slow")
    fake_hub.slow_chunk_seconds = 0.3
    models_window.entries.append(entry_for("slow.gguf", content, id="slow"))
    page = open_models(qtbot, models_window)
    page.select("slow")
    qtbot.mouseClick(page.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: page.last_progress is not None and page.last_progress.phase == "downloading", timeout=30_000
    )
    qtbot.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not page.downloading, timeout=30_000)
    assert "stopped" in page.progress_label.text() and "resume" in page.progress_label.text()
    assert not (models_window.services.paths.user_models / "slow.gguf").exists()
    assert row_texts(page, "slow")[1] == "Not downloaded"


def test_a_model_that_fails_to_load_leaves_the_previous_one_active(qtbot, models_window, tmp_path, wait_for_signal):
    window = models_window
    alien = window.services.paths.user_models / "alien.gguf"
    write_gguf(alien, {"general.architecture": "nosucharch", "tokenizer.chat_template": PLAIN_TEMPLATE})
    page = open_models(qtbot, window)
    page.select("alien.gguf")
    with wait_for_signal(window.worker.switch_finished, timeout=20_000) as finished:
        qtbot.mouseClick(page.use_button, Qt.MouseButton.LeftButton)
    assert finished.args[0] is False
    qtbot.waitUntil(
        lambda: any(str(alien) in text and "'nosucharch'" in text for text in window.hub.messages), timeout=10_000
    )
    qtbot.waitUntil(lambda: window.state.model_ready, timeout=10_000)
    assert window.services.settings.model_path == ""
    assert "previous model stays active" in page.progress_label.text()
    assert row_texts(page, "smollm2-135m")[1] == "Bundled · active"
    assert window.worker.runtime is window.runtimes.built[-1][1] and window.runtimes.built[-1][0] == ""


def test_a_truncated_file_is_refused_before_anything_is_unloaded(qtbot, models_window):
    window = models_window
    broken = window.services.paths.user_models / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 40)
    page = open_models(qtbot, window)
    loads = len(window.runtimes.built)
    page.select("broken.gguf")
    qtbot.mouseClick(page.use_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: any("broken.gguf" in text for text in window.hub.messages), timeout=10_000)
    assert len(window.runtimes.built) == loads and window.services.settings.model_path == ""
    assert not page.switching


def test_a_model_on_a_local_server_is_found_when_asked_and_used(qtbot, models_window, monkeypatch):
    server = FakeServer(models=("qwen3:1.7b",), schema="enforced")
    try:
        monkeypatch.setattr(servers, "KNOWN_SERVERS", (("ollama", "Ollama", server.port), ("lmstudio", "LM Studio", 9)))
        monkeypatch.setattr("memdesk.ui.dialogs.model_servers.find_local_servers", servers.find_local_servers)
        page = open_models(qtbot, models_window)
        qtbot.mouseClick(page.servers_box.find_servers_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: page.servers_box.server_list.count() == 1, timeout=10_000)
        assert page.servers_box.server_list.item(0).text() == "qwen3:1.7b — Ollama"
        page.servers_box.server_list.setCurrentRow(0)
        qtbot.mouseClick(page.servers_box.use_server_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(
            lambda: models_window.services.settings.runtime == "openai" and not page.switching, timeout=20_000
        )
        settings = models_window.services.settings
        assert (settings.runtime, settings.openai_model, settings.openai_schema) == (
            "openai",
            "qwen3:1.7b",
            "json_schema",
        )
        assert "same shape guarantee" in page.servers_box.server_note.text()
        assert "qwen3:1.7b on " in page.active_label.text()
    finally:
        server.close()


def test_a_gguf_dropped_on_the_window_is_switched_to_only_after_it_loads(qtbot, models_window, tmp_path):
    from tests.ui.test_documents_and_errors import drop

    window = models_window
    broken = tmp_path / "half.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 40)
    drop(window, [broken])
    qtbot.waitUntil(lambda: any(str(broken) in text for text in window.hub.messages), timeout=10_000)
    assert window.services.settings.model_path == ""
    good = tmp_path / "mine.gguf"
    write_gguf(good, {"general.architecture": "llama", "tokenizer.chat_template": PLAIN_TEMPLATE})
    drop(window, [good])
    qtbot.waitUntil(lambda: window.services.settings.model_path == str(good), timeout=20_000)
    assert window.runtimes.built[-1][0] == "mine.gguf"


def test_every_window_shortcut_is_unique(models_window):
    from PySide6.QtGui import QAction

    shortcuts = [a.shortcut().toString() for a in models_window.findChildren(QAction) if not a.shortcut().isEmpty()]
    assert "Ctrl+Shift+L" in shortcuts
    assert len(shortcuts) == len(set(shortcuts)), sorted(shortcuts)
