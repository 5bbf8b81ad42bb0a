"""The window follows the system's palette: on a dark one, no text is drawn in a colour meant for
a white background (dark blue names, grey hints, pale yellow highlights under white text), and no
module but the palette's names a colour (issue 22)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QWidget

from memdesk.core.runtime.scripted import say
from memdesk.ui.common import palette as qt_palette
from memdesk.ui.panels.history_text import diff_html

UI = Path(__file__).resolve().parents[2] / "memdesk" / "ui"
HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
COLOUR_LITERAL = re.compile(r"""["']#[0-9a-fA-F]{3,8}\b|Qt\.GlobalColor\.\w+|QColor\(["'][a-z]""")
CSS_COLOUR = re.compile(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})")
CSS_BACKGROUND = re.compile(r"background(?:-color)?:\s*(#[0-9a-fA-F]{6})")


def luminance(colour: str) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    q = QColor(colour)
    return 0.2126 * channel(q.redF()) + 0.7152 * channel(q.greenF()) + 0.0722 * channel(q.blueF())


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#2b2b2b"),
        (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Base, "#1e1e1e"),
        (QPalette.ColorRole.AlternateBase, "#262626"),
        (QPalette.ColorRole.Text, "#e6e6e6"),
        (QPalette.ColorRole.Button, "#333333"),
        (QPalette.ColorRole.ButtonText, "#e6e6e6"),
        (QPalette.ColorRole.PlaceholderText, "#8c8c8c"),
    ):
        palette.setColor(role, QColor(colour))
    return palette


@pytest.fixture
def dark(qapp):
    before = qapp.palette()
    qapp.setPalette(dark_palette())
    yield qapp.palette()
    qapp.setPalette(before)


def unreadable_styles(root: QWidget, base: str) -> list[str]:
    """Every widget whose style sheet puts text in a colour that does not stand out from its
    background (its own, else the palette's base) at WCAG's 3:1 for secondary text."""
    found = []
    for widget in [root, *root.findChildren(QWidget)]:
        sheet = widget.styleSheet()
        background = next(iter(CSS_BACKGROUND.findall(sheet)), base)
        for colour in CSS_COLOUR.findall(sheet):
            if contrast(colour, background) < 3:
                found.append(f"{type(widget).__name__} {sheet!r}")
        if (
            CSS_BACKGROUND.search(sheet)
            and not CSS_COLOUR.search(sheet)
            and contrast(qt_palette.text(), background) < 4.5
        ):
            found.append(f"{type(widget).__name__} background {background} under the palette's text")
    return found


def test_the_window_on_a_dark_palette_draws_no_text_its_background_hides(dark, make_window, roomy_runtime, send):
    base = dark.color(QPalette.ColorRole.Base).name()
    roomy_runtime.enqueue(say("Hello Ada, nice to meet you."))
    window = make_window(roomy_runtime)
    send(window, "Hi, I am Ada.")
    core, agent_id = window.services.memory.core, window.state.agent_id
    window.memory.editors["persona"].agent_changed(
        core.get(agent_id, "persona"), core.history.latest_for_block(agent_id, "persona")
    )  # highlighted
    assert unreadable_styles(window, base) == []
    transcript = window.chat.transcript.toHtml()
    colours = set(HEX.findall(" ".join(CSS_COLOUR.findall(transcript.replace("color:", "color: ")))))
    assert colours, "the transcript's names and times are styled"
    assert [c for c in colours if contrast(c, base) < 3] == []


def test_a_diff_on_a_dark_palette_keeps_its_added_and_removed_text_readable(dark):
    html = diff_html("I live in London", "I live in Lisbon")
    pairs = re.findall(r"background:(#[0-9a-fA-F]{6});color:(#[0-9a-fA-F]{6})", html)
    assert len(pairs) == 2
    for background, colour in pairs:
        assert contrast(colour, background) >= 4.5
        assert luminance(background) < 0.1  # a dark tint, not the light theme's pale green and pink


@pytest.mark.parametrize("base, text", [("#ffffff", "#000000"), ("#1e1e1e", "#e6e6e6")])
def test_palette_colours_read_well_on_light_and_dark_bases(qapp, base, text):
    palette = QPalette()
    palette.setColor(QPalette.ColorRole.Base, QColor(base))
    palette.setColor(QPalette.ColorRole.Text, QColor(text))
    for hue in (
        qt_palette.BLUE,
        qt_palette.GREEN,
        qt_palette.RED,
        qt_palette.ORANGE,
        qt_palette.PURPLE,
        *qt_palette.SECTIONS.values(),
    ):
        assert contrast(qt_palette.readable(hue, palette), base) >= 4.5, hue
        assert contrast(text, qt_palette.tint(hue, palette)) >= 4.5, hue
    assert contrast(qt_palette.muted(palette), base) >= 3


def test_no_window_module_but_qt_palette_names_a_colour():
    offenders = [
        f"{path.relative_to(UI)}:{number}: {line.strip()}"
        for path in sorted(UI.rglob("*.py"))
        if path != UI / "common" / "palette.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if COLOUR_LITERAL.search(line)
    ]
    assert offenders == []
