"""Files dropped on the window: a ``.gguf`` becomes the model, anything else goes to Documents."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDropEvent

from memdesk.core.models.library import Choice
from memdesk.ui.common.errors import reports_errors

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


class DropTarget(QObject):
    """An event filter on the window: QMainWindow::event keeps drops for its own dock dragging, so a
    filter sees them first."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if (
            watched is self.window
            and event.type() in (QEvent.Type.DragEnter, QEvent.Type.DragMove)
            and event.mimeData().hasUrls()
        ):
            event.acceptProposedAction()
            return True
        if watched is self.window and event.type() == QEvent.Type.Drop and event.mimeData().hasUrls():
            self.on_dropped(event)
            return True
        return super().eventFilter(watched, event)

    @reports_errors
    def on_dropped(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        models = [p for p in paths if p.lower().endswith(".gguf")]
        if models:
            self.window.model_actions.switch_model(
                Choice(Path(models[0]).name, {"runtime": "llamacpp", "model_path": models[0]})
            )
        rest = [p for p in paths if p not in models]
        if rest:
            self.window.documents.add_paths(rest)
        event.acceptProposedAction()
