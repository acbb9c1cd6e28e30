"""``vectree sprout``: train the SproutRAG model (through Dagster) and retrieve with it."""

from __future__ import annotations

import logging
import sys

import click
from rich.console import Console
from rich.table import Table

console = Console()
err = Console(stderr=True)


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
                          epochs: int = 0, seed: int = 13, rebuild_trees: bool = True, quiet: bool = False) -> dict:
    """Materialise ``sprout_training_set`` and ``sprout_model`` with training switched on, then
    rebuild ``sprout_tree`` for every paper partition; returns a summary."""
    import dagster as dg

    from vectree.pipelines.definitions import defs
    from vectree.pipelines.refresh import QUIET_RUN_CONFIG, instance_for
    from vectree.assets.partitions import papers_partitions
    from vectree.retrieval.sprout.model import load_current_model

    from vectree.retrieval.sprout.data import TrainingDataError, resolve_training_data

    try:  # fail before starting a run when the data is not there
        resolve_training_data(data_dir or None)
    except TrainingDataError as exc:
        raise click.ClickException(str(exc)) from None
    resources = _resources(store_root)
    store = resources["vectree"].store
    instance = instance_for(store)
    assets = list(defs.assets or [])
    run_config = {
        **QUIET_RUN_CONFIG,
        "ops": {
            "sprout_training_set": {"config": {"build": True, "quick": quick, "data_dir": data_dir}},
            "sprout_model": {"config": {"train": True, "quick": quick, "epochs": epochs, "seed": seed}},
        },
    }
    result = dg.materialize(assets, selection=[dg.AssetKey("sprout_training_set"), dg.AssetKey("sprout_model")],
                            instance=instance, resources=resources, run_config=run_config,
                            raise_on_error=False)
    if not result.success:
        raise click.ClickException(_failure_message(result) or "training run failed")
    model = load_current_model(store)
    rebuilt, failed = [], {}
    if rebuild_trees:
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
                       resources={"vectree": resource}, run_config=QUIET_RUN_CONFIG)
    return {"model": model, "trees": rebuilt, "failed": failed}


class _StatusHandler(logging.Handler):
    """Shows the latest progress line in a rich status spinner; when stderr is not a terminal
    (a scheduled job's log), prints every line instead so the log keeps them."""

    def __init__(self, status):
        super().__init__(level=logging.INFO)
        self.status = status

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.status.update(f"SproutRAG: {message}")
        if not err.is_terminal:
            err.print(message)


def register(group: click.Group) -> None:
    @group.group()
    def sprout() -> None:
        """SproutRAG: learned sentence trees per paper (train a model, retrieve nodes)."""

    @sprout.command("train")
    @click.option("--store", "store_root", type=click.Path(file_okay=False), default=None,
                  help="Artefact store root (default: $VECTREE_STORE or ./.vectree).")
    @click.option("--quick", is_flag=True, help="A small training set and few epochs (about a minute).")
    @click.option("--data", "data_dir", default="", help="Training data folder laid out like ../shared/data "
                  "(default: $VECTREE_TRAINING_DATA, else ../shared/data next to the repository).")
    @click.option("--epochs", type=int, default=0, help="Override the number of epochs.")
    @click.option("--seed", type=int, default=13, show_default=True)
    @click.option("--no-trees", is_flag=True, help="Train only; do not rebuild the papers' trees.")
    def train_cmd(store_root, quick, data_dir, epochs, seed, no_trees) -> None:
        """Build the training set, train the model (through Dagster), rebuild every paper's tree."""
        from vectree.assets.sprout import PROGRESS_LOGGER

        with err.status("training SproutRAG (embedding the training set, then a few epochs)...") as status:
            # each progress line of the assets replaces the status text (epochs, ETA of embedding)
            handler = _StatusHandler(status)
            logger = logging.getLogger(PROGRESS_LOGGER)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            try:
                out = train_through_dagster(store_root, quick=quick, data_dir=data_dir, epochs=epochs, seed=seed,
                                            rebuild_trees=not no_trees)
            finally:
                logger.removeHandler(handler)
        model = out["model"]
        tr = model.config.training
        table = Table(title=f"SproutRAG model {model.config.model_id}")
        for col in ("stage", "fold", "epoch", "loss", "parts", "dev"):
            table.add_column(col, justify="right" if col != "parts" else "left")
        for h in tr.get("history", []):
            if "loss" not in h:
                continue
            parts = " ".join(f"{k[2:]} {h[k]:.4f}" for k in ("l_leaf", "l_node", "l_attn", "l_rerank", "l_tau") if k in h)
            dev = (h.get("dev") or {}).get("mean_ie", (h.get("dev_r_precision") or {}).get("mean", ""))
            table.add_row(str(h["stage"]), "" if h.get("fold") is None else str(h["fold"]), str(h["epoch"]),
                          f"{h['loss']:.4f}", parts, str(dev))
        console.print(table)
        console.print(f"dev IE {tr['dev_before'].get('mean_ie')} -> {tr['dev_best'].get('mean_ie')} "
                      f"(best epoch {tr['best_epoch']}), {model.n_parameters():,} parameters, "
                      f"{tr['seconds']}s; trees rebuilt for {len(out['trees'])} papers")
        for doc_id, e in out["failed"].items():
            err.print(f"[red]tree failed[/] {doc_id}: {e}")
        if out["failed"]:
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
