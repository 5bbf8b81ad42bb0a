"""The context budget: a stacked bar of every prompt section against the window, with the 75%
memory-pressure line and the eviction point, and a table of exact token counts. Hovering a
section of the bar shows what it holds."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRectF, Qt, Slot
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QToolTip, QVBoxLayout, QWidget

from memdesk.core.agent.context import ContextBudget, Section
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal

CHARS_PER_TOKEN = 4  # a rough estimate for text still being generated; exact counts follow each step


class BudgetBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumHeight(34)
        self.setMouseTracking(True)
        self.sections: list[Section] = []
        self.context_window = 0
        self.warning_at = 0
        self.eviction_at = 0

    def set_sections(self, sections: list[Section], window: int, warning_at: int, eviction_at: int) -> None:
        self.sections, self.context_window, self.warning_at, self.eviction_at = (
            sections,
            window,
            warning_at,
            eviction_at,
        )
        self.update()

    def _spans(self) -> list[tuple[Section, QRectF]]:
        if not self.context_window:
            return []
        width = self.width() - 2
        x = 1.0
        spans = []
        for section in self.sections:
            w = width * max(section.tokens, 0) / self.context_window
            spans.append((section, QRectF(x, 6, w, self.height() - 12)))
            x += w
        return spans

    def section_at(self, point: QPoint) -> Section | None:
        for section, rect in self._spans():
            if rect.left() <= point.x() <= rect.right():
                return section
        return None

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(palette.tint(palette.faint(), amount=0.5)))
        for section, rect in self._spans():
            if section.name != "free":
                painter.fillRect(rect, QColor(palette.SECTIONS.get(section.name, palette.faint())))
        if self.context_window:
            for at, color, label in (
                (self.warning_at, palette.readable(palette.ORANGE), "75%"),
                (self.eviction_at, palette.readable(palette.RED), "evict"),
            ):
                x = 1 + (self.width() - 2) * at / self.context_window
                painter.setPen(QPen(QColor(color), 2, Qt.PenStyle.DashLine))
                painter.drawLine(int(x), 0, int(x), self.height())
                painter.drawText(int(x) - 30, 11, label)
        painter.end()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        section = self.section_at(event.position().toPoint())
        if section is not None:
            QToolTip.showText(
                event.globalPosition().toPoint(),
                literal(f"{section.name}: {section.tokens} tokens\n\n{section.preview}"),
                self,
            )
        else:
            QToolTip.hideText()


class BudgetPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.summary = QLabel("No model loaded yet")
        self.bar = BudgetBar()
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Section", "Tokens", "Share of window"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        # Compact rows: every section fits a laptop screen's panel without scrolling.
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout.addWidget(self.summary)
        layout.addWidget(self.bar)
        layout.addWidget(self.table)
        self.budget: ContextBudget | None = None
        self.streamed_chars = 0

    @Slot(object)
    @reports_errors
    def set_budget(self, budget: ContextBudget) -> None:
        self.budget = budget
        self.streamed_chars = 0
        self._refresh()

    def set_streamed(self, chars: int) -> None:
        """Text generated so far in this step, shown as an estimate until the step is measured."""
        self.streamed_chars = chars
        self._refresh()

    @property
    def generating_tokens(self) -> int:
        return -(-self.streamed_chars // CHARS_PER_TOKEN)

    def _refresh(self) -> None:
        budget = self.budget
        if budget is None:
            return
        sections = [s for s in budget.sections if s.name != "free"]
        generating = min(self.generating_tokens, budget.free)
        if generating:
            sections.append(Section("generating", generating, "estimated tokens of the answer being generated"))
        used = budget.used + generating
        sections.append(Section("free", budget.window - used, f"{budget.window - used} tokens free of {budget.window}"))
        self.bar.set_sections(sections, budget.window, budget.warning_at, budget.eviction_at)
        self.bar.setToolTip("")
        self.summary.setText(
            f"{used} of {budget.window} tokens used ({used / budget.window:.0%}) · memory-pressure warning at "
            f"{budget.warning_at} · eviction beyond {budget.eviction_at} ({budget.reserve} kept for the answer)"
        )
        self.summary.setWordWrap(True)
        self.table.setRowCount(len(sections))
        for row, section in enumerate(sections):
            name = QTableWidgetItem(section.name + (" (estimate)" if section.name == "generating" else ""))
            name.setToolTip(literal(section.preview))
            name.setForeground(QColor(palette.readable(palette.SECTIONS.get(section.name, palette.text()))))
            tokens = QTableWidgetItem(str(section.tokens))
            tokens.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            share = QTableWidgetItem(f"{section.tokens / budget.window:.1%}")
            share.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            for column, item in enumerate((name, tokens, share)):
                item.setToolTip(literal(section.preview))
                self.table.setItem(row, column, item)
