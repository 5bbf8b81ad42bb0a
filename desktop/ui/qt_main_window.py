"""The main window: agents on the left, the conversation in the middle, context budget, core
memory, archival memory and documents docked on the right. It owns two worker threads (the agent
and ingestion) and talks to them only through the queued signals wired in ``_connect_signals``.

The window assembles and wires; the jobs live in their own modules: agent operations
(qt_agent_actions), import and export (qt_transfer_actions), timed heartbeats (qt_heartbeat), the
ingestion thread (qt_ingest_worker). A new panel is one row in ``_build_docks``; a new menu entry
goes in ``_build_menus``.

Signals (requests to the worker threads):
    load_model_requested(object), settings_applied(object), open_agent_requested(int),
    send_requested(int), heartbeat_requested(), budget_requested(), ingest_requested(int, list),
    shutdown_requested()
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QSize, QThread, QTimer, Qt, Signal, Slot
from PySide6.QtGui import QAction, QCloseEvent, QDropEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMessageBox, QVBoxLayout, QWidget

from desktop import __version__
from desktop.app import Services
from desktop.core.agent import transfer, unanswered
from desktop.core.agent.accept import accept_user_message
from desktop.core.agent.observer import StepRecord
from desktop.core.models.library import Choice
from desktop.core.runtime.base import Runtime
from desktop.diagnostics import run_checks
from desktop.errors import AgentNotFoundError, MemDeskError, ModelCrashedError
from desktop.settings import Settings
from desktop.ui import qt_layout
from desktop.ui.qt_agent_actions import AgentActions
from desktop.ui.qt_agents import AgentsPanel
from desktop.ui.qt_archival import ArchivalPanel
from desktop.ui.qt_backups import BackupsController
from desktop.ui.qt_budget import BudgetPanel
from desktop.ui.qt_chat import ChatPanel
from desktop.ui.qt_consent import DENY, ConsentDialog, ConsentRequest, QtConsentPolicy
from desktop.ui.qt_consolidation import ConsolidationController
from desktop.ui.qt_forget import ForgetController
from desktop.ui.qt_diagnostics import DiagnosticsDialog
from desktop.ui.qt_documents import DocumentsPanel
from desktop.ui.qt_errors import ErrorHub, MessageBar, reports_errors, user_text
from desktop.ui.qt_graph_worker import GraphWorker, default_analyser
from desktop.ui.qt_history import HistoryView
from desktop.ui.qt_heartbeat import Heartbeat
from desktop.ui.qt_ingest_worker import IngestWorker
from desktop.ui.qt_jobs import Jobs
from desktop.ui.qt_knowledge import KnowledgePanel
from desktop.ui.qt_memory import CoreMemoryPanel
from desktop.ui.qt_model_hint import BundledModelHint
from desktop.ui.qt_model_actions import ModelActions
from desktop.ui.qt_private_chat import PrivateChat
from desktop.ui.qt_server_warning import ServerWarning
from desktop.ui.qt_privacy import PrivacyPanel, StoreConversion
from desktop.ui.qt_settings import RESTART_MODEL, SettingsDialog
from desktop.ui.qt_text import escape
from desktop.ui.qt_transcript_pages import ConversationPages
from desktop.ui.qt_transfer_actions import TransferActions
from desktop.ui.qt_welcome import show_welcome, window_actions
from desktop.ui.qt_worker import AgentWorker

log = logging.getLogger(__name__)
# Worker threads that did not end within the close's wait, with their workers (see shutdown()).
_OUTLIVED_THEIR_WINDOW: list[tuple[QThread, object]] = []


def threads_outlived_their_window(wait_s: float = 0.0) -> bool:
    """Whether a closed window's thread is still running (and may still hold the store open), after
    waiting up to ``wait_s`` for them to end: a turn or a search cut short usually ends within
    seconds of its window, later on a busy machine."""
    deadline = time.monotonic() + wait_s
    for thread, _worker in _OUTLIVED_THEIR_WINDOW:
        left_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
        if thread.isRunning() and left_ms:
            thread.wait(left_ms)
    return any(thread.isRunning() for thread, _worker in _OUTLIVED_THEIR_WINDOW)

REPAINT_MS = 33  # streamed text is painted at ~30 Hz, however fast tokens arrive
WILL_BE_ANSWERED = "will be answered when the model has loaded"
NOT_ANSWERED_YET = "not answered yet: the agent answers it once the model has loaded"


class MainWindow(QMainWindow):
    load_model_requested = Signal(object)
    settings_applied = Signal(object)
    open_agent_requested = Signal(int)
    send_requested = Signal(int)  # the id of the user message just saved
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
        self._not_answered: set[int] = set()  # messages this session's turns left without a reply (Retry)
        self.background = False  # a login or timed heartbeat turn runs; a message preempts it
        self.consent_dialogs: list[ConsentDialog] = []
        self._streamed_chars = 0
        self._live_dirty = False
        self._search_serial = 0
        self.consent = QtConsentPolicy(lambda: self.worker.cancel_token, self)
        self.worker = AgentWorker(open_worker_services, make_runtime, self.consent, warm_embedder=warm_embedder)
        self.worker_thread = QThread(self)
        self.worker_thread.setObjectName("agent-worker")
        self.worker.moveToThread(self.worker_thread)
        self.ingester = IngestWorker(open_worker_services)
        self.ingest_thread = QThread(self)
        self.ingest_thread.setObjectName("ingestion")
        self.ingester.moveToThread(self.ingest_thread)
        # The knowledge graph's extraction: its own thread and connection; it borrows the model
        # after a turn and gives it back before the next (see qt_graph_worker).
        self.grapher = GraphWorker(services.paths.database, graph_analyser, services.clock, services.embedder, key=services.key)
        self.graph_thread = QThread(self)
        self.graph_thread.setObjectName("knowledge-graph")
        self.grapher.moveToThread(self.graph_thread)
        self.worker.before_turn.append(self.grapher.preempt)
        self.worker.after_turn.append(self.grapher.after_turn)
        self.repaint_timer = QTimer(self)
        self.repaint_timer.setInterval(REPAINT_MS)
        self.heartbeat = Heartbeat(lambda: self.services.settings.heartbeat_minutes, self._can_run_on_its_own, self)
        self.agent_actions = AgentActions(services, self.jobs, self.hub, self, self)
        self.transfer_actions = TransferActions(
            services, self.jobs, self.hub, self, lambda: self.agent_id, lambda: self.chat.details.isChecked()
        )
        self.model_actions = ModelActions(services, self.jobs, self.hub, self)
        self._build_ui()
        self._connect_signals()
        self.consolidation = ConsolidationController(self)
        self.private_chat = PrivateChat(self)
        # Memory > Forget…, retention while idle; the store's snapshots are listed and purged there.
        self.forget = ForgetController(self, backups=lambda: self.services.backups)
        self.backups = BackupsController(self)
        self._build_help_menu()  # after the controller's Memory menu: Help comes last
        self.setAcceptDrops(True)
        # QMainWindow::event keeps drops for its own dock dragging; a filter sees them first.
        self.installEventFilter(self)
        self.worker_thread.start()
        self.ingest_thread.start()
        self.graph_thread.start()
        self.repaint_timer.start()

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
        self._build_docks()
        self.restore_layout()
        self._build_menus()
        self.search_shortcut = QShortcut(QKeySequence.StandardKey.Find, self, self.chat.open_search)
        self.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.on_escape)
        self.statusBar().showMessage("Starting…")
        self.server_warning = ServerWarning()
        self.statusBar().addPermanentWidget(self.server_warning)

    def _build_docks(self) -> None:
        """Every panel around the conversation: one row each (title, widget, side)."""
        self.agents = AgentsPanel()
        self.budget = BudgetPanel()
        memory = self.services.memory
        self.memory = CoreMemoryPanel(memory.core, clock=self.services.clock)
        self.archival = ArchivalPanel(memory.archival, self.jobs)
        self.documents = DocumentsPanel(self.services)
        self.history = HistoryView(memory.core, memory.archival, memory.recall, self.services.clock, graph=memory.graph)
        # One reverter: an undo in the Knowledge panel is a recorded change the History view shows.
        self.knowledge = KnowledgePanel(memory.graph, reverter=self.history.reverter)
        left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
        self.docks: dict[str, QDockWidget] = {}
        for title, widget, area in (
            ("Agents", self.agents, left),
            ("Context budget", self.budget, right),
            ("Core memory", self.memory, right),
            ("Archival memory", self.archival, right),
            ("Documents", self.documents, right),
            ("Knowledge", self.knowledge, right),
            ("Memory history", self.history, right),
        ):
            dock = QDockWidget(title, self)
            dock.setObjectName(title)
            dock.setWidget(qt_layout.fitted(widget))
            self.addDockWidget(area, dock)
            self.docks[title] = dock
        qt_layout.arrange(self, self.docks)

    def restore_layout(self) -> None:
        """The layout the user left, else the default for this screen."""
        if not qt_layout.restore(self, self.services.settings.window_layout):
            self.apply_default_layout(self.screen().availableGeometry().size())

    def apply_default_layout(self, available: QSize) -> None:
        qt_layout.apply_default(self, self.docks, available)

    def save_layout(self) -> None:
        self.services.settings_store.set("window_layout", qt_layout.save(self))

    def _build_menus(self) -> None:
        """Every menu entry, with its shortcut and the slot it triggers."""
        menu = self.file_menu = self.menuBar().addMenu("&File")
        self.new_agent_action = self._action(menu, "&New agent…", QKeySequence.StandardKey.New, self.agent_actions.on_create_requested)
        transfers = self.transfer_actions
        self._action(menu, "&Import agent (.af or .json)…", QKeySequence("Ctrl+I"), transfers.on_import_triggered)
        self._action(menu, "Export agent as &Letta agent file (.af)…", QKeySequence("Ctrl+E"), transfers.on_export_af_triggered)
        self._action(menu, "Export agent as &JSON…", None, transfers.on_export_json_triggered)
        self._action(menu, "Export conversation as &Markdown…", None, transfers.on_export_markdown_triggered)
        self._action(menu, "Imported &tools of this agent…", None, transfers.on_tools_triggered)
        menu.addSeparator()
        self.settings_action = self._action(menu, "&Settings…", QKeySequence("Ctrl+,"), self.on_settings_triggered)
        self.models_action = self._action(menu, "&Models…", QKeySequence("Ctrl+Shift+L"), self.model_actions.on_models_triggered)
        self._action(menu, "&Quit", QKeySequence.StandardKey.Quit, self.close)
        view = self.menuBar().addMenu("&View")
        for dock in self.docks.values():
            view.addAction(dock.toggleViewAction())
        self.docks["Memory history"].toggleViewAction().setShortcut(QKeySequence("Ctrl+H"))

    def _build_help_menu(self) -> None:
        help_menu = self.menuBar().addMenu("&Help")
        self.diagnostics_action = self._action(help_menu, "&Diagnostics…", None, self.open_diagnostics)
        self.welcome_action = self._action(help_menu, "&Welcome…", None, lambda: show_welcome(self.services, window_actions(self), self))
        self._action(help_menu, "&About MemDesk", None, self.on_about_triggered)
        self.diagnostics_dialog: DiagnosticsDialog | None = None

    def _action(self, menu, text: str, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _connect_signals(self) -> None:
        worker = self.worker
        self.load_model_requested.connect(worker.load_model)
        self.model_actions.switch_requested.connect(worker.switch_model)
        worker.switch_finished.connect(self.model_actions.on_switch_finished)
        self.settings_applied.connect(worker.apply_settings)
        self.open_agent_requested.connect(worker.open_agent)
        self.send_requested.connect(worker.send)
        self.heartbeat_requested.connect(worker.heartbeat)
        self.budget_requested.connect(worker.refresh_budget)
        self.shutdown_requested.connect(worker.shutdown)
        self.shutdown_requested.connect(self.ingester.shutdown)
        self.shutdown_requested.connect(self.grapher.shutdown)
        self.graph_requested.connect(self.grapher.extract)
        self.grapher.changed.connect(self.on_graph_changed)
        self.grapher.pending.connect(self.knowledge.set_pending)
        self.grapher.failed.connect(self.hub.report)
        self.knowledge.source_requested.connect(self.on_source_requested)
        self.knowledge.rebuild_requested.connect(self.grapher.rebuild)
        self.knowledge.changed.connect(self.budget_requested)
        self.knowledge.failed.connect(self.hub.report)
        self.knowledge.changed.connect(self.history.refresh)
        self.history.graph_changed.connect(self.knowledge.refresh)
        self.ingester.finished.connect(lambda _report: self.agent_id is not None and self.graph_requested.emit(self.agent_id))
        self.ingest_requested.connect(self.ingester.ingest)
        self.documents.remove_requested.connect(self.ingester.remove)
        self.documents.reingest_requested.connect(self.ingester.reingest)
        self.documents.pick_requested.connect(self.ingester.reingest_picked)
        worker.loading.connect(self.on_model_loading)
        worker.ready.connect(self.on_model_ready)
        worker.streamed.connect(self.on_streamed)
        worker.stepped.connect(self.on_step)
        worker.budget_changed.connect(self.budget.set_budget)
        worker.memory_changed.connect(self.memory.on_agent_changed_blocks)
        worker.memory_changed.connect(self.on_agent_memory_changed)
        worker.search_hits.connect(self.archival.show_hits)
        worker.event.connect(self.on_agent_event)
        worker.failed.connect(self.hub.report)
        worker.failed.connect(self.on_worker_failed)
        worker.busy_changed.connect(self.on_busy_changed)
        worker.background_changed.connect(self.on_background_changed)
        worker.turn_finished.connect(self.on_turn_finished)
        worker.not_answered.connect(self.on_not_answered)
        self.chat.transcript.retry_requested.connect(self.on_retry_requested)
        self.ingester.progress.connect(self.documents.on_progress)
        self.ingester.failed.connect(self.hub.report)
        self.ingester.finished.connect(self.documents.on_finished)
        self.ingester.removed.connect(self.documents.on_removed)
        self.consent.asked.connect(self.on_consent_asked)
        self.hub.shown.connect(self.message_bar.show_message)
        self.jobs.failed.connect(self.hub.report)
        self.repaint_timer.timeout.connect(self.on_repaint_tick)
        self.heartbeat.due.connect(self.heartbeat_requested)
        self.chat.send_requested.connect(self.on_send_requested)
        self.chat.stop_requested.connect(self.on_stop_requested)
        self.chat.search_requested.connect(self.on_search_requested)
        self.chat.message_requested.connect(self.show_message)
        self.agents.switched.connect(self.on_agent_switched)
        self.agents.create_requested.connect(self.agent_actions.on_create_requested)
        self.agents.rename_requested.connect(self.agent_actions.on_rename_requested)
        self.agents.duplicate_requested.connect(self.agent_actions.on_duplicate_requested)
        self.agents.delete_requested.connect(self.agent_actions.on_delete_requested)
        self.agent_actions.open_requested.connect(self.select_agent)
        self.agent_actions.list_changed.connect(self.on_agent_list_changed)
        self.agent_actions.renamed.connect(self.on_agent_renamed)
        self.agent_actions.persona_updated.connect(lambda agent_id: agent_id == self.agent_id and self.on_history_reverted(["persona"]))
        self.agent_actions.deleted.connect(self.consent.forget_agent)
        self.memory.changed.connect(self.budget_requested)
        self.memory.changed.connect(self.history.refresh)
        self.memory.failed.connect(self.hub.report)
        self.memory.history_requested.connect(self.show_block_history)
        self.history.show_message_requested.connect(self.show_message)
        self.history.changed.connect(self.on_history_reverted)
        self.history.failed.connect(self.hub.report)
        self.archival.changed.connect(self.budget_requested)
        self.archival.changed.connect(self.history.refresh)
        self.archival.failed.connect(self.hub.report)
        self.documents.ingest_requested.connect(self.on_ingest_requested)
        self.documents.changed.connect(self.budget_requested)
        self.documents.changed.connect(self.archival.refresh)
        self.transfer_actions.imported.connect(self.on_agent_list_changed)
        self.transfer_actions.saved.connect(self.on_saved)
        self.transfer_actions.open_requested.connect(self.on_agent_switched)
        self.transfer_actions.tools_changed.connect(self.on_tools_changed)

    # --- start-up --------------------------------------------------------------------------
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
        self._load_transcript(agent_id)
        self._note_owed_reply(agent_id)
        self.memory.set_agent(agent_id)
        self.history.set_agent(agent_id)
        self.archival.set_agent(agent_id)
        self.documents.set_agent(agent_id)
        self.knowledge.set_agent(agent_id)
        self.graph_requested.emit(agent_id)  # catch up on what a closed or crashed app left
        self.services.settings_store.set("last_agent", record.name)
        self.open_agent_requested.emit(agent_id)
        self._update_ready()

    def _load_transcript(self, agent_id: int) -> None:
        """The conversation's newest page (older ones as the user scrolls up), evicted messages
        included (above a line, the context window)."""
        record = self.services.agents.get(agent_id)
        self.pages.show_newest(agent_id, record.name, record.context_start_id)

    def _note_owed_reply(self, agent_id: int) -> None:
        """A message an earlier session left without a reply says so; the worker answers it when
        the agent opens (see AgentWorker.answer_owed)."""
        owed = unanswered.newest(self.services.db, self.services.memory.recall, agent_id)
        if owed is not None and (owed.id in self._not_answered or unanswered.was_stopped(self.services.db, owed.id)):
            # Stopped (this session or an earlier one) or failed this session: the user decides.
            self.chat.transcript.add(transfer.Entry("unanswered", "not answered", owed.created_at, message_id=owed.id))
        elif owed is not None:
            self.chat.transcript.add(transfer.Entry("event", NOT_ANSWERED_YET, owed.created_at, message_id=None))

    def _update_ready(self) -> None:
        # Send works while the model loads: the message is saved at once and answered when it can be.
        if self.agent_id is None:
            self.chat.set_ready(False, "")
        elif not self.is_model_ready:
            self.chat.set_ready(True, "loading the model… you can send now")
        else:
            self.chat.set_ready(True, "")

    # --- worker slots ------------------------------------------------------------------------
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
        self.heartbeat.restart()
        self.model_ready.emit(model_id)

    @Slot(str, str)
    @reports_errors
    def on_streamed(self, kind: str, text: str) -> None:
        self.chat.transcript.append_live(kind, text)
        self._streamed_chars += len(text)
        self._live_dirty = True

    @Slot()
    @reports_errors
    def on_repaint_tick(self) -> None:
        if self._live_dirty:
            self._live_dirty = False
            self.chat.transcript.update_live()
            self.budget.set_streamed(self._streamed_chars)

    @Slot(object)
    @reports_errors
    def on_step(self, step: StepRecord) -> None:
        now = self.services.clock.now()
        self._live_dirty = False
        self._streamed_chars = 0
        self.chat.transcript.end_live()
        if step.thoughts:
            self.chat.transcript.add(transfer.Entry("thought", step.thoughts, now))
        if step.ok and step.function == "send_message":
            self.chat.transcript.add(transfer.Entry("agent", str(step.arguments.get("message", "")), now, function=step.function))
        else:
            self.chat.transcript.add(
                transfer.Entry("call", step.raw, now, function=step.function, arguments=dict(step.arguments), result=step.result, ok=step.ok)
            )

    @Slot(str, str)
    @reports_errors
    def on_agent_event(self, kind: str, text: str) -> None:
        if kind == "memories":  # automatic recall: shown with the inner workings, as on reload
            self.chat.transcript.add(transfer.Entry("memories", text, self.services.clock.now()))
            return
        self.chat.transcript.add(transfer.Entry("event", f"{kind}: {text}", self.services.clock.now()))

    @Slot(bool)
    @reports_errors
    def on_busy_changed(self, busy: bool) -> None:
        self.busy = busy
        self.chat.set_busy(busy)
        if not busy:
            self.heartbeat.restart()

    @Slot(bool)
    @reports_errors
    def on_background_changed(self, running: bool) -> None:
        self.background = running
        if running:
            self.statusBar().showMessage("Thinking in the background… (a message you send goes first)")
        else:
            self.heartbeat.restart()

    @Slot(object)
    @reports_errors
    def on_turn_finished(self, result) -> None:
        if result is not None:
            self.statusBar().showMessage(f"Last turn: {result.describe()}")
        self.chat.transcript.end_live()
        self._streamed_chars = 0
        self.archival.refresh()
        self.history.refresh()
        self.turn_done.emit()

    @Slot(int)
    @reports_errors
    def on_graph_changed(self, agent_id: int) -> None:
        if agent_id == self.agent_id:
            self.knowledge.refresh()
            self.history.refresh()  # the extractor's changes are in the memory history too
            if not self.busy:
                self.budget_requested.emit()  # the prompt's top entities may have changed

    @Slot(str, int)
    @reports_errors
    def on_source_requested(self, kind: str, source_id: int) -> None:
        """A fact's source: the message in the conversation, or the passage in archival memory."""
        if kind == "message":
            self.show_message(source_id)
            return
        passage = self.services.memory.archival.get(source_id)
        if passage is not None:
            from desktop.core.memory.archival import PassageHit

            self.archival.show_hits([("graph source", PassageHit(passage, 0.0))])
            self.archival.hits_table.selectRow(0)
            self.docks["Archival memory"].raise_()

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
        dialog.destroyed.connect(lambda _obj=None, d=dialog: self.consent_dialogs.remove(d) if d in self.consent_dialogs else None)
        self.consent_dialogs.append(dialog)
        dialog.show()

    # --- user actions ------------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def on_send_requested(self, text: str) -> None:
        if self.agent_id is None or self.busy:
            return
        # Saved through the window's own connection before a background turn is cancelled or
        # waited for (the worker may take seconds to let go of the model): a crash then keeps it.
        try:
            message = accept_user_message(self.private_chat.memory, self.agent_id, text)
        except MemDeskError:
            if not self.chat.compose.toPlainText():
                self.chat.compose.setPlainText(text)  # not sent: the user's text is not lost either
            raise
        self.busy = True  # until the worker says otherwise: no double sends
        self.chat.set_busy(True)
        self.last_sent_id = message.id
        self.chat.transcript.add(transfer.Entry("user", text, message.created_at))
        if not self.is_model_ready:
            self.chat.transcript.add(transfer.Entry("event", WILL_BE_ANSWERED, message.created_at))
        self.worker.preempt()  # a background turn must not make the user wait
        self.send_requested.emit(message.id)

    @Slot(int)
    @reports_errors
    def on_not_answered(self, message_id: int) -> None:
        """The turn ended without a reply (stopped, failed, no model): a one-click Retry."""
        if not self.private_chat.active:  # a private chat's ids are the copy's, gone with it
            self._not_answered.add(message_id)
        self.chat.transcript.add(transfer.Entry("unanswered", "not answered", self.services.clock.now(), message_id=message_id))
        self.message_unanswered.emit(message_id)

    @Slot(int)
    @reports_errors
    def on_retry_requested(self, message_id: int) -> None:
        if self.agent_id is None or self.busy:
            self.hub.notify("Wait for the current reply (or stop it with Esc), then retry")
            return
        memory = self.private_chat.memory
        message = memory.recall.get(message_id)
        if message is None or message.agent_id != self.agent_id:
            self.hub.notify("That message is not in this conversation")
            return
        if not unanswered.is_unanswered(memory.db, self.agent_id, message_id):
            self.hub.notify("That message has been answered since")
            return
        self.busy = True
        self.chat.set_busy(True)
        self.chat.transcript.add(transfer.Entry("event", "retrying your message", self.services.clock.now()))
        self.worker.preempt()
        self.send_requested.emit(message_id)

    @Slot(int, list)
    @reports_errors
    def on_ingest_requested(self, agent_id: int, paths: list) -> None:
        self.private_chat.refuse_saving("Documents cannot be added")
        self.ingest_requested.emit(agent_id, paths)

    @Slot()
    @reports_errors
    def on_stop_requested(self) -> None:
        self.worker.stop_by_user()

    @Slot()
    @reports_errors
    def on_escape(self) -> None:
        if self.chat.search_bar.isVisible():
            self.chat.close_search()
        else:
            self.worker.stop_by_user()

    @Slot(str)
    @reports_errors
    def on_search_requested(self, query: str) -> None:
        """On the job pool: a search may first embed every message without a vector yet."""
        if self.agent_id is None:
            return
        agent_id = self.agent_id
        self._search_serial += 1
        serial = self._search_serial
        self.chat.show_search_pending(query)
        self.jobs.run(
            lambda: self.services.memory.recall.search_text(agent_id, query, page_size=20),
            lambda page: self._show_search_results(serial, agent_id, page),
            self.hub.report,
        )

    def _show_search_results(self, serial: int, agent_id: int, page) -> None:
        if serial != self._search_serial or agent_id != self.agent_id:
            return  # a newer search or another agent: this answer is stale
        self.chat.show_search_results(page)
        self.archival.show_hits([("conversation", m) for m in page.hits])

    @Slot(int)
    @reports_errors
    def on_agent_switched(self, agent_id: int) -> None:
        if agent_id == self.agent_id:
            return
        if self.busy:
            self.agents.set_agents(self.services.agents.list(), self.agent_id)
            self.hub.notify("Stop the current reply (Esc) before switching agents")
            return
        self.select_agent(agent_id)

    @Slot()
    @reports_errors
    def on_agent_list_changed(self, _record=None) -> None:
        self.agents.set_agents(self.services.agents.list(), self.agent_id)

    @Slot(int, str)
    @reports_errors
    def on_agent_renamed(self, agent_id: int, name: str) -> None:
        if agent_id == self.agent_id:
            self.services.settings_store.set("last_agent", name)
            self.chat.title.setText(name)
            self.chat.transcript.agent_name = name
            self.setWindowTitle(f"MemDesk — {name}")

    @Slot(str)
    @reports_errors
    def on_saved(self, text: str) -> None:
        self.statusBar().showMessage(text, 5000)

    @Slot(int)
    @reports_errors
    def on_tools_changed(self, agent_id: int) -> None:
        if agent_id == self.agent_id and not self.busy:
            self.open_agent_requested.emit(agent_id)  # the worker builds the agent's tools again

    # --- memory history ----------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def show_block_history(self, label: str) -> None:
        dock = self.docks["Memory history"]
        dock.show()
        dock.raise_()
        self.history.show_block(label)

    @Slot(int)
    @reports_errors
    def show_message(self, message_id: int) -> None:
        """Show a stored message in the conversation, evicted from the context or not."""
        message = self.services.memory.recall.get(message_id)
        if message is None or message.agent_id != self.agent_id:
            self.hub.notify("That message is not in this agent's conversation")
            return
        if message.kind == "function_result" and message.step_id is not None:
            message_id = message.step_id  # a result is shown with its call
        transcript = self.chat.transcript
        if not transcript.has_message(message_id):
            self._load_transcript(message.agent_id)  # entries streamed this session carry no ids yet
            self.pages.load_back_to(message_id)  # older than the page shown
        if transcript.needs_details(message_id):
            self.chat.details.setChecked(True)
        if not transcript.scroll_to_message(message_id):
            self.hub.notify("That message is hidden in the conversation view")

    @Slot(list)
    @reports_errors
    def on_agent_memory_changed(self, _labels: list) -> None:
        self.history.refresh()

    @Slot(list)
    @reports_errors
    def on_history_reverted(self, labels: list) -> None:
        self.memory.reload(labels or None)
        self.archival.refresh()
        self.budget_requested.emit()

    # --- the actions, callable directly (tests, scripts) -----------------------------------------
    def create_agent(self, name: str, persona: str = "", human: str = "") -> None:
        self.agent_actions.create(name, persona, human)

    def rename_agent(self, agent_id: int, name: str, *, update_persona: bool | None = False) -> None:
        self.agent_actions.rename(agent_id, name, update_persona=update_persona)

    def duplicate_agent(self, agent_id: int, name: str) -> None:
        self.agent_actions.duplicate(agent_id, name)

    def delete_agent(self, agent_id: int) -> None:
        self.agent_actions.delete(agent_id)

    def export_agent(self, path) -> None:
        self.transfer_actions.export_agent(path)

    def export_agent_file(self, path) -> None:
        self.transfer_actions.export_agent(path, "af")

    def import_agent(self, path) -> None:
        self.transfer_actions.import_agent(path)

    # --- settings ------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_settings_triggered(self) -> None:
        privacy = PrivacyPanel(self.services.paths, self.services.key, lambda conversion: (dialog.reject(), self.request_store_conversion(conversion)))
        dialog = SettingsDialog(self.services.settings, self.services.paths, self, privacy=privacy)
        if dialog.exec():
            self.apply_settings(dialog.changes())

    def request_store_conversion(self, conversion: StoreConversion) -> None:
        """Close the window so that desktop.ui.main can convert the store with nothing open, then reopen."""
        self.pending_conversion = conversion
        self.close()

    def apply_settings(self, changes: dict) -> None:
        try:
            settings = self.services.settings
            for name, value in changes.items():
                settings = self.services.settings_store.set(name, value)
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
            return
        if set(changes) & RESTART_MODEL:
            self.load_model_requested.emit(settings)
        elif changes:
            self.settings_applied.emit(settings)
        self.heartbeat.restart()

    def _can_run_on_its_own(self) -> bool:
        return self.is_model_ready and not self.busy and not self.background and self.agent_id is not None

    # --- drops and closing -------------------------------------------------------------------
    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if watched is self and event.type() in (QEvent.Type.DragEnter, QEvent.Type.DragMove) and event.mimeData().hasUrls():
            event.acceptProposedAction()
            return True
        if watched is self and event.type() == QEvent.Type.Drop and event.mimeData().hasUrls():
            self.on_dropped(event)
            return True
        return super().eventFilter(watched, event)

    @reports_errors
    def on_dropped(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        models = [p for p in paths if p.lower().endswith(".gguf")]
        if models:
            self.model_actions.switch_model(Choice(Path(models[0]).name, {"runtime": "llamacpp", "model_path": models[0]}))
        rest = [p for p in paths if p not in models]
        if rest:
            self.documents.add_paths(rest)
        event.acceptProposedAction()

    # --- help ------------------------------------------------------------------------------
    @Slot(object)
    @reports_errors
    def on_worker_failed(self, error: BaseException) -> None:
        """A crashed model process gets the Diagnostics button: the report names cause and fix."""
        if isinstance(error, ModelCrashedError):
            self.message_bar.show_message(user_text(error), "Diagnostics…", self.open_diagnostics)

    @Slot()
    @reports_errors
    def open_diagnostics(self) -> DiagnosticsDialog:
        if self.diagnostics_dialog is None:
            paths, embedder = self.services.paths, self.services.embedder
            self.diagnostics_dialog = DiagnosticsDialog(lambda on_check: run_checks(paths, embedder=embedder, on_check=on_check), self)
        self.diagnostics_dialog.show()
        self.diagnostics_dialog.raise_()
        self.diagnostics_dialog.start()
        return self.diagnostics_dialog

    @Slot()
    @reports_errors
    def on_about_triggered(self) -> None:
        QMessageBox.about(
            self, "About MemDesk",
            f"<b>MemDesk {__version__}</b><p>An offline companion that remembers you. Your data stays in {escape(self.services.paths.home)}.</p>",
        )

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.isVisible():
            try:
                self.save_layout()
            except MemDeskError as error:  # the next start shows the default layout: nothing else is lost
                log.warning("window layout not saved: %s", error)
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        # The store closes after the window: no timer may read it later (the block editors'
        # "changed 2 min ago" timer did, into a closed database).
        for timer in self.findChildren(QTimer):
            timer.stop()
        if not self.worker_thread.isRunning() and not self.ingest_thread.isRunning() and not self.graph_thread.isRunning():
            return
        self.repaint_timer.stop()
        self.heartbeat.stop()
        self.model_actions.shutdown()
        self.consent.close()
        self.transfer_actions.close_dialogs()
        if self.history.revert_dialog is not None:
            self.history.revert_dialog.close()
        self.worker.stop()
        self.ingester.cancel.cancel()
        self.grapher.stopped = True
        self.grapher.preempt()
        self.shutdown_requested.emit()
        for thread, worker in ((self.worker_thread, self.worker), (self.ingest_thread, self.ingester), (self.graph_thread, self.grapher)):
            if not thread.wait(self.CLOSE_WAIT_MS):
                # Still inside something it cannot leave (a library import on a saturated machine):
                # destroying a running QThread aborts the process, so the thread and its worker are
                # kept alive to finish on their own (each was asked to stop, and does at its next check).
                log.warning("%s still busy %d ms after close; left to finish on its own", thread.objectName(), self.CLOSE_WAIT_MS)
                thread.setParent(None)
                _OUTLIVED_THEIR_WINDOW.append((thread, worker))
        self.jobs.wait(self.CLOSE_WAIT_MS)
        # What the threads queued for this window before they stopped (a turn's changed blocks)
        # runs now, while the store is still open, not in an event loop after it closed.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
