"""A small drawing of a knowledge-graph entity's facts, for the Knowledge panel.

Each fact is a row that reads as its sentence, left to right: facts whose subject is another
entity on the left ("Ann — sister of — [Ada]"), facts about the entity on the right ("[Ann] —
moved to — Porto"), the entity itself in a box between them. The drawing is laid out for the view's
width at the font's own size, never scaled to fit: a relation too long for its line, or a name too
long for its room, is elided and its whole sentence is the tooltip; more rows than the view's
height scroll. A panel as narrow as the default layout's on a 1366×768 screen still shows short
relations whole (a scaled-down drawing made them unreadable, and labels ran under the nodes).
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QWidget,
)

from memdesk.core.graph.store import Entity, Fact
from memdesk.ui.common import palette as qt_palette
from memdesk.ui.common.text import literal

MAX_DRAWN = 24  # facts drawn around the entity (the newest)
MARGIN = 8  # around the drawing, inside the view
PAD = 6  # inside the entity's box; either side of a relation on its line
NODE = 12  # a neighbour's diameter
BRANCH = 14  # the line from the box to where its facts' rows branch off
GAP = 4  # between a neighbour and its name
#: How much longer than its longest relation a side's lines may be, when there is room.
SLACK = 60
#: Rows share what is left of a side between relation and name as their longest ones ask, but a
#: relation keeps at least this share (a long name must not squeeze "sister of" to "s…").
MIN_RELATION_SHARE = 0.4


class GraphView(QGraphicsView):
    """The selected entity in the middle, its facts as labelled rows beside it. Clicking a
    neighbour selects it.

    Signals: entity_clicked(int)
    """

    entity_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # laid out for the width
        self.setMinimumHeight(160)
        self.nodes: dict[int, QGraphicsItem] = {}
        #: The facts' relations as drawn (elided where they had no room), each with its sentence as tooltip.
        self.labels: list[QGraphicsSimpleTextItem] = []
        self._shown: tuple[Entity | None, list[Fact]] = (None, [])
        self._laid_out_width = -1

    def show_neighbourhood(self, centre: Entity | None, facts: list[Fact]) -> None:
        self._shown = (centre, list(facts))
        self._lay_out()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if self.viewport().width() != self._laid_out_width:
            self._lay_out()

    # --- layout --------------------------------------------------------------------------------
    def _lay_out(self) -> None:
        scene = self.scene()
        scene.clear()
        self.nodes, self.labels = {}, []
        self._laid_out_width = self.viewport().width()
        centre, facts = self._shown
        if centre is None:
            return
        facts = facts[:MAX_DRAWN]
        metrics = QFontMetricsF(self.font())
        usable = max(160.0, self._laid_out_width - 2 * MARGIN)
        left = [f for f in facts if f.subject_id != centre.id]  # another entity is the subject
        right = [f for f in facts if f.subject_id == centre.id]
        box_text = metrics.elidedText(centre.name, Qt.TextElideMode.ElideRight, usable * 0.3)
        box_width = metrics.horizontalAdvance(box_text) + 2 * PAD
        sides = int(bool(left)) + int(bool(right))
        side = (usable - box_width) / max(1, sides)
        box_left = side if left else (0.0 if right else (usable - box_width) / 2)
        self._add_box(centre, box_text, QRectF(box_left, -metrics.height() / 2 - 2, box_width, metrics.height() + 4))
        if right:
            self._add_side(centre, right, metrics, box_left + box_width, side, +1)
        if left:
            self._add_side(centre, left, metrics, box_left, side, -1)
        scene.setSceneRect(scene.itemsBoundingRect().adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN))
        self.centerOn(self.nodes[centre.id])

    def _add_box(self, centre: Entity, text: str, rect: QRectF) -> None:
        path = QPainterPath()
        path.addRoundedRect(rect, 4, 4)
        box = QGraphicsPathItem(path)
        box.setPen(QPen(QColor(qt_palette.muted())))
        box.setBrush(
            QBrush(QColor(qt_palette.tint(qt_palette.NODE_CENTRE, amount=0.6)))
        )  # the palette's text reads on it
        box.setData(0, centre.id)
        box.setToolTip(literal(centre.name))
        name = QGraphicsSimpleTextItem(text, box)
        name.setFont(self.font())
        name.setBrush(QBrush(QColor(qt_palette.text())))
        name.setPos(rect.left() + PAD, rect.top() + 2)
        self.scene().addItem(box)
        self.nodes[centre.id] = box

    def _add_side(
        self, centre: Entity, facts: list[Fact], metrics: QFontMetricsF, edge: float, width: float, direction: int
    ) -> None:
        """One side's rows: ``edge`` is the box's side they start from, ``direction`` +1 to the
        right (the entity is the subject), -1 to the left."""
        scene = self.scene()
        others = [(f.object_id, f.object) if direction > 0 else (f.subject_id, f.subject) for f in facts]
        room = max(0.0, width - BRANCH - NODE - GAP)
        wanted_relation = max(metrics.horizontalAdvance(f.relation) for f in facts) + 2 * PAD
        wanted_name = max(metrics.horizontalAdvance(name) for _id, name in others)
        if wanted_relation + wanted_name <= room:
            line = min(
                room - wanted_name, wanted_relation + SLACK
            )  # some slack lengthens the lines, the rest is margin
        else:  # shared as they ask, the relations keeping their minimum share
            line = min(
                wanted_relation,
                max(room * MIN_RELATION_SHARE, room * wanted_relation / (wanted_relation + wanted_name)),
            )
        name_room = room - line
        row_height = metrics.height() + 8  # a relation above its line, clear of the row above
        branch = edge + direction * BRANCH
        muted = QColor(qt_palette.muted())
        ys = [(index - (len(facts) - 1) / 2) * row_height for index in range(len(facts))]
        scene.addLine(edge, 0, branch, 0, QPen(muted))
        scene.addLine(branch, ys[0], branch, ys[-1], QPen(muted))
        for fact, (other_id, other), y in zip(facts, others, ys, strict=True):
            node_x = branch + direction * (line + NODE / 2)
            pen = QPen(muted if fact.current else QColor(qt_palette.faint()))
            if not fact.current:
                pen.setStyle(Qt.PenStyle.DashLine)
            scene.addLine(branch, y, node_x - direction * NODE / 2, y, pen)
            sentence = f"{fact.subject} {fact.relation} {fact.object}" + (
                "" if fact.current else f" (until {fact.valid_to:%Y-%m-%d})"
            )
            label = scene.addSimpleText(
                metrics.elidedText(fact.relation, Qt.TextElideMode.ElideRight, max(0.0, line - 2 * PAD)), self.font()
            )
            label.setBrush(QBrush(QColor(qt_palette.muted())))
            label.setToolTip(literal(sentence))
            label_width = label.boundingRect().width()
            start = min(branch, branch + direction * line)
            label.setPos(start + (line - label_width) / 2, y - metrics.height() - 1)
            self.labels.append(label)
            node = QGraphicsEllipseItem(node_x - NODE / 2, y - NODE / 2, NODE, NODE)
            node.setPen(QPen(muted))
            node.setBrush(QBrush(QColor(qt_palette.NODE)))
            node.setData(0, other_id)
            node.setToolTip(literal(other))
            node.setCursor(Qt.CursorShape.PointingHandCursor)
            name = QGraphicsSimpleTextItem(
                metrics.elidedText(other, Qt.TextElideMode.ElideRight, max(0.0, name_room)), node
            )
            name.setFont(self.font())
            name.setBrush(QBrush(QColor(qt_palette.text())))  # black by default: unreadable on a dark palette
            name_width = name.boundingRect().width()
            name.setPos(
                node_x + NODE / 2 + GAP if direction > 0 else node_x - NODE / 2 - GAP - name_width,
                y - metrics.height() / 2,
            )
            scene.addItem(node)
            self.nodes.setdefault(other_id, node)

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt API
        item = self.itemAt(event.position().toPoint())
        while item is not None and item.data(0) is None:
            item = item.parentItem()
        if item is not None:
            self.entity_clicked.emit(int(item.data(0)))
        super().mousePressEvent(event)
