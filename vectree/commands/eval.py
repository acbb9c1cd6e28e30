"""``vectree eval``: run systems side by side on a benchmark folder and write results.json.

    vectree eval BENCHMARK --data DIR --system NAME [--system NAME ...] [--limit N] [--seed S]
                 --out results.json [--report report.md] [--plots DIR] [--work DIR]

``BENCHMARK`` names a folder of ``../shared/data/`` (qasper_pdf, qasper, pubmedqa, dragonball,
hotpotqa, scholarqa_multi); ``DIR`` is laid out like it.  A folder that does not match exits
with status 2 and a message naming the missing or malformed file; a system that crashes is
recorded as failed and the command exits with status 1 after writing the results.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click


class _LazyChoice(click.Choice):
    """A choice whose values are imported when first needed: the benchmark and system registries
    pull in numpy and the evaluation package, which every other command would otherwise pay for
    at start-up (`vectree papers` must start in well under a second)."""

    def __init__(self, load) -> None:  # no super().__init__: it would assign ``choices``
        self._load = load
        self._choices = None
        self.case_sensitive = True

    @property
    def choices(self):
        if self._choices is None:
            self._choices = tuple(self._load())
        return self._choices


def _benchmarks():
    from vectree.evaluation.layouts import BENCHMARKS

    return BENCHMARKS


def _systems():
    from vectree.evaluation.systems import REGISTRY

    return list(REGISTRY)


def register(group: click.Group) -> None:
    @group.command("eval")
    @click.argument("benchmark", type=_LazyChoice(_benchmarks))
    @click.option("--data", "data_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
                  help="Folder laid out like ../shared/data/BENCHMARK (dragonball_qa and dragonball_multi read "
                       "../shared/data/dragonball).")
    @click.option("--system", "systems", multiple=True, type=_LazyChoice(_systems),
                  help="System to evaluate (repeat for several; default: the benchmark's standard set).")
    @click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N questions (file order).")
    @click.option("--seed", type=int, default=0, show_default=True, help="Seed for every stochastic step.")
    @click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
                  help="Where to write results.json.")
    @click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Also write a Markdown report (plots go next to it).")
    @click.option("--plots", "plots_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Folder for the PNG plots (default: next to the report).")
    @click.option("--work", "work_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Work folder for indexes, rendered PDFs and stores (default: a temporary one).")
    def eval_command(benchmark, data_dir, systems, limit, seed, out_path, report_path, plots_dir, work_dir):
        """Evaluate systems on BENCHMARK read from --data; write --out (and --report)."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
            TimeRemainingColumn

        from vectree.evaluation.layouts import LayoutError
        from vectree.evaluation.loaders import task_of
        from vectree.evaluation.report import console_table, write_report
        from vectree.evaluation.runner import run_benchmark
        from vectree.evaluation.systems import DEFAULT_SYSTEMS

        err = Console(stderr=True)
        names = list(dict.fromkeys(systems)) or list(DEFAULT_SYSTEMS[task_of(benchmark)])
        started = time.perf_counter()
        with Progress(TextColumn("[bold]{task.fields[system]:<20}[/]"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=err,
                      transient=False) as bar:
            tasks: dict[str, int] = {}

            def progress(system: str, done: int, total: int) -> None:
                if system not in tasks:
                    tasks[system] = bar.add_task("", total=total, system=system)
                bar.update(tasks[system], completed=done, total=total)

            try:
                results = run_benchmark(benchmark, data_dir, names, limit=limit, seed=seed, work_dir=work_dir,
                                        progress=progress)
            except LayoutError as exc:
                bar.stop()
                click.echo(f"layout error: {exc}", err=True)  # plain: a path must not be wrapped
                sys.exit(2)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(results, indent=1, sort_keys=False, default=str))
        console = Console()
        console.print(console_table(results, width=console.width))
        click.echo(f"wrote {out_path} ({len(results)} systems, {time.perf_counter() - started:.1f}s)")
        if report_path is not None:
            written = write_report(results, report_path, plots_dir=plots_dir)
            click.echo(f"wrote {report_path}" + (f" and {len(written)} plots" if written else ""))
        if any(r["status"] == "failed" for r in results):
            for r in results:
                if r["status"] == "failed":
                    err.print(f"[red]{r['system']} failed:[/] {r['notes'][-2] if len(r['notes']) > 1 else ''}")
            sys.exit(1)
