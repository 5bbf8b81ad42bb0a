"""A dialog's buttons and the row they stand in, built one way so the dialogs lay out their
actions alike (the main actions at the right, Close last)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QHBoxLayout, QPushButton

#: In a ``button_row``: the gap that pushes what follows to the right.
GAP = None


def button(text: str, clicked: Callable[[], object] | SignalInstance, *, default: bool = False) -> QPushButton:
    """A push button that runs ``clicked`` (a slot, or a signal it passes on); ``default``: the
    one Enter presses."""
    made = QPushButton(text)
    if default:
        made.setDefault(True)
    made.clicked.connect(clicked)
    return made


def button_row(*buttons: QPushButton | None) -> QHBoxLayout:
    """The buttons in a row, in order; a ``GAP`` among them stretches."""
    row = QHBoxLayout()
    for item in buttons:
        if item is GAP:
            row.addStretch(1)
        else:
            row.addWidget(item)
    return row
