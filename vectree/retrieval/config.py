"""Runtime configuration, read from the environment.

Every setting has an offline default, so a fresh machine with nothing configured
works.  Environment variables (all optional):

``VECTREE_STORE``          artefact store root (default ``./.vectree``)
``VECTREE_CORPUS``         corpus folder(s) the sensor and schedule watch, ``os.pathsep``-separated
``VECTREE_MAX_PAGES``      papers with more pages are skipped with a reason (default 1500)
``VECTREE_EMBED_MODEL``    sentence-transformers model name or path (default: offline MiniLM)
``OPENAI_BASE_URL``        OpenAI-compatible endpoint; unset means the offline paths are used
``OPENAI_API_KEY``         key for that endpoint
``VECTREE_LLM_MODEL``      model name for that endpoint (default ``gpt-4o-mini``)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_STORE = ".vectree"
DEFAULT_MAX_PAGES = 1500


def set_offline_model_env() -> None:
    """Make Hugging Face libraries fail fast instead of waiting on a network that is not there."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@dataclass(frozen=True)
class Settings:
    """A snapshot of the configuration; build it with :func:`load_settings`."""

    store_root: Path
    corpus_dirs: tuple[Path, ...] = ()
    max_pages: int = DEFAULT_MAX_PAGES
    embed_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "gpt-4o-mini"
    extra: dict = field(default_factory=dict)

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url)


def load_settings(store_root: str | os.PathLike | None = None) -> Settings:
    """Read settings from the environment; an explicit ``store_root`` wins over ``VECTREE_STORE``."""
    root = Path(store_root or os.environ.get("VECTREE_STORE") or DEFAULT_STORE)
    corpus = tuple(Path(p) for p in os.environ.get("VECTREE_CORPUS", "").split(os.pathsep) if p)
    try:
        max_pages = int(os.environ.get("VECTREE_MAX_PAGES", DEFAULT_MAX_PAGES))
    except ValueError as exc:
        raise ValueError(f"VECTREE_MAX_PAGES must be an integer, got {os.environ['VECTREE_MAX_PAGES']!r}") from exc
    return Settings(
        store_root=root,
        corpus_dirs=corpus,
        max_pages=max_pages,
        embed_model=os.environ.get("VECTREE_EMBED_MODEL") or None,
        llm_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        llm_api_key=os.environ.get("OPENAI_API_KEY") or None,
        llm_model=os.environ.get("VECTREE_LLM_MODEL") or "gpt-4o-mini",
    )
