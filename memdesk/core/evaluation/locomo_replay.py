"""What the model gets to see, and what it answers, after a LoCoMo conversation.

Each conversation is replayed into a fresh agent through the agent's own loop, so its message
queue, eviction and prompt assembly are exactly the app's: the first speaker is the user, the
second is the agent (their turns become the agent's ``send_message`` calls), every session starts
at its recorded date, and a session the second speaker opens starts with a login event, which the
agent answers. Tokens are counted by the active model's tokenizer for a window of N tokens
(see ``ReplayRuntime``). Summaries of evicted messages are a fixed placeholder: evidence is checked
on turns, so a summary could only ever add paraphrases this measure would not credit.

Then every question is asked as a user message and the prompt the model would receive is
captured; the store is rolled back afterwards, so each question starts from the same state. A
question's evidence is *in context* when every evidence turn's text appears in that prompt.

* ``context`` mode reports, per variant (the FIFO window alone, i.e. MemGPT without a search call;
  the FIFO window plus automatic recall when the agent has it), the share of questions whose
  evidence is all in context, and the mean share of evidence turns in context (LoCoMo's recall),
  overall, per category and per conversation.
* ``answer`` mode asks the real model instead (``ReplayRuntime.live``) and scores the agent's
  reply with LoCoMo's token F1 (memdesk.core.evaluation.scoring).
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from memdesk.core.agent.loop import Agent
from memdesk.core.base.clock import Clock, ManualClock
from memdesk.core.base.errors import MemDeskError
from memdesk.core.evaluation import scoring
from memdesk.core.evaluation.locomo import TUNING_CONVERSATIONS, category_name, session_time, turn_text
from memdesk.core.evaluation.replay_runtime import PLACEHOLDER_SUMMARY, ReplayRuntime
from memdesk.core.runtime.base import ChatMessage, Runtime
from memdesk.core.storage import Database

log = logging.getLogger("memdesk.eval")

FIFO = "fifo"
FIFO_RECALL = "fifo+recall"
VARIANTS = (FIFO, FIFO_RECALL)
#: When the questions are asked: this long after the conversation's last turn.
QUESTION_DELAY = timedelta(hours=1)
#: The scripted reply to a question in context mode (only the prompt before it is measured).
UNMEASURED_REPLY = "(not generated: context mode measures the prompt only)"


class EvalStore(Protocol):
    """A fresh store holding one agent, built by the front end's composition root."""

    db: Database

    def open_agent(self) -> Agent:
        """A new Agent object on the store's one agent (new objects hold no state from earlier ones)."""

    def close(self) -> None: ...


#: (folder, runtime, clock, automatic_recall, (user's name, agent's name)) -> a store with one
#: agent, as the app would build it: the agent is called by the second speaker's name and the
#: ``user_name`` setting holds the first's, as a user of the app would set them up.
StoreFactory = Callable[[Path, Runtime, Clock, bool, tuple[str, str]], EvalStore]


# --- the conversation as exchanges ----------------------------------------------------------
@dataclass(frozen=True)
class Exchange:
    at: datetime
    opener: str | None  # the user's message; None: the agent opens the session (after a login)
    reply: str | None  # what the agent says; None: the recording has no answer
    turns: tuple[str, ...]  # dia_ids of the turns in this exchange


def plan_exchanges(sample: dict) -> list[Exchange]:
    """Group a conversation's turns into user messages and the agent's replies."""
    conversation = sample["conversation"]
    user = conversation["speaker_a"]
    exchanges: list[Exchange] = []
    number = 1
    while f"session_{number}" in conversation:
        start = session_time(conversation[f"session_{number}_date_time"])
        runs: list[tuple[bool, datetime, list[dict]]] = []  # (is_user, time of first turn, turns)
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            is_user = turn["speaker"] == user
            if runs and runs[-1][0] == is_user:
                runs[-1][2].append(turn)
            else:
                runs.append((is_user, start + timedelta(seconds=offset), [turn]))
        index = 0
        while index < len(runs):
            is_user, at, turns = runs[index]
            if is_user:
                reply_turns = runs[index + 1][2] if index + 1 < len(runs) else []
                index += 2 if reply_turns else 1
                exchanges.append(
                    Exchange(
                        at, _joined(turns), _joined(reply_turns) if reply_turns else None, _ids(turns + reply_turns)
                    )
                )
            else:
                index += 1
                exchanges.append(Exchange(at, None, _joined(turns), _ids(turns)))
        number += 1
    return exchanges


def _joined(turns: Sequence[dict]) -> str:
    return "\n".join(turn_text(t) for t in turns)


def _ids(turns: Sequence[dict]) -> tuple[str, ...]:
    return tuple(t["dia_id"] for t in turns)


