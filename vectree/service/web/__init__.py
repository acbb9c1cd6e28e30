"""The browser front end of the query service: corpus, search, paper tree, page with the cited
quote highlighted, and ask with clickable citations; plus offline ``/docs`` and ``/redoc``.

Served by the same FastAPI app (same process, store and token) through :func:`mount_web`.
Static HTML, one small vanilla-JS file and CSS in ``static/``: no build step, no CDN.
"""

from .router import build_router, mount_web

__all__ = ["build_router", "mount_web"]
