"""Dagster resources, configured from the settings object (``vectree.retrieval.config.Settings``)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from vectree.retrieval.config import Settings, load_settings
from vectree.retrieval.corpus import scan
from vectree.retrieval.sources import add_sources, read_sources, sources_path
from vectree.retrieval.store import Store


class VectreeStore(dg.ConfigurableResource):
    """The artefact store and the corpus it is built from.

    ``corpus_dirs`` are watched in addition to the sources registered in the store by
    ``vectree ingest PATH`` (``<store>/sources.json``), so the sensor, the schedule and the CLI
    all see the same corpus.
    """

    store_root: str
    corpus_dirs: list[str] = []
    max_pages: int = 1500

    @classmethod
    def from_settings(cls, s: Settings) -> "VectreeStore":
        return cls(store_root=str(s.store_root), corpus_dirs=[str(p) for p in s.corpus_dirs], max_pages=s.max_pages)

    @classmethod
    def from_env(cls) -> "VectreeStore":
        return cls.from_settings(load_settings())

    @property
    def store(self) -> Store:
        return Store(self.store_root)

    @property
    def sources_path(self) -> Path:
        return sources_path(self.store_root)

    def registered_sources(self) -> list[str]:
        return read_sources(self.store_root).folders

    def register_sources(self, paths: list[str]) -> list[str]:
        """Add folders/files to the corpus this store is built from; returns the full list."""
        return add_sources(self.store_root, paths).folders

    def sources(self) -> list[str]:
        return sorted(set(self.registered_sources()) | {str(Path(p).resolve()) for p in self.corpus_dirs})

    def scan(self):
        """Scan every existing source (a source that vanished counts as empty, not as an error);
        papers removed with ``vectree papers remove`` are left out; papers already in the store keep
        their ids."""
        existing = [p for p in self.sources() if Path(p).exists()]
        excluded = read_sources(self.store_root).excluded
        return [f for f in scan(existing, known=self.store.known_ids()) if f.doc_id not in excluded]
