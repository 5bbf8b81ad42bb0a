"""The real window driven end to end by a script (the Xvfb test, the socket audit, the benchmarks):

    python -m testing.scripted_window --screenshot PNG [--message TEXT] [--give-up-after S] [--timing]
    python -m testing.scripted_window --quit-when-ready [--timing]

It starts the window exactly as ``memdesk`` does (memdesk.cli.main.run_window: the model first, the
first window, then the main window) and is handed each main window once it is shown (the start
function's ``on_window``); the product has no flag or variable for it. With ``--screenshot`` it
sends the message once the model is ready, denies any consent the reply asks for, waits for the
reply to that message, checks that the window shows it, saves a screenshot and quits. Any other end
exits non-zero: no reply within ``--give-up-after`` seconds (3), a reply the window does not show
(4), the message left unanswered (5), an error on the bar (6). ``--quit-when-ready`` closes the
window once the model is loaded (or an error is shown): what bench.startup times.

Only the standard library is imported at the top: the model's process (multiprocessing's spawn)
imports this main module again, and must not bring Qt and the window into it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

#: What the driver prints once the reply to its message is shown.
REPLY_SHOWN = "reply shown: "
DEFAULT_MESSAGE = "Hello! Who are you?"


def drive(
    window, path: str, message: str, give_up_after_s: float, *, exit: Callable[[int], None] | None = None
) -> None:
    """Script ``window`` (a main window, shown, not started yet): send ``message``, wait for the
    reply to it, save a screenshot at ``path`` and close. ``exit`` ends the run with a code
    (QApplication.exit)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from memdesk.core.agent import unanswered
    from memdesk.ui.dialogs.consent import DENY, ConsentRequest

    end = exit or QApplication.exit
    sent = False
    finished = False

    def send() -> None:
        nonlocal sent
        if sent:
            return
        # Send can be greyed for a moment (another turn runs): try again until the window takes it.
        if window.state.busy or not window.chat.can_send:
            QTimer.singleShot(200, window, send)
            return
        sent = True
        window.chat.compose.setPlainText(message)
        window.chat.on_send_clicked()

    def fail(code: int, text: str) -> None:
        nonlocal finished
        if not finished:
            finished = True
            print(f"error: {text}", flush=True)
            end(code)

    def on_turn_done() -> None:
        # Not the first turn to end after sending: a login turn the message preempted ends first.
        nonlocal finished
        if finished or not sent or window.state.last_sent_id is None or window.state.agent_id is None:
            return
        reply = unanswered.reply_to(
            window.services.db, window.services.memory.recall, window.state.agent_id, window.state.last_sent_id
        )
        if reply is None:
            return  # the turn that answers the message is still to come
        shown = [e for e in window.chat.transcript.entries if e.kind == "agent" and e.text == reply.search_text]
        if not shown:
            fail(4, f"the reply is not shown in the window: {reply.search_text[:200]!r}")
            return
        finished = True
        print(f"{REPLY_SHOWN}{reply.search_text}", flush=True)
        QTimer.singleShot(
            300, lambda: (window.grab().save(path), print(f"screenshot saved {path}", flush=True), window.close())
        )

    def on_unanswered(message_id: int) -> None:
        if message_id == window.state.last_sent_id:
            fail(5, "the message was not answered (the turn ended without a reply)")

    def decline(request: ConsentRequest) -> None:
        # Nobody is there to answer a consent dialog, so a scripted run says no, as a user clicking
        # Deny would; left open, the dialog held the turn until the run gave up (seen in CI when
        # the bundled model chose append_to_text_file).
        print(f"denied {request.tool}: a scripted run answers no consent question", flush=True)
        for dialog in list(window.consent_dialogs):
            if dialog.request is request:
                dialog.deny.click()
        window.consent.answer(request, DENY)  # no dialog (or already closed): settle it directly

    def give_up() -> None:
        # A scripted run must end: a stuck one says so and exits non-zero instead of hanging.
        fail(3, f"no reply within {give_up_after_s:.0f} s (message sent: {sent})")

    window.consent.asked.connect(decline)  # after the window's own slot, so its dialog exists
    window.model_ready.connect(lambda _model: QTimer.singleShot(200, window, send))
    window.turn_done.connect(on_turn_done)
    window.message_unanswered.connect(on_unanswered)
    window.hub.shown.connect(lambda text: fail(6, text))
    QTimer.singleShot(int(give_up_after_s * 1000), window, give_up)  # dies with the window


def quit_when_ready(window) -> None:
    """Close ``window`` once its model is loaded, or once it shows an error."""
    from PySide6.QtCore import QTimer

    window.model_ready.connect(lambda _model: QTimer.singleShot(0, window.close))
    window.hub.shown.connect(lambda _text: QTimer.singleShot(0, window.close))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testing.scripted_window", description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--screenshot", metavar="PNG", help="send --message, wait for its reply, save a screenshot")
    what.add_argument("--quit-when-ready", action="store_true", help="exit once the model is loaded")
    parser.add_argument("--message", default=DEFAULT_MESSAGE, help="the message sent before --screenshot")
    parser.add_argument(
        "--give-up-after", type=float, default=600.0, metavar="S", help="exit 3 when no reply came within S seconds"
    )
    # The rest (--timing, Qt's own options) is the window's own command line.
    args, window_argv = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    from memdesk.cli.main import run_window

    def on_window(window) -> None:
        if args.quit_when_ready:
            quit_when_ready(window)
        else:
            drive(window, args.screenshot, args.message, args.give_up_after)

    return run_window(window_argv, on_window=on_window)


if __name__ == "__main__":
    sys.exit(main())
