"""The main window: agents on the left, the conversation in the middle, context budget, core
memory, archival memory, documents, knowledge and the memory history docked on the right.

The window builds its parts and hands each the collaborators it needs, never itself: the shared
state as an evented model (common/window_state.py: the agent shown, busy, model ready, background
turn, the message sent last, private chat) that the parts observe; the session's adapter
(workers/session.py) and the worker threads (workers/threads.py); the conversation as shown
(window/conversation.py), streamed text (window/live_text.py), conversation search
(window/conversation_search.py), the transcript's pages (window/transcript_pages.py), which panel
refreshes on what (window/panel_wiring.py), going to a message or a source (window/navigation.py),
the agent shown (window/agent_switching.py), settings (window/settings_actions.py), docks and
layout (window/docks.py), menus (window/menus.py, window/help_menu.py), drops (window/drops.py),
other assistants' conversations imported and what was learned from them (window/history_imports.py).
What is left here: the model's status line, consent questions, the title, and closing.

Signals (for what drives the window: startup/main.py, the tests' and benchmarks' harnesses):
    model_ready(str): the model is loaded (its id)
    turn_done(): a turn ended and what it said is shown
    message_unanswered(int): a user message's turn ended without a reply (its id)
    opened(): the agent ``start`` chose is shown (Send works), and what was sent before is delivered
    closed(): the window has closed and shut its workers down
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QMainWindow, QProgressBar, QVBoxLayout, QWidget

from memdesk.app.services import Services
from memdesk.app.sessions import build_session, default_analyser
from memdesk.core.base.errors import AgentNotFoundError, MemDeskError
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.catalog import CatalogEntry
from memdesk.core.runtime.base import Runtime
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.ui.common.errors import ErrorHub, MessageBar, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.dialogs.backups import BackupsController
from memdesk.ui.dialogs.consent import DENY, ConsentDialog, ConsentRequest, QtConsentPolicy
from memdesk.ui.dialogs.consolidation import ConsolidationController
from memdesk.ui.dialogs.devices import SyncController
from memdesk.ui.dialogs.forget import ForgetController
from memdesk.ui.dialogs.welcome import Actions
from memdesk.ui.panels.chat import ChatPanel
from memdesk.ui.panels.model_hint import BundledModelHint
from memdesk.ui.panels.server_warning import ServerWarning
from memdesk.ui.window import layout as qt_layout
from memdesk.ui.window.agent_actions import AgentActions
from memdesk.ui.window.agent_switching import AgentSwitching
from memdesk.ui.window.conversation import Conversation
from memdesk.ui.window.conversation_search import ConversationSearch
from memdesk.ui.window.docks import build_docks, build_panels, restore_layout
from memdesk.ui.window.drops import DropTarget
from memdesk.ui.window.help_menu import HelpMenu
from memdesk.ui.window.history_imports import HistoryImports
from memdesk.ui.window.live_text import LiveText
from memdesk.ui.window.menus import Entries, build_menus
from memdesk.ui.window.model_actions import ModelActions
from memdesk.ui.window.navigation import Navigation
from memdesk.ui.window.panel_wiring import PanelWiring
from memdesk.ui.window.private_chat import PrivateChat
from memdesk.ui.window.settings_actions import WindowSettings
from memdesk.ui.window.transcript_pages import ConversationPages
from memdesk.ui.window.transfer_actions import TransferActions
from memdesk.ui.workers.ingest import IngestWorker
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads
from memdesk.ui.workers.session import SessionWorker
from memdesk.ui.workers.threads import OutlivedThreads, WorkerThreads

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    model_ready = Signal(str)
    turn_done = Signal()
    message_unanswered = Signal(int)
    opened = Signal()
    closed = Signal()
    shutdown_requested = Signal()  # to the ingestion thread: close its store connection and end
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
        self.hub = hub or ErrorHub(self)
        self.jobs = Jobs(self)
        self.reads = Reads(self)  # what the panels show, read off the GUI thread
        self.state = WindowState(self)
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
        self.ingester = IngestWorker(open_worker_services)
        self.outlived = outlived or OutlivedThreads()
        self.threads = WorkerThreads(self, self.outlived, ingestion=self.ingester)
        self._build_parts()
        self._connect_parts()
        self.threads.start()
        self.worker.start()
        self.live_text.start()

    # --- construction ----------------------------------------------------------------------
    def _build_parts(self) -> None:
        services, state, hub, jobs, worker = self.services, self.state, self.hub, self.jobs, self.worker
        status = self.statusBar()
        self.setWindowTitle("MemDesk")
        self.agent_actions = AgentActions(services, jobs, hub, self, state)
        self.transfer_actions = TransferActions(services, jobs, hub, self, state, lambda: self.chat.details.isChecked())
        self.model_actions = ModelActions(services, jobs, hub, self)
        central = QWidget()
        layout = QVBoxLayout(central)
        self.message_bar = MessageBar()
        self.model_hint = BundledModelHint(services)
        self.chat = ChatPanel()
        self.pages = ConversationPages(lambda: services.memory, self.reads, self.chat.transcript)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.model_hint)
        layout.addWidget(self.chat, 1)
        self.setCentralWidget(central)
        self.panels = panels = build_panels(services, jobs, self.reads)
        self.agents, self.budget, self.memory = panels.agents, panels.budget, panels.memory
        self.archival, self.documents = panels.archival, panels.documents
        self.knowledge, self.history = panels.knowledge, panels.history
        self.docks = build_docks(self, panels)
        restore_layout(self, self.docks, services.settings.window_layout)
        # Built before the conversation: a finished turn's text is complete, and the panels
        # asked to refresh, before the conversation says the turn is done.
        self.wiring = PanelWiring(panels, state, worker, self.ingester, jobs, self.reads, hub, self.message_bar, self)
        self.live_text = LiveText(worker, self.chat.transcript, self.budget, services.clock, self)
        self.conversation = Conversation(worker, self.chat, state, hub, services.clock, status, self)
        self.search = ConversationSearch(services, jobs, hub, self.chat, self.archival, lambda: state.agent_id, self)
        self.private_chat = PrivateChat(worker, self.chat, state, hub, status, self)
        self.history_imports = HistoryImports(services, state, worker, jobs, self.reads, hub, status, self)
        self.switching = AgentSwitching(
            services,
            state,
            hub,
            worker,
            self.agents,
            self.pages,
            self.conversation,
            self.private_chat,
            self.agent_actions,
            self.transfer_actions,
            self.reads,
            self,
        )
        self.navigation = Navigation(
            lambda: services.memory.recall,
            services.memory.archival,
            hub,
            self.chat,
            self.pages,
            panels,
            self.docks,
            self.reads,
            self,
            show_imported=self.history_imports.show_message,
        )
        self.window_settings = WindowSettings(services, hub, worker, self, self.switching.user_renamed)
        self.consolidation = ConsolidationController(services, state, worker, status, self.reads, self)
        # Memory > Forget…, retention while idle; the store's snapshots are listed and purged there.
        self.forget = ForgetController(services, state, jobs, hub, worker, status, self, lambda: services.backups)
        self.backups = BackupsController(services, jobs, hub, self)
        self.sync = SyncController(services, jobs, hub, status, self)  # File > Devices…, syncing meanwhile
        self.welcome_actions = Actions(
            self._download_model,
            self.model_actions.on_models_triggered,
            lambda folder: self.documents.add_paths([folder]),
        )
        self.help_menu = HelpMenu(
            services, worker, self.message_bar, self.welcome_actions, self.switching.user_renamed, self
        )
        entries = Entries(
            agents=self.agent_actions,
            transfers=self.transfer_actions,
            settings=self.window_settings,
            models=self.model_actions,
            quit=self.close,
            history=self.history_imports,
            before_settings=(self.private_chat.action, self.backups.action, self.sync.action),
            memory=(self.consolidation.review_action, self.forget.action),
            help=self.help_menu.actions,
        )
        self.menus = build_menus(self.menuBar(), self, entries, self.docks)
        self.drops = DropTarget(
            self, self.model_actions.switch_model, self.documents.add_paths, self.history_imports.take_dropped
        )
        self.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.conversation.on_escape)
        self.search_shortcut = QShortcut(QKeySequence.StandardKey.Find, self, self.chat.open_search)
        status.showMessage("Starting…")
        self.server_warning = ServerWarning()
        status.addPermanentWidget(self.server_warning)

    def _connect_parts(self) -> None:
        """What the parts tell each other beyond what each wires itself (panel_wiring.py)."""
        worker, wiring = self.worker, self.wiring
        self.model_hint.models_requested.connect(self.model_actions.on_models_triggered)
        self.model_actions.switch_requested.connect(worker.switch_model)
        worker.switch_finished.connect(self.model_actions.on_switch_finished)
        worker.loading.connect(self.on_model_loading)
        worker.ready.connect(self.on_model_ready)
        self.consent.asked.connect(self.on_consent_asked)
        self.shutdown_requested.connect(self.ingester.shutdown)
        self.state.events.agent_name.connect(self.on_agent_name)
        self.agent_actions.deleted.connect(self.consent.forget_agent)
        self.agent_actions.persona_updated.connect(wiring.on_persona_updated)
        self.transfer_actions.saved.connect(self.statusBar().showMessage)
        self.consolidation.memory_changed.connect(wiring.on_proposals_applied)
        self.history_imports.memory_changed.connect(wiring.on_proposals_applied)
        self.consolidation.archival_changed.connect(self.archival.refresh)
        self.forget.forgotten.connect(wiring.on_forgotten)
        self.forget.forgotten.connect(self.switching.on_forgotten)
        self.sync.synced.connect(self.on_synced)
        self.conversation.turn_done.connect(self.turn_done)
        self.conversation.message_unanswered.connect(self.message_unanswered)

    def _download_model(self, entry: CatalogEntry) -> QProgressBar:
        """The welcome's download: on the Models page, whose progress bar the welcome mirrors."""
        self.model_actions.on_models_triggered()
        page = self.model_actions.page
        assert page is not None  # the Models dialog was just opened
        page.start_download(entry)
        return page.progress

    # --- start-up and the agent shown ------------------------------------------------------
    def start(self, sent_before_open: SentBeforeOpen | None = None) -> None:
        """Called once the window is visible. Which agent to show (the last one used, else the
        first; a new store's first agent is made there) and the settings the model loads with are
        read off the GUI thread; then the agent is shown, the model loads in the worker, what was
        sent before the window opened is delivered to the agent, and ``opened`` says so."""
        services, ensure_one = self.services, self.agent_actions.ensure_one

        def read() -> tuple[Settings, int]:
            settings = services.settings
            return settings, ensure_one(settings.last_agent)

        def show(found: tuple[Settings, int]) -> None:
            settings, agent_id = found
            self.switching.open(agent_id, then=lambda: self._opened(settings, sent_before_open))

        self.reads.load((self, "start"), read, show)

    def _opened(self, settings: Settings, sent_before_open: SentBeforeOpen | None) -> None:
        self.worker.load_model(settings)
        self.sync.start(settings)
        if sent_before_open is not None:
            self.conversation.deliver_sent_before_open(sent_before_open)
        self.opened.emit()

    @Slot(str)
    @reports_errors
    def on_agent_name(self, name: str) -> None:
        self.setWindowTitle(f"MemDesk — {name}" if name else "MemDesk")
        self.chat.title.setText(name or "No agent")
        self.chat.transcript.agent_name = name

    @Slot(object)
    @reports_errors
    def on_synced(self, report) -> None:
        """Another device's changes arrived: what the window shows of them was read before."""
        self.switching.on_agent_list_changed()
        for agent_id in report.agents:
            self.wiring.on_forgotten(agent_id)
            self.switching.on_forgotten(agent_id)
            self.worker.graph.extract(agent_id)  # the graph is derived here, from what arrived

    # --- the model -------------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def on_model_loading(self, what: str) -> None:
        self.state.model_ready = False
        self.statusBar().showMessage(f"Loading model {what}…")

    @Slot(str)
    @reports_errors
    def on_model_ready(self, model_id: str) -> None:
        self.state.model_ready = True
        self.statusBar().showMessage(f"Model ready: {model_id}")
        self.reads.load((self, "model notes"), lambda: self.services.settings, self._show_model_notes)
        self.model_ready.emit(model_id)

    def _show_model_notes(self, settings: Settings) -> None:
        """What the settings the model now runs with call for: a plain-HTTP server's mark, the
        bundled model's hint."""
        self.server_warning.update_for(settings, self.hub.notify)
        self.model_hint.update_for(settings)

    @Slot(object)
    @reports_errors
    def on_consent_asked(self, request: ConsentRequest) -> None:
        """The agent's name is read off the GUI thread; one that cannot be read is refused (a
        deleted agent: nobody may answer for it), and the call must not hang."""
        agents = self.services.agents

        def refuse(error: BaseException) -> None:
            self.consent.answer(request, DENY)
            if not isinstance(error, AgentNotFoundError):
                self.hub.report(error)

        self.reads.load(
            (self, "consent", id(request)),
            lambda: agents.get(request.agent_id).name,
            lambda name: self._ask_consent(request, name),
            refuse,
        )

    def _ask_consent(self, request: ConsentRequest, name: str) -> None:
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
                self.services.settings_store.set("window_layout", qt_layout.save(self))
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
        self.history_imports.close_dialogs()
        if self.history.revert_dialog is not None:
            self.history.revert_dialog.close()
        self.worker.stop()
        self.ingester.cancel.cancel()
        self.shutdown_requested.emit()
        self.backups.close()
        self.sync.close()
        for thread in self.worker.close(self.CLOSE_WAIT_MS / 1000):
            log.warning("%s still busy %d ms after close; left to finish on its own", thread.name, self.CLOSE_WAIT_MS)
            self.outlived.keep_thread(thread)
        self.threads.wait(self.CLOSE_WAIT_MS)
        self.reads.close(self.CLOSE_WAIT_MS)
        self.jobs.wait(self.CLOSE_WAIT_MS)
        # What the threads queued for this window before they stopped (a turn's changed blocks)
        # runs now, while the store is still open, not in an event loop after it closed.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