def turn_texts(sample: dict) -> dict[str, str]:
    conversation = sample["conversation"]
    texts: dict[str, str] = {}
    number = 1
    while f"session_{number}" in conversation:
        for turn in conversation[f"session_{number}"]:
            texts[turn["dia_id"]] = turn_text(turn)
        number += 1
    return texts


# --- what the model sees ------------------------------------------------------------------
def prompt_text(prompt: Sequence[ChatMessage]) -> str:
    return "\n".join(message.content for message in prompt)


def visible(text: str, seen: str) -> bool:
    """Is this turn in front of the model? Events carry text JSON-escaped, sections plainly."""
    return text in seen or json.dumps(text, ensure_ascii=False)[1:-1] in seen


#: A line of an evidence turn shorter than this says too little to count as part of it in the prompt.
PART_MIN_CHARS = 40


def shown_in_part(text: str, seen: str) -> bool:
    """Is at least part of this turn in front of the model: the whole, or one of its lines of
    PART_MIN_CHARS or more (automatic recall may show only the part of a long message that answers)?"""
    if visible(text, seen):
        return True
    return any(visible(line.strip(), seen) for line in text.splitlines() if len(line.strip()) >= PART_MIN_CHARS)


@dataclass
class Replay:
    store: EvalStore
    runtime: ReplayRuntime
    clock: ManualClock
    question_time: datetime
    messages: int  # stored after the replay
    evicted: int  # of which out of the context window


