"""The file system under a store on object storage (``s3://bucket/prefix`` and friends).

A thin layer over pyarrow's file systems, which vectree already depends on: ``s3://`` (also
``gs://``, ``abfs://``, ``hdfs://``, ``file://``) resolve through :meth:`pyarrow.fs.FileSystem.from_uri`,
and any other scheme through an installed fsspec implementation wrapped in
:class:`pyarrow.fs.PyFileSystem`.  Endpoint and credentials are the AWS SDK's own business: it
reads ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION`` (and
profiles, instance roles, ...) itself, so nothing here reads the environment.  An ``http://``
endpoint is used as given (the S3 client speaks plain HTTP to it; ``AWS_ALLOW_HTTP=true`` is what
LanceDB's object-store client needs for the same server, harmless here).

Keys are relative to the URI's prefix.  Every write is one object written whole (S3 makes an
object visible only when its upload completes, so a reader sees the old object or the new one);
the store's layout on top of this (content-addressed blobs, snapshot manifests, the pointer
written last) is in :mod:`vectree.retrieval.store`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator


# blobs moved in parallel: S3 latency, not bandwidth, dominates small files
TRANSFER_THREADS = 8
_CHUNK = 1 << 20


# schemes pyarrow's own file systems handle; any other goes to fsspec
PYARROW_SCHEMES = frozenset({"s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs", "file", "mock"})


class ObjectStoreError(OSError):
    """The object store could not be reached or refused a request (the message names the URI)."""


def open_filesystem(uri: str):
    """``(file system, base path)`` for a store URI; raises :class:`ObjectStoreError` for a URI no
    installed file system understands."""
    import pyarrow.fs as pafs  # why local: ~60 ms, and only a store on object storage needs it

    try:
        fs, base = pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as first:  # pyarrow's ArrowInvalid is a ValueError
        if uri.split("://", 1)[0].lower() in PYARROW_SCHEMES:  # pyarrow's own error says what is wrong
            raise ObjectStoreError(f"{uri}: {first}") from None
        try:  # any fsspec implementation (gcsfs, adlfs, sshfs, ...), if installed
            from fsspec.core import url_to_fs
        except ImportError:
            raise ObjectStoreError(f"{uri}: {first}") from None
        try:
            ffs, base = url_to_fs(uri)
        except (ImportError, ValueError) as exc:
            raise ObjectStoreError(f"{uri}: no file system for this scheme ({exc})") from None
        fs = pafs.PyFileSystem(pafs.FSSpecHandler(ffs))
    return fs, base.rstrip("/")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


class Remote:
    """Objects under one URI prefix.  Thread-safe (pyarrow's file systems are)."""

    def __init__(self, uri: str):
        self.uri = uri.rstrip("/")
        self._opened = None
        self._open_lock = threading.Lock()

    def _open(self):
        # opened on first use: pyarrow may ask the bucket for its region, and building a Store
        # (say, to find its local copy) should cost no request
        with self._open_lock:
            if self._opened is None:
                fs, base = open_filesystem(self.uri)
                # object stores have no folders and make an object visible whole; a file system
                # (file://, or an fsspec one) needs the folder and a rename for the same guarantee
                self._opened = (fs, base, fs.type_name not in ("s3", "gcs", "abfs"))
            return self._opened

    @property
    def fs(self):
        return self._open()[0]

    @property
    def base(self) -> str:
        return self._open()[1]

    @property
    def _files(self) -> bool:
        return self._open()[2]

    def __repr__(self) -> str:
        return f"Remote({self.uri!r})"

    def _path(self, key: str) -> str:
        return f"{self.base}/{key}" if self.base else key

    def _wrap(self, what: str, key: str, exc: BaseException) -> ObjectStoreError:
        return ObjectStoreError(f"{self.uri}/{key}: {what} failed: {exc}")

    # ---- small objects ---------------------------------------------------------------------
    def get(self, key: str) -> bytes | None:
        """The object's bytes, or ``None`` when there is no such object."""
        try:
            with self.fs.open_input_stream(self._path(key)) as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if "not found" in str(exc).lower() or "nosuchkey" in str(exc).lower():
                return None
            raise self._wrap("read", key, exc) from None

    @contextmanager
    def _writing(self, key: str) -> Iterator[str]:
        """The path to write ``key`` at: itself on an object store; a temporary name beside it,
        renamed once written, on a file system."""
        final = self._path(key)
        if not self._files:
            yield final
            return
        parent = final.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/.{final.rsplit('/', 1)[-1]}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            yield tmp
            self.fs.move(tmp, final)
        except BaseException:
            try:
                self.fs.delete_file(tmp)
            except OSError:
                pass
            raise

    def put(self, key: str, data: bytes) -> None:
        """Write one object whole (visible to readers only once complete)."""
        try:
            with self._writing(key) as path, self.fs.open_output_stream(path) as fh:
                fh.write(data)
        except OSError as exc:
            raise self._wrap("write", key, exc) from None

    def check_bucket(self) -> None:
        """Raise :class:`ObjectStoreError` when the URI's bucket does not exist (an object store
        answers a missing bucket and a missing object alike: "not found")."""
        import pyarrow.fs as pafs

        if self._files:
            return
        bucket = self.base.split("/", 1)[0]
        try:
            info = self.fs.get_file_info(bucket)
        except OSError as exc:
            raise self._wrap("access", "", exc) from None
        if info.type == pafs.FileType.NotFound:
            raise ObjectStoreError(f"{self.uri}: there is no bucket {bucket!r} (or no access to it)")

    def list(self, folder: str) -> list[str]:
        """Names of the objects directly under ``folder`` (empty when there is none)."""
        import pyarrow.fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self._path(folder), allow_not_found=True))
        except OSError as exc:
            raise self._wrap("list", folder, exc) from None
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            try:
                self.fs.delete_file(self._path(key))
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise self._wrap("delete", key, exc) from None

    # ---- files -----------------------------------------------------------------------------
    def upload(self, path: Path, key: str) -> None:
        try:
            with open(path, "rb") as src, self._writing(key) as target, self.fs.open_output_stream(target) as dst:
                for chunk in iter(lambda: src.read(_CHUNK), b""):
                    dst.write(chunk)
        except OSError as exc:
            raise self._wrap("upload", key, exc) from None

    def download(self, key: str, path: Path, *, sha256: str | None = None, mode: int | None = None) -> None:
        """Copy an object to ``path`` through a temporary file and a rename (never half a file);
        with ``sha256`` the content is checked on the way (a mismatch raises, nothing is kept)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        h = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as dst, self.fs.open_input_stream(self._path(key)) as src:
                while chunk := src.read(_CHUNK):
                    dst.write(chunk)
                    h.update(chunk)
            if sha256 is not None and h.hexdigest() != sha256:
                raise ObjectStoreError(f"{self.uri}/{key}: content does not match its sha256 (a damaged object?)")
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except (FileNotFoundError, ObjectStoreError):
            Path(tmp).unlink(missing_ok=True)
            raise
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise self._wrap("download", key, exc) from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def parallel(fn: Callable[[object], None], items: list) -> None:
    """``fn`` over ``items`` on :data:`TRANSFER_THREADS` threads; the first error is raised."""
    if len(items) <= 1:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(max_workers=TRANSFER_THREADS, thread_name_prefix="vectree-objstore") as pool:
        for _ in pool.map(fn, items):
            pass
