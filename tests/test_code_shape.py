"""The code keeps its shape: formatted and linted by ruff, type-checked by mypy (each configured in
pyproject.toml), and no module of the product over 450 lines. The tools run from this
environment's Python, as a developer runs them, and a failure shows what they reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A module holds one job; past this many lines it is doing more than one.
MAX_LINES = 450


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("ruff", "format", "--check", "."), id="ruff-format"),
        pytest.param(("ruff", "check", "--no-cache", "."), id="ruff-check"),
        pytest.param(("mypy",), id="mypy"),
    ],
)
def test_the_checker_finds_nothing(command):
    done = _run(*command)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"


def test_the_checkers_run_with_the_projects_settings_and_catch_a_fault(tmp_path):
    """What the tests above pass on is the project's configuration, not a checker that looks at
    nothing: a module with a long line, a zip without strict= and a wrong type is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def pairs(a: list[int], b: list[int]) -> list[tuple[int, int]]:\n"
        f"    # {'a comment far longer than the line length the project keeps ' * 2}\n"
        "    return list(zip(a, b))\n\n\n"
        "count: int = pairs([1], [2])\n",
        encoding="utf-8",
    )
    linted = _run("ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad))
    assert linted.returncode == 1 and "E501" in linted.stdout and "B905" in linted.stdout, linted.stdout
    typed = _run("mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-incremental", str(bad))
    assert typed.returncode == 1 and "[assignment]" in typed.stdout, typed.stdout


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_of_the_product_is_over_450_lines():
    modules = {path.relative_to(ROOT).as_posix(): _lines(path) for path in sorted((ROOT / "memdesk").rglob("*.py"))}
    too_long = {name: n for name, n in modules.items() if n > MAX_LINES}
    assert not too_long, f"split these by job (at most {MAX_LINES} lines each): {too_long}"
