"""``vectree reranker``: train the reranker + reader (through Dagster) and show the live one."""

from __future__ import annotations

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

console = Console()
err = Console(stderr=True)


def _llm_resource_cls():
    from vectree.assets.llm_resource import LLMResource

    return LLMResource


def _figures_table(training: dict, calibration: dict | None = None) -> Table:
    before, after, f = training.get("before", {}), training.get("after", {}), training.get("dev_figures", {})
    table = Table(title="dev figures (dev split only)")
    before = {k: round(v, 4) if isinstance(v, float) else v for k, v in before.items()}
    for col in ("metric", "before: MiniLM cosine", "after: trained reader"):
        table.add_column(col, justify="right" if col != "metric" else "left")
    adapted = training.get("adapted", {})
    table.add_row("evidence MRR", str(before.get("cosine_mrr", "–")), str(after.get("mrr", "–")))
    if adapted:
        table.add_row("evidence MRR, query-adapted cosine", str(before.get("cosine_mrr", "–")),
                      str(adapted.get("cosine_mrr", "–")))
    table.add_row("evidence MRR, reader fused with cosine", "–", str(f.get("fused_mrr", "–")))
    table.add_row("evidence P@1", str(before.get("cosine_p_at_1", "–")), str(after.get("p_at_1", "–")))
    table.add_row("answer-type accuracy", "–", str(after.get("type_accuracy", "–")))
    table.add_row("answer span F1", "–", str(after.get("span_f1", "–")))
    table.add_row("answer confidence ECE", "–", str(f.get("answer_ece", "–")))
    table.add_row("evidence selection P / R", "–", f"{f.get('selection_precision')} / {f.get('selection_recall')}")
    ps = (calibration or {}).get("page_selection") or f.get("page_selection")
    if ps:
        before = ps.get("sentence_level") or {}
        table.add_row(f"cited pages P / R (dev papers; threshold {ps['threshold']}, margin {ps['margin']}, "
                      f"at most {ps['max_cited']})",
                      f"{before['precision']} / {before['recall']} (sentence-level)" if before else "–",
                      f"{ps['precision']} / {ps['recall']}")
    for key, what in (("coverage", "off-corpus floor {}: in-corpus answered / off-corpus abstained"),
                      ("passage_coverage", "in-paper floor {}: answered with evidence / abstained without")):
        floor = (calibration or {}).get(key) or f.get(key)
        if floor:
            srcs = list(floor.get("questions", {}))
            table.add_row(what.format(floor["min_coverage"]) + f" ({'; '.join(srcs)})", "–",
                          "; ".join(f"{floor[f'{s}_answered_in']} / {floor[f'{s}_abstained_off']}" for s in srcs))
    second = (calibration or {}).get("second_paper") or f.get("second_paper")
    if second:
        srcs = list(second.get("questions", {}))
        table.add_row(f"second paper read at named share {second['min_share']}: added / paper-set F1 change "
                      f"({'; '.join(srcs)})", "–",
                      "; ".join(f"{second[f'{s}_added']} / {second[f'{s}_f1_change']:+}" for s in srcs))
    return table


def _adapter_line(out: Console, event: dict) -> None:
    if event["event"] == "adapter":
        out.print(f"training the query adapter ({event['epochs']} epochs, best dev MRR kept) ...")
    else:
        per = ", ".join(f"{k[8:]} {v:.3f}" for k, v in event.items() if k.startswith("dev_mrr_"))
        out.print(f"adapter epoch {event['epoch']}/{event['epochs']}: loss {event['loss']:.3f}, dev MRR {per}", soft_wrap=True)


