"""What automatic recall would place in an agent's prompt for a message, and its budget, for
another app (MCP's "context for this message"): the agent is opened as the window opens it, on a
runtime that only counts tokens (no model is loaded for this), and nothing is written."""

from __future__ import annotations

from typing import Any

from memdesk.app.agents import open_agent
from memdesk.app.services import Services
from memdesk.core.agent.recall.turn import preview
from memdesk.core.runtime.counting import CountingRuntime


def recall_preview(services: Services, agent_id: int, message: str) -> dict[str, Any]:
    settings = services.settings
    window = settings.context_size
    agent = open_agent(services, services.agents.get(agent_id), CountingRuntime(window), settings=settings)
    base = {"window_tokens": window, "exact_tokens": False}
    if agent.recall is None:
        return {**base, "status": "off", "budget_tokens": 0, "memories": []}
    try:
        result, budget = preview(agent.recall, message, prompt=agent.prompt, shown=agent.shown)
    finally:
        agent.recall.close()
    runtime = agent.prompt.runtime
    return {
        **base,
        "status": result.status,
        "budget_tokens": budget,
        "used_tokens": runtime.count_tokens(result.content) if result.content else 0,
        "memories": [
            {
                "source": m.source,
                "ref": m.ref,
                "date": m.at.isoformat() if m.at else None,
                "where": m.where,
                "text": m.text,
            }
            for m in result.memories
        ],
        "support": None if result.support is None else round(float(result.support), 4),
    }
