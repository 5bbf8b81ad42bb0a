"""The doctor's window probe: start Qt's platform plugin and look at the screens.

Runs in a child process (``memdesk.diagnostics.child``): when the plugin cannot load or the
display cannot be reached, Qt aborts the whole process (qFatal), which the parent reports.
"""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from PySide6.QtCore import qVersion
    from PySide6.QtGui import QGuiApplication

    existing = QGuiApplication.instance()
    app = existing if isinstance(existing, QGuiApplication) else QGuiApplication(["memdesk-doctor"])
    screens = app.screens()
    size = screens[0].size() if screens else None
    return {
        "qt": qVersion(),
        "platform": app.platformName(),
        "screens": len(screens),
        "size": f"{size.width()}x{size.height()}" if size is not None else "",
    }
