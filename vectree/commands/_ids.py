"""Paper ids on the command line: every command that takes a doc id accepts a unique prefix."""

from __future__ import annotations

import click

from vectree.retrieval.ids import DocIdError, resolve_doc_id


def paper_rows(store) -> list[dict]:
    """Catalog rows (the published snapshot's: a store on object storage has nothing else on a machine
    that only reads it), plus papers that have a parse record but are not in the catalog yet."""
    rows = [{"doc_id": r["doc_id"], "title": r.get("title") or ""} for r in store.view().read_catalog()]
    known = {r["doc_id"] for r in rows}
    rows += [{"doc_id": d, "title": ""} for d in store.record_ids() if d not in known]
    return rows


def resolve_paper(store, query: str) -> str:
    """The doc id ``query`` names in ``store``, or a usage error listing candidates or suggestions."""
    try:
        return resolve_doc_id(query, paper_rows(store))
    except DocIdError as exc:
        raise click.ClickException(str(exc)) from None
