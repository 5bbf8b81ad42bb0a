"""The Qt window. The only package that imports PySide6; everything here adapts the Qt-free core."""

from desktop.ui.qt_none_guard import keep_none_alive

# Before any Qt call of any module here: on Python 3.11 the Qt bindings take a reference from None
# on every call that returns nothing, which aborts the process within a long transcript (see qt_none_guard).
keep_none_alive()
