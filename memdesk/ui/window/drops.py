"""Files dropped on the window: a ``.gguf`` becomes the model, a ChatGPT, Claude or Open WebUI export
(a zip or JSON recognised by its content) is offered for import, anything else goes to Documents."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QWidget

from memdesk.core.models.library import Choice
from memdesk.ui.common.errors import reports_errors


class DropTarget(QObject):
    """An event filter on ``window``: QMainWindow::event keeps drops for its own dock dragging, so
    a filter sees them first. ``switch_model(choice)`` takes a dropped model, ``take_exports(paths)``
    the conversation exports (it returns the paths it left), ``add_documents(paths)`` the rest."""

    def __init__(
        self,
        window: QWidget,
        switch_model: Callable[[Choice], None],
        add_documents: Callable[[list[str]], None],
        take_exports: Callable[[list[str]], list[str]] = lambda paths: paths,
    ) -> None:
        super().__init__(window)
        self.switch_model, self.add_documents, self.take_exports = switch_model, add_documents, take_exports
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        # The window is asked of Qt (its parent), not kept in a Python attribute: while a closed
        # window is collected, Python may clear this object's attributes before Qt stops calling it.
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop) and watched is self.parent():
            drop = cast(QDropEvent, event)  # a drag's enter and move events are drop events too
            if drop.mimeData().hasUrls():
                if kind == QEvent.Type.Drop:
                    self.on_dropped(drop)
                else:
                    drop.acceptProposedAction()
                return True
        return super().eventFilter(watched, event)

    @reports_errors
    def on_dropped(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        models = [p for p in paths if p.lower().endswith(".gguf")]
        if models:
            self.switch_model(Choice(Path(models[0]).name, {"runtime": "llamacpp", "model_path": models[0]}))
        rest = self.take_exports([p for p in paths if p not in models])
        if rest:
            self.add_documents(rest)
        event.acceptProposedAction()
