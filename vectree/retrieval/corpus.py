"""Corpus scanning: which PDF files exist, what their stable paper ids are, which are duplicates.

A paper id is ``<slug>-<sha256[:10]>``: the content hash makes it unique, the slug from a file
name makes it readable.  Files with identical bytes are one paper (the other names are its
aliases, ``source_paths``).  Once content has an id in a store it keeps it for as long as those
bytes are in the corpus (:func:`scan` with ``known``): copies added or removed later, whatever
their names, never rename it.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

HASH_CHARS = 10
SLUG_MAX = 48


@dataclass(frozen=True)
class SourceFile:
    path: str
    size: int
    mtime: float
    sha256: str
    doc_id: str
    duplicate_of: str | None = None

    def as_row(self) -> dict:
        return {
            "path": self.path,
            "size": self.size,
            "mtime": self.mtime,
            "sha256": self.sha256,
            "doc_id": self.doc_id,
            "duplicate_of": self.duplicate_of,
        }


def slugify(name: str) -> str:
    """A lowercase ``[a-z0-9-]`` slug of a file stem (``"2020.ACL Main_447"`` -> ``"2020-acl-main-447"``)."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    slug = slug[:SLUG_MAX].rstrip("-")
    return slug or "paper"


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def make_doc_id(path: str | os.PathLike, sha256: str) -> str:
    return f"{slugify(Path(path).stem)}-{sha256[:HASH_CHARS]}"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def find_pdfs(paths: Iterable[str | os.PathLike], *, skipped: list[str] | None = None) -> list[Path]:
    """Every ``*.pdf`` file (any case) under the given files or folders, recursively, sorted.

    A symbolic link inside a folder is followed only when its target lies inside that folder:
    a link out of the corpus (to a secrets file, to ``/``) is skipped and named in ``skipped``,
    and its bytes are never read.  Raises ``FileNotFoundError`` for a path that does not exist,
    so a typo is not an empty corpus.
    """
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"corpus path does not exist: {p}")
        if p.is_file():
            found.add(p.resolve())
            continue
        root = p.resolve()
        # os.walk does not descend into linked folders (followlinks=False); linked files are checked
        for folder, _dirs, names in os.walk(root, followlinks=False):
            for name in names:
                if not name.lower().endswith(".pdf"):
                    continue
                q = Path(folder) / name
                target = q.resolve()
                if q.is_symlink() and not _inside(target, root):
                    if skipped is not None:
                        skipped.append(str(q))
                    continue
                if target.is_file():
                    found.add(target)
    return sorted(found)


def _primary(files: list[Path], known_id: str | None) -> Path:
    """The copy whose name gives the paper its slug: the one that named it before (its id is
    kept while those bytes stay in the corpus), else the first in sorted order."""
    if known_id:
        for f in files:
            if make_doc_id(f, known_id.rsplit("-", 1)[-1]) == known_id or slugify(f.stem) == known_id.rsplit("-", 1)[0]:
                return f
    return files[0]


def scan(paths: Iterable[str | os.PathLike], *, known: dict[str, str] | None = None,
         skipped: list[str] | None = None) -> list[SourceFile]:
    """Hash every PDF under ``paths`` and assign paper ids; copies point at the primary copy.

    ``known`` maps sha256 to the id that content already has in the store: it keeps that id
    whatever names come and go (a copy whose name sorts first never renames a paper).  New
    content is named after its first copy in sorted order.
    """
    known = known or {}
    groups: dict[str, list[Path]] = {}
    stats: dict[Path, os.stat_result | None] = {}
    for path in find_pdfs(paths, skipped=skipped):
        try:
            stats[path] = path.stat()
            digest = file_sha256(path)
        except OSError:
            # unreadable files still get a row so that their status can be reported
            stats[path], digest = None, hashlib.sha256(str(path).encode()).hexdigest()
        groups.setdefault(digest, []).append(path)
    out: list[SourceFile] = []
    for digest, files in groups.items():
        prior = known.get(digest)
        primary = _primary(files, prior)
        doc_id = prior or make_doc_id(primary, digest)
        for path in [primary] + [f for f in files if f != primary]:
            stat = stats[path]
            out.append(SourceFile(
                path=str(path), size=stat.st_size if stat else -1, mtime=stat.st_mtime if stat else 0.0,
                sha256=digest, doc_id=doc_id, duplicate_of=None if path == primary else str(primary),
            ))
    out.sort(key=lambda f: (f.duplicate_of is not None, f.path))
    return out


def papers_in(files: list[SourceFile]) -> dict[str, list[SourceFile]]:
    """Group scanned files by paper id; the first file of each group is the primary copy."""
    groups: dict[str, list[SourceFile]] = {}
    for f in files:
        groups.setdefault(f.doc_id, []).append(f)
    return groups
