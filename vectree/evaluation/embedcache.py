"""The evaluation's embedding cache: the library's :class:`~vectree.retrieval.embedcache.CachedEmbedder`
under the ``eval_cache`` setting (``$VECTREE_EVAL_CACHE``, default ``~/.cache/vectree-eval``),
one shared instance per model and directory, so benchmark runs embed each text once."""

from __future__ import annotations

from pathlib import Path

from vectree.retrieval.embedcache import CachedEmbedder

__all__ = ["CachedEmbedder", "cache_dir", "cached_embedder"]

from vectree.retrieval.embed import get_embedder


def cache_dir() -> Path:
    from vectree.retrieval.config import load_settings

    return load_settings().eval_cache


_SHARED: dict[tuple[str, str], CachedEmbedder] = {}


def cached_embedder(model: str | None = None, directory: str | Path | None = None) -> CachedEmbedder:
    """The process-wide cached version of :func:`vectree.retrieval.embed.get_embedder` (one per model
    and cache directory; ``directory`` defaults to :func:`cache_dir`)."""
    from vectree.retrieval.embed import get_embedder

    inner = get_embedder(model)
    directory = Path(directory) if directory else cache_dir()
    key = (inner.info.name, str(directory))
    if key not in _SHARED:
        _SHARED[key] = CachedEmbedder(inner, directory)
    return _SHARED[key]
