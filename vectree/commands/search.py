"""``vectree search "query"``: the ranked papers of the Layer 0 index, with matched sections."""

from __future__ import annotations

import json
import sys
import time

import click
from rich.console import Console
from rich.table import Table

from vectree.commands import cli_settings

console = Console()
err = Console(stderr=True)


def _pages(pages) -> str:
    start, end = (list(pages) + [None, None])[:2]
    if start is None:
        return ""
    return f"p. {start}" if end in (None, start) else f"pp. {start}-{end}"


def search_service(url: str, query: str, k: int, *, timeout: float = 120.0) -> tuple[list[dict], str]:
    """The ranked papers from a running ``vectree serve`` (its ``/search/entries``: the hybrid
    index ranking, as the local search gives it), in the local search's shape, and the store
    snapshot the service read.  One clear :class:`click.ClickException` when it cannot answer."""
    import httpx

    headers = {}
    token = cli_settings().token
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = httpx.get(url.rstrip("/") + "/search/entries", params={"q": query, "k": min(k, 50)},
                             headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise click.ClickException(f"no vectree service at {url} ({exc}); start one with `vectree serve`, "
                                   "or leave out --service / VECTREE_SERVICE_URL") from None
    if response.status_code != 200:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text[:200]
        raise click.ClickException(f"the service at {url} answered {response.status_code}: {detail}")
    results = [{"doc_id": r["doc_id"], "title": r["title"], "score": r["score"],
                "matched_sections": [{"node_id": s["node_id"], "title": s["title"], "pages": s["pages"]}
                                     for s in r["sections"]]}
               for r in response.json()["results"]]
    return results, response.headers.get("x-vectree-snapshot", "")


def register(group: click.Group) -> None:
    @group.command("search")
    @click.argument("query")
    @click.option("-k", "k", type=click.IntRange(1, 200), default=10, show_default=True, help="Papers to return.")
    @click.option("--mode", type=click.Choice(["hybrid", "bm25", "dense"]), default="hybrid", show_default=True)
    @click.option("--fusion", type=click.Choice(["rrf", "weighted"]), default=None,
                  help="How BM25 and dense rankings combine (default: $VECTREE_SEARCH_FUSION, else weighted).")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
    @click.option("--service", "service_url", default=None,
                  help="Search through a running `vectree serve` at this URL (default $VECTREE_SERVICE_URL), so "
                  "the model loads once for many queries; --store is then the service's.")
    def search_command(query: str, k: int, mode: str, fusion: str | None, store_root: str | None, as_json: bool,
                       service_url: str | None) -> None:
        """Rank the papers of the store for QUERY and show which of their sections matched.

        QUERY is plain text: quotes, colons, brackets or AND/OR are read as words, never as
        query syntax.
        """
        service_url = service_url or cli_settings(store_root).service_url  # VECTREE_SERVICE_URL
        if service_url:
            if mode != "hybrid" or fusion:
                raise click.UsageError("--mode and --fusion apply to a local search: the service ranks hybrid, "
                                       "with its own fusion setting (leave out --service to choose)")
            started = time.perf_counter()
            results, snapshot = search_service(service_url, query, k)
            _show(query, results, as_json=as_json, mode=mode, ms=1000 * (time.perf_counter() - started),
                  snapshot=snapshot, via=service_url)
            return
        # why local: the index loads LanceDB and Tantivy (~5 s); other commands (and --help) skip them
        from vectree.retrieval.embed import EmbedderMismatchError
        from vectree.retrieval.search import IndexNotBuiltError, SearchIndex
        from vectree.retrieval.store import Store

        store = Store(cli_settings(store_root).store_root).view()  # the published snapshot
        try:
            index = SearchIndex.open(store, auto_refresh=False)
            if mode != "bm25":
                index.embedder  # load the model now, so the time shown is the query's own
            started = time.perf_counter()
            results = index.search(query, k, mode=mode, fusion=fusion)
            ms = 1000 * (time.perf_counter() - started)
        except IndexNotBuiltError:
            err.print(f"[red]no search index in {store.root}[/]: run [bold]vectree ingest PATH[/] "
                      "(or [bold]vectree demo[/]) first")
            sys.exit(2)
        except EmbedderMismatchError as exc:
            err.print(f"[red]{exc}[/]")
            sys.exit(2)
        _show(query, results, as_json=as_json, mode=mode, ms=ms, snapshot=index.snapshot_id)


def _show(query: str, results: list[dict], *, as_json: bool, mode: str, ms: float, snapshot: str | None,
          via: str | None = None) -> None:
    """The results as JSON or as the table (the same for a local search and a service's)."""
    if as_json:
        click.echo(json.dumps(results, indent=1))
        return
    if not results:
        console.print(f"no paper matches {query!r}")
        return
    table = Table(title=f"{query}", caption=f"{len(results)} papers, {mode}, {ms:.0f} ms, "
                  f"snapshot {snapshot}" + (f", service {via}" if via else ""), show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("paper", overflow="fold")
    table.add_column("matched sections", overflow="fold")
    for i, r in enumerate(results, 1):
        sections = "\n".join(f"{s['title'] or '(untitled)'} [dim]{_pages(s['pages'])}[/]"
                             for s in r["matched_sections"]) or "[dim]paper entry[/]"
        table.add_row(str(i), f"{r['score']:.4f}", f"[bold]{r['title'] or '(untitled)'}[/]\n[dim]{r['doc_id']}[/]",
                      sections)
    console.print(table)
