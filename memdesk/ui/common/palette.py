"""Colours that follow the system's palette, light or dark: the one module of the window that
names colours (a test keeps it so).

A colour here has a hue and a job: text in it (``readable``) keeps its hue and flips its lightness
on a dark palette (the dark blue of "You" becomes a light blue); a background (``tint``) is that
hue mixed into the palette's base, pale on a light palette, deep on a dark one; secondary text
(``muted``) sits between the palette's text and base colours. Widgets ask when they are built or
drawn, so the palette the application runs with is the one they follow.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

#: Hues, named for what they say.
BLUE = "#1d4f91"  # you, links
GREEN = "#2c6e2f"  # the agent, text added in a diff
RED = "#8f1d1d"  # errors, over a limit, text removed in a diff
ORANGE = "#a15c00"  # warnings
PURPLE = "#6a5a8c"  # the agent's inner thoughts
YELLOW = "#b08800"  # highlights, the message bar
#: The private-chat banner: white on deep purple in every palette (it must stand out).
PRIVATE_BANNER = "#5b2a86"
#: The context budget's sections (fills of the bar, with their names in the table).
SECTIONS = {
    "system": "#5b7db1",
    "tools": "#8aa5cf",
    "core_memory": "#d18f3f",
    "summary": "#a07cc5",
    "messages": "#5aa469",
    "knowledge": "#c7a02e",
    "recall": "#c0607a",  # memories found automatically (issue 10)
    "generating": "#7fbf8a",
}
#: Knowledge-graph nodes: the entity in the centre and its neighbours.
NODE_CENTRE, NODE = "#f6d186", "#9cc3e4"
#: A QR code's modules on its background: black on white in every palette (an inverted symbol,
#: light on dark, is one many readers refuse).
QR_DARK, QR_LIGHT = "#000000", "#ffffff"


def palette() -> QPalette:
    app = QGuiApplication.instance()
    return app.palette() if isinstance(app, QGuiApplication) else QPalette()


def is_dark(pal: QPalette | None = None) -> bool:
    return (pal or palette()).color(QPalette.ColorRole.Base).lightness() < 128


def _mix(a: QColor, b: QColor, share_of_b: float) -> QColor:
    keep = 1 - share_of_b
    return QColor.fromRgbF(
        a.redF() * keep + b.redF() * share_of_b,
        a.greenF() * keep + b.greenF() * share_of_b,
        a.blueF() * keep + b.blueF() * share_of_b,
    )


#: WCAG's contrast bar for text: text colours are moved (darker on a light base, lighter on a dark
#: one, hue kept) until they reach it.
TEXT_CONTRAST = 4.5


def _luminance(colour: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def readable(colour: str, pal: QPalette | None = None) -> str:
    """``colour`` for text on the palette's base, its hue kept: as it is, or darkened, on a light
    palette; its lightness mirrored, and raised if need be, on a dark one."""
    base = (pal or palette()).color(QPalette.ColorRole.Base)
    given = QColor(colour)
    hue, saturation, lightness = given.hslHue(), given.hslSaturation(), given.lightness()
    dark = base.lightness() < 128
    if dark:
        lightness = 255 - lightness
    candidate = QColor.fromHsl(hue, saturation, lightness)
    while contrast(candidate, base) < TEXT_CONTRAST and 0 < lightness < 255:
        lightness = min(255, lightness + 5) if dark else max(0, lightness - 5)
        candidate = QColor.fromHsl(hue, saturation, lightness)
    return candidate.name()


def tint(colour: str, pal: QPalette | None = None, amount: float = 0.22) -> str:
    """A background in ``colour``'s hue that the palette's text stays readable on."""
    return _mix((pal or palette()).color(QPalette.ColorRole.Base), QColor(colour), amount).name()


def muted(pal: QPalette | None = None) -> str:
    """Secondary text (hints, times, descriptions): between the palette's text and base."""
    pal = pal or palette()
    return _mix(pal.color(QPalette.ColorRole.Text), pal.color(QPalette.ColorRole.Base), 0.4).name()


def faint(pal: QPalette | None = None) -> str:
    """Lines and the empty part of a bar: visible on the base, quieter than text."""
    pal = pal or palette()
    return _mix(pal.color(QPalette.ColorRole.Text), pal.color(QPalette.ColorRole.Base), 0.75).name()


def text(pal: QPalette | None = None) -> str:
    return (pal or palette()).color(QPalette.ColorRole.Text).name()


def link(pal: QPalette | None = None) -> str:
    return readable(BLUE, pal)
