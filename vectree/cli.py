"""The ``vectree`` command line.  Subcommands are thin: they call the pipeline or the library."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from vectree import commands
from vectree.commands import cli_settings
from vectree.commands._ingest import print_status, run_ingest
from vectree.commands.agent import print_answer
from vectree.retrieval.config import (SettingsError, load_settings, quiet_model_libraries, set_dagster_env,
                                     set_offline_model_env)
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


class _Group(click.Group):
    """Store errors (layout mismatch, a refresh already running) end the command with one line."""

    def invoke(self, ctx):
        from vectree.retrieval.objstore import ObjectStoreError
        from vectree.retrieval.store import StoreError

        try:
            return super().invoke(ctx)
        except (StoreError, ObjectStoreError) as exc:  # (the latter: a store on object storage unreachable)
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt as exc:
            if type(exc).__name__ != "RefreshInterrupted":  # (not imported here: it pulls in Dagster)
                raise
            err.print(str(exc))
            ctx.exit(130)


@click.group(cls=_Group)
@click.version_option(package_name="vectree")
@click.option("-v", "--verbose", is_flag=True, help="Show the model libraries' progress bars and logs.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """vectree: answers over your scientific PDFs, with the page each answer came from.

    Settings come from VECTREE_* variables and the TOML file named by VECTREE_CONFIG
    (`vectree config` shows them)."""
    set_offline_model_env()
    quiet_model_libraries(verbose)
    set_dagster_env()
    try:  # built once here; subcommands read it with vectree.commands.cli_settings
        ctx.obj = load_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    if ctx.invoked_subcommand not in MODEL_FREE_COMMANDS:
        limit_blas_threads(ctx.obj.blas_threads)  # query latency: see retrieval/threads.py


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
        + (f", {len(plan.outdated)} re-parsed (parsed by an older parser)" if plan.outdated else "")
    )
    print_status(store, report)
    if report.failed_runs:
        sys.exit(1)


@main.command()
@_store_option
def status(store_root: str | None) -> None:
    """Every paper in the store with its status, the reason for each one that failed, and the pages
    flagged at ingest as instruction-like text (a possible prompt injection)."""
    from vectree.retrieval.store import Store  # why local: pyarrow (~0.2 s), not needed by --help

    print_status(Store(cli_settings(store_root).store_root))


@main.command()
@click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
              help=f"Store for the demo (default: ./{DEMO_STORE}, never $VECTREE_STORE).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Where to write the demo PDFs (default: <store>/demo-corpus).")
def demo(store_root: str | None, out: str | None) -> None:
    """Write the project's demo corpus (8 short papers) into its own store, ingest it, and ask it two
    questions.  The demo store is ./.vectree-demo unless --store says otherwise, so the demo papers
    never mix with yours (./.vectree)."""
    # why local: the typesetter and the agent load PyMuPDF, pyarrow, torch and openai (seconds)
    from vectree.agent.ask import ask
    from vectree.agent.tools import Toolbox
    from vectree.demo import build_demo_corpus
    from vectree.retrieval.store import Store

    store_root = store_root or DEMO_STORE
    settings = cli_settings(store_root)
    out_dir = Path(out) if out else Store(settings.store_root).root / "demo-corpus"  # (the local copy of a URI store)
    paths = build_demo_corpus(out_dir)
    console.print(f"wrote {len(paths)} demo papers to {out_dir}")
    store, report, seconds = run_ingest([str(out_dir)], store_root, command="demo")
    console.print(f"ingested in {seconds:.1f}s")
    print_status(Store(settings.store_root), report)
    if report.failed_runs:
        sys.exit(1)
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
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):  # helpers shared by the command modules
            continue
        importlib.import_module(f"vectree.commands.{mod.name}").register(main)


_register_command_modules()

if __name__ == "__main__":  # pragma: no cover
    main()
