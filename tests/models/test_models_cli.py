"""``memdesk models``: list, get (from the loopback hub), use, remove, and bad model files refused by
name with the previous model left active."""

from __future__ import annotations

import json
import shutil

import pytest

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.models import hub as hub_module
from memdesk.core.models import library as library_module
from memdesk.core.models.bundled import default_model_path
from memdesk.core.models.catalog import Catalog, load_catalog
from tests.models.conftest import (
    DROPS_SYSTEM_TEMPLATE,
    NO_SYSTEM_TEMPLATE,
    PLAIN_TEMPLATE,
    entry_for,
    payload,
    write_gguf,
)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stored_setting(name: str):
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        return getattr(services.settings, name)
    finally:
        services.close()


@pytest.fixture
def test_catalog(monkeypatch, fake_hub):
    """The real catalog plus entries served by the loopback hub, which HF_ENDPOINT points at."""
    monkeypatch.setattr(hub_module, "_AT_START", {"HF_ENDPOINT": fake_hub.url})
    entries = list(load_catalog())

    def install(entry):
        entries.append(entry)
        monkeypatch.setattr(library_module, "load_catalog", lambda: Catalog(entries))
        return entry

    return install


def test_list_shows_the_catalog_and_marks_the_bundled_model_active(capsys):
    code, out, _ = run(capsys, "models", "list", "--json")
    data = json.loads(out)
    assert code == 0 and data["active"] == "SmolLM2 135M Instruct"
    rows = {row["id"]: row for row in data["models"]}
    assert rows["smollm2-135m"]["active"] and rows["smollm2-135m"]["kind"] == "bundled"
    assert rows["qwen3-1.7b"]["kind"] == "available" and rows["qwen3-1.7b"]["recommended_for"] == ["8gb"]
    assert rows["qwen3-4b"]["sources"]["sha256"]
    code, out, _ = run(capsys, "models")
    assert code == 0 and "* smollm2-135m" in out and "[best for 16GB]" in out


def test_get_downloads_from_the_hub_named_by_hf_endpoint_with_progress(capsys, fake_hub, test_catalog):
    content = payload(2 * 1024 * 1024)
    fake_hub.add("tiny.gguf", content)
    test_catalog(entry_for("tiny.gguf", content, id="tiny"))
    code, out, err = run(capsys, "models", "get", "tiny", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["checksum"] == "published" and result["resumed_from"] == 0
    assert "2.1 MB of 2.1 MB" in err and "installed" in err
    code, out, _ = run(capsys, "models", "--json")
    assert json.loads(out)["models"][1]["id"] == "tiny"
    code, out, _ = run(capsys, "models", "get", "tiny")
    assert code == 0 and "already installed" in out


def test_get_refuses_a_corrupted_download(capsys, fake_hub, test_catalog):
    content = payload(2 * 1024 * 1024)
    fake_hub.add("tiny.gguf", content, mode="corrupt")
    test_catalog(entry_for("tiny.gguf", content, id="tiny"))
    code, _, err = run(capsys, "models", "get", "tiny")
    assert code == 1 and "tiny.gguf failed verification" in err
    assert not (Paths.from_environment().user_models / "tiny.gguf").exists()


@pytest.mark.parametrize(
    "template, reason",
    [(NO_SYSTEM_TEMPLATE, "System role not supported"), (DROPS_SYSTEM_TEMPLATE, "drops the system message")],
)
def test_a_model_whose_template_cannot_carry_the_system_message_is_refused(capsys, tmp_path, template, reason):
    path = tmp_path / "gemmaish.gguf"
    write_gguf(path, {"general.architecture": "llama", "tokenizer.chat_template": template})
    code, _, err = run(capsys, "models", "use", str(path))
    assert code == 1 and str(path) in err and reason in err
    assert stored_setting("model_path") == ""


def test_a_truncated_model_file_is_refused_by_name(capsys, tmp_path):
    path = tmp_path / "half.gguf"
    with default_model_path().open("rb") as source:
        path.write_bytes(source.read(5_000_000))
    code, _, err = run(capsys, "models", "use", str(path))
    assert code == 1 and f"Model file {path} is truncated" in err
    assert stored_setting("model_path") == ""


def test_unknown_names_and_models_not_yet_downloaded_are_explained(capsys):
    code, _, err = run(capsys, "models", "use", "qwen3-4b")
    assert code == 1 and "memdesk models get qwen3-4b" in err
    code, _, err = run(capsys, "models", "remove", "smollm2-135m")
    assert code == 1 and "ships with MemDesk" in err


@pytest.mark.model
def test_an_architecture_llama_cpp_cannot_load_leaves_the_previous_model_active(capsys, tmp_path):
    path = tmp_path / "alien.gguf"
    write_gguf(path, {"general.architecture": "nosucharch", "tokenizer.chat_template": PLAIN_TEMPLATE})
    code, _, err = run(capsys, "models", "use", str(path))
    assert code == 1 and str(path) in err and "'nosucharch'" in err and "previous model stays active" in err
    assert stored_setting("model_path") == ""


@pytest.mark.model
def test_get_use_and_remove_a_real_model_end_to_end(capsys, fake_hub, test_catalog):
    content = default_model_path().read_bytes()
    fake_hub.add("tiny-chat.gguf", content)
    test_catalog(entry_for("tiny-chat.gguf", content, id="tiny-chat", name="Tiny chat"))
    assert run(capsys, "models", "get", "tiny-chat")[0] == 0
    code, out, err = run(capsys, "models", "use", "tiny-chat")
    assert code == 0, err
    assert "Active model: Tiny chat" in out
    installed = Paths.from_environment().user_models / "tiny-chat.gguf"
    assert stored_setting("model_path") == str(installed)
    data = json.loads(run(capsys, "models", "--json")[1])
    assert data["active"] == "Tiny chat" and next(r for r in data["models"] if r["id"] == "tiny-chat")["active"]
    code, _, err = run(capsys, "models", "remove", "tiny-chat")
    assert code == 1 and "is the active model" in err
    assert run(capsys, "models", "use", "smollm2-135m")[0] == 0
    assert stored_setting("model_path") == ""
    code, out, _ = run(capsys, "models", "remove", "tiny-chat")
    assert code == 0 and not installed.exists()


def test_a_copy_of_a_local_file_can_be_chosen_by_path(capsys, tmp_path, monkeypatch):
    # Without loading: the switch itself is what the real-model test above covers.
    monkeypatch.setattr(
        "memdesk.app.runtimes.make_runtime",
        lambda settings: type("R", (), {"info": None, "close": lambda self: None})(),
    )
    path = tmp_path / "mine.gguf"
    shutil.copyfile(default_model_path(), path)
    code, out, err = run(capsys, "models", "use", str(path))
    assert code == 0, err
    assert stored_setting("model_path") == str(path.resolve())
