"""Files dropped anywhere on the window: a ``.gguf`` becomes the model, the rest goes to Documents
(memdesk/ui/window/drops.py, handed the two actions rather than the window)."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication


def _files(*paths) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path)) for path in paths])
    return mime


def test_a_dropped_model_is_switched_to_and_the_other_files_are_read_as_documents(make_window, roomy_runtime, tmp_path):
    window = make_window(roomy_runtime)
    switched, added = [], []
    window.drops.switch_model, window.drops.add_documents = switched.append, added.append
    note, model = tmp_path / "note.txt", tmp_path / "tiny.gguf"
    note.write_text("Tomatoes need sun.")
    model.write_bytes(b"GGUF")
    mime = _files(note, model)
    enter = QDragEnterEvent(
        QPoint(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(
        QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(window, drop)
    assert added == [[str(note)]]
    assert [choice.changes for choice in switched] == [{"runtime": "llamacpp", "model_path": str(model)}]
