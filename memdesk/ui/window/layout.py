"""The window's layout: a default that is readable on a 1366×768 laptop screen, and the layout the
user left (size, position, which panels where and how big), kept in the store across restarts.

The right-hand side is the context budget above one tabbed group (core memory first, then
archival memory, documents, knowledge, memory history): stacked, five panels left the budget table
one row and the core memory block two lines at 1400×880.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json

from PySide6.QtCore import QByteArray, QCoreApplication, QSize, Qt
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea, QTabBar, QWidget

#: Bumped when the docks change so much that an older saved state would misplace them.
LAYOUT_VERSION = 1
#: The size the window asks for when the screen has room for it.
PREFERRED = QSize(1400, 880)
#: Room left for the desktop's own panels and the window frame.
SCREEN_MARGIN = QSize(24, 64)
#: Widths of the side panels on the smallest supported screen and above it.
AGENTS_WIDTH = 180
RIGHT_SHARE = 0.36  # of the window's width
#: The budget's share of the right-hand side's height (the rest: core memory and its tabs).
BUDGET_SHARE = 0.47
#: Panels tabbed together on the right, the first one in front.
TABBED = ("Core memory", "Archival memory", "Documents", "Knowledge", "Memory history", "Approvals", "Access log")


#: A panel taller than this at its smallest scrolls instead of squeezing the panels beside it (the
#: Knowledge panel needed 432 pixels, which its tab group imposed on core memory and the budget).
MAX_MIN_HEIGHT = 200


def fitted(widget: QWidget) -> QWidget:
    """``widget``, or a scroll area around it when its smallest height would crowd a laptop screen."""
    if widget.minimumSizeHint().height() <= MAX_MIN_HEIGHT:
        return widget
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setWidget(widget)
    return scroll


def default_size(available: QSize) -> QSize:
    """``PREFERRED``, or what fits on a smaller screen's ``available`` area."""
    return QSize(
        min(PREFERRED.width(), available.width() - SCREEN_MARGIN.width()),
        min(PREFERRED.height(), available.height() - SCREEN_MARGIN.height()),
    )


def arrange(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """Where each panel goes: agents on the left, the budget above the tabbed memory panels."""
    for first, second in itertools.pairwise(TABBED):
        window.tabifyDockWidget(docks[first], docks[second])
    docks[TABBED[0]].raise_()
    window.setDocumentMode(True)  # compact tabs: five must fit a narrow panel's width
    for bar in window.findChildren(QTabBar):  # whole names, scrolled, not "Core me…"
        bar.setElideMode(Qt.TextElideMode.ElideNone)
        bar.setUsesScrollButtons(True)


def apply_default(window: QMainWindow, docks: dict[str, QDockWidget], available: QSize) -> None:
    """The default size and panel sizes for a screen whose usable area is ``available``."""
    size = default_size(available)
    window.resize(size)
    QCoreApplication.sendPostedEvents(window)  # the new size first: dock sizes are shares of it
    right = int(size.width() * RIGHT_SHARE)
    window.resizeDocks([docks["Agents"], docks["Context budget"]], [AGENTS_WIDTH, right], Qt.Orientation.Horizontal)
    budget = int(size.height() * BUDGET_SHARE)
    window.resizeDocks(
        [docks["Context budget"], docks[TABBED[0]]], [budget, size.height() - budget], Qt.Orientation.Vertical
    )


def save(window: QMainWindow) -> str:
    """The window's geometry and dock state as one text for the ``window_layout`` setting."""
    encode = lambda data: base64.b64encode(bytes(data.data())).decode("ascii")  # noqa: E731
    return json.dumps(
        {
            "version": LAYOUT_VERSION,
            "geometry": encode(window.saveGeometry()),
            "state": encode(window.saveState(LAYOUT_VERSION)),
        }
    )


def _decoded(text: str) -> tuple[QByteArray, QByteArray] | None:
    """The geometry and dock state ``save`` wrote; None for none, an older version's or a damaged one."""
    if not text:
        return None
    try:
        saved = json.loads(text)
        if saved.get("version") != LAYOUT_VERSION:
            return None
        return QByteArray(base64.b64decode(saved["geometry"], validate=True)), QByteArray(
            base64.b64decode(saved["state"], validate=True)
        )
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
        return None


def restore(window: QMainWindow, text: str) -> bool:
    """Put back a layout ``save`` wrote; False (and nothing changed) for none, an older version's
    or a damaged one, so the caller applies the default."""
    decoded = _decoded(text)
    if decoded is None:
        return False
    geometry, state = decoded
    if not window.restoreState(state, LAYOUT_VERSION):
        return False
    window.restoreGeometry(geometry)
    return True


def restore_size_and_place(window: QWidget, text: str, available: QSize) -> None:
    """Only the size and position of a saved layout (the default size without one): for the first
    window, which stands where the main window will."""
    decoded = _decoded(text)
    if decoded is None or not window.restoreGeometry(decoded[0]):
        window.resize(default_size(available))
