"""Paper-id prefixes on every HTTP route: ``/papers/<prefix>/...`` and ``POST /ask``'s ``paper``.

:class:`ResolveDocIds` is a plain ASGI middleware that runs inside the request's pinned snapshot
(see :mod:`vectree.service.snapshots`): a ``/papers/{doc_id}/...`` path whose id is not a full id of
that snapshot's catalog is resolved with the library's rule
(:func:`vectree.retrieval.ids.resolve_doc_id`, the same one the CLI uses) and the request goes on
with the full id.  An ambiguous prefix gets 409 with the candidate ids and titles; an unknown id
gets 404 with the closest ids or titles.  Malformed ids pass through untouched, so the route's own
validation answers them (422).
"""

from __future__ import annotations

import json
import re
from typing import Any

from vectree.retrieval.ids import AmbiguousDocId, DocIdError, resolve_doc_id
from vectree.retrieval.store import DOC_ID_RE

_PAPER_PATH = re.compile(r"^/papers/([^/]+)(/.*)?$")


def doc_id_error_body(exc: DocIdError) -> tuple[int, dict[str, Any]]:
    """The status and JSON body for an id that names no single paper."""
    listed = [{"doc_id": d, "title": t} for d, t in exc.candidates]
    if isinstance(exc, AmbiguousDocId):
        return 409, {"detail": str(exc), "error": "ambiguous_doc_id", "candidates": listed}
    return 404, {"detail": str(exc), "error": "not_found", "suggestions": listed}


def resolve(toolbox, query: str) -> str:
    """The full id ``query`` names in the catalog of the request's snapshot (raises DocIdError)."""
    catalog = toolbox.catalog()
    if query in catalog:
        return query
    return resolve_doc_id(query, catalog.values())


class ResolveDocIds:
    def __init__(self, app, toolbox):
        self.app = app
        self.toolbox = toolbox

    async def __call__(self, scope, receive, send):
        match = _PAPER_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match and DOC_ID_RE.match(match.group(1)):
            try:
                doc_id = resolve(self.toolbox, match.group(1))
            except DocIdError as exc:
                status, body = doc_id_error_body(exc)
                data = json.dumps(body).encode()
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(data)).encode())]})
                await send({"type": "http.response.body", "body": data})
                return
            if doc_id != match.group(1):
                path = f"/papers/{doc_id}{match.group(2) or ''}"
                scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)
