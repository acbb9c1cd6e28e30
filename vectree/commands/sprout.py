"""``vectree sprout``: train the SproutRAG model (through Dagster) and retrieve with it."""

from __future__ import annotations

import logging
import sys

import click
from rich.console import Console
from rich.table import Table

console = Console()
err = Console(stderr=True)


def _resource(store_root):
    """The store resource alone (commands that only read or switch models)."""
    return _resources(store_root)["vectree"]


def _resources(store_root) -> dict:
    """The run's Dagster resources, from the settings the command group built."""
    from vectree.assets.llm_resource import LLMResource
    from vectree.commands import cli_settings
    from vectree.assets.resources import VectreeStore

    settings = cli_settings(store_root)
    return {"vectree": VectreeStore.from_settings(settings), "llm": LLMResource.from_settings(settings)}


def _failure_message(result) -> str:
    """The innermost error message of a failed run's first failed step (Dagster wraps the cause)."""
    for e in result.all_events:
        if e.is_step_failure and e.event_specific_data and e.event_specific_data.error:
            err = e.event_specific_data.error
            while err.cause is not None:
                err = err.cause
            return err.message.strip()
    return ""


def train_through_dagster(store_root: str | None = None, *, quick: bool = False, data_dir: str = "",
                          epochs: int = 0, seed: int = 13, rebuild_trees: bool = True, quiet: bool = False,
                          sources: tuple[str, ...] = ("hotpotqa", "qasper"), make_live: bool = True,
                          force_live: bool = False, lexical: bool = True) -> dict:
    """Materialise ``sprout_training_set`` and ``sprout_model`` with training switched on, then
    (when the new model is live) rebuild ``sprout_tree`` for every paper partition; returns a summary
    (``model``: the new model, ``folder``: where it was written, ``trees``/``failed``)."""
    import dagster as dg

    from vectree.pipelines.definitions import defs
    from vectree.pipelines.refresh import QUIET_RUN_CONFIG, instance_for
    from vectree.retrieval.sprout.data import TrainingDataError, resolve_training_data

    try:  # fail before starting a run when the data is not there
        resolve_training_data(data_dir or None, sources)
    except (TrainingDataError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    resources = _resources(store_root)
    store = resources["vectree"].store
    instance = instance_for(store)
    assets = list(defs.assets or [])
    run_config = {
        **QUIET_RUN_CONFIG,
        "ops": {
            "sprout_training_set": {"config": {"build": True, "quick": quick, "data_dir": data_dir,
                                               "sources": list(sources)}},
            "sprout_model": {"config": {"train": True, "quick": quick, "epochs": epochs, "seed": seed,
                                        "make_live": make_live, "force_live": force_live, "lexical": lexical}},
        },
    }
    result = dg.materialize(assets, selection=[dg.AssetKey("sprout_training_set"), dg.AssetKey("sprout_model")],
                            instance=instance, resources=resources, run_config=run_config,
                            raise_on_error=False)
    if not result.success:
        raise click.ClickException(_failure_message(result) or "training run failed")
    from vectree.retrieval.sprout.model import current_model_dir, load_model, models_dir

    folder = max((p for p in models_dir(store).iterdir() if (p / "config.json").exists()),
                 key=lambda p: p.stat().st_mtime)  # the model this run wrote
    model = load_model(folder)
    # the asset keeps the live model when the new one did not beat its untrained start on dev
    current = current_model_dir(store)
    live = make_live and current is not None and current.resolve() == folder.resolve()
    rebuilt, failed = rebuild_trees_through_dagster(resources["vectree"]) if rebuild_trees and live else ([], {})
    return {"model": model, "folder": folder, "trees": rebuilt, "failed": failed, "live": live,
            "asked_live": make_live}


def rebuild_trees_through_dagster(resource) -> tuple[list[str], dict[str, str]]:
    """Materialise ``sprout_tree`` for every paper partition with the live model: ``(rebuilt, failed)``."""
    import dagster as dg

    from vectree.assets.partitions import papers_partitions
    from vectree.pipelines.definitions import defs
    from vectree.pipelines.refresh import QUIET_RUN_CONFIG, instance_for

    instance = instance_for(resource.store)
    assets = list(defs.assets or [])
    rebuilt, failed = [], {}
    from vectree.assets.llm_resource import LLMResource

    resources = {"vectree": resource, "llm": LLMResource.from_settings()}
    for doc_id in sorted(instance.get_dynamic_partitions(papers_partitions.name)):
        res = dg.materialize(assets, selection=[dg.AssetKey("sprout_tree")], partition_key=doc_id,
                             instance=instance, resources=resources, run_config=QUIET_RUN_CONFIG,
                             raise_on_error=False)
        if res.success:
            rebuilt.append(doc_id)
        else:
            failed[doc_id] = _failure_message(res) or "run failed"
    # readers see the new model and trees once they are published as a store snapshot
    dg.materialize(assets, selection=[dg.AssetKey("store_snapshot")], instance=instance,
                   resources=resources, run_config=QUIET_RUN_CONFIG)
    return rebuilt, failed


class _ProgressHandler(logging.Handler):
    """Draws the training's progress from the assets' log records: the data counts when the
    training set is built, one bar per phase (encoder epochs, cross-fitting folds, reranker
    epochs) advanced per epoch with its dev metric, and the latest plain line (embedding ETA)."""

    def __init__(self, progress, console):
        super().__init__(level=logging.INFO)
        self.progress = progress
        self.console = console
        self.tasks: dict[str, int] = {}
        self.line = progress.add_task("starting (Dagster run)", total=None)

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "vectree_event", None)
        if event is None:
            self.progress.update(self.line, description=record.getMessage()[:100])
            return
        phase = event.get("phase")
        if phase == "data":
            self.console.print(_data_table(event))
            self.progress.update(self.line, description="training (untrained model's dev figures first)")
        elif phase == "before":
            self.console.print(f"untrained model (cosine rerank): dev IE {event['dev'].get('mean_ie')}")
        elif "epoch" in event:
            label = {"encoder": "stage 1: encoder", "reranker": "stage 2: reranker + tau"}.get(phase, f"cross-fit {phase}")
            if phase not in self.tasks:
                self.tasks[phase] = self.progress.add_task(label, total=event["epochs"])
            dev = event.get("dev")
            self.progress.update(self.tasks[phase], completed=event["epoch"],
                                 description=f"{label}  loss {event['loss']:.3f}  "
                                             f"{event['metric']} {dev if dev is not None else '-'}")


