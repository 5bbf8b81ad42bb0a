"""The read-only tables the panels and dialogs list rows in (archival passages, entities, facts,
MCP approvals, the access log, connected apps): one column taking the rest of the width; the
panels' columns sized to their contents, the MCP lists' left for the person to size."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


def table(
    columns: list[str], *, stretch: int | None = None, single: bool = False, wrap: bool = True, fit: bool = True
) -> QTableWidget:
    """``stretch``: the column that takes the free width (None: the last); ``single``: one row at a
    time; ``fit``: columns sized to their contents and no row numbers (else Qt's: numbered rows,
    columns the person sizes)."""
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    if single:
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    header = table.horizontalHeader()
    if fit:
        table.verticalHeader().setVisible(False)
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


def set_rows(table: QTableWidget, rows: Sequence[Sequence[str]]) -> None:
    """The table shows these rows of text (plain, as given), one cell a text, and no others."""
    table.setRowCount(len(rows))
    for row, cells in enumerate(rows):
        for column, text in enumerate(cells):
            table.setItem(row, column, QTableWidgetItem(text))
