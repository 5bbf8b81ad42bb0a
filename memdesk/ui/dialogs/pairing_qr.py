"""The pairing code as a QR code, beside the typed one in File > Devices…: another device's camera
reads it instead of someone typing twenty letters. segno (pure Python) makes the symbol; the window
draws its modules into an image in memory, so the code never reaches a file, a cache or a log (it
is the key to the memory, and stored nowhere by design)."""

from __future__ import annotations

import segno
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPixmap
from PySide6.QtWidgets import QLabel, QWidget

from memdesk.ui.common import palette

#: At least medium error correction (segno raises it while the symbol keeps its size): it still
#: reads through glare or a smudge on a screen.
ERROR_LEVEL = "m"
#: The light margin readers need around the symbol: the four modules the QR standard asks for.
QUIET_ZONE = 4
#: Pixels per module: a version-2 symbol of the 24-character code is then 165 px square.
MODULE_PX = 5


def qr_modules(text: str) -> list[list[bool]]:
    """The symbol of ``text``, row by row: True for a dark module (the quiet zone not included)."""
    symbol = segno.make_qr(text, error=ERROR_LEVEL)
    return [[bool(module) for module in row] for row in symbol.matrix]


def qr_image(modules: list[list[bool]], module_px: int = MODULE_PX) -> QImage:
    """Dark modules on light with the quiet zone around them, the same in every palette
    (``palette.QR_DARK``, ``QR_LIGHT``)."""
    side = (len(modules) + 2 * QUIET_ZONE) * module_px
    image = QImage(side, side, QImage.Format.Format_RGB32)
    image.fill(QColor(palette.QR_LIGHT))
    painter = QPainter(image)
    try:
        dark_colour = QColor(palette.QR_DARK)
        for y, row in enumerate(modules):
            for x, dark in enumerate(row):
                if dark:
                    left, top = (x + QUIET_ZONE) * module_px, (y + QUIET_ZONE) * module_px
                    painter.fillRect(left, top, module_px, module_px, dark_colour)
    finally:
        painter.end()
    return image


class PairingQr(QLabel):
    """Hidden until a code is shown; then the code's symbol, replaced when a new code is drawn."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Pairing code as a QR code")
        self.setAccessibleDescription(
            "Scan it with the other device's camera: it reads as the pairing code written beside it"
        )
        self.setToolTip("Scan this with your other device, or type the code beside it")
        self.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.setVisible(False)

    def show_code(self, code: str) -> None:
        self.setPixmap(QPixmap.fromImage(qr_image(qr_modules(code))))
        self.setVisible(True)
