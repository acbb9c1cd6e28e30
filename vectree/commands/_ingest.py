"""The in-process refresh behind ``vectree ingest``, ``sources`` and ``papers remove``, with its
progress bar and the status table they print (here, not in ``vectree.cli``, so that command
modules never import the CLI's core)."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from vectree.commands import cli_settings
from vectree.retrieval.config import quiet_model_libraries
from vectree.retrieval.injection import flag_pages

console = Console(stderr=False)
err = Console(stderr=True)


def run_ingest(paths: list[str], store_root: str | None, *, force: bool = False, quiet: bool = False,
               command: str = "ingest"):
    """Register ``paths`` as corpus sources of the store and run the pipeline in-process.

    With no ``paths`` it refreshes the store from the sources it remembers (what ``sources remove``
    and ``papers remove`` do after changing them).  The runs are tagged with ``command``.
    """
    # why local: the pipeline loads Dagster (~3 s); `vectree --help` and the query commands skip it
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from vectree.assets.llm_resource import LLMResource
    from vectree.assets.resources import VectreeStore
    from vectree.pipelines.definitions import defs
    from vectree.pipelines.jobs import run_tags
    from vectree.pipelines.refresh import refresh

    quiet_model_libraries(verbose=False)

    settings = cli_settings(store_root)
    resource = VectreeStore.from_settings(settings)
    for p in paths:
        if not Path(p).exists():
            raise click.BadParameter(f"no such file or folder: {p}", param_hint="PATH")
    if paths:
        resource.register_sources(list(paths))
        _include_named_files(resource.store_root, paths)
    started = time.perf_counter()
    with Progress(
        TextColumn("[bold]ingest[/]"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        TextColumn("{task.description}"), console=err, disable=quiet, transient=True,
    ) as progress:
        task = progress.add_task("scanning", total=None)

        def on_paper(doc_id: str, i: int, n: int) -> None:
            progress.update(task, total=n, completed=i, description=doc_id)

        report = refresh(defs, resource, llm=LLMResource.from_settings(settings), force=force, on_paper=on_paper,
                         tags=run_tags("cli", sources=resource.sources(), command=command), settings=settings)
        progress.update(task, completed=len(report.plan.run))
    return resource.store, report, time.perf_counter() - started


def _include_named_files(store_root: str, paths: list[str]) -> None:
    """A PDF named as a file on the command line is wanted, even if ``papers remove`` excluded it."""
    from vectree.retrieval.corpus import file_sha256, make_doc_id
    from vectree.retrieval.sources import include_paper, read_sources

    if not read_sources(store_root).excluded:
        return
    for p in paths:
        if Path(p).is_file():
            if include_paper(store_root, make_doc_id(p, file_sha256(p))):
                err.print(f"{p}: removed earlier with `vectree papers remove`; included again")


def print_status(store, report=None) -> None:
    rows = store.view().read_catalog()  # what the service serves: the published snapshot
    if not rows:
        console.print(f"store {store.location}: empty. Run [bold]vectree ingest PATH[/] or [bold]vectree demo[/].")
        return
    table = Table(title=f"store {store.location}", show_lines=False)
    for col in ("doc_id", "status", "pages", "title / reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        style = {"ok": "green", "no_text": "yellow", "pending": "cyan", "degraded": "yellow"}.get(r["status"], "red")
        detail = r["title"] if r["status"] == "ok" else f"{r['error']}"
        if r["instruction_pages"]:  # flagged at ingest: a possible prompt injection (see retrieval/injection.py)
            detail += f"  [yellow]⚠ {flag_pages(r['instruction_pages'])}[/]"
        if len(r["source_paths"] or []) > 1:
            detail += f"  [dim](same file as {', '.join(Path(p).name for p in r['source_paths'][1:])})[/]"
        table.add_row(r["doc_id"], f"[{style}]{r['status']}[/]", str(r["n_pages"] or 0), detail)
    console.print(table)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    console.print(
        f"{len(rows)} papers, {sum(r['n_pages'] or 0 for r in rows if r['status'] == 'ok')} pages: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    )
    if report is not None:
        for doc_id, error in report.failed_runs.items():
            err.print(f"[red]run failed[/] {doc_id}: {error}")
