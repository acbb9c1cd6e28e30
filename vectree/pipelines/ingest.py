"""``vectree ingest`` as a library call: register paths as corpus sources of a store, then run the
pipeline in-process (:func:`vectree.pipelines.refresh.refresh`).  The CLI and the evaluation harness
both ingest through here, so evaluation never goes through the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from vectree.assets.llm_resource import LLMResource
from vectree.assets.resources import VectreeStore
from vectree.retrieval.config import Settings, load_settings
from vectree.retrieval.store import Store

from .definitions import defs
from .refresh import RefreshReport, refresh


def store_resource(store_root: str | Path | None = None, settings: Settings | None = None) -> VectreeStore:
    """The store resource for ``settings`` (default: built from the environment, with
    ``store_root`` applied)."""
    return VectreeStore.from_settings(settings or load_settings(store_root))


def ingest_paths(
    paths: Sequence[str | Path],
    store_root: str | Path | None = None,
    *,
    settings: Settings | None = None,
    force: bool = False,
    on_paper: Callable[[str, int, int], None] | None = None,
) -> tuple[Store, RefreshReport]:
    """Add ``paths`` (PDF files or folders) to the store's corpus sources and build every artefact.

    Raises :class:`FileNotFoundError` naming the first path that does not exist (before anything
    is registered).  ``on_paper(doc_id, i, n)`` is called before each paper's run.
    """
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise FileNotFoundError(f"no such file or folder: {missing[0]}")
    settings = settings or load_settings(store_root)
    resource = store_resource(settings=settings)
    resource.register_sources([str(p) for p in paths])
    report = refresh(defs, resource, llm=LLMResource.from_settings(settings), force=force, on_paper=on_paper,
                     settings=settings)
    return resource.store, report
