"""Message boxes, input dialogs and tooltips show the data they name as text (issue 35, item 13):
the Backups dialog's Restore and Remove questions rendered a snapshot's reason, which names an
imported file, as rich text, and ``<img src="/dev/zero">`` aborted the window. Qt guesses the
format of these texts and cannot be told not to load an image, so every one that interpolates
anything goes through ``literal`` (or escapes each value in markup of ours)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

import memdesk.ui
from memdesk.ui.common.errors import ErrorHub
from memdesk.ui.dialogs.backups import BackupsDialog
from memdesk.ui.workers.jobs import Jobs
from tests.ui.test_names_shown_as_text import rendered
from tests.ui.watched_fifo import watched_fifo


@pytest.mark.parametrize("button", ["restore_button", "remove_button"])
def test_the_backups_questions_show_the_snapshots_reason_as_text(qtbot, services, monkeypatch, tmp_path, button):
    with watched_fifo(tmp_path) as evidence:
        reason = f'before import of <img src="{evidence.path}"><b>x</b>.af'
        services.backups.create(reason)
        jobs = Jobs()
        dialog = BackupsDialog(services, jobs, ErrorHub())
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.table.selectRow(0)
        asked: list[str] = []
        monkeypatch.setattr(
            QMessageBox,
            "question",
            lambda _p, _t, text, *a, **k: asked.append(text) or QMessageBox.StandardButton.Cancel,
        )
        getattr(dialog, button).click()
        [text] = asked
        assert f"({reason})" in rendered(text)
        box = QMessageBox()  # what the real question would draw
        qtbot.addWidget(box)
        box.setText(text)
        box.show()
        QApplication.processEvents()
        assert evidence.opened == 0
        box.close()
        jobs.wait()


# --- every place, read from the code ---------------------------------------------------------------
_BOXES = {"question", "warning", "information", "critical", "about"}
_INPUTS = {"getText", "getItem", "getInt", "getDouble", "getMultiLineText"}
#: Setters whose text Qt reads as rich text when it looks like it.
_SETTERS = {"setToolTip", "setInformativeText", "setWhatsThis", "setLabelText"}


def _named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_call_of(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and _named(node.func, name)


def _shows_data_as_text(node: ast.AST) -> bool:
    """A constant, ``literal(...)``, or markup of ours whose every value is ``escape``d."""
    if isinstance(node, ast.Constant):
        return True
    if _is_call_of(node, "literal"):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(
            isinstance(part, ast.Constant) or _is_call_of(part.value, "escape")  # type: ignore[attr-defined]
            for part in node.values
        )
    if isinstance(node, ast.IfExp):
        return _shows_data_as_text(node.body) and _shows_data_as_text(node.orelse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _shows_data_as_text(node.left) and _shows_data_as_text(node.right)
    return False


def _argument(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _texts(call: ast.Call) -> list[ast.AST | None]:
    """The texts of ``call`` that Qt may read as rich text."""
    function = call.func
    if isinstance(function, ast.Attribute):
        owner, name = function.value, function.attr
        if _named(owner, "QMessageBox") and name in _BOXES:
            return [_argument(call, 2, "text")]
        if _named(owner, "QInputDialog") and name in _INPUTS:
            return [_argument(call, 2, "label")]
        if _named(owner, "QToolTip") and name == "showText":
            return [_argument(call, 1, "text")]
        if name in _SETTERS and call.args:
            return [call.args[0]]
    if _named(function, "QMessageBox"):
        return [_argument(call, 2, "text")]
    if _named(function, "QProgressDialog"):
        return [_argument(call, 0, "labelText")]
    return []


def test_every_message_box_input_dialog_and_tooltip_shows_data_as_text():
    root = Path(memdesk.ui.__file__).parent
    unescaped, seen = [], 0
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            for text in _texts(node):
                seen += 1
                if text is not None and not _shows_data_as_text(text):
                    unescaped.append(f"{path.relative_to(root.parent)}:{node.lineno}: {ast.unparse(text)[:80]}")
    assert seen > 40  # the scan finds them (a renamed API would find none)
    assert unescaped == []
