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
    def search_command(query: str, k: int, mode: str, fusion: str | None, store_root: str | None, as_json: bool) -> None:
        """Rank the papers of the store for QUERY and show which of their sections matched.

        QUERY is plain text: quotes, colons, brackets or AND/OR are read as words, never as
        query syntax.
        """
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
        if as_json:
            click.echo(json.dumps(results, indent=1))
            return
        if not results:
            console.print(f"no paper matches {query!r}")
            return
        table = Table(title=f"{query}", caption=f"{len(results)} papers, {mode}, {ms:.0f} ms, "
                      f"snapshot {index.snapshot_id}", show_lines=True)
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
