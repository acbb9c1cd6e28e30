"""The ``vectree`` command line.  Subcommands are thin: they call the pipeline or the library."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from vectree.retrieval.config import load_settings, set_offline_model_env
from vectree.retrieval.threads import limit_blas_threads

console = Console(stderr=False)
err = Console(stderr=True)


def _store_option(f):
    return click.option(
        "--store", "store_root", type=click.Path(file_okay=False), default=None,
        help="Artefact store root (default: $VECTREE_STORE or ./.vectree).",
    )(f)


# commands that never load a model or numpy: they skip the BLAS set-up, which imports numpy
MODEL_FREE_COMMANDS = frozenset({"status", "papers", "sources", "tree", "page"})
# where `vectree demo` writes when no --store is given: its own store, never the user's papers
DEMO_STORE = ".vectree-demo"


def quiet_model_libraries(verbose: bool = False) -> None:
    """Silence the progress bars and info logs of the model libraries ("Loading weights" bars from
    transformers, hub download bars) unless ``verbose``.  Must run before they are imported:
    transformers reads both variables at import time."""
    if verbose:
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if "transformers" in sys.modules:  # imported already (a test process): switch it off directly
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()


@click.group()
@click.version_option(package_name="vectree")
@click.option("-v", "--verbose", is_flag=True, help="Show the model libraries' progress bars and logs.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """vectree: answers over your scientific PDFs, with the page each answer came from."""
    set_offline_model_env()
    quiet_model_libraries(verbose)
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    if ctx.invoked_subcommand not in MODEL_FREE_COMMANDS:
        limit_blas_threads()  # query latency: see retrieval/threads.py


def run_ingest(paths: list[str], store_root: str | None, *, force: bool = False, quiet: bool = False,
               command: str = "ingest"):
    """Register ``paths`` as corpus sources of the store and run the pipeline in-process.

    With no ``paths`` it refreshes the store from the sources it remembers (what ``sources remove``
    and ``papers remove`` do after changing them).  The runs are tagged with ``command``.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from vectree.pipelines.definitions import defs
    from vectree.pipelines.jobs import run_tags
    from vectree.pipelines.refresh import refresh
    from vectree.pipelines.resources import VectreeStore

    quiet_model_libraries(verbose=False)

    settings = load_settings(store_root)
    resource = VectreeStore(
        store_root=str(settings.store_root), corpus_dirs=[str(p) for p in settings.corpus_dirs],
        max_pages=settings.max_pages,
    )
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

        report = refresh(defs, resource, force=force, on_paper=on_paper,
                         tags=run_tags("cli", sources=resource.sources(), command=command))
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
    rows = store.read_catalog()
    if not rows:
        console.print(f"store {store.root}: empty. Run [bold]vectree ingest PATH[/] or [bold]vectree demo[/].")
        return
    table = Table(title=f"store {store.root}", show_lines=False)
    for col in ("doc_id", "status", "pages", "title / reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        style = {"ok": "green", "no_text": "yellow", "pending": "cyan"}.get(r["status"], "red")
        detail = r["title"] if r["status"] == "ok" else f"{r['error']}"
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


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@_store_option
@click.option("--force", is_flag=True, help="Re-parse papers that are already in the store.")
def ingest(paths: tuple[str, ...], store_root: str | None, force: bool) -> None:
    """Add PDFs (files or folders, searched recursively) to the store and build every artefact.

    The folders are remembered: a later ``vectree ingest`` (or the Dagster sensor) notices PDFs
    added, changed or removed there.
    """
    store, report, seconds = run_ingest(list(paths), store_root, force=force)
    plan = report.plan
    console.print(
        f"ingested in {seconds:.1f}s: {len(plan.run)} papers processed, {len(plan.add)} new, "
        f"{len(plan.remove)} removed"
    )
    print_status(store, report)
    if report.failed_runs:
        sys.exit(1)


@main.command()
@_store_option
def status(store_root: str | None) -> None:
    """Every paper in the store with its status, and the reason for each one that failed."""
    from vectree.retrieval.store import Store

    print_status(Store(load_settings(store_root).store_root))


@main.command()
@click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
              help=f"Store for the demo (default: ./{DEMO_STORE}, never $VECTREE_STORE).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Where to write the demo PDFs (default: <store>/demo-corpus).")
def demo(store_root: str | None, out: str | None) -> None:
    """Write the project's demo corpus (8 short papers) into its own store, ingest it, and ask it two
    questions.  The demo store is ./.vectree-demo unless --store says otherwise, so the demo papers
    never mix with yours (./.vectree)."""
    from vectree.retrieval.demo import build_demo_corpus
    from vectree.retrieval.store import Store

    store_root = store_root or DEMO_STORE
    settings = load_settings(store_root)
    out_dir = Path(out) if out else Path(settings.store_root) / "demo-corpus"
    paths = build_demo_corpus(out_dir)
    console.print(f"wrote {len(paths)} demo papers to {out_dir}")
    store, report, seconds = run_ingest([str(out_dir)], store_root, command="demo")
    console.print(f"ingested in {seconds:.1f}s")
    print_status(Store(settings.store_root), report)
    if report.failed_runs:
        sys.exit(1)
    from vectree.agent.ask import ask
    from vectree.agent.tools import Toolbox
    from vectree.commands.agent import print_answer

    toolbox = Toolbox(store)
    console.rule("two questions about the demo corpus")
    for question in DEMO_ASKS:
        print_answer(ask(toolbox, question))
        console.print()
    root = str(settings.store_root)
    console.print(f"demo store: [bold]{root}[/] (separate from your own papers in $VECTREE_STORE or ./.vectree)")
    console.print(f"Ask your own: [bold]vectree ask \"...\" --store {root}[/]  "
                  f"(or [bold]export VECTREE_STORE={root}[/] and leave out --store)")
    console.print(f"Remove the demo: [bold]rm -rf {root}[/]")


# asked at the end of `vectree demo` (answers are found, not stored: see tests/test_agent_tools.py)
DEMO_ASKS = (
    "How much of their initial capacity did the NMC811 pouch cells retain after 630 days at 60 °C and 100% SoC?",
    "How large are the raw time series of the HELIX-212 dataset?",
)


def _register_command_modules() -> None:
    import importlib
    import pkgutil

    from vectree import commands

    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):  # helpers shared by the command modules
            continue
        importlib.import_module(f"vectree.commands.{mod.name}").register(main)


_register_command_modules()

if __name__ == "__main__":  # pragma: no cover
    main()
