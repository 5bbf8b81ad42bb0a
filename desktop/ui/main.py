"""Start the window: ``run()`` is what ``memdesk`` with no sub-command (``make run``) calls.

Order matters for perceived start-up: the window is shown first, then the model (llama.cpp) and
the embedding model (torch) load in the agent worker while the window says "loading model…".
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from logging.handlers import RotatingFileHandler

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox, QPlainTextEdit, QProgressDialog

from desktop.app import Services, convert_store, make_runtime, open_services, runtime_factory
from desktop.core.storage.driver import file_is_encrypted
from desktop.errors import AlreadyRunningError, MemDeskError
from desktop.instance import WINDOW, InstanceLock, ask_to_come_forward
from desktop.paths import APP_ID, ICON, Paths
from desktop.private_files import private_umask
from desktop.ui.qt_consent import DENY, ConsentRequest
from desktop.ui.qt_errors import CrashCapture, ErrorHub
from desktop.ui.qt_instance import ComeForwardWatcher
from desktop.ui.qt_main_window import MainWindow, threads_outlived_their_window
from desktop.ui.qt_passphrase import unlock_store
from desktop.ui.qt_privacy import StoreConversion
from desktop.ui.qt_text import literal

log = logging.getLogger("memdesk.ui")

#: Printed (with --timing) so bench.startup can read when each milestone happened.
TIMING_PREFIX = "memdesk-timing"


def _setup_logging(paths: Paths) -> None:
    handler = RotatingFileHandler(paths.logs / "memdesk.log", maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def _show_crash_log(window: MainWindow, text: str) -> None:
    view = QPlainTextEdit(text)
    view.setReadOnly(True)
    view.setWindowTitle("Crash log of the previous run")
    view.resize(800, 500)
    view.setParent(window, view.windowFlags())
    view.show()


def run(argv: list[str] | None = None) -> int:
    with private_umask():  # the store, logs and caches this run writes are the user's only
        return _run(argv)


def _take_instance_lock(paths: Paths) -> InstanceLock | None:
    """This data folder's one-instance lock, or None after telling the user who holds it (and
    asking that window, if it is one, to come forward)."""
    lock = InstanceLock(paths.instance_lock, WINDOW)
    try:
        return lock.acquire()
    except AlreadyRunningError as error:
        if error.program == WINDOW:
            ask_to_come_forward(paths.raise_request)
        QMessageBox.information(None, "MemDesk is already running", error.user_message)
        return None


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="memdesk", description="MemDesk desktop window")
    parser.add_argument("--timing", action="store_true", help="print start-up milestones (for bench.startup)")
    parser.add_argument("--quit-when-ready", action="store_true", help="exit once the model is loaded (for bench.startup)")
    parser.add_argument("--screenshot", metavar="PNG", help="after the model is ready, send --message, save a screenshot and quit")
    parser.add_argument("--message", default="Hello! Who are you?", help="message sent before --screenshot")
    parser.add_argument("--give-up-after", type=float, default=600.0, metavar="S",
                        help="with --screenshot: exit with an error when no reply came within S seconds")
    args, qt_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()

    def milestone(name: str) -> None:
        if args.timing:
            print(f"{TIMING_PREFIX} {name} {time.perf_counter() - started:.4f}", flush=True)

    app = QApplication.instance() or QApplication([sys.argv[0], *qt_args])
    app.setApplicationName("MemDesk")
    app.setDesktopFileName(APP_ID)  # lets Wayland compositors match the window to its .desktop entry
    app.setWindowIcon(QIcon(str(ICON)))
    try:
        paths = Paths.from_environment().ensure()
    except MemDeskError as error:
        QMessageBox.critical(None, "MemDesk cannot start", error.user_message)
        return 1
    lock = _take_instance_lock(paths)
    if lock is None:
        return 1
    with lock:
        _setup_logging(paths)
        key = None
        while True:
            code, conversion = _run_window(app, paths, args, milestone, key)
            if conversion is None:
                return code
            # Settings → Privacy asked to encrypt, decrypt or re-key: the window and its
            # connections are closed now; the window opens again on the converted store.
            key = _convert(app, paths, conversion)


def _open_store(paths: Paths, key: str | None) -> Services | None:
    """The store's services; an encrypted store's passphrase is asked in a dialog (None: Quit)."""
    if key is not None or not file_is_encrypted(paths.database):
        return open_services(paths, key=key)
    return unlock_store(paths.database, lambda passphrase: open_services(paths, key=passphrase))


def _convert(app: QApplication, paths: Paths, conversion: StoreConversion) -> str | None:
    """Run the conversion with a busy indicator; the key to open the store with afterwards."""
    unchanged = conversion.old_key
    if threads_outlived_their_window():
        QMessageBox.warning(None, "MemDesk", "Your memory was not converted: a background task was still using it. "
                            "Quit MemDesk, start it again and retry in Settings → Privacy.")
        return unchanged
    progress = QProgressDialog(f"{conversion.verb} your memory…", "", 0, 0)
    progress.setCancelButton(None)  # an interruption is safe, but a half-done wait is not worth offering
    progress.setWindowModality(Qt.WindowModality.ApplicationModal)
    progress.setMinimumDuration(0)
    progress.show()
    failure: list[BaseException] = []

    def work() -> None:
        try:
            convert_store(paths, conversion.old_key, conversion.new_key)
        except BaseException as error:  # noqa: BLE001 - reported below, on the GUI thread
            failure.append(error)

    worker = threading.Thread(target=work, name="store-conversion")
    worker.start()
    while worker.is_alive():
        app.processEvents()
        worker.join(0.05)
    progress.close()
    if failure:
        error = failure[0]
        text = error.user_message if isinstance(error, MemDeskError) else f"{type(error).__name__}: {error}"
        log.error("store conversion failed: %s", type(error).__name__)
        QMessageBox.critical(None, "Your memory was not converted", literal(f"{text}. The store is as it was."))
        return unchanged
    return conversion.new_key


def _run_window(app: QApplication, paths: Paths, args: argparse.Namespace, milestone,
                key: str | None = None) -> tuple[int, StoreConversion | None]:
    hub = ErrorHub()
    capture = CrashCapture(paths.logs, hub).install()
    try:
        services = _open_store(paths, key)
    except MemDeskError as error:
        QMessageBox.critical(None, "MemDesk cannot start", literal(error.user_message))
        capture.uninstall()
        return 1, None
    if services is None:  # Quit in the passphrase dialog: nothing was opened
        capture.uninstall()
        return 0, None
    shared_embedder = services.embedder
    key = services.key

    def open_worker_services() -> Services:
        return open_services(paths, key=key, embedder=shared_embedder)

    window = MainWindow(services, open_worker_services=open_worker_services, make_runtime=runtime_factory(key, make_runtime), hub=hub)
    ComeForwardWatcher(paths, window)
    window.show()
    app.processEvents()
    milestone("window_shown")
    window.model_ready.connect(lambda _model: milestone("model_ready"))
    if args.quit_when_ready:
        window.model_ready.connect(lambda _model: QTimer.singleShot(0, window.close))
        window.hub.shown.connect(lambda _text: QTimer.singleShot(0, window.close))
    if args.screenshot:
        _schedule_screenshot(window, args.screenshot, args.message, args.give_up_after)
    if capture.previous is not None:
        previous = capture.previous.read_text(encoding="utf-8", errors="replace")
        window.message_bar.show_message(
            "MemDesk did not close cleanly last time; a crash log was kept.", "Show crash log", lambda: _show_crash_log(window, previous)
        )
    window.start()
    try:
        code = app.exec()
    finally:
        window.shutdown()
        services.close()
        capture.uninstall()
    return code, window.pending_conversion


def _schedule_screenshot(window: MainWindow, path: str, message: str, give_up_after_s: float) -> None:
    """Drive the real app end to end (used by the Xvfb test and the socket audit): send one
    message, deny any consent the reply asks for, wait for the reply, save a screenshot, quit."""
    sent = False

    def send() -> None:
        nonlocal sent
        if sent:
            return
        # "ready" can come while the worker still opens the agent (Send is greyed then, and a
        # message would be dropped, as for a user): try again until the window takes it.
        if window.busy or not window.chat.can_send:
            QTimer.singleShot(200, window, send)
            return
        sent = True
        window.chat.compose.setPlainText(message)
        window.chat.on_send_clicked()

    def save() -> None:
        QTimer.singleShot(300, lambda: (window.grab().save(path), print(f"screenshot saved {path}", flush=True), window.close()))

    def decline(request: ConsentRequest) -> None:
        # Nobody is there to answer a consent dialog, so a scripted run says no, as a user clicking
        # Deny would; left open, the dialog held the turn until the run gave up (seen in CI when
        # the bundled model chose append_to_text_file).
        print(f"denied {request.tool}: a scripted run answers no consent question", flush=True)
        for dialog in list(window.consent_dialogs):
            if dialog.request is request:
                dialog.deny.click()
        window.consent.answer(request, DENY)  # no dialog (or already closed): settle it directly

    def give_up() -> None:
        # A scripted run must end: a stuck one says so and exits non-zero instead of hanging.
        print(f"error: no reply within {give_up_after_s:.0f} s (message sent: {sent})", flush=True)
        QApplication.exit(3)

    window.consent.asked.connect(decline)  # after the window's own slot, so its dialog exists
    window.model_ready.connect(lambda _model: QTimer.singleShot(200, window, send))
    window.turn_done.connect(lambda: sent and save())
    window.hub.shown.connect(lambda text: (print(f"error: {text}", flush=True), QTimer.singleShot(0, window.close)))
    QTimer.singleShot(int(give_up_after_s * 1000), window, give_up)  # dies with the window


if __name__ == "__main__":
    sys.exit(run())
