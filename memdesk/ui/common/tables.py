"""The read-only tables the panels list rows in (archival passages, entities, facts): one row
selected at a time, columns sized to their contents, one column taking the rest of the width."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


def table(columns: list[str], *, stretch: int | None = None, single: bool = False, wrap: bool = True) -> QTableWidget:
    """``stretch``: the column that takes the free width (None: the last); ``single``: one row at a time."""
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    if single:
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    if stretch is None:
        header.setStretchLastSection(True)
    else:
        header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    table.setWordWrap(wrap)
    return table


def read_only_item(text: str, data=None) -> QTableWidgetItem:
    """A cell that cannot be edited, carrying ``data`` (an id) for the row's owner."""
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if data is not None:
        item.setData(Qt.ItemDataRole.UserRole, data)
    return item
