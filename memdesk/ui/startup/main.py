"""Start the window: ``run()`` is what ``memdesk`` with no sub-command (``make run``) calls.

Order matters for perceived start-up: the window is shown first, then the model (llama.cpp) and
the embedding model (MiniLM, NumPy) load in the agent worker while the window says "loading model…".
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from logging.handlers import RotatingFileHandler
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QPlainTextEdit, QProgressDialog

from memdesk.app.instance import WINDOW, InstanceLock, ask_to_come_forward
from memdesk.app.local_model import StartedModel
from memdesk.app.runtimes import runtimes_ahead
from memdesk.app.services import Services, connection_opener, unlock_and_open
from memdesk.app.store_conversion import convert_store
from memdesk.app.store_opening import backups_at
from memdesk.core.base.errors import AlreadyRunningError, DamagedStoreError, MemDeskError, WrongPassphraseError
from memdesk.core.base.log_privacy import PrivateFormatter
from memdesk.core.base.paths import Paths
from memdesk.core.base.private_files import private_umask
from memdesk.core.base.process_guard import guard_process
from memdesk.core.storage.backup import Snapshot
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.ui.common.errors import CrashCapture, ErrorHub
from memdesk.ui.common.text import literal
from memdesk.ui.dialogs.backups import describe_when, restore_snapshot, restored_message
from memdesk.ui.dialogs.passphrase import unlock_store
from memdesk.ui.dialogs.privacy import StoreConversion
from memdesk.ui.dialogs.welcome import offer_welcome
from memdesk.ui.startup.first_window import FirstWindow, application, milestones
from memdesk.ui.startup.instance import ComeForwardWatcher
from memdesk.ui.window.main_window import MainWindow
from memdesk.ui.workers.threads import OutlivedThreads

log = logging.getLogger("memdesk.ui")

#: How long a conversion waits for a closed window's threads to let go of the store before refusing.
OUTLIVED_WAIT_S = 30.0


def _setup_logging(paths: Paths) -> None:
    handler = RotatingFileHandler(paths.logs / "memdesk.log", maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(PrivateFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))  # no exception's message
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


#: Called with each main window once it is shown, before it starts (see ``run``).
OnWindow = Callable[[MainWindow], None]


def run(
    argv: list[str] | None = None,
    *,
    model_ahead: StartedModel | None = None,
    first: FirstWindow | None = None,
    on_window: OnWindow | None = None,
) -> int:
    """``model_ahead``: the local model ``memdesk`` started before importing this module
    (memdesk.app.local_model.start_with); the first window takes it, or it is closed. ``first``: the
    window ``memdesk`` showed meanwhile (memdesk/ui/startup/first_window.py), holding the data folder's
    lock; the main window takes its place. ``on_window``: a program that drives the window (a
    benchmark, testing/scripted_window.py) is handed each main window once it is shown, before it
    starts; a driven window is nobody's first start, so it offers no welcome."""
    guard_process()  # `memdesk` did already; a program that drives the window may not have
    with private_umask():  # the store, logs and caches this run writes are the user's only
        try:
            return _run(argv, model_ahead, first, on_window)
        finally:
            if first is not None:
                first.discard()  # a start that ended before the main window showed
            if model_ahead is not None:
                model_ahead.discard()  # nothing, when the window took it


def _take_instance_lock(paths: Paths) -> InstanceLock | None:
    """This data folder's one-instance lock, or None after telling the user who holds it (and
    asking that window, if it is one, to come forward)."""
    lock = InstanceLock(paths.instance_lock, WINDOW)
    try:
        return lock.acquire()
    except AlreadyRunningError as error:
        if error.program == WINDOW:
            ask_to_come_forward(paths.raise_request)
        QMessageBox.information(None, "MemDesk is already running", literal(error.user_message))
        return None


def _run(
    argv: list[str] | None, model_ahead: StartedModel | None, first: FirstWindow | None, on_window: OnWindow | None
) -> int:
    parser = argparse.ArgumentParser(prog="memdesk", description="MemDesk desktop window")
    parser.add_argument("--timing", action="store_true", help="print start-up milestones (for bench.startup)")
    args, qt_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    milestone = milestones(args.timing)
    app = application(qt_args)
    if first is not None:
        if first.dismissed:  # closed before the rest had loaded: what was sent there waits on disk
            first.lock.release()
            return 0
        paths, lock = first.paths, first.lock
    else:
        try:
            paths = Paths.from_environment().ensure()
        except MemDeskError as error:
            QMessageBox.critical(None, "MemDesk cannot start", literal(error.user_message))
            return 1
        taken = _take_instance_lock(paths)
        if taken is None:
            return 1
        lock = taken
    with lock:
        return _run_window(app, paths, milestone, model_ahead, first, on_window)


