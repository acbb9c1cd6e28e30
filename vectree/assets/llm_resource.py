"""The LLM endpoint as a Dagster resource, so a run's LLM configuration is visible (and
overridable) in the launchpad like the store's.

Not an asset module: it defines no assets, and ``load_assets_from_package_module`` ignores it.
"""

from __future__ import annotations

import dagster as dg

from vectree.retrieval.config import Settings, load_settings
from vectree.retrieval.llm import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, LLMClient


class LLMResource(dg.ConfigurableResource):
    """An OpenAI-compatible chat endpoint; ``base_url`` empty means no LLM (offline extractors)."""

    base_url: str = ""
    api_key: str = ""
    model: str = "gpt-4o-mini"
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    context_tokens: int = 16000

    @classmethod
    def from_settings(cls, s: Settings | None = None) -> "LLMResource":
        """Built from the settings object (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``VECTREE_LLM_*``)."""
        s = s or load_settings()
        return cls(base_url=s.llm_base_url or "", api_key=s.llm_key or "", model=s.llm_model,
                   timeout=s.llm_timeout, max_retries=s.llm_max_retries, context_tokens=s.llm_context_tokens)

    @property
    def configured(self) -> bool:
        return bool(self.base_url)

    def client(self) -> LLMClient | None:
        """The client, or ``None`` when no endpoint is configured."""
        if not self.configured:
            return None
        return LLMClient(base_url=self.base_url, api_key=self.api_key or None, model=self.model,
                         timeout=self.timeout, max_retries=self.max_retries)
