"""What the parts of one window share about the conversation shown, as an evented model: each part
is handed this model, reads it and observes its changes (``state.events.busy.connect(...)``)
instead of reading and writing attributes of the window.

Who writes what: the agent switching writes the agent shown, the conversation writes busy,
background and the message sent last (from the session's reports), the model's status writes
model_ready, the private chat writes private_chat. Everyone else only reads and observes.
"""

from __future__ import annotations

from memdesk.ui.common.evented import EventedModel, Field


class WindowState(EventedModel):
    """Fields (each with ``events.<field>(value)``):
    agent_id: the agent shown (None before the first one opens)
    agent_name: its name (the window's title and the conversation's)
    model_ready: the model is loaded (Send answers at once; before, the message waits for it)
    busy: work the user waits for runs (a reply, a retry, the private chat's copy): no second send
    background: a turn nobody asked for runs (login, timed heartbeat); a message goes first
    last_sent_id: the user message sent last (its reply is the one waited for)
    private_chat: a private chat is on, or starting: nothing the user adds is saved
    """

    agent_id = Field[int | None](None)
    agent_name = Field("")
    model_ready = Field(False)
    busy = Field(False)
    background = Field(False)
    last_sent_id = Field[int | None](None)
    private_chat = Field(False)
