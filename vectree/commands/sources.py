"""``vectree sources list|add|remove``: the corpus folders a store is built from (``sources.json``).

``add`` is ``vectree ingest`` (remember, then refresh); ``remove`` forgets a folder and refreshes,
so its papers leave every artefact (pages, trees, passages, SproutRAG trees, catalog, indexes)
through the same path as PDFs deleted from a folder.  ``list`` is model-free and quick.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vectree.retrieval.config import load_settings

console = Console()

_STORE_HELP = "Artefact store root (default: $VECTREE_STORE or ./.vectree)."


def _papers_by_source(store, folders: list[str]) -> dict[str, int]:
    """How many catalog papers have a file under each source folder."""
    counts = dict.fromkeys(folders, 0)
    for row in store.read_catalog():
        for folder in folders:
            if any(p == folder or p.startswith(folder.rstrip("/") + "/") for p in row["source_paths"] or []):
                counts[folder] += 1
    return counts


def register(main: click.Group) -> None:
    @main.group("sources", invoke_without_command=True)
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def sources(ctx, store_root):
        """The corpus folders this store is built from: list (default), add, remove."""
        ctx.obj = {"store_root": store_root}
        if ctx.invoked_subcommand is None:
            ctx.invoke(list_cmd)

    @sources.command("list")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def list_cmd(ctx, store_root=None):
        """Every source folder with its paper count, the $VECTREE_CORPUS folders, and removed papers."""
        from vectree.retrieval.sources import read_sources
        from vectree.retrieval.store import Store

        settings = load_settings(store_root or (ctx.obj or {}).get("store_root"))
        store = Store(settings.store_root)
        s = read_sources(store.root)
        env = [str(p.resolve()) for p in settings.corpus_dirs]
        folders = sorted(set(s.folders) | set(env))
        if not folders:
            console.print(f"store {store.root}: no sources. Add one with [bold]vectree sources add PATH[/].")
            return
        counts = _papers_by_source(store, folders)
        table = Table(title=f"sources of {store.root}")
        for col in ("source", "papers", "from"):
            table.add_column(col, overflow="fold")
        for f in folders:
            origin = "VECTREE_CORPUS" if f in env and f not in s.folders else store.sources_path.name
            exists = "" if Path(f).exists() else "  [red](missing)[/]"
            table.add_row(escape(f) + exists, str(counts[f]), origin)
        console.print(table)
        for doc_id, title in s.excluded.items():
            console.print(f"[dim]removed paper[/] {doc_id} {escape(title)}  [dim](vectree papers restore {doc_id})[/]")

    @sources.command("add")
    @click.argument("paths", nargs=-1, required=True, type=click.Path())
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def add_cmd(ctx, paths, store_root):
        """Remember PATHS (folders or PDFs) as sources and ingest them (same as vectree ingest)."""
        from vectree.commands._ingest import print_status, run_ingest

        store, report, seconds = run_ingest(list(paths), store_root or ctx.obj["store_root"], command="sources add")
        console.print(f"added {len(paths)} source(s) in {seconds:.1f}s: {len(report.plan.add)} new papers")
        print_status(store, report)
        if report.failed_runs:
            sys.exit(1)

    @sources.command("remove")
    @click.argument("path", type=click.Path())
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def remove_cmd(ctx, path, store_root):
        """Forget source PATH and drop its papers from every artefact of the store (the PDFs stay)."""
        from vectree.commands._ingest import print_status, run_ingest
        from vectree.retrieval.sources import SourcesError, remove_source

        store_root = store_root or ctx.obj["store_root"]
        settings = load_settings(store_root)
        try:
            _, removed = remove_source(settings.store_root, path)
        except SourcesError as exc:
            if str(Path(path).resolve()) in {str(p.resolve()) for p in settings.corpus_dirs}:
                raise click.ClickException(f"{path} comes from $VECTREE_CORPUS; remove it there") from None
            raise click.ClickException(str(exc)) from None
        store, report, seconds = run_ingest([], store_root, command="sources remove")
        n = len(report.plan.remove)
        console.print(f"removed source {removed} in {seconds:.1f}s: {n} paper{'' if n == 1 else 's'} dropped")
        print_status(store, report)
        if report.failed_runs:
            sys.exit(1)
