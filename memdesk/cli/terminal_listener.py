"""What the terminal chat prints of its session's news (memdesk.session.listener): the agent's reply
as it streams, a stopped or failed reply with how to retry it, idle work's results; the inner
workings (thoughts, calls, the budget) with --verbose. Called on the session's threads."""

from __future__ import annotations

import sys
import threading

from memdesk.cli.terminal import escaping
from memdesk.core.agent.context import ContextBudget
from memdesk.core.agent.conversation_view import event_words
from memdesk.core.agent.observer import StepRecord, TurnResult
from memdesk.core.agent.repetition import REPEATED
from memdesk.core.consolidation.consolidator import PassResult
from memdesk.session.listener import SessionListener


def _text(error: Exception) -> str:
    return getattr(error, "user_message", None) or f"{type(error).__name__}: {error}"


class TerminalListener(SessionListener):
    def __init__(self, verbose: bool, agent_name: str, out=None, err=None) -> None:
        self.verbose = verbose
        self.agent_name = agent_name
        # The reply, the calls and the news hold the model's and imported text: escaped.
        self.out = escaping(out or sys.stdout)
        self.err = escaping(err or sys.stderr)
        self.model_id = ""
        self._lock = threading.RLock()  # one line at a time: the turn's, the graph's, the scheduler's
        self._streaming: str | None = None
        self._stopped = False
        self._opened = threading.Event()
        self._start_failure: Exception | None = None

    # --- opening ---------------------------------------------------------------------------------
    def on_ready(self, model_id: str) -> None:
        self.model_id = model_id

    def on_agent_opened(self, agent_id: int) -> None:
        self._opened.set()

    def wait_until_open(self) -> None:
        """Until the agent is open; a model or store that fails first is raised here."""
        self._opened.wait()
        if self._start_failure is not None:
            raise self._start_failure

    # --- a turn ----------------------------------------------------------------------------------
    def on_streamed(self, kind: str, text: str) -> None:
        if kind == "thought" and not self.verbose:
            return
        with self._lock:
            if self._streaming != kind:
                self.end_line()
                self.out.write("  (thinking) " if kind == "thought" else "agent> ")
                self._streaming = kind
            self.out.write(text)
            self.out.flush()

    def end_line(self) -> None:
        with self._lock:
            if self._streaming is not None:
                self.out.write("\n")
                self.out.flush()
                self._streaming = None

    def on_step(self, step: StepRecord) -> None:
        with self._lock:
            self.end_line()
            if self.verbose:
                arguments = {
                    k: v for k, v in step.arguments.items() if k != "message" or step.function != "send_message"
                }
                status = "ok" if step.ok else "FAILED"
                self.out.write(f"  [{step.function}({arguments}) -> {status}: {step.result[:300]}]\n")

    def on_budget(self, budget: ContextBudget) -> None:
        if self.verbose:
            self._say_out(f"  [{budget.describe()}]")

    def on_memory_changed(self, labels: list[str]) -> None:
        if self.verbose:
            self._say_out(f"  [core memory changed: {', '.join(labels)}]")

    def on_event(self, kind: str, text: str) -> None:
        if kind == "stopped":
            self._stopped = True
            self._say("[stopped; /retry answers your message]")
        else:
            words, workings = event_words(kind, text)
            # A copied reply was printed as it came: say why another follows it.
            if self.verbose or not workings or kind == REPEATED:
                self._say_out(f"  [{words[:300]}]")

    def on_failed(self, error: Exception) -> None:
        if not self._opened.is_set():
            self._start_failure = error
            self._opened.set()
            return
        self._say(f"[{_text(error)}]")

    def on_not_answered(self, message_id: int) -> None:
        if not self._stopped:
            self._say("[not answered; /retry answers your message]")

    def on_turn_finished(self, result: TurnResult | None) -> None:
        self._stopped = False
        self.end_line()
        if result is None:
            return
        if self.verbose:
            self._say_out(f"  [{result.kind}: {result.describe()}]")
        if result.kind == "user_message" and result.steps and not result.replies:
            self._say("  (the agent did not reply this time)")

    # --- work nobody asked for ---------------------------------------------------------------------
    def on_consolidation_finished(self, result: PassResult) -> None:
        if result.applied or result.proposed:
            self._say(f"\n  [{result.describe()}; review with: memdesk consolidate list]")

    def retention_text(self, description: str) -> str:
        return f"retention: {description} Confirm with: memdesk retention {self.agent_name} --apply"

    def on_retention_waits(self, agent_id: int, description: str) -> None:
        self._say(f"\n  [{self.retention_text(description)}]")

    def on_retention_done(self, agent_id: int, removed: int) -> None:
        self._say(f"\n  [retention: forgot {removed} old conversation messages]")

    def _say(self, line: str) -> None:
        with self._lock:
            self.end_line()
            print(line, file=self.err, flush=True)

    def _say_out(self, line: str) -> None:
        with self._lock:
            self.end_line()
            self.out.write(line + "\n")