def replay(sample: dict, folder: Path, counter: Runtime, factory: StoreFactory, *, automatic_recall: bool) -> Replay:
    exchanges = plan_exchanges(sample)
    clock = ManualClock(exchanges[0].at if exchanges else None)
    runtime = ReplayRuntime(counter)
    speakers = (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"])
    store = factory(folder, runtime, clock, automatic_recall, speakers)
    agent = store.open_agent()
    for exchange in exchanges:
        clock.set(exchange.at)
        runtime.expect_reply(exchange.reply)
        if exchange.opener is None:
            agent.login()
        else:
            agent.send_user_message(exchange.opener)
        runtime.expect_reply(None)
    runtime.forget_prompts()
    messages = int(store.db.scalar("SELECT COUNT(*) FROM messages"))
    question_time = (exchanges[-1].at if exchanges else clock.now()) + QUESTION_DELAY
    return Replay(store, runtime, clock, question_time, messages, agent.record.evicted_count)


@dataclass(frozen=True)
class Asked:
    prompt: list[ChatMessage]  # the first prompt the model received for the question
    reply: str
    error: str = ""


def ask(session: Replay, question: str, *, live: bool) -> Asked:
    """Ask ``question`` as the user's next message; the store is left as it was."""
    runtime = session.runtime
    runtime.forget_prompts()
    runtime.live = live
    runtime.expect_reply(None if live else UNMEASURED_REPLY)
    session.clock.set(session.question_time)
    reply, error = "", ""
    try:
        with session.store.db.dry_run():  # the next question starts from the same state
            result = session.store.open_agent().send_user_message(question)
            reply = " ".join(result.replies)
    except MemDeskError as failure:  # the model failed on this question: it scores 0, the run goes on
        error = failure.user_message
        log.warning("question %r failed: %s", question, error)
    finally:
        runtime.live = False
        runtime.expect_reply(None)
    prompt = runtime.prompts[0] if runtime.prompts else []
    return Asked(prompt, reply, error)


# --- the evaluations ------------------------------------------------------------------------
def _questions(sample: dict, texts: dict[str, str]) -> tuple[list[tuple[dict, list[str]]], int]:
    kept, skipped = [], 0
    for qa in sample["qa"]:
        evidence = [texts[e] for e in qa.get("evidence", []) if e in texts]
        if evidence:
            kept.append((qa, evidence))
        else:
            skipped += 1
    return kept, skipped


def spread(items: list, count: int) -> list:
    """``count`` items evenly spaced over ``items`` (all of them when there are fewer)."""
    if count >= len(items):
        return list(items)
    if count <= 0:
        return []
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _buckets(sample_id: str, category, tuned_on: Sequence[str] = TUNING_CONVERSATIONS) -> tuple[str, ...]:
    """Rows of the table a question counts in: all, its category, tuned or held out (automatic
    recall was tuned on ``tuned_on`` only), its conversation, and its category within the tuned
    or held-out group."""
    name = category_name(category)
    group = "tuned" if sample_id in tuned_on else "held_out"
    return ("all", name, group, f"{group}/{name}", sample_id)


def _table(values: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for bucket, metrics in values.items():
        row: dict[str, float] = {}
        for metric, numbers in metrics.items():
            row[metric] = round(sum(numbers) / len(numbers), 4) if numbers else 0.0
            row["n"] = len(numbers)
        table[bucket] = row
    return table


def evaluate(
    path: Path,
    counter: Runtime,
    factory: StoreFactory,
    *,
    mode: str = "context",
    variants: Sequence[str] = (FIFO,),
    limit: int | None = None,
    samples: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Replay every conversation in ``path`` and report what the agent saw (and, in answer mode,
    how it answered). ``limit``: answer mode asks at most this many questions in all, spread over
    the conversations and over each one's questions. ``samples``: only these conversation ids."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if samples:
        data = [s for s in data if s["sample_id"] in set(samples)]
    return evaluate_samples(data, counter, factory, mode=mode, variants=variants, limit=limit, progress=progress)


def evaluate_samples(
    data: list[dict],
    counter: Runtime,
    factory: StoreFactory,
    *,
    mode: str = "context",
    variants: Sequence[str] = (FIFO,),
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    tuned_on: Sequence[str] = TUNING_CONVERSATIONS,
    partly: bool = False,
) -> dict:
    """``evaluate`` on conversations in LoCoMo's shape (another data set converted to it, such as
    BEAM); ``tuned_on`` names those automatic recall was tuned on. ``partly`` also reports
    ``evidence_partly``: the share of evidence turns at least part of which (one of its lines) is
    in the prompt, for long messages that recall shows in part."""
    if mode not in ("context", "answer"):
        raise ValueError(f"unknown mode {mode!r}")
    live = mode == "answer"
    per_sample = None
    if live and limit is not None:
        per_sample = (
            [limit // len(data) + (1 if i < limit % len(data) else 0) for i in range(len(data))] if data else []
        )
    started = time.monotonic()
    results: dict[str, dict[str, dict[str, list[float]]]] = {
        v: defaultdict(lambda: defaultdict(list)) for v in variants
    }
    stats = {v: {"messages": 0, "evicted": 0, "summaries": 0, "filler_calls": 0, "errors": 0} for v in variants}
    asked_total, skipped_total = 0, 0
    examples: list[dict[str, Any]] = []
    for index, sample in enumerate(data):
        texts = turn_texts(sample)
        questions, skipped = _questions(sample, texts)
        skipped_total += skipped
        if per_sample is not None:
            questions = spread(questions, per_sample[index])
        asked_total += len(questions)
        for variant in variants:
            with tempfile.TemporaryDirectory(prefix="memdesk-locomo-replay-") as folder:
                session = replay(sample, Path(folder), counter, factory, automatic_recall=variant == FIFO_RECALL)
                try:
                    stats[variant]["messages"] += session.messages
                    stats[variant]["evicted"] += session.evicted
                    stats[variant]["summaries"] += session.runtime.summaries
                    stats[variant]["filler_calls"] += session.runtime.fillers
                    for number, (qa, evidence) in enumerate(questions, start=1):
                        asked = ask(session, qa["question"], live=live)
                        if live and progress:
                            progress(f"{sample['sample_id']} ({variant}): question {number}/{len(questions)} answered")
                        seen = prompt_text(asked.prompt)
                        shown = [visible(text, seen) for text in evidence]
                        row = {"evidence_in_context": float(all(shown)), "evidence_recall": sum(shown) / len(shown)}
                        if partly:
                            row["evidence_partly"] = sum(shown_in_part(text, seen) for text in evidence) / len(evidence)
                        if live:
                            gold = qa.get("answer", qa.get("adversarial_answer"))
                            category = qa["category"]  # LoCoMo's numbers have scoring rules; other kinds score plain F1
                            row["f1"] = scoring.score(
                                int(category) if str(category).isdigit() else 0, asked.reply, gold
                            )
                            stats[variant]["errors"] += bool(asked.error)
                            if len(examples) < 20 and variant == variants[-1]:
                                examples.append(
                                    {
                                        "question": qa["question"],
                                        "gold": gold,
                                        "reply": asked.reply,
                                        "f1": round(row["f1"], 3),
                                    }
                                )
                        for bucket in _buckets(sample["sample_id"], qa["category"], tuned_on):
                            for metric, value in row.items():
                                results[variant][bucket][metric].append(value)
                finally:
                    session.store.close()
            if progress:
                progress(f"{sample['sample_id']} ({variant}): {len(questions)} questions")
    info = counter.info
    report = {
        "mode": mode,
        "window": info.context_window,
        "model": info.model_id,
        "exact_tokens": info.exact_tokens,
        "conversations": [s["sample_id"] for s in data],
        "tuned_on": [s["sample_id"] for s in data if s["sample_id"] in tuned_on],
        "questions": asked_total,
        "skipped": skipped_total,
        "variants": {variant: _table(results[variant]) for variant in variants},
        "replay": {**stats, "summary_text": PLACEHOLDER_SUMMARY},
        "seconds": round(time.monotonic() - started, 1),
    }
    if live:
        report["limit"] = limit
        report["examples"] = examples
    return report
