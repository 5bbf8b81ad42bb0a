"""Facts from the local chat model, under a grammar that only admits entities just found.

The model is asked for one (subject, relation, object) triple about a message; the call's JSON
schema makes ``subject`` and ``object`` enums of the entities the NLP pass found in it (plus the
speaker), so even a small model cannot invent a node. The relation is free text, cleaned after.

The prompt is the agent's own prompt with one more message when one is given and fits: the
runtime's KV cache then already holds everything but that message, and the agent's next turn
finds its prefix still cached, so extracting costs the reply nothing but this short tail.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from memdesk.core.graph.relations import MAX_RELATION_CHARS, clean_relation
from memdesk.core.runtime.base import CallRequest, CancelToken, ChatMessage, Runtime, SamplingParams, ToolSpec
from memdesk.core.runtime.grammar import PHRASE

log = logging.getLogger("memdesk.graph.model")

FUNCTION = "record_fact"
MAX_CHOICES = 12
MAX_TEXT_CHARS = 1500
#: Bounds that keep the whole call within ``max_tokens`` even at one character a token: a small
#: model that rambles in its thoughts or its relation would otherwise be cut off mid-JSON and the
#: fact lost (on some CPUs the 135M model did exactly that).
THOUGHTS_CHARS = 60
PARAMS = SamplingParams(temperature=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=0, max_tokens=224)
#: Tokens kept free beyond the instruction for the answer when reusing the agent's prompt.
ANSWER_ROOM = PARAMS.max_tokens + 16

SYSTEM = (
    "You maintain a knowledge graph of what a person told you. You record facts as "
    "(subject, relation, object) triples between known entities."
)


@dataclass(frozen=True)
class Triple:
    subject: str
    relation: str
    object: str


def fact_spec(choices: Sequence[str], objects: Sequence[str] | None = None) -> ToolSpec:
    """``objects`` narrows the object's enum (the retry after a fact about a thing and itself)."""
    return ToolSpec(
        FUNCTION,
        "Record the most important fact the message states, as subject, relation, object.",
        {
            "type": "object",
            "properties": {
                "subject": {"type": "string", "enum": list(choices), "description": "Who or what the fact is about."},
                "relation": {
                    "type": "string",
                    "format": PHRASE,
                    "minLength": 2,
                    "maxLength": MAX_RELATION_CHARS,
                    "description": "A short verb phrase, for example: lives in, works at, likes, sister of.",
                },
                "object": {
                    "type": "string",
                    "enum": list(choices if objects is None else objects),
                    "description": "The other entity.",
                },
            },
            "required": ["subject", "relation", "object"],
        },
    )


def instruction(text: str, speaker: str, choices: Sequence[str]) -> str:
    listed = ", ".join(json.dumps(c, ensure_ascii=False) for c in choices)
    return (
        "[Knowledge graph update: this is not a message from the user, and nobody will read your answer.]\n"
        f"Message from {speaker}: {json.dumps(text[:MAX_TEXT_CHARS], ensure_ascii=False)}\n"
        f"Call {FUNCTION} with the most important fact this message states. Subject and object must be two different "
        f'entities from: {listed}. The relation is a short verb phrase such as "lives in", "works at",'
        ' "likes" or "sister of".'
    )


class ModelFactExtractor:
    def __init__(self, runtime: Runtime, params: SamplingParams = PARAMS) -> None:
        self._runtime = runtime
        self._params = params

    def extract(
        self,
        text: str,
        speaker: str,
        entities: Sequence[str],
        *,
        prefix: Sequence[ChatMessage] = (),
        cancel: CancelToken | None = None,
    ) -> list[Triple]:
        """At most one triple, between two of ``entities`` (``speaker`` is offered as well).
        Raises GenerationCancelled when ``cancel`` fires (the caller tries again later)."""
        choices = list(dict.fromkeys([speaker, *entities]))[:MAX_CHOICES]
        if len(choices) < 2 or not text.strip():
            return []
        ask = ChatMessage("user", instruction(text, speaker, choices))
        messages = self._messages(prefix, ask)
        turn = self._runtime.generate_call(
            CallRequest(messages, [fact_spec(choices)], self._params, thoughts_chars=THOUGHTS_CHARS), cancel=cancel
        )
        same = _self_fact(turn.text, choices)
        if same is not None:
            # A small model often names one entity twice; JSON schema cannot say "another one", so the
            # second try fixes the subject and leaves only the others as objects (the prompt is cached).
            others = [c for c in choices if c != same]
            turn = self._runtime.generate_call(
                CallRequest(messages, [fact_spec([same], others)], self._params, thoughts_chars=THOUGHTS_CHARS),
                cancel=cancel,
            )
        return _parse(turn.text, choices)

    def _messages(self, prefix: Sequence[ChatMessage], ask: ChatMessage) -> list[ChatMessage]:
        if prefix:
            candidate = [*prefix, ask]
            window = self._runtime.info.context_window
            if self._runtime.count_prompt(candidate) + ANSWER_ROOM <= window:
                return candidate
        return [ChatMessage("system", SYSTEM), ask]


def _self_fact(text: str, choices: Sequence[str]) -> str | None:
    """The entity a call related to itself, if it did."""
    try:
        params = json.loads(text)["params"]
        subject, obj = params["subject"], params["object"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    return subject if subject == obj and subject in choices else None


def _parse(text: str, choices: Sequence[str]) -> list[Triple]:
    try:
        data = json.loads(text)
        params = data["params"]
        subject, relation, obj = params["subject"], params["relation"], params["object"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        # The text names people from the conversation: the log (kept in plain files) gets its length.
        log.info("the model's fact was not usable (%s; %d characters)", error, len(text))
        return []
    relation = clean_relation(str(relation))
    if subject not in choices or obj not in choices or subject == obj or not relation:
        return []
    return [Triple(subject, relation, obj)]
