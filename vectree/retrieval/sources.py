"""The corpus a store is built from: ``<store>/sources.json``.

It remembers the folders (or single files) given to ``vectree ingest`` / ``vectree sources add``
and the papers the user removed with ``vectree papers remove`` while their PDFs stay in a source
folder.  The scan that starts every refresh reads it, so removing a folder or a paper here and
refreshing drops the papers from every artefact through the normal path (the catalog prunes what
left the corpus, the index rebuild drops its entries).

Format (version 2)::

    {"folders": ["/abs/path", ...], "excluded": {"<doc_id>": "<title or note>", ...}}

Version 1 was a bare list of folders; it is still read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .store import Store, atomic_write_bytes



class SourcesError(ValueError):
    """A source folder or paper that cannot be added or removed (the message says why)."""


@dataclass
class Sources:
    folders: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # doc_id -> title at removal time

    def as_json(self) -> dict:
        return {"folders": sorted(set(self.folders)), "excluded": dict(sorted(self.excluded.items()))}


def sources_path(store_root: str | Path) -> Path:
    return Store(store_root, check_layout=False).sources_path  # the store owns its layout


def read_sources(store_root: str | Path) -> Sources:
    path = sources_path(store_root)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return Sources()
    except json.JSONDecodeError as exc:
        raise SourcesError(f"{path} is not valid JSON ({exc}); fix or delete it") from None
    if isinstance(data, list):  # version 1
        return Sources(folders=[str(p) for p in data])
    if not isinstance(data, dict):
        raise SourcesError(f"{path}: expected an object with 'folders' and 'excluded'")
    return Sources(folders=[str(p) for p in data.get("folders", [])],
                   excluded={str(k): str(v) for k, v in (data.get("excluded") or {}).items()})


def write_sources(store_root: str | Path, sources: Sources) -> Sources:
    path = sources_path(store_root)  # (the local copy's, for a store on object storage)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(sources.as_json(), indent=1).encode())
    return sources


def _for_update(store_root: str | Path) -> Sources:
    """The sources, read to be changed: a store on object storage first brings its working copy
    in line with the published store, so the change applies to the live sources."""
    Store(store_root, check_layout=False).sync_working_copy()
    return read_sources(store_root)


def add_sources(store_root: str | Path, paths: list[str | Path]) -> Sources:
    """Remember ``paths`` (resolved to absolute paths); they must exist."""
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise SourcesError(f"no such file or folder: {', '.join(missing)}")
    s = _for_update(store_root)
    s.folders = sorted(set(s.folders) | {str(Path(p).resolve()) for p in paths})
    return write_sources(store_root, s)


def remove_source(store_root: str | Path, path: str | Path) -> tuple[Sources, str]:
    """Forget the source ``path`` (as given, or resolved); returns the sources and the removed entry."""
    s = _for_update(store_root)
    wanted = {str(path), str(Path(path).expanduser().resolve())}
    hit = [f for f in s.folders if f in wanted]
    if not hit:
        known = ", ".join(s.folders) or "none"
        raise SourcesError(f"{path} is not a source of this store (sources: {known})")
    s.folders = [f for f in s.folders if f not in hit]
    return write_sources(store_root, s), hit[0]


def exclude_paper(store_root: str | Path, doc_id: str, note: str = "") -> Sources:
    s = _for_update(store_root)
    s.excluded[doc_id] = note
    return write_sources(store_root, s)


def include_paper(store_root: str | Path, doc_id: str) -> bool:
    """Undo :func:`exclude_paper`; returns whether ``doc_id`` was excluded."""
    s = _for_update(store_root)
    if doc_id not in s.excluded:
        return False
    del s.excluded[doc_id]
    write_sources(store_root, s)
    return True