def _data_table(event: dict) -> Table:
    table = Table(title=f"training data ({event.get('data_dir')})"
                  + (" -- with DragonBall: a benchmark model, never shipped" if event.get("benchmark_model") else ""))
    for col in ("source", "split", "docs", "queries", "chunks"):
        table.add_column(col, justify="left" if col in ("source", "split") else "right")
    for key, v in sorted(event.get("summary", {}).items()):
        src, split = key.split("/")
        table.add_row(src, split, f"{v['docs']:,}", f"{v['queries']:,}", f"{v['chunks']:,}")
    return table


def _choices(cfg) -> list[str]:
    """What training chose on dev besides the weights: single-paragraph nodes, the greedy's logit scale,
    the within-paper vote."""
    out = []
    sp = (cfg.training or {}).get("single_paragraph_dev")
    if sp and sp.get("trained_for"):
        out.append("single-paragraph nodes only: on (the reranker was trained to rank those)")
    elif sp:
        out.append(f"single-paragraph nodes only: {'on' if sp['chosen'] else 'off'} (dev IE {sp['on']} with, "
                   f"{sp['off']} without)")
    scale = (cfg.training or {}).get("logit_scale_dev")
    if scale:
        out.append(f"greedy's logit scale: {scale['chosen']:g} (dev IE "
                   + ", ".join(f"{s} -> {v}" for s, v in scale.get("dev", {}).items()) + ")")
    cal = cfg.within_paper_calibration or {}
    if cal.get("scores"):
        plain = (cal["scores"].get("0.0/all") or {}).get("score")
        key = f"{cfg.within_paper_weight}/{cfg.within_paper_per_node or 'all'}"
        out.append(f"within-paper search: the nodes vote with weight {cfg.within_paper_weight}, "
                   f"{cfg.within_paper_per_node or 'all'} passages per node (QASPER dev recall score "
                   f"{(cal['scores'].get(key) or {}).get('score')} against {plain} for plain passages)")
    return out


def _dev_table(tr: dict) -> Table:
    before, after = tr.get("dev_before") or {}, tr.get("dev_best") or {}
    table = Table(title="dev figures (IE = recall x precision of the returned sentences): before -> after")
    table.add_column("source")
    for k in (1, 3, 5):
        table.add_column(f"IE@{k}", justify="right")
    for src in sorted(k for k, v in after.items() if isinstance(v, dict)):
        b, a = before.get(src) or {}, after[src]
        table.add_row(src, *[f"{b.get(f'ie@{k}', 0):.3f} -> {a.get(f'ie@{k}', 0):.3f}" for k in (1, 3, 5)])
    table.add_row("mean", f"{before.get('mean_ie')} -> {after.get('mean_ie')}", "", "")
    return table


