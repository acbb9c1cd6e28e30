"""Corpus scanning: which PDF files exist, what their stable paper ids are, which are duplicates.

A paper id is ``<slug>-<sha256[:10]>``: the content hash makes it stable (same bytes, same id,
wherever the file lives), the slug from the file name makes it readable.  Files with identical
bytes are one paper; the first path in sorted order names it.
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


def find_pdfs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Every ``*.pdf`` file (any case) under the given files or folders, recursively, sorted.

    Raises ``FileNotFoundError`` for a path that does not exist, so a typo is not an empty corpus.
    """
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"corpus path does not exist: {p}")
        if p.is_file():
            found.add(p.resolve())
        else:
            found.update(q.resolve() for q in p.rglob("*") if q.is_file() and q.suffix.lower() == ".pdf")
    return sorted(found)


def scan(paths: Iterable[str | os.PathLike]) -> list[SourceFile]:
    """Hash every PDF under ``paths`` and assign paper ids; duplicates point at their first copy."""
    by_hash: dict[str, SourceFile] = {}
    out: list[SourceFile] = []
    for path in find_pdfs(paths):
        try:
            stat = path.stat()
            digest = file_sha256(path)
        except OSError:
            # unreadable files still get a row so that their status can be reported
            stat, digest = None, hashlib.sha256(str(path).encode()).hexdigest()
        first = by_hash.get(digest)
        sf = SourceFile(
            path=str(path),
            size=stat.st_size if stat else -1,
            mtime=stat.st_mtime if stat else 0.0,
            sha256=digest,
            doc_id=first.doc_id if first else make_doc_id(path, digest),
            duplicate_of=first.path if first else None,
        )
        by_hash.setdefault(digest, sf)
        out.append(sf)
    return out


def papers_in(files: list[SourceFile]) -> dict[str, list[SourceFile]]:
    """Group scanned files by paper id; the first file of each group is the primary copy."""
    groups: dict[str, list[SourceFile]] = {}
    for f in files:
        groups.setdefault(f.doc_id, []).append(f)
    return groups
