"""The main window: agents on the left, the conversation in the middle, context budget, core
memory, archival memory, documents, knowledge and the memory history docked on the right.

The window holds what the parts share (the store's services, the error hub, the agent shown, busy
or not) and assembles them; each job lives in its own module and wires its own signals:
the session's adapter (workers/session.py) and the worker threads (workers/threads.py), the
conversation as shown (window/conversation.py),
streamed text (window/live_text.py), conversation search (window/conversation_search.py), the
transcript's pages (window/transcript_pages.py), which panel refreshes on what
(window/panel_wiring.py), going to a message or a source (window/navigation.py), agent switching
(window/agent_switching.py), settings (window/settings_actions.py), docks and layout
(window/docks.py), menus (window/menus.py, window/help_menu.py), drops (window/drops.py).

Signals (requests to the session and the worker threads):
    load_model_requested(object), settings_applied(object), open_agent_requested(int),
    heartbeat_requested(), budget_requested(), ingest_requested(int, list),
    graph_requested(int), shutdown_requested()
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QMainWindow, QVBoxLayout, QWidget

from memdesk.app.services import Services
from memdesk.app.sessions import build_session, default_analyser
from memdesk.core.base.errors import AgentNotFoundError, MemDeskError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import Runtime
from memdesk.ui.common.errors import ErrorHub, MessageBar, reports_errors
from memdesk.ui.dialogs.backups import BackupsController
from memdesk.ui.dialogs.consent import DENY, ConsentDialog, ConsentRequest, QtConsentPolicy
from memdesk.ui.dialogs.consolidation import ConsolidationController
from memdesk.ui.dialogs.forget import ForgetController
from memdesk.ui.dialogs.privacy import StoreConversion
from memdesk.ui.panels.chat import ChatPanel
from memdesk.ui.panels.model_hint import BundledModelHint
from memdesk.ui.panels.server_warning import ServerWarning
from memdesk.ui.window import docks as qt_docks
from memdesk.ui.window.agent_actions import AgentActions
from memdesk.ui.window.agent_switching import AgentSwitching
from memdesk.ui.window.conversation import Conversation
from memdesk.ui.window.conversation_search import ConversationSearch
from memdesk.ui.window.drops import DropTarget
from memdesk.ui.window.help_menu import HelpMenu
from memdesk.ui.window.live_text import LiveText
from memdesk.ui.window.menus import build_file_and_view_menus
from memdesk.ui.window.model_actions import ModelActions
from memdesk.ui.window.navigation import Navigation
from memdesk.ui.window.panel_wiring import PanelWiring
from memdesk.ui.window.private_chat import PrivateChat
from memdesk.ui.window.settings_actions import WindowSettings
from memdesk.ui.window.transcript_pages import ConversationPages
from memdesk.ui.window.transfer_actions import TransferActions
from memdesk.ui.workers.ingest import IngestWorker
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.session import SessionWorker
from memdesk.ui.workers.threads import OutlivedThreads, WorkerThreads

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    load_model_requested = Signal(object)
    settings_applied = Signal(object)
    open_agent_requested = Signal(int)
    heartbeat_requested = Signal()
    budget_requested = Signal()
    ingest_requested = Signal(int, list)
    graph_requested = Signal(int)
    shutdown_requested = Signal()
    #: Re-emitted in the GUI thread, for code that must react there (lambdas connected to the
    #: worker's own signals would run in the worker thread).
    model_ready = Signal(str)
    turn_done = Signal()
    message_unanswered = Signal(int)  # a user message's turn ended without a reply (its id)
    closed = Signal()  # the window has closed and shut its workers down
    CLOSE_WAIT_MS = 30_000  # how long closing waits for each worker thread to end

    def __init__(
        self,
        services: Services,
        *,
        open_worker_services: Callable[[], Services],
        make_runtime: Callable[[Settings], Runtime],
        hub: ErrorHub | None = None,
        warm_embedder: bool = True,
        graph_analyser=default_analyser,
        outlived: OutlivedThreads | None = None,
    ) -> None:
        super().__init__()
        self.services = services
        #: Set by Settings → Privacy: the store conversion to run once this window has closed.
        self.pending_conversion: StoreConversion | None = None
        self.hub = hub or ErrorHub(self)
        self.jobs = Jobs(self)
        self.agent_id: int | None = None
        self.is_model_ready = False
        self.busy = False
        self.last_sent_id: int | None = None  # the user message sent last (scripted runs wait for its reply)
        self.background = False  # a login or timed heartbeat turn runs; a message preempts it
        self.consent_dialogs: list[ConsentDialog] = []
        self.consent = QtConsentPolicy(lambda: self.worker.cancel_token, self)
        # The conversation's session (memdesk.session): its job thread runs the model and the
        # agent; its idle scheduler and graph extraction run the work nobody asked for.
        self.worker = SessionWorker(
            lambda listener: build_session(
                services,
                listener,
                make_runtime=make_runtime,
                open_session_services=open_worker_services,
                consent=self.consent,
                analyser=graph_analyser,
                warm_embedder=warm_embedder,
            )
        )
        self.grapher = self.worker.graph
        self.ingester = IngestWorker(open_worker_services)
        self.outlived = outlived or OutlivedThreads()
        self.threads = WorkerThreads(self, self.outlived, ingestion=self.ingester)
        self.agent_actions = AgentActions(services, self.jobs, self.hub, self, self)
        self.transfer_actions = TransferActions(
            services, self.jobs, self.hub, self, lambda: self.agent_id, lambda: self.chat.details.isChecked()
        )
        self.model_actions = ModelActions(services, self.jobs, self.hub, self)
        self.window_settings = WindowSettings(self)
        self._build_ui()
        self._connect_worker()
        self.wiring = PanelWiring(self)
        self.live_text = LiveText(self.worker, self.chat.transcript, self.budget, services.clock, self)
        self.conversation = Conversation(self)
        self.search = ConversationSearch(
            services, self.jobs, self.hub, self.chat, self.archival, lambda: self.agent_id, self
        )
        self.navigation = Navigation(self)
        self.switching = AgentSwitching(self)
        self.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.conversation.on_escape)
        self.consolidation = ConsolidationController(self)
        self.private_chat = PrivateChat(self)
        # Memory > Forget…, retention while idle; the store's snapshots are listed and purged there.
        self.forget = ForgetController(self, backups=lambda: self.services.backups)
        self.backups = BackupsController(self)
        self.help_menu = HelpMenu(self)  # after the controllers' Memory menu: Help comes last
        self.drops = DropTarget(self)
        self.threads.start()
        self.worker.start()
        self.live_text.start()

    # --- construction ----------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.setWindowTitle("MemDesk")
        central = QWidget()
        layout = QVBoxLayout(central)
        self.message_bar = MessageBar()
        self.model_hint = BundledModelHint(self.services)
        self.model_hint.models_requested.connect(self.model_actions.on_models_triggered)
        self.chat = ChatPanel()
        self.pages = ConversationPages(lambda: self.services.memory.recall, self.chat.transcript)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.model_hint)
        layout.addWidget(self.chat, 1)
        self.setCentralWidget(central)
        qt_docks.build_docks(self)
        qt_docks.restore_layout(self)
        build_file_and_view_menus(self)
        self.search_shortcut = QShortcut(QKeySequence.StandardKey.Find, self, self.chat.open_search)
        self.statusBar().showMessage("Starting…")
        self.server_warning = ServerWarning()
        self.statusBar().addPermanentWidget(self.server_warning)

    def _connect_worker(self) -> None:
        """The requests this window sends the session, and the model's state it reports."""
        worker = self.worker
        self.load_model_requested.connect(worker.load_model)
        self.model_actions.switch_requested.connect(worker.switch_model)
        worker.switch_finished.connect(self.model_actions.on_switch_finished)
        self.settings_applied.connect(worker.apply_settings)
        self.open_agent_requested.connect(worker.open_agent)
        self.heartbeat_requested.connect(worker.heartbeat)
        self.budget_requested.connect(worker.refresh_budget)
        self.shutdown_requested.connect(self.ingester.shutdown)
        worker.loading.connect(self.on_model_loading)
        worker.ready.connect(self.on_model_ready)
        self.consent.asked.connect(self.on_consent_asked)

    # --- start-up and the agent shown ------------------------------------------------------
    def start(self) -> None:
        """Called once the window is visible: the model loads in the worker meanwhile."""
        settings = self.services.settings
        self.select_agent(self.agent_actions.ensure_one(settings.last_agent))
        self.load_model_requested.emit(settings)

    @Slot(int)
    @reports_errors
    def select_agent(self, agent_id: int) -> None:
        record = self.services.agents.get(agent_id)
        self.private_chat.discard()  # another agent, or this one opened again: back to what is saved
        self.agent_id = agent_id
        self.agents.set_agents(self.services.agents.list(), agent_id)
        self.setWindowTitle(f"MemDesk — {record.name}")
        self.chat.title.setText(record.name)
        self.load_transcript(agent_id)
        self.conversation.note_owed_reply(agent_id)
        for panel in (self.memory, self.history, self.archival, self.documents, self.knowledge):
            panel.set_agent(agent_id)
        self.graph_requested.emit(agent_id)  # catch up on what a closed or crashed app left
        self.services.settings_store.set("last_agent", record.name)
        self.open_agent_requested.emit(agent_id)
        self._update_ready()

    def name_changed(self) -> None:
        """The user's name was set: the knowledge graph's entity for the user takes it now."""
        if self.agent_id is not None:
            self.graph_requested.emit(self.agent_id)

    def load_transcript(self, agent_id: int) -> None:
        """The conversation's newest page (older ones as the user scrolls up), evicted messages
        included (above a line, the context window)."""
        record = self.services.agents.get(agent_id)
        self.pages.show_newest(agent_id, record.name, record.context_start_id)

    def _update_ready(self) -> None:
        # Send works while the model loads: the message is saved at once and answered when it can be.
        if self.agent_id is None:
            self.chat.set_ready(False, "")
        elif not self.is_model_ready:
            self.chat.set_ready(True, "loading the model… you can send now")
        else:
            self.chat.set_ready(True, "")

    # --- the model -------------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def on_model_loading(self, what: str) -> None:
        self.is_model_ready = False
        self.statusBar().showMessage(f"Loading model {what}…")
        self._update_ready()

    @Slot(str)
    @reports_errors
    def on_model_ready(self, model_id: str) -> None:
        self.is_model_ready = True
        self.statusBar().showMessage(f"Model ready: {model_id}")
        self.server_warning.update_for(self.services.settings, self.hub.notify)
        self.model_hint.update_for_model()
        self._update_ready()
        self.model_ready.emit(model_id)

    @Slot(object)
    @reports_errors
    def on_consent_asked(self, request: ConsentRequest) -> None:
        try:
            name = self.services.agents.get(request.agent_id).name
        except AgentNotFoundError:  # deleted since: nobody may answer for it, and the call must not hang
            self.consent.answer(request, DENY)
            return
        dialog = ConsentDialog(request, name, self)
        dialog.answered.connect(self.consent.answer)
        dialog.destroyed.connect(
            lambda _obj=None, d=dialog: self.consent_dialogs.remove(d) if d in self.consent_dialogs else None
        )
        self.consent_dialogs.append(dialog)
        dialog.show()

    # --- closing ---------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.isVisible():
            try:
                qt_docks.save_layout(self)
            except MemDeskError as error:  # the next start shows the default layout: nothing else is lost
                log.warning("window layout not saved: %s", error)
        self.shutdown()
        super().closeEvent(event)
        self.closed.emit()

    def shutdown(self) -> None:
        # The store closes after the window: no timer may read it later (the block editors'
        # "changed 2 min ago" timer did, into a closed database).
        for timer in self.findChildren(QTimer):
            timer.stop()
        for dialog in self.findChildren(QDialog):
            # A dialog left open (the welcome, Diagnostics) would keep the app running after its
            # window closed: app.exec() returns only when no window is visible.
            if dialog.isVisible():
                dialog.close()
        if not self.threads.any_running() and self.worker.closed:
            return
        self.live_text.stop()
        self.model_actions.shutdown()
        self.consent.close()
        self.transfer_actions.close_dialogs()
        if self.history.revert_dialog is not None:
            self.history.revert_dialog.close()
        self.worker.stop()
        self.ingester.cancel.cancel()
        self.shutdown_requested.emit()
        for thread in self.worker.close(self.CLOSE_WAIT_MS / 1000):
            log.warning("%s still busy %d ms after close; left to finish on its own", thread.name, self.CLOSE_WAIT_MS)
            self.outlived.keep_thread(thread)
        self.threads.wait(self.CLOSE_WAIT_MS)
        self.jobs.wait(self.CLOSE_WAIT_MS)
        # What the threads queued for this window before they stopped (a turn's changed blocks)
        # runs now, while the store is still open, not in an event loop after it closed.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
