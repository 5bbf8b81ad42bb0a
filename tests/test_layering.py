"""The architecture rule: a Qt-free core, Qt only in the UI package, llama_cpp only in its runtime."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "desktop"
LLAMA_MODULE = PACKAGE / "core" / "runtime" / "llamacpp" / "native.py"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def modules_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def test_only_the_ui_package_imports_qt():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in modules_under(PACKAGE)
        if PACKAGE / "ui" not in path.parents
        and any(name.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "shiboken6") for name in imported_modules(path))
    ]
    assert offenders == []


def test_only_the_llamacpp_runtime_imports_llama_cpp():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in modules_under(PACKAGE)
        if path != LLAMA_MODULE and any(name.split(".")[0] == "llama_cpp" for name in imported_modules(path))
    ]
    assert offenders == []


def test_the_core_does_not_import_front_ends():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in modules_under(PACKAGE / "core")
        if any(name.startswith(("desktop.ui", "desktop.cli", "desktop.app")) for name in imported_modules(path))
    ]
    assert offenders == []


def test_the_checker_sees_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import PySide6.QtWidgets\nfrom llama_cpp import Llama\n")
    assert {"PySide6.QtWidgets", "llama_cpp"} <= imported_modules(sample)
