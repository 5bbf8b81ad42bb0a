"""The first-run welcome (the first start only, and Help > Welcome): what MemDesk remembers and
where it keeps it, the user's name, a model sized to this computer's memory, and a folder of
documents to read. Every step can be skipped, the whole welcome too; nothing is downloaded or read
without a click. It is not modal: the model loads and the window takes messages meanwhile.

The window passes in what the welcome may start (``Actions``): the Models page's download, and
the ingestion of a folder, so both run through the code they always run through.

Signals (WelcomeDialog):
    name_saved(str): the user's name was stored in the ``user_name`` setting
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.services import Services
from memdesk.core.models.catalog import CatalogEntry, machine_memory
from memdesk.core.models.download import format_bytes
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import escape, plain_label

STEPS = ("remembers", "name", "model", "documents")


@dataclass
class Actions:
    """What the welcome may ask the window to do.

    ``download(entry)`` starts the download on the Models page and returns that page's progress
    bar (the welcome mirrors it); ``open_models()`` shows the Models page; ``read_folder(path)``
    ingests a folder for the open agent."""

    download: Callable[[CatalogEntry], QProgressBar]
    open_models: Callable[[], None]
    read_folder: Callable[[str], None]


def _page(title: str, *widgets: QWidget) -> QWidget:
    page = QWidget()
    layout = QVBoxLayout(page)
    heading = QLabel(f"<h2>{escape(title)}</h2>")
    layout.addWidget(heading)
    for widget in widgets:
        layout.addWidget(widget)
    layout.addStretch(1)
    return page


def _text(html: str) -> QLabel:
    label = QLabel(html)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


class WelcomeDialog(QDialog):
    name_saved = Signal(str)

    def __init__(self, services: Services, actions: Actions, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services
        self.window_actions = actions
        self.setWindowTitle("Welcome to MemDesk")
        self.resize(640, 330)
        self.pick: CatalogEntry | None = services.models.catalog.recommended_for_memory(machine_memory())
        self.folder: str | None = None
        layout = QVBoxLayout(self)
        self.pages = QStackedWidget()
        self.pages.addWidget(self._remembers_page())
        self.pages.addWidget(self._name_page())
        self.pages.addWidget(self._model_page())
        self.pages.addWidget(self._documents_page())
        layout.addWidget(self.pages, 1)
        row = QHBoxLayout()
        self.step_label = QLabel()
        self.step_label.setStyleSheet(f"color: {palette.muted()}")
        self.close_button = QPushButton("Skip the welcome")
        self.back_button = QPushButton("Back")
        self.skip_button = QPushButton("Skip this step")
        self.next_button = QPushButton("Next")
        for button in (self.close_button, self.back_button, self.skip_button):
            button.setAutoDefault(False)  # Enter means Next
        self.next_button.setDefault(True)
        row.addWidget(self.step_label, 1)
        for button in (self.close_button, self.back_button, self.skip_button, self.next_button):
            row.addWidget(button)
        layout.addLayout(row)
        self.close_button.clicked.connect(self.reject)
        self.back_button.clicked.connect(lambda: self.go(self.pages.currentIndex() - 1))
        self.skip_button.clicked.connect(self.on_skip_clicked)
        self.next_button.clicked.connect(self.on_next_clicked)
        self.go(0)

    # --- the steps ---------------------------------------------------------------------------
    def _remembers_page(self) -> QWidget:
        paths = self.services.paths
        return _page(
            "What MemDesk remembers",
            _text(
                "<p>The agent you talk to keeps a short <b>core memory</b> about itself and about you, always in view "
                "(on the right; you can read and edit it), and can search <b>every message</b> you ever exchanged "
                "and the <b>documents</b> you give it. Every change to what it remembers is in Memory history.</p>"
                "<p>All of it is in one file on this computer: "
                f"<code>{escape(str(paths.database))}</code>, readable by "
                "you only. Nothing is sent anywhere: the model runs here.</p>"
            ),
        )

    def _name_page(self) -> QWidget:
        self.name = QLineEdit(self.services.settings.user_name)
        self.name.setPlaceholderText("e.g. Ada")
        return _page(
            "What should it call you?",
            _text(
                "<p>Your name helps memory search: “what did Ada say about the trip?” is then a question about "
                "your own words. "
                "You can change it in Settings.</p>"
            ),
            self.name,
        )

    def _model_page(self) -> QWidget:
        self.download_button = QPushButton()
        self.tiny_button = QPushButton("Try the tiny built-in model now")
        self.download_progress = QProgressBar()
        self.download_progress.setRange(0, 1000)
        self.download_progress.hide()
        self.model_status = plain_label()
        self.model_status.setWordWrap(True)
        memory = machine_memory()
        if self.pick is not None and memory:
            text = (
                f"<p>This computer has {memory / 1024**3:.0f} GB of memory: <b>{escape(self.pick.name)}</b> "
                f"({format_bytes(self.pick.size)} to download) suits it, and remembers and answers far better than the "
                "built-in demo model, which is tiny: it answers fast but forgets and mixes things up.</p>"
            )
            self.download_button.setText(f"Download {self.pick.name} ({format_bytes(self.pick.size)})")
        else:
            text = "<p>The built-in demo model is tiny. File › Models lists better ones and what each needs.</p>"
            self.download_button.setText("Open File › Models…")
        self.download_button.clicked.connect(self.on_download_clicked)
        self.tiny_button.clicked.connect(self.on_tiny_clicked)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.download_button)
        row.addWidget(self.tiny_button)
        row.addStretch(1)
        return _page("Choose a model", _text(text), buttons, self.download_progress, self.model_status)

    def _documents_page(self) -> QWidget:
        self.folder_button = QPushButton("Choose a folder…")
        self.folder_button.clicked.connect(self.on_folder_clicked)
        self.folder_status = plain_label()
        self.folder_status.setWordWrap(True)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.folder_button)
        row.addStretch(1)
        return _page(
            "Anything it should read?",
            _text(
                "<p>Notes, papers, a diary: the agent can search a folder of documents (text, Markdown, PDF, "
                "Word, HTML, spreadsheets, code) when it answers. You can add more later in the Documents panel, "
                "or drop files on the window.</p>"
            ),
            buttons,
            self.folder_status,
        )

    # --- moving through ----------------------------------------------------------------------
    def go(self, index: int) -> None:
        index = max(0, min(index, self.pages.count() - 1))
        self.pages.setCurrentIndex(index)
        last = index == self.pages.count() - 1
        self.back_button.setEnabled(index > 0)
        self.skip_button.setVisible(index > 0)  # the first step only reads
        self.next_button.setText("Finish" if last else "Next")
        self.step_label.setText(f"Step {index + 1} of {self.pages.count()}")

    @property
    def step(self) -> str:
        return STEPS[self.pages.currentIndex()]

    @Slot()
    @reports_errors
    def on_next_clicked(self) -> None:
        if self.step == "name":
            self.save_name()
        if self.pages.currentIndex() == self.pages.count() - 1:
            self.accept()
        else:
            self.go(self.pages.currentIndex() + 1)

    @Slot()
    @reports_errors
    def on_skip_clicked(self) -> None:
        """On to the next step, doing nothing for this one (the last one closes)."""
        if self.pages.currentIndex() == self.pages.count() - 1:
            self.accept()
        else:
            self.go(self.pages.currentIndex() + 1)

    def save_name(self) -> None:
        name = self.name.text().strip()
        if name and name != self.services.settings.user_name:
            self.services.settings_store.set("user_name", name)
            self.name_saved.emit(name)

    @Slot()
    @reports_errors
    def on_download_clicked(self) -> None:
        if self.pick is None:
            self.window_actions.open_models()
            return
        progress = self.window_actions.download(self.pick)
        self.download_button.setEnabled(False)
        self.download_progress.show()
        self.download_progress.setValue(progress.value())
        progress.valueChanged.connect(self.download_progress.setValue)
        self.model_status.setText(
            f"Downloading {self.pick.name}: it goes on in File › Models if you close this. "
            "When it is done, select it there and press Use."
        )

    @Slot()
    @reports_errors
    def on_tiny_clicked(self) -> None:
        self.model_status.setText(
            "The built-in model stays. File › Models (Ctrl+Shift+L) has better ones whenever you like."
        )
        self.go(self.pages.currentIndex() + 1)

    @Slot()
    @reports_errors
    def on_folder_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder of documents to read")
        if folder:
            self.read_folder(folder)

    def read_folder(self, folder: str) -> None:
        self.window_actions.read_folder(folder)
        self.folder = folder
        self.folder_status.setText(f"Reading {folder}: the Documents panel shows its progress.")


def offer_welcome(services: Services, actions: Actions, parent: QWidget | None = None) -> WelcomeDialog | None:
    """The welcome on the first start only: shown (not modal) unless it was shown before, or the
    store already holds a conversation (someone who used MemDesk before the welcome existed needs
    no welcome). It counts as shown once it is closed, however it is closed."""
    if services.settings.welcome_done:
        return None
    if any(services.memory.recall.count(agent.id) for agent in services.agents.list()):
        services.settings_store.set("welcome_done", True)
        return None
    return show_welcome(services, actions, parent)


def show_welcome(services: Services, actions: Actions, parent: QWidget | None = None) -> WelcomeDialog:
    dialog = WelcomeDialog(services, actions, parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.finished.connect(lambda _result: services.settings_store.set("welcome_done", True))
    dialog.show()
    return dialog