def _run_window(
    app: QApplication,
    paths: Paths,
    milestone,
    model_ahead: StartedModel | None,
    first: FirstWindow | None,
    on_window: OnWindow | None,
) -> int:
    _setup_logging(paths)
    hub = ErrorHub()
    capture = CrashCapture(paths.logs, hub).install()
    previous_crash = capture.previous  # offered by the first window only
    key: str | None = None  # an encrypted store's passphrase, asked once and kept for the windows after
    outlived = OutlivedThreads()  # a closed window's threads still finishing, across the windows of this run
    try:
        while True:
            services, code = _open_or_offer_snapshot(paths, key)
            if services is None:
                return code
            key = services.key
            code, after = _show_window(
                app, services, hub, milestone, previous_crash, outlived, model_ahead, first, on_window
            )
            previous_crash = model_ahead = first = None
            # The window and every connection it opened are closed: the store is free to replace.
            if after.restore is not None:
                _restore(paths, after.restore, key, accept_foreign=after.restore_foreign)
            elif after.conversion is not None:
                # Settings → Privacy asked to encrypt, decrypt or re-key; the window opens again on
                # the converted store.
                key = _convert(app, paths, after.conversion, outlived)
            else:
                return code
    finally:
        capture.uninstall()


def _open_store(paths: Paths, key: str | None, typed: list[str] | None = None) -> Services | None:
    """The store's services; an encrypted store's passphrase is asked in a dialog (None: Quit).
    ``typed`` receives the passphrase last tried there."""

    def unlock(store: Path, open_with: Callable[[str], Services]) -> Services | None:
        def remembered(passphrase: str) -> Services:
            if typed is not None:
                typed[:] = [passphrase]
            return open_with(passphrase)

        return unlock_store(store, remembered)

    return unlock_and_open(paths, key=key, unlock=unlock)


def _open_or_offer_snapshot(paths: Paths, key: str | None) -> tuple[Services | None, int]:
    """The store's services, or None and an exit code (0 after Quit in the passphrase dialog, 1
    after an error). A damaged store, or one whose migration failed, is offered its newest good
    snapshot ("Restore the snapshot of DATE?") and opened again once restored."""
    typed: list[str] = []
    try:
        return _open_store(paths, key, typed), 0
    except DamagedStoreError as error:
        key = key or next(iter(typed), None)  # a store is called damaged under its right passphrase only
        snapshot = error.snapshot if isinstance(error.snapshot, Snapshot) else None
        if snapshot is None or not offer_snapshot_restore(error, snapshot):
            QMessageBox.critical(None, "MemDesk cannot start", literal(error.user_message))
            return None, 1
        if snapshot.encrypted and key is None:
            # A store too damaged to say it is encrypted was never asked its passphrase; its snapshot needs it.
            key = snapshot_passphrase(paths, snapshot)
            if key is None:
                return None, 0
        if not _restore(paths, snapshot.id, key):
            return None, 1
        return _open_or_offer_snapshot(paths, key)
    except MemDeskError as error:
        QMessageBox.critical(None, "MemDesk cannot start", literal(error.user_message))
        return None, 1


def offer_snapshot_restore(error: DamagedStoreError, snapshot: Snapshot) -> bool:
    """Whether the user restores ``snapshot``, the newest good one, in place of the damaged store."""
    answer = QMessageBox.question(
        None,
        "MemDesk cannot open its store",
        literal(
            f"{error.message}.\n\nRestore the snapshot of {describe_when(snapshot)} ({snapshot.reason})? "
            "What is there now is kept beside it."
        ),
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.Yes,
    )
    return answer == QMessageBox.StandardButton.Yes


def snapshot_passphrase(paths: Paths, snapshot: Snapshot) -> str | None:
    """The passphrase of an encrypted snapshot, asked in the unlock dialog (None: Quit)."""
    backups = backups_at(paths)

    def check(passphrase: str) -> str:
        if not backups.opens_with(snapshot, passphrase):
            raise WrongPassphraseError(f"Wrong passphrase for {snapshot.path}")
        return passphrase

    return unlock_store(snapshot.path, check)


def _restore(paths: Paths, snapshot_id: str, key: str | None, *, accept_foreign: bool = False) -> bool:
    backups = backups_at(paths, key=key)
    try:
        snapshot = backups.get(snapshot_id)
        undo = restore_snapshot(backups, snapshot_id, accept_foreign=accept_foreign)
    except MemDeskError as error:
        QMessageBox.critical(None, "The snapshot was not restored", literal(error.user_message))
        return False
    QMessageBox.information(None, "Snapshot restored", literal(restored_message(snapshot, undo, paths.database)))
    return True


