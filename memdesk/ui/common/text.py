"""Showing names and text that come from the user, the model or an imported file exactly as they are.

QLabel, QMessageBox, QInputDialog and tooltips guess from the text itself whether it is rich text
(Qt::mightBeRichText), so an agent or entity named ``<img src=...>`` or ``<a href=...>`` would be
rendered as markup, not shown: a consent question could then show one thing and ask another.
Every widget that shows such text goes through here:

* ``plain_label`` / ``set_plain`` for labels that show text only (no markup at all);
* ``set_rich`` for labels mixing our markup with such text, which the caller escaped with
  ``escape``;
* ``literal`` for the places whose format cannot be set (tooltips, QMessageBox and QInputDialog
  texts): markup that renders as exactly the text given.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

#: Beside a message sent before the model is ready, in the first window and the main window's transcript.
WILL_BE_ANSWERED = "will be answered when the model has loaded"


def escape(text: object) -> str:
    return html.escape(str(text))


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    label = QLabel(parent)
    set_plain(label, text)
    return label


def set_plain(label: QLabel, text: str) -> None:
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)


def set_rich(label: QLabel, markup: str) -> None:
    """``markup`` is ours; any user text in it was passed through ``escape``."""
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setText(markup)


def literal(text: str) -> str:
    """Rich text that shows ``text`` as it is, line breaks and spaces included ("" stays "")."""
    if not text:
        return ""
    return f'<p style="white-space: pre-wrap">{escape(text)}</p>'
