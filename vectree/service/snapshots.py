"""One store snapshot per HTTP request.

:class:`PinSnapshot` is a plain ASGI middleware: it pins the live snapshot (or the one the
client names in ``X-Vectree-Snapshot``) for the whole request, so every store read the request
makes (search, catalog, tree, pages, passages) comes from that one snapshot, and it names the
snapshot in the response's ``X-Vectree-Snapshot`` header.  On a store on object storage the
snapshot is resolved (and pulled, the first time) in a worker thread, so a download never stalls
the other requests.  A client that sends the id it got
from ``/search`` along with its next call (``/papers/{id}/tree``) reads the same snapshot even
when a refresh published another one in between.  A snapshot that is no longer kept gets 410.
"""

from __future__ import annotations

import json

import anyio

from vectree.retrieval.store import SnapshotNotFoundError, Store

HEADER = "x-vectree-snapshot"


class PinSnapshot:
    def __init__(self, app, store: Store):
        self.app = app
        self.store = store

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        requested = None
        for key, value in scope.get("headers") or []:
            if key == HEADER.encode():
                requested = value.decode("latin-1").strip()[:64] or None
        try:
            if self.store.remote_snapshots:
                # a store on object storage may have to pull the snapshot first (a download): do
                # it off the event loop, then pin the id it resolved (local from then on)
                view = await anyio.to_thread.run_sync(self.store.view, requested)
                requested = view.snapshot_id or requested
            pin = self.store.pinned(requested)
            view = pin.__enter__()
        except SnapshotNotFoundError as exc:
            body = json.dumps({"detail": str(exc)}).encode()
            await send({"type": "http.response.start", "status": 410,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        snap = (view.snapshot_id or "").encode()

        async def named(message):
            if message["type"] == "http.response.start" and snap:
                message = {**message, "headers": [*message.get("headers", []), (HEADER.encode(), snap)]}
            await send(message)

        try:
            await self.app(scope, receive, named)
        finally:
            pin.__exit__(None, None, None)