def _convert(app: QApplication, paths: Paths, conversion: StoreConversion, outlived: OutlivedThreads) -> str | None:
    """Run the conversion with a busy indicator; the key to open the store with afterwards."""
    unchanged = conversion.old_key
    if outlived.running(wait_s=OUTLIVED_WAIT_S):
        QMessageBox.warning(
            None,
            "MemDesk",
            "Your memory was not converted: a background task was still using it. "
            "Quit MemDesk, start it again and retry in Settings → Privacy.",
        )
        return unchanged
    progress = QProgressDialog(literal(f"{conversion.verb} your memory…"), "", 0, 0)
    progress.setCancelButton(None)  # an interruption is safe, but a half-done wait is not worth offering
    progress.setWindowModality(Qt.WindowModality.ApplicationModal)
    progress.setMinimumDuration(0)
    progress.show()
    failure: list[BaseException] = []
    left: list[tuple[str, str]] = []

    def work() -> None:
        try:
            left.extend(convert_store(paths, conversion.old_key, conversion.new_key).left)
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
    if left:
        # Each snapshot follows the store; those that could not are named (File > Backups… shows their state).
        named = "\n".join(f"{snapshot_id or 'Snapshots'}: {why}" for snapshot_id, why in left)
        QMessageBox.warning(
            None, "Some snapshots were left as they were", literal(f"{named}\n\nRemove them in File > Backups….")
        )
    return conversion.new_key


def _show_window(
    app: QApplication,
    services: Services,
    hub: ErrorHub,
    milestone,
    previous_crash: Path | None,
    outlived: OutlivedThreads,
    model_ahead: StartedModel | None = None,
    first: FirstWindow | None = None,
    on_window: OnWindow | None = None,
) -> tuple[int, AfterClose]:
    """Run one window on ``services`` until it closes: its exit code, and what the user asked to be
    done once it is closed (a snapshot to restore from File > Backups…, a conversion from Settings →
    Privacy)."""
    paths = services.paths
    # The model's process starts now (unless memdesk started it already) and loads while the
    # window is built: it waits for nothing.
    runtimes = runtimes_ahead(services, started=model_ahead)
    window = MainWindow(
        services, open_worker_services=connection_opener(services), make_runtime=runtimes, hub=hub, outlived=outlived
    )
    ComeForwardWatcher(paths, window)
    # Qt ends app.exec() when the last window closes; a window closed before exec started (within
    # one of the processEvents below) would leave it waiting forever.
    closed: list[bool] = []
    window.closed.connect(lambda: closed.append(True))
    window.show()
    if first is not None:
        first.hand_over(window, window.chat.compose)
    app.processEvents()
    milestone("main_window_shown" if first is not None else "window_shown")
    window.model_ready.connect(lambda _model: milestone("model_ready"))
    if on_window is not None:
        on_window(window)
    if previous_crash is not None:
        previous = previous_crash.read_text(encoding="utf-8", errors="replace")
        window.message_bar.show_message(
            "MemDesk did not close cleanly last time; a crash log was kept.",
            "Show crash log",
            lambda: _show_crash_log(window, previous),
        )
    if first is None:  # Send works while the model loads: once the agent is shown
        window.opened.connect(lambda: milestone("send_enabled") if window.chat.send_button.isEnabled() else None)
    # What the first window took (or a start that ended early left on disk) is saved and answered
    # once the agent is shown.
    window.start(SentBeforeOpen(paths.sent_before_open))
    window.backups.start()  # the day's snapshot, in the background
    app.processEvents()
    if window.isVisible() and on_window is None:  # a driven run is nobody's first start
        offer_welcome(services, window.welcome_actions, window)
    try:
        code = 0 if closed else app.exec()
    finally:
        window.shutdown()
        runtimes.discard()  # a window closed before its worker took the model
        services.close()
    return code, AfterClose(
        restore=window.backups.restore_after_close,
        restore_foreign=window.backups.restore_foreign,
        conversion=window.window_settings.pending_conversion,
    )


@dataclass(frozen=True)
class AfterClose:
    """What a closed window leaves to do before the next one opens on the same store."""

    restore: str | None = None
    restore_foreign: bool = False  # the snapshot is foreign and the user accepted what it changes
    conversion: StoreConversion | None = None


if __name__ == "__main__":
    sys.exit(run())