def register(group: click.Group) -> None:
    @group.group()
    def sprout() -> None:
        """SproutRAG: learned sentence trees per paper (train a model, retrieve nodes)."""

    @sprout.command("train")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--quick", is_flag=True, help="A small training set and few epochs (under two minutes on 2 cores).")
    @click.option("--data", "data_dir", default="", help="Training data folder laid out like ../shared/data "
                  "(default: $VECTREE_TRAINING_DATA, else ../shared/data next to the repository).")
    @click.option("--source", "sources", multiple=True, type=click.Choice(["hotpotqa", "qasper", "dragonball"]),
                  help="Training sources (repeat; default: hotpotqa and qasper, licence-compatible). With "
                  "dragonball the model is a benchmark model (CC-BY-NC-SA data): its card says so; never ship it.")
    @click.option("--epochs", type=int, default=0, help="Override the number of encoder epochs.")
    @click.option("--seed", type=int, default=13, show_default=True)
    @click.option("--no-live", is_flag=True, help="Write the model but keep the live one (switch later with "
                  "`vectree sprout use ID`).")
    @click.option("--force-live", is_flag=True, help="Make it live even when its dev IE did not rise over the "
                  "untrained model's (by default such a model is written but the live one stays).")
    @click.option("--no-trees", is_flag=True, help="Train only; do not rebuild the papers' trees.")
    @click.option("--no-lexical", is_flag=True, help="The node scorer reads cosine features only, not the query's "
                  "words in each node (the `sprout-nolex` ablation as a model of its own).")
    def train_cmd(store_root, quick, data_dir, sources, epochs, seed, no_live, force_live, no_trees,
                  no_lexical) -> None:
        """Build the training set, train the model (through Dagster), make it live and rebuild every
        paper's tree.  Prints the data per source, a bar per training phase with its dev metric, the
        dev figures before and after, where the model was written and how to switch models."""
        import time

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from vectree.assets.sprout import PROGRESS_LOGGER
        from vectree.retrieval.sprout.model import current_model_dir

        resource = _resource(store_root)
        previous = current_model_dir(resource.store)
        started = time.perf_counter()
        progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err, transient=False)
        with progress:
            handler = _ProgressHandler(progress, err)
            logger = logging.getLogger(PROGRESS_LOGGER)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            try:
                out = train_through_dagster(store_root, quick=quick, data_dir=data_dir, epochs=epochs, seed=seed,
                                            rebuild_trees=not no_trees, sources=tuple(sources) or ("hotpotqa", "qasper"),
                                            make_live=not no_live, force_live=force_live,
                                            lexical=not no_lexical)
            finally:
                logger.removeHandler(handler)
            progress.update(handler.line, description="done", total=1, completed=1)
        model = out["model"]
        tr = model.config.training
        console.print(_dev_table(tr))
        for line in _choices(model.config):
            console.print(line)
        mid = model.config.model_id
        console.print(f"model [bold]{mid}[/] ({model.n_parameters():,} parameters) written to {out['folder']} "
                      f"(with its MODEL_CARD.md); training {tr['seconds']:.0f}s, all in "
                      f"{time.perf_counter() - started:.0f}s")
        if (tr.get("data") or {}).get("benchmark_model"):
            console.print("[yellow]trained with DragonBall: a benchmark model, never ship it[/]")
        if out["live"]:
            console.print(f"it is live now; trees rebuilt for {len(out['trees'])} papers. Roll back with "
                          f"`vectree sprout use {previous.name if previous else 'none'}`"
                          + ("" if previous is None else " (or `vectree sprout use none`: plain passages)"))
        elif out.get("asked_live"):
            dev0, dev1 = (tr.get("dev_before") or {}).get("mean_ie"), (tr.get("dev_best") or {}).get("mean_ie")
            console.print(f"[yellow]not made live[/]: its dev IE@1 ({dev1}) did not rise over the untrained "
                          f"model's ({dev0}), so the live model stays "
                          f"{previous.name if previous else 'none (plain passages)'}; make it live anyway with "
                          f"`vectree sprout use {mid}`")
        else:
            console.print(f"make it live with `vectree sprout use {mid}`")
        for doc_id, e in out["failed"].items():
            err.print(f"[red]tree failed[/] {doc_id}: {e}")
        if out["failed"]:
            sys.exit(1)

    @sprout.command("list")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--json", "as_json", is_flag=True, help="Print the models as JSON.")
    def list_cmd(store_root, as_json) -> None:
        """The SproutRAG models this store can use, which one is live, and their dev figures."""
        import json

        from vectree.retrieval.config import load_settings
        from vectree.retrieval.sprout.model import list_models, sprout_switched_off
        from vectree.retrieval.store import Store

        store = Store(load_settings(store_root).store_root)
        models = list_models(store)
        off = sprout_switched_off(store)
        if as_json:
            click.echo(json.dumps({"switched_off": off, "models": models}, indent=1))
            return
        if not models:
            console.print("no SproutRAG model yet: `vectree sprout train` trains one "
                          "(`--quick`: a small one in under two minutes)")
            return
        table = Table(title=f"SproutRAG models in {store.root}")
        table.add_column("live")
        table.add_column("model", no_wrap=True)  # the name `use` takes: never folded
        for col in ("data", "dev IE before -> after", "trained"):
            table.add_column(col)
        for m in models:
            dev = f"{m.get('dev_ie_before')} -> {m.get('dev_ie_after')}" if m.get("dev_ie_after") is not None else ""
            data = "+".join(m.get("sources") or []) + (" (benchmark model)" if m.get("benchmark_model") else "")
            if m.get("origin") == "package default":
                data += " (package default)"
            secs = f"{m['training_seconds']:.0f}s" if m.get("training_seconds") else ""
            table.add_row("*" if m.get("live") else "", m["model_id"], data, dev, secs)
        console.print(table)
        if off:
            console.print("SproutRAG is switched [bold]off[/]: search_within_paper uses plain passages; "
                          "`vectree sprout use NAME` switches a model on")
        else:
            console.print("switch with `vectree sprout use NAME`; `vectree sprout use none` switches SproutRAG off")

    @sprout.command("use")
    @click.argument("name")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--no-trees", is_flag=True, help="Do not rebuild the papers' trees with the model.")
    def use_cmd(name, store_root, no_trees) -> None:
        """Make model NAME live (rebuilding every paper's tree), or `none` to switch SproutRAG off
        (search_within_paper then uses plain passages)."""
        from vectree.retrieval.sprout.model import OFF, SproutUnavailableError, set_live_model

        resource = _resource(store_root)
        store = resource.store
        try:
            folder = set_live_model(store, name)
        except SproutUnavailableError as exc:
            raise click.ClickException(str(exc)) from None
        if name == OFF or no_trees:
            from vectree.retrieval.snapshot import publish

            publish(store)  # readers (the service, the agent) see the switch in the next snapshot
        if name == OFF:
            console.print("SproutRAG switched off: search_within_paper uses plain passages "
                          "(`vectree sprout use NAME` switches a model back on)")
            return
        console.print(f"live SproutRAG model: {name} ({folder})")
        if no_trees:
            return
        with err.status("rebuilding every paper's SproutRAG tree with the model..."):
            rebuilt, failed = rebuild_trees_through_dagster(resource)
        console.print(f"trees rebuilt for {len(rebuilt)} papers")
        for doc_id, e in failed.items():
            err.print(f"[red]tree failed[/] {doc_id}: {e}")
        if failed:
            sys.exit(1)

    @sprout.command("retrieve")
    @click.argument("query")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--paper", "doc_id", default=None, help="Search only this paper (doc id).")
    @click.option("-k", "k", type=int, default=5, show_default=True, help="Nodes to return.")
    @click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
    def retrieve_cmd(query, store_root, doc_id, k, as_json) -> None:
        """Retrieve SproutRAG nodes for QUERY across papers (or within one with --paper)."""
        import json

        from vectree.commands import cli_settings
        from vectree.retrieval.sprout.model import SproutUnavailableError
        from vectree.retrieval.sprout.papers import retrieve_in_paper, retrieve_papers
        from vectree.retrieval.store import Store

        store = Store(cli_settings(store_root).store_root).view()  # the published snapshot
        try:
            hits = retrieve_in_paper(store, doc_id, query, k) if doc_id else retrieve_papers(store, query, k)
        except SproutUnavailableError as exc:
            raise click.ClickException(str(exc)) from None
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        if as_json:
            click.echo(json.dumps(hits, indent=1))
            return
        if not hits:
            console.print("no nodes passed the threshold")
            return
        table = Table(title=f"SproutRAG: {query}", show_lines=True)
        for col in ("#", "paper", "node", "pages", "sentences", "score", "text"):
            table.add_column(col, overflow="fold")
        for i, h in enumerate(hits, 1):
            text = h["text"] if len(h["text"]) <= 600 else h["text"][:600] + " ..."
            table.add_row(str(i), h["doc_id"], str(h["node_id"]), ",".join(map(str, h["pages"])),
                          str(h["n_sentences"]), f"{h['score']:.3f}", text)
        console.print(table)
