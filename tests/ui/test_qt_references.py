"""The Qt bindings keep Python's reference counts: PySide6 6.12.0 on Python 3.11 took a reference
from None on every Qt call that returns nothing, and the window aborted with "none_dealloc" once a
long transcript had used up None's count (a 100,000-message store did it while opening). The lock
pins a release without that fault; this fails if an upgrade brings it back."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QLabel, QTextBrowser

CALLS = 2000


def test_qt_calls_that_return_nothing_leave_nones_reference_count_alone(qtbot):
    browser, label = QTextBrowser(), QLabel()
    qtbot.addWidget(browser)
    qtbot.addWidget(label)
    cursor = browser.textCursor()
    before = sys.getrefcount(None)
    for index in range(CALLS):
        cursor.insertBlock()
        cursor.setPosition(0)
        label.setText(str(index))
    # Other threads and the interpreter move None's count a little; the fault moved it by 3 per round.
    assert abs(sys.getrefcount(None) - before) < CALLS // 2
