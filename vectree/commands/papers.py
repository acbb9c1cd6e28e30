"""``vectree papers [list|remove|restore]`` and ``vectree page``: the papers of a store.

Model-free: these commands read the catalog and the page files only, so they start quickly.
Removing a paper records it in ``sources.json`` (its PDF stays where it is) and refreshes the
store, which drops it from every artefact through the same path as a PDF deleted from a folder.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vectree.retrieval.config import load_settings
from vectree.retrieval.injection import flag_pages

from ._ids import resolve_paper

console = Console()
err = Console(stderr=True)

_STORE_HELP = "Artefact store root (default: $VECTREE_STORE or ./.vectree)."


def _store(store_root):
    from vectree.retrieval.store import Store

    return Store(load_settings(store_root).store_root)


def _list_papers(store_root) -> None:
    store = _store(store_root)
    rows = store.view().papers()  # what can be queried: the published snapshot
    if not rows:
        console.print(f"store {store.location}: no papers. Run [bold]vectree ingest PATH[/] or [bold]vectree demo[/].")
        return
    table = Table()
    for col in ("doc_id", "pages", "title"):
        table.add_column(col)
    for r in rows:
        flag = f"  [yellow]⚠ {flag_pages(r['instruction_pages'])}[/]" if r["instruction_pages"] else ""
        table.add_row(r["doc_id"], str(r["n_pages"]), escape(r["title"] or "") + flag)
    console.print(table)


def register(main: click.Group) -> None:
    @main.group("papers", invoke_without_command=True)
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def papers(ctx, store_root):
        """List the papers that can be queried (id, pages, title); `papers remove ID` drops one."""
        ctx.obj = {"store_root": store_root}
        if ctx.invoked_subcommand is None:
            _list_papers(store_root)

    @papers.command("list")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def list_cmd(ctx, store_root):
        """List the papers that can be queried (id, pages, title)."""
        _list_papers(store_root or ctx.obj["store_root"])

    @papers.command("remove")
    @click.argument("doc_id")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def remove_cmd(ctx, doc_id, store_root):
        """Remove paper DOC_ID (an id or a unique prefix) from the store and every artefact built from
        it; its PDF stays in its folder and is left out of later ingests (`papers restore` undoes it)."""
        from vectree.commands._ingest import print_status, run_ingest
        from vectree.retrieval.sources import exclude_paper

        store_root = store_root or ctx.obj["store_root"]
        store = _store(store_root)
        store.sync_working_copy()  # a store on object storage: its working copy is the live one's
        resolved = resolve_paper(store, doc_id)
        title = next((r["title"] for r in store.read_catalog() if r["doc_id"] == resolved), "") or ""
        exclude_paper(store.location, resolved, title)
        store, report, seconds = run_ingest([], store_root, command="papers remove")
        console.print(f"removed {resolved} ({title or 'untitled'}) in {seconds:.1f}s; "
                      f"`vectree papers restore {resolved}` brings it back")
        print_status(store, report)
        if report.failed_runs:
            sys.exit(1)

    @papers.command("restore")
    @click.argument("doc_id")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    @click.pass_context
    def restore_cmd(ctx, doc_id, store_root):
        """Undo `papers remove DOC_ID` (full id or a unique prefix of a removed one) and re-ingest it."""
        from vectree.commands._ingest import run_ingest
        from vectree.retrieval.ids import DocIdError, resolve_doc_id
        from vectree.retrieval.sources import include_paper, read_sources

        store_root = store_root or ctx.obj["store_root"]
        root = load_settings(store_root).store_root
        _store(store_root).sync_working_copy()  # a store on object storage: the live sources
        excluded = read_sources(root).excluded
        try:
            resolved = resolve_doc_id(doc_id, [{"doc_id": d, "title": t} for d, t in excluded.items()])
        except DocIdError as exc:
            raise click.ClickException(f"not a removed paper: {exc}") from None
        include_paper(root, resolved)
        _, report, seconds = run_ingest([], store_root, command="papers restore")
        console.print(f"restored {resolved} in {seconds:.1f}s")
        if report.failed_runs:
            sys.exit(1)

    @main.command("page")
    @click.argument("doc_id")
    @click.argument("pages", nargs=-1, type=click.IntRange(min=1), required=True)
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None, help=_STORE_HELP)
    def page_cmd(doc_id, pages, store_root):
        """Print the text of PAGES (1-based) of paper DOC_ID (an id or a unique prefix)."""
        from vectree.retrieval.store import StoreError

        store = _store(store_root).view()  # the published snapshot
        resolved = resolve_paper(store, doc_id)
        try:
            rows = {r["page_no"]: r["text"] for r in store.read_pages(resolved, columns=["page_no", "text"])}
        except StoreError:
            raise click.ClickException(f"paper {resolved} has no pages yet; run vectree ingest to parse it") from None
        bad = [p for p in pages if p not in rows]
        if bad:
            raise click.ClickException(f"{resolved} has {len(rows)} pages; no page {', '.join(map(str, bad))}")
        for p in pages:
            console.rule(f"{resolved} p.{p}")
            click.echo(rows[p].rstrip())  # as extracted: no re-wrapping, no markup
