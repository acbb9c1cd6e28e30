"""The ``vectree`` command line.  Subcommands are thin: they call the pipeline or the library."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from vectree import commands
from vectree.commands import cli_settings
from vectree.commands.agent import print_answer
from vectree.retrieval.config import SettingsError, load_settings, set_dagster_env, set_offline_model_env
from vectree.retrieval.threads import limit_blas_threads

console = Console(stderr=False)
err = Console(stderr=True)


def _store_option(f):
    return click.option(
        "--store", "store_root", type=click.Path(file_okay=False), default=None,
        help="Artefact store root (default: $VECTREE_STORE or ./.vectree).",
    )(f)


class _Group(click.Group):
    """Store errors (layout mismatch, a refresh already running) end the command with one line."""

    def invoke(self, ctx):
        from vectree.retrieval.store import StoreError

        try:
            return super().invoke(ctx)
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt as exc:
            if type(exc).__name__ != "RefreshInterrupted":  # (not imported here: it pulls in Dagster)
                raise
            err.print(str(exc))
            ctx.exit(130)


@click.group(cls=_Group)
@click.version_option(package_name="vectree")
@click.pass_context
def main(ctx: click.Context) -> None:
    """vectree: answers over your scientific PDFs, with the page each answer came from.

    Settings come from VECTREE_* variables and the TOML file named by VECTREE_CONFIG
    (`vectree config` shows them)."""
    set_offline_model_env()
    set_dagster_env()
    try:  # built once here; subcommands read it with vectree.commands.cli_settings
        ctx.obj = load_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    limit_blas_threads(ctx.obj.blas_threads)  # query latency: see retrieval/threads.py


def run_ingest(paths: list[str], store_root: str | None, *, force: bool = False, quiet: bool = False):
    """Register ``paths`` as corpus sources of the store and run the pipeline in-process, with a
    progress bar (the work is :func:`vectree.pipelines.ingest.ingest_paths`)."""
    # why local: the pipeline loads Dagster (~3 s); `vectree --help` and the query commands skip it
    from vectree.pipelines.ingest import ingest_paths

    settings = cli_settings(store_root)
    for p in paths:
        if not Path(p).exists():
            raise click.BadParameter(f"no such file or folder: {p}", param_hint="PATH")
    started = time.perf_counter()
    with Progress(
        TextColumn("[bold]ingest[/]"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        TextColumn("{task.description}"), console=err, disable=quiet, transient=True,
    ) as progress:
        task = progress.add_task("scanning", total=None)

        def on_paper(doc_id: str, i: int, n: int) -> None:
            progress.update(task, total=n, completed=i, description=doc_id)

        store, report = ingest_paths(paths, settings=settings, force=force, on_paper=on_paper)
        progress.update(task, completed=len(report.plan.run))
    return store, report, time.perf_counter() - started


def print_status(store, report=None) -> None:
    rows = store.view().read_catalog()  # what the service serves: the published snapshot
    if not rows:
        console.print(f"store {store.root}: empty. Run [bold]vectree ingest PATH[/] or [bold]vectree demo[/].")
        return
    table = Table(title=f"store {store.root}", show_lines=False)
    for col in ("doc_id", "status", "pages", "title / reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        style = {"ok": "green", "no_text": "yellow", "pending": "cyan", "degraded": "yellow"}.get(r["status"], "red")
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
    from vectree.retrieval.store import Store  # why local: pyarrow (~0.2 s), not needed by --help

    print_status(Store(cli_settings(store_root).store_root))


@main.command()
@_store_option
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Where to write the demo PDFs (default: <store>/demo-corpus).")
def demo(store_root: str | None, out: str | None) -> None:
    """Write the project's demo corpus (8 short papers), ingest it, and show what was built."""
    # why local: the typesetter, the store and the agent load PyMuPDF, pyarrow and openai (~1.5 s);
    # every other command (and --help) would pay for them
    from vectree.agent.ask import ask
    from vectree.agent.tools import Toolbox
    from vectree.demo import build_demo_corpus
    from vectree.retrieval.store import Store

    settings = cli_settings(store_root)
    out_dir = Path(out) if out else Path(settings.store_root) / "demo-corpus"
    paths = build_demo_corpus(out_dir)
    console.print(f"wrote {len(paths)} demo papers to {out_dir}")
    store, report, seconds = run_ingest([str(out_dir)], store_root)
    console.print(f"ingested in {seconds:.1f}s")
    print_status(Store(settings.store_root), report)
    if report.failed_runs:
        sys.exit(1)
    toolbox = Toolbox(store)
    console.rule("two questions about the demo corpus")
    for question in DEMO_ASKS:
        print_answer(ask(toolbox, question))
        console.print()
    console.print("Ask your own: [bold]vectree ask \"...\" --store " + str(settings.store_root) + "[/]")


# asked at the end of `vectree demo` (answers are found, not stored: see tests/test_agent_tools.py)
DEMO_ASKS = (
    "How much of their initial capacity did the NMC811 pouch cells retain after 630 days at 60 °C and 100% SoC?",
    "How large are the raw time series of the HELIX-212 dataset?",
)


def _register_command_modules() -> None:
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"vectree.commands.{mod.name}").register(main)


_register_command_modules()

if __name__ == "__main__":  # pragma: no cover
    main()
