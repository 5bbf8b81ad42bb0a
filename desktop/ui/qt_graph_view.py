"""A small drawing of a knowledge-graph entity's neighbourhood, for the Knowledge panel."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QGraphicsEllipseItem, QGraphicsScene, QGraphicsSimpleTextItem, QGraphicsView, QWidget

from desktop.core.graph.store import Entity, Fact
from desktop.ui import qt_palette
from desktop.ui.qt_text import literal

MAX_DRAWN = 24  # neighbours drawn around the entity


class GraphView(QGraphicsView):
    """The selected entity in the middle, its neighbours around it, facts as labelled lines.
    Clicking a neighbour selects it.

    Signals: entity_clicked(int)
    """

    entity_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setMinimumHeight(160)
        self.nodes: dict[int, QGraphicsEllipseItem] = {}

    def show_neighbourhood(self, centre: Entity | None, facts: list[Fact]) -> None:
        scene = self.scene()
        scene.clear()
        self.nodes = {}
        if centre is None:
            return
        names = {centre.id: centre.name}
        for fact in facts:
            names.setdefault(fact.subject_id, fact.subject)
            names.setdefault(fact.object_id, fact.object)
        others = [n for n in names if n != centre.id][:MAX_DRAWN]
        positions = {centre.id: QPointF(0, 0)}
        radius = 70 + 6 * len(others)
        for index, node in enumerate(others):
            angle = 2 * math.pi * index / max(1, len(others))
            positions[node] = QPointF(radius * math.cos(angle), radius * math.sin(angle))
        small = QFont()
        small.setPointSizeF(max(6.0, small.pointSizeF() * 0.8))
        for fact in facts:
            if fact.subject_id in positions and fact.object_id in positions:
                a, b = positions[fact.subject_id], positions[fact.object_id]
                pen = QPen(QColor(qt_palette.muted() if fact.current else qt_palette.faint()))
                if not fact.current:
                    pen.setStyle(Qt.PenStyle.DashLine)
                scene.addLine(a.x(), a.y(), b.x(), b.y(), pen)
                label = scene.addSimpleText(fact.relation, small)
                label.setBrush(QBrush(QColor(qt_palette.muted())))
                label.setPos((a.x() + b.x()) / 2, (a.y() + b.y()) / 2)
        for node, point in positions.items():
            size = 26 if node == centre.id else 18
            ellipse = scene.addEllipse(point.x() - size / 2, point.y() - size / 2, size, size, QPen(QColor(qt_palette.muted())),
                                       QBrush(QColor(qt_palette.NODE_CENTRE if node == centre.id else qt_palette.NODE)))
            ellipse.setData(0, node)
            ellipse.setToolTip(literal(names[node]))
            ellipse.setCursor(Qt.CursorShape.PointingHandCursor)
            text = QGraphicsSimpleTextItem(names[node][:24], ellipse)
            text.setBrush(QBrush(QColor(qt_palette.text())))  # black by default: unreadable on a dark palette
            text.setPos(point.x() + size / 2 + 2, point.y() - 8)
            self.nodes[node] = ellipse
        self.fitInView(scene.itemsBoundingRect().adjusted(-20, -20, 20, 20), Qt.AspectRatioMode.KeepAspectRatio)

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt API
        item = self.itemAt(event.position().toPoint())
        while item is not None and item.data(0) is None:
            item = item.parentItem()
        if item is not None:
            self.entity_clicked.emit(int(item.data(0)))
        super().mousePressEvent(event)
