"""Dagster resources, configured from the settings object (``vectree.retrieval.config.Settings``)."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from pathlib import Path

import dagster as dg

from vectree.retrieval.config import Settings, load_settings
from vectree.retrieval.corpus import scan
from vectree.retrieval.sources import add_sources, read_sources, sources_path
from vectree.retrieval.store import Store, StoreBusyError

# the run tag that one refresh's runs share (scan, paper batches, corpus); vectree.pipelines.jobs
# sets it, and the refresh takes the store's writer lock as ``refresh:<id>`` (pipelines/refresh.py)
REFRESH_TAG = "vectree/refresh"
# Dagster's tag on a re-executed run: it copies the tags of the run it repeats, refresh id included,
# but it is not part of that refresh
PARENT_RUN_TAG = "dagster/parent_run_id"


def refresh_holder(refresh_id: str) -> str:
    """The writer lock's holder name for a refresh, shared by all of that refresh's runs."""
    return f"refresh:{refresh_id}"


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

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext):
        """Every run that writes the store holds its writer lock: a run launched from the Dagster
        UI, a sensor or a schedule as much as the CLI's, so two writers never meet.

        * a run of a ``vectree ingest`` refresh (its ``vectree/refresh`` tag names the lock's live
          holder) goes on under its refresh's lock, wherever it runs: in the refresh's process,
          a batch process it spawned, a multiprocess step process or a Celery worker;
        * any other run takes the lock as ``run:<run id>`` for as long as this resource is up: the
          whole run with the in-process executor, one step with the multiprocess one (the steps
          of one run then take turns); when someone else holds it the run fails at once, before
          any asset ran, with one line: "another refresh is running, pid N".

        Outside a run (a sensor or schedule evaluation) nothing is locked here: the corpus
        sensor takes the lock itself around its scan (``vectree.pipelines.automation``)."""
        run = getattr(context, "run", None)
        if run is None:
            yield self
            return
        store = self.store
        refresh_id = run.tags.get(REFRESH_TAG)
        if refresh_id and PARENT_RUN_TAG not in run.tags and store.writer_holder() == refresh_holder(refresh_id):
            yield self
            return
        mine = f"run:{run.run_id}"
        with ExitStack() as stack:
            try:
                stack.enter_context(store.writer_lock(holder=mine, turns_with=mine))
            except StoreBusyError as exc:
                context.log.error(f"{exc}: this run wrote nothing; launch it again when that refresh has finished")
                raise
            yield self

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
