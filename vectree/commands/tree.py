"""``vectree tree DOC_ID``: a paper's section tree with pages and verification marks."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from vectree.commands import cli_settings

from ._ids import resolve_paper

console = Console()
err = Console(stderr=True)


def _resolve(store, doc_id: str) -> str:
    """The paper id for ``doc_id``: exact, or a unique prefix (``2302-07302`` for ``2302-07302v1-6181...``)."""
    return resolve_paper(store, doc_id)


def _label(node: dict, *, summaries: bool) -> str:
    pages = f"p. {node['page_start']}" if node["page_start"] == node["page_end"] else f"pp. {node['page_start']}-{node['page_end']}"
    mark = "[green]✓[/]" if node["verified"] else "[red]✗[/]"
    text = f"{mark} [bold]{escape(node['title'] or '(untitled)')}[/]  [cyan]{pages}[/]  [dim]{node['node_id']}[/]"
    if not node["verified"] and node["verify_note"]:
        text += f"\n[red]{escape(node['verify_note'])}[/]"
    elif node["verify_note"]:
        text += f"  [dim]({escape(node['verify_note'])})[/]"
    if summaries and node["summary"]:
        text += f"\n[dim]{escape(node['summary'])}[/]"
    return text


def register(main: click.Group) -> None:
    @main.command("tree")
    @click.argument("doc_id")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--summaries/--no-summaries", default=False, show_default=True, help="Show each node's summary.")
    def tree_command(doc_id: str, store_root: str | None, summaries: bool) -> None:
        """Print the section tree of paper DOC_ID (an id or a unique prefix of one): titles, page
        ranges, and whether the verifier found each title on its page (✓) or not (✗, with why)."""
        # why local: the store and the tree schema load pyarrow (~0.2 s); --help skips it
        from vectree.retrieval.store import Store, StoreError
        from vectree.retrieval.trees.schema import read_tree, tree_stats

        store = Store(cli_settings(store_root).store_root).view()  # the published snapshot
        resolved = _resolve(store, doc_id)
        try:
            nodes = read_tree(store, resolved)
        except StoreError:
            raise click.ClickException(
                f"paper {resolved} has no section tree yet; run vectree ingest to build it"
            ) from None
        if not nodes:
            rec = store.read_record(resolved)
            console.print(f"{resolved}: empty tree (paper status {rec.get('status')}: {rec.get('error') or 'no pages'})")
            return
        by_parent: dict = {}
        for n in nodes:
            by_parent.setdefault(n["parent_id"], []).append(n)
        root = nodes[0]
        view = Tree(_label(root, summaries=summaries), guide_style="dim")

        def add(parent_view: Tree, parent_id: str) -> None:
            for child in sorted(by_parent.get(parent_id, []), key=lambda n: n["ordinal"]):
                add(parent_view.add(_label(child, summaries=summaries)), child["node_id"])

        add(view, root["node_id"])
        console.print(view)
        s = tree_stats(nodes)
        frac = "n/a" if s["verified_fraction"] is None else f"{s['verified_fraction']:.0%}"
        console.print(
            f"[dim]{resolved}: {s['sections']} sections, {s['verified']} verified ({frac}), "
            f"source {s['source']}, repair rounds {s['repair_rounds']}[/]"
        )
        sys.stdout.flush()
