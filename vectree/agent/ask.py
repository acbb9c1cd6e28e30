"""One entry point for answering a question: the LLM agent when an endpoint is configured,
the offline navigator otherwise (or when asked for)."""

from __future__ import annotations

from vectree.retrieval.config import Settings, load_settings

from .navigator import Answer, OfflineNavigator
from .tools import Toolbox

AGENTS = ("auto", "offline", "llm")


def ask(toolbox: Toolbox, question: str, *, paper: str | None = None, agent: str = "auto",
        max_iterations: int | None = None, settings: Settings | None = None) -> Answer:
    """Answer ``question`` over the toolbox's store, optionally within one ``paper``.

    ``agent``: ``auto`` (LLM when ``OPENAI_BASE_URL`` is set, else offline), ``offline`` or ``llm``.
    ``settings``: the caller's settings object (the edge builds it once); default: the environment's.
    """
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}: expected one of {', '.join(AGENTS)}")
    settings = settings or load_settings()
    if agent == "llm" or (agent == "auto" and settings.llm_configured):
        from .react import ReactAgent

        return ReactAgent.from_settings(toolbox, settings, max_iterations=max_iterations).answer(question, paper=paper)
    return OfflineNavigator(toolbox).answer(question, paper=paper)