def register(group: click.Group) -> None:
    @group.group()
    def reranker() -> None:
        """The trained cross-encoder that reranks evidence and reads answers (shipped; retrainable)."""

    @reranker.command("train")
    @click.option("--quick", is_flag=True, help="A small sample and 40 steps (under 3 minutes on 2 cores).")
    @click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
                  help="Where to write the model (default: <store>/reranker/models/<id>).")
    @click.option("--data", "data_dir", default="", help="Training data folder laid out like ../shared/data "
                  "(default: $VECTREE_TRAINING_DATA, else ../shared/data next to the repository).")
    @click.option("--seed", type=int, default=13, show_default=True)
    @click.option("--threads", type=int, default=2, show_default=True, help="torch threads for training.")
    @click.option("--max-steps", type=int, default=0, help="Stop after this many steps (default: the recipe's).")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    def train_cmd(quick, out_dir, data_dir, seed, threads, max_steps, store_root) -> None:
        """Build the training set, train (through the Dagster asset reranker_model), calibrate on dev."""
        import dagster as dg

        from vectree.commands.sprout import _failure_message, _resource
        from vectree.pipelines.definitions import defs
        from vectree.pipelines.refresh import QUIET_RUN_CONFIG, instance_for
        from vectree.retrieval.rerank.model import SHIPPED_DIR, Reader
        from vectree.retrieval.rerank.train import resolve_data_dir
        from vectree.retrieval.sprout.data import TrainingDataError

        try:
            path = resolve_data_dir(data_dir or None)
        except TrainingDataError as exc:
            raise click.ClickException(str(exc)) from None
        resource = _resource(store_root)
        import time
        from pathlib import Path

        out = Path(out_dir).resolve() if out_dir else \
            resource.store.reranker_models_dir / time.strftime("reader-%Y%m%d-%H%M%S")
        click.echo(f"training data: {path}\nmodel folder:  {out}")  # paths unwrapped: they get copied
        import logging

        from vectree.assets.reranker import PROGRESS_LOGGER

        bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                       TextColumn("{task.fields[dev]}"), TimeElapsedColumn(), TimeRemainingColumn(), console=err)
        state = {"task": None}

        class Show(logging.Handler):
            def emit(self, record):
                event = getattr(record, "event", None) or {}
                kind = event.get("event")
                if kind == "counts":
                    table = Table(title="training data (pairs; positives)")
                    for col in ("source", "train", "dev"):
                        table.add_column(col, justify="right" if col != "source" else "left")
                    for source, c in sorted(event["counts"].items()):
                        table.add_row(source, f"{c['train']} ({c['train_pos']})", f"{c['dev']} ({c['dev_pos']})")
                    bar.console.print(table)
                elif kind == "step":
                    if state["task"] is None:
                        state["task"] = bar.add_task("training", total=event["total_steps"], dev="dev MRR -")
                    bar.update(state["task"], completed=event["step"])
                elif kind == "eval" and state["task"] is not None:
                    bar.update(state["task"], dev=f"dev MRR {event['dev_mrr']:.3f}")
                    if not err.is_terminal:  # a log file or a pipe: the bar does not draw, a line does
                        err.print(f"step {event['step']}/{event['total_steps']}: dev MRR {event['dev_mrr']:.3f}")
                elif kind in ("adapter", "adapter_epoch"):
                    _adapter_line(bar.console, event)
                elif kind == "calibrate":
                    bar.console.print(f"calibrating on {event['n']} dev pairs ...")
                elif kind == "calibrate_pages":
                    bar.console.print("calibrating the cited evidence on the pages of dev papers ...")
                elif kind == "calibrate_coverage":
                    bar.console.print("calibrating the off-corpus and in-paper floors on dev questions with and without "
                                      "their document or evidence, and when a second paper is read ...")
                elif kind == "data":
                    bar.console.print(f"building the training set from {event['data_dir']} ...")

        handler = Show(level=logging.INFO)
        logger = logging.getLogger(PROGRESS_LOGGER)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        instance = instance_for(resource.store)
        run_config = {**QUIET_RUN_CONFIG, "ops": {"reranker_model": {"config": {
            "train": True, "quick": quick, "data_dir": str(path), "out_dir": str(out), "seed": seed,
            "threads": threads, "max_steps": max_steps}}}}
        try:
            with bar:
                result = dg.materialize(list(defs.assets or []), selection=[dg.AssetKey("reranker_model")],
                                        instance=instance, resources={"vectree": resource, "llm": _llm_resource_cls().from_settings()}, run_config=run_config,
                                        raise_on_error=False)
        finally:
            logger.removeHandler(handler)
        if not result.success:
            raise click.ClickException(_failure_message(result) or "training run failed")
        reader = Reader.load(out)
        console.print(_figures_table(reader.config.training, reader.config.calibration))
        t = reader.config.training
        click.echo(f"model {reader.config.model_id}: {t.get('steps')} steps in {t.get('seconds')} s -> {out}")
        click.echo(f"make it live:  export VECTREE_RERANKER={out}")
        click.echo(f"ship it:       cp {out}/adapter.safetensors {out}/query_adapter.safetensors {out}/config.json {out}/MODEL_CARD.md "
                   f"{out}/dev_curves.json {SHIPPED_DIR}/")

    @reranker.command("adapt")
    @click.option("--model", "model_dir", type=click.Path(file_okay=False, exists=True), default=None,
                  help="The reader folder to adapt in place (default: the live one, $VECTREE_RERANKER).")
    @click.option("--data", "data_dir", default="", help="Training data folder laid out like ../shared/data.")
    def adapt_cmd(model_dir, data_dir) -> None:
        """Train a reader's bi-encoder query adapter on its training split and re-calibrate it on dev
        (in place: a few minutes on 2 cores; the reader's own weights are unchanged)."""
        from pathlib import Path

        from vectree.retrieval.rerank.model import SHIPPED_DIR, RerankerError, reranker_setting
        from vectree.retrieval.rerank.train import recalibrate, resolve_data_dir
        from vectree.retrieval.sprout.data import TrainingDataError

        setting = reranker_setting()
        folder = Path(model_dir) if model_dir else (SHIPPED_DIR if setting == "default" else Path(setting))
        try:
            resolve_data_dir(data_dir or None)
            click.echo(f"model folder: {folder}")
            recalibrate(folder, data_dir or None, adapt=True,
                        progress=lambda e: _adapter_line(console, e) if e["event"].startswith("adapter")
                        else console.print(f"{e['event']}: " + ", ".join(f"{k} {v}" for k, v in e.items() if k != "event")))
        except (TrainingDataError, RerankerError) as exc:
            raise click.ClickException(str(exc)) from None
        from vectree.retrieval.rerank.model import Reader

        console.print(_figures_table(Reader.load(folder).config.training))

    @reranker.command("info")
    def info_cmd() -> None:
        """Which reranker is live and its dev figures."""
        from vectree.retrieval.rerank.model import RerankerError, get_reader, reranker_setting

        try:
            reader = get_reader()
        except RerankerError as exc:
            raise click.ClickException(str(exc)) from None
        if reader is None:
            console.print(f"no reranker live (VECTREE_RERANKER={reranker_setting()})")
            return
        console.print(f"live reranker {reader.config.model_id} from {reader.folder}")
        console.print(_figures_table(reader.config.training, reader.config.calibration))
