"""A new agent's first message does not wait for the embedding model (issue 22): automatic recall
has nothing out of view to find, so it does not embed the message to search for it. At a fresh
start the embedding model is still loading then, and the reply would wait for it."""

from __future__ import annotations

from memdesk.core.runtime.scripted import say


def test_recall_on_a_new_agent_embeds_nothing(services, runtime, make_agent, monkeypatch):
    agent = make_agent()
    embedded: list[list[str]] = []
    embed = services.embedder.embed
    monkeypatch.setattr(services.embedder, "embed", lambda texts: (embedded.append(list(texts)), embed(texts))[1])
    runtime.enqueue(say("Hello Ada"))
    assert agent.send_user_message("Hi, I am Ada").replies == ["Hello Ada"]
    assert agent.last_recall is not None and agent.last_recall.status == "nothing"
    assert embedded == []


def test_recall_searches_once_something_is_out_of_view(services, runtime, make_agent, monkeypatch):
    agent = make_agent()
    services.memory.archival.insert(agent.id, "Ada's garden in Lisbon has lemon trees")
    embedded: list[list[str]] = []
    embed = services.embedder.embed
    monkeypatch.setattr(services.embedder, "embed", lambda texts: (embedded.append(list(texts)), embed(texts))[1])
    runtime.enqueue(say("Lemons!"))
    agent.send_user_message("What grows in my garden?")
    # the message's words, as both memories' dense searches embed it (query.meaning_text)
    assert any("What grows in my garden" in " ".join(texts) for texts in embedded)
