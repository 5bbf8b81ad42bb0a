"""Choosing the model from the window: the Models page (File > Models…) and .gguf files dropped on
the window. A choice is checked here (``library.preflight``, on the job pool), loaded by the agent
worker (which loads the previous model again if the new one fails), and stored in the settings
only once it runs."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QWidget

from memdesk.app.services import Services, snapshot_before
from memdesk.core.models.library import Choice
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.dialogs.models import ModelsDialog, ModelsPage
from memdesk.ui.workers.jobs import Jobs

#: The settings a model choice may change (see ``library.Choice``).
MODEL_SETTINGS = ("runtime", "model_path", "openai_base_url", "openai_model", "openai_schema")


class ModelActions(QObject):
    """Create in the GUI thread.

    Signals:
        switch_requested(object): Settings with the chosen model, for the worker's ``switch_model``
    """

    switch_requested = Signal(object)

    def __init__(self, services: Services, jobs: Jobs, hub: ErrorHub, window: QWidget) -> None:
        super().__init__(window)
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.window = window
        self.dialog: ModelsDialog | None = None

    @property
    def page(self) -> ModelsPage | None:
        return self.dialog.page if self.dialog is not None else None

    @Slot()
    @reports_errors
    def on_models_triggered(self) -> None:
        if self.dialog is None:
            page = ModelsPage(self.services, self.jobs, self.hub)
            page.choose_requested.connect(self.switch_model)
            self.dialog = ModelsDialog(page, self.window)
        self.dialog.page.refresh()
        self.dialog.show()
        self.dialog.raise_()

    @Slot(object)
    @reports_errors
    def switch_model(self, choice: Choice) -> None:
        settings = replace(self.services.settings, **choice.changes)

        def check():
            self.services.models.preflight(settings)
            snapshot_before(self.services, f"before switching to {choice.label}")
            return settings

        self.jobs.run(check, self.switch_requested.emit, lambda error: self.on_switch_finished(False, error))

    @Slot(bool, object)
    @reports_errors
    def on_switch_finished(self, ok: bool, result) -> None:
        """The worker's ``switch_finished``: (True, the new Settings) or (False, the error)."""
        if ok:
            for name in MODEL_SETTINGS:
                if getattr(result, name) != getattr(self.services.settings, name):
                    self.services.settings_store.set(name, getattr(result, name))
            if self.page is not None:
                self.page.switch_done(True, f"Now using {self.services.models.active(self.services.settings)}.")
            return
        self.hub.report(result)
        if self.page is not None:
            self.page.switch_done(False, "The previous model stays active.")

    def shutdown(self) -> None:
        if self.dialog is not None:
            self.dialog.page.shutdown()
            self.dialog.close()
