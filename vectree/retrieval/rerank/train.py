"""Training the reader (:mod:`.model`) on :mod:`.data`, selecting on dev, calibrating on dev.

Loss per pair: binary cross-entropy on relevance + cross-entropy on the answer type (pairs with a
type target) + start/end cross-entropy on the answer span (pairs whose span survives truncation).
Only the LoRA adapters and the heads train; the base stays frozen.  Batches are built from
length-sorted pools (little padding), torch runs on ``threads`` threads (2 by default), and
training stops at ``max_epochs`` or when the ``time_budget_s`` is spent, whichever comes first; the
checkpoint with the best dev MRR (evaluated every ``eval_every`` steps on a fixed dev sample) is
kept.  Then the whole dev split calibrates the scores (:mod:`.calibrate`).
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .data import Example, ReaderData
from .calibrate import group_metrics
from .model import TYPES, Reader, ReaderConfig


@dataclass
class TrainSettings:
    seed: int = 13
    # the bi-encoder query adapter (qadapter.py): off by default. It lifted dev MRR (.860 -> .895
    # fused) but lost on the qasper evaluation (page P/R .314/.545 -> .274/.542), so it is an
    # experiment (`vectree reranker adapt`), not part of the shipped recipe
    query_adapter: bool = False
    batch_size: int = 16
    lr: float = 6e-4
    head_lr: float = 2e-3
    max_epochs: int = 2
    max_steps: int = 640  # a fixed count (about two epochs), so a run is the same on any machine
    time_budget_s: float = 28 * 60  # a safety stop; a run that hits it says so in its card
    eval_every: int = 160
    dev_sample: int = 160
    threads: int = 2
    max_len: int = 96
    lora_layers: int = 2
    # weight of a groupwise softmax loss beside the pointwise BCE: each question's candidates in one
    # batch, the positives' share of the softmax over them maximised (0: pointwise only)
    listwise: float = 0.0
    groups_per_batch: int = 3  # with listwise > 0: batches hold whole questions
    quick: bool = False
    device: str = "cpu"


@dataclass
class TrainResult:
    reader: Reader
    log: list[dict[str, Any]] = field(default_factory=list)
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    steps: int = 0


def _token_targets(enc, i: int, span: tuple[int, int] | None) -> tuple[int, int]:
    """Token start/end of a character span in the second segment of row ``i`` (-100 when lost)."""
    if span is None:
        return -100, -100
    a, b = span
    seq = enc.sequence_ids(i)
    offsets = enc["offset_mapping"][i].tolist()
    start = end = None
    for t, (sid, (x, y)) in enumerate(zip(seq, offsets)):
        if sid != 1 or y <= x:
            continue
        if start is None and x <= a < y or (start is None and x >= a):
            start = t
        if x < b:
            end = t
    if start is None or end is None or end < start:
        return -100, -100
    return start, end


def _batches(examples: Sequence[Example], size: int, rng: random.Random) -> list[list[Example]]:
    order = list(examples)
    rng.shuffle(order)
    out = []
    pool = size * 16
    for lo in range(0, len(order), pool):
        chunk = sorted(order[lo:lo + pool], key=lambda e: len(e.text) + len(e.question))
        out.extend(chunk[i:i + size] for i in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


def cosine_scores(examples: Sequence[Example], embedder, adapter=None) -> np.ndarray:
    """The bi-encoder's cosine of each pair (MiniLM: the "before" of the reranker), with the query
    vectors mapped by ``adapter`` (a :class:`~.qadapter.QueryAdapter`) when one is given."""
    qs = sorted({e.question for e in examples})
    ts = sorted({e.text for e in examples})
    qmat = np.asarray(embedder.encode_queries(qs) if hasattr(embedder, "encode_queries")
                      else [embedder.encode_query(q) for q in qs])
    qv = dict(zip(qs, adapter(qmat) if adapter is not None and len(qs) else qmat))
    tv = dict(zip(ts, embedder.encode_documents(ts)))
    return np.asarray([float(qv[e.question] @ tv[e.text]) for e in examples], np.float32)


def evaluate(reader: Reader, examples: Sequence[Example], *, batch: int = 32) -> dict[str, Any]:
    """Dev figures: ranking (MRR, P@1), answer-type accuracy, span token F1; with the raw readings."""
    from .calibrate import token_f1  # noqa: F401  (kept local as before)

    readings = reader.read([e.question for e in examples], [e.text for e in examples], batch=batch)
    scores = np.asarray([r.relevance for r in readings], np.float32)
    out: dict[str, Any] = group_metrics(examples, scores)
    typed = [(e, r) for e, r in zip(examples, readings) if e.type >= 0]
    if typed:
        out["type_accuracy"] = float(np.mean([max(r.type_probs, key=r.type_probs.get) == TYPES[e.type]
                                              for e, r in typed]))
    spans = [(e, r) for e, r in zip(examples, readings) if e.span is not None]
    if spans:
        out["span_f1"] = float(np.mean([token_f1(r.span, e.text[e.span[0]:e.span[1]]) for e, r in spans]))
    out["readings"] = readings
    return out


def _group_batches(examples: Sequence[Example], groups: int, rng: random.Random) -> list[list[Example]]:
    """Batches of whole questions (``groups`` of them each), shuffled: what a groupwise loss needs."""
    by_group: dict[str, list[Example]] = {}
    for e in examples:
        by_group.setdefault(e.group, []).append(e)
    keys = list(by_group)
    rng.shuffle(keys)
    return [[e for key in keys[i:i + groups] for e in by_group[key]] for i in range(0, len(keys), groups)]


def _groupwise_loss(rel, batch: Sequence[Example]):
    """Mean over the batch's questions with a positive and a negative of ``-log(sum softmax over
    the positives)``: the question's candidates ranked against each other, not scored alone."""
    import torch

    terms = []
    idx: dict[str, list[int]] = {}
    for i, e in enumerate(batch):
        idx.setdefault(e.group, []).append(i)
    for members in idx.values():
        pos = [i for i in members if batch[i].rel]
        if not pos or len(pos) == len(members):
            continue
        terms.append(torch.logsumexp(rel[members], 0) - torch.logsumexp(rel[pos], 0))
    return torch.stack(terms).mean() if terms else rel.sum() * 0.0


def train_reader(data: ReaderData, settings: TrainSettings | None = None, *,
                 progress: Callable[[dict[str, Any]], None] | None = None, embedder=None) -> TrainResult:
    import torch

    settings = settings or TrainSettings()
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    started = time.perf_counter()
    try:
        reader = Reader.fresh(ReaderConfig(max_len=settings.max_len, lora_layers=settings.lora_layers), seed=settings.seed)
        train = data.split("train")
        dev = data.split("dev")
        if not train or not dev:
            raise ValueError(f"the training data has {len(train)} train and {len(dev)} dev pairs; both are needed")
        dev_groups = sorted({e.group for e in dev})
        rng_dev = random.Random(settings.seed + 1)
        rng_dev.shuffle(dev_groups)
        sample_groups: set[str] = set()
        for g in dev_groups:
            if sum(1 for e in dev if e.group in sample_groups) >= settings.dev_sample:
                break
            sample_groups.add(g)
        dev_sample = [e for e in dev if e.group in sample_groups]
        result = TrainResult(reader)
        if embedder is not None:
            result.before = {f"cosine_{k}": v for k, v in group_metrics(dev, cosine_scores(dev, embedder)).items()}
        net = reader.net
        reader.threads = settings.threads
        device = torch.device(settings.device)
        net.to(device)
        lora = [p for n, p in net.named_parameters() if p.requires_grad and "lora_" in n]
        heads = [p for n, p in net.named_parameters() if p.requires_grad and "lora_" not in n]
        opt = torch.optim.AdamW([{"params": lora, "lr": settings.lr}, {"params": heads, "lr": settings.head_lr}],
                                weight_decay=0.01)
        if settings.listwise:
            make_batches = lambda: _group_batches(train, settings.groups_per_batch, rng)  # noqa: E731
            steps_per_epoch = math.ceil(len({e.group for e in train}) / settings.groups_per_batch)
        else:
            make_batches = lambda: _batches(train, settings.batch_size, rng)  # noqa: E731
            steps_per_epoch = math.ceil(len(train) / settings.batch_size)
        total = min(steps_per_epoch * settings.max_epochs, settings.max_steps)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / 20) * max(0.05, 1 - s / max(1, total)))
        bce = torch.nn.BCEWithLogitsLoss()
        ce = torch.nn.CrossEntropyLoss(ignore_index=-100)
        best = (-1.0, None)
        step = 0
        stop = False

        def dev_check() -> float:
            net.eval()
            m = evaluate(reader, dev_sample)
            net.train()
            entry = {"step": step, "epoch": round(step / steps_per_epoch, 2), "dev_mrr": round(m["mrr"], 4),
                     "dev_type_acc": round(m.get("type_accuracy", 0.0), 4), "dev_span_f1": round(m.get("span_f1", 0.0), 4),
                     "seconds": round(time.perf_counter() - started, 1)}
            result.log.append(entry)
            if progress:
                progress({"event": "eval", **entry, "total_steps": total})
            return m["mrr"]

        net.train()
        for epoch in range(settings.max_epochs):
            for batch in make_batches():
                enc = reader.tokenizer([e.question for e in batch], [e.text for e in batch], truncation="longest_first",
                                       max_length=settings.max_len, padding=True, return_tensors="pt",
                                       return_offsets_mapping=True)
                targets = [_token_targets(enc, i, e.span) for i, e in enumerate(batch)]
                enc.pop("offset_mapping")
                enc = {k: v.to(device) for k, v in enc.items()}
                rel, typ, start, end = net(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
                loss = bce(rel, torch.tensor([float(e.rel) for e in batch], device=device))
                if settings.listwise:
                    loss = loss + settings.listwise * _groupwise_loss(rel, batch)
                types = torch.tensor([e.type for e in batch], device=device)
                if (types >= 0).any():
                    loss = loss + 0.5 * ce(typ, types.masked_fill(types < 0, -100))
                st = torch.tensor([t[0] for t in targets], device=device)
                en = torch.tensor([t[1] for t in targets], device=device)
                if (st >= 0).any():
                    loss = loss + 0.5 * (ce(start, st) + ce(end, en)) / 2
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(lora + heads, 1.0)
                opt.step()
                sched.step()
                step += 1
                if progress:
                    progress({"event": "step", "step": step, "total_steps": total, "loss": loss.item(),
                              "seconds": time.perf_counter() - started})
                if step % settings.eval_every == 0:
                    mrr = dev_check()
                    if mrr > best[0]:
                        best = (mrr, {k: v.detach().clone() for k, v in net.trainable_state().items()})
                if step >= total:
                    stop = True
                    break
                if time.perf_counter() - started > settings.time_budget_s:
                    result.log.append({"event": "time budget reached", "step": step})
                    stop = True
                    break
            if stop:
                break
        if not result.log or result.log[-1].get("step") != step or "dev_mrr" not in result.log[-1]:
            mrr = dev_check()
            if mrr > best[0]:
                best = (mrr, {k: v.detach().clone() for k, v in net.trainable_state().items()})
        if best[1] is not None:
            net.load_state_dict(best[1], strict=False)
        net.eval()
        result.steps = step
        result.seconds = time.perf_counter() - started
        return result
    finally:
        torch.set_num_threads(previous_threads)


def fit_and_save(data: ReaderData, out_dir: Path, settings: TrainSettings | None = None, *,
                 progress: Callable[[dict[str, Any]], None] | None = None, embedder=None,
                 data_dir: str = "") -> dict[str, Any]:
    """Train, calibrate on the full dev split, save model + card into ``out_dir``; the summary."""
    settings = settings or TrainSettings()
    res = train_reader(data, settings, progress=progress, embedder=embedder)
    res.reader.config.model_id = time.strftime("reader-%Y%m%d-%H%M%S")
    res.reader.config.training = {
        "seed": settings.seed, "quick": settings.quick, "steps": res.steps, "seconds": round(res.seconds, 1),
        "batch_size": settings.batch_size, "lr": settings.lr, "head_lr": settings.head_lr, "threads": settings.threads,
        "device": settings.device, "max_epochs": settings.max_epochs, "max_steps": settings.max_steps,
        "time_budget_s": settings.time_budget_s, "max_len": settings.max_len, "lora_layers": settings.lora_layers,
        "counts": data.counts(), "before": res.before, "log": res.log, "data_dir": data_dir,
    }
    if embedder is not None and settings.query_adapter:
        fit_query_adapter(res.reader, data, embedder, quick=settings.quick, seed=settings.seed, progress=progress)
    summary = calibrate_and_save(res.reader, data, Path(out_dir), embedder=embedder, progress=progress,
                                 data_dir=data_dir, quick=settings.quick)
    return {"out": str(out_dir), "before": res.before, "after": res.reader.config.training["after"],
            "steps": res.steps, "seconds": res.seconds, "calibration": res.reader.config.calibration,
            "figures": summary}


ADAPTER_EPOCHS = 12
ADAPTER_EPOCHS_QUICK = 3


def fit_query_adapter(reader: Reader, data: ReaderData, embedder, *, quick: bool = False, seed: int = 13,
                      progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train the bi-encoder query adapter on the same training split, attach it to ``reader``
    (saved with it; its calibration is then fitted on the adapted cosine); its figures."""
    from .qadapter_train import train_query_adapter

    if progress:
        progress({"event": "adapter", "epochs": ADAPTER_EPOCHS_QUICK if quick else ADAPTER_EPOCHS})
    adapter, info = train_query_adapter(data.split("train"), data.split("dev"), embedder, seed=seed,
                                        epochs=ADAPTER_EPOCHS_QUICK if quick else ADAPTER_EPOCHS, progress=progress)
    reader.query_adapter = adapter
    reader.config.training["query_adapter"] = info
    return info


def calibrate_and_save(reader: Reader, data: ReaderData, out_dir: Path, *, embedder=None,
                       progress: Callable[[dict[str, Any]], None] | None = None,
                       data_dir: str | None = None, quick: bool = False) -> dict[str, Any]:
    """Read the whole dev split, calibrate (fusing the bi-encoder cosine when an embedder is
    given), write weights, ``config.json``, ``dev_curves.json`` and the model card; with
    ``data_dir`` (and an embedder) the cited evidence is calibrated on dev pages too
    (:mod:`.pages`; ``quick``: on 8 dev papers)."""
    from .calibrate import calibrate
    from .card import write_model_card

    dev = data.split("dev")
    if progress:
        progress({"event": "calibrate", "n": len(dev)})
    ev = evaluate(reader, dev)
    readings = ev.pop("readings")
    if embedder is not None and not reader.config.training.get("before"):
        base = cosine_scores(dev, embedder)
        reader.config.training["before"] = {f"cosine_{k}": v for k, v in group_metrics(dev, base).items()}
    # the cosine the reader's relevance fuses is the one used at query time: adapted, if it has one
    cosines = cosine_scores(dev, embedder, reader.query_adapter) if embedder is not None else None
    if cosines is not None and reader.query_adapter is not None:
        reader.config.training["adapted"] = {f"cosine_{k}": v for k, v in group_metrics(dev, cosines).items()}
    calibration, figures = calibrate(dev, readings, cosines)
    reader.config.calibration = calibration
    reader.config.training["after"] = {k: round(v, 4) if isinstance(v, float) else v for k, v in ev.items()}
    reader.config.training["dev_figures"] = figures["summary"]
    if data_dir and embedder is not None and (Path(data_dir) / "qasper" / "dev-questions").exists():
        from .pages import calibrate_pages

        if progress:
            progress({"event": "calibrate_pages"})
        chosen, curve = calibrate_pages(reader, Path(data_dir), embedder, limit=8 if quick else None)
        calibration["page_selection"] = chosen
        figures["page_selection_curve"] = curve
        figures["summary"]["page_selection"] = {k: chosen[k] for k in ("threshold", "margin", "max_cited",
                                                                        "precision", "recall", "mean_f1")}
    if data_dir and (Path(data_dir) / "qasper" / "dev-questions").exists() and (Path(data_dir) / "pubmedqa").exists():
        from vectree.retrieval.rerank.coverage import calibrate_coverage, training_episodes

        if progress:
            progress({"event": "calibrate_coverage"})
        block, curve = calibrate_coverage(training_episodes(Path(data_dir)))
        calibration["coverage"] = block
        figures["coverage_curve"] = curve
        figures["summary"]["coverage"] = block
        from vectree.retrieval.rerank.coverage import calibrate_passage_coverage

        block, curve = calibrate_passage_coverage(Path(data_dir))
        calibration["passage_coverage"] = block
        figures["passage_coverage_curve"] = curve
        figures["summary"]["passage_coverage"] = block
        from vectree.retrieval.rerank.second_paper import calibrate_second_paper, second_paper_episodes

        block, curve = calibrate_second_paper(second_paper_episodes(Path(data_dir)))
        calibration["second_paper"] = block
        figures["second_paper_curve"] = curve
        figures["summary"]["second_paper"] = block
    reader.save(out_dir)
    (Path(out_dir) / "dev_curves.json").write_text(json.dumps(figures, indent=1))
    write_model_card(Path(out_dir), reader.config)
    return figures["summary"]


QUICK = dict(max_steps=40, eval_every=20, dev_sample=60, time_budget_s=150.0)
NEEDED_FILES = ("qasper/dev-questions/dev_question_dict.json", "hotpotqa/ircot_format_dev_subsampled.jsonl",
                "pubmedqa/corpus.jsonl", "pubmedqa/questions.jsonl")


def resolve_data_dir(data_dir: str | None = None) -> Path:
    """``data_dir``, else ``$VECTREE_TRAINING_DATA``, else ``../shared/data`` next to the repository;
    a clear error naming the missing files."""
    import os

    from vectree.retrieval.sprout.data import TrainingDataError

    if not data_dir:
        from vectree.retrieval.config import load_settings

        settings = load_settings()
        data_dir = str(settings.training_data or settings.shared_data)
    path = Path(data_dir)
    missing = [str(path / f) for f in NEEDED_FILES if not (path / f).exists()]
    if missing:
        raise TrainingDataError("reranker training data not found: missing " + ", ".join(missing)
                                + ". Point VECTREE_TRAINING_DATA (or --data) at a folder laid out like ../shared/data.")
    return path


def train_from_data_dir(data_dir: str | None, out_dir: Path, *, quick: bool = False, seed: int = 13,
                        threads: int = 2, progress: Callable[[dict[str, Any]], None] | None = None,
                        data: ReaderData | None = None, max_steps: int = 0) -> dict[str, Any]:
    """The whole recipe behind ``vectree reranker train`` and the ``reranker_model`` asset."""
    from vectree.retrieval.embed import get_embedder

    from .data import build_reader_data

    path = resolve_data_dir(data_dir) if data is None else Path(data_dir or ".")
    if data is None:
        if progress:
            progress({"event": "data", "data_dir": str(path)})
        data = build_reader_data(path, seed=seed, quick=quick)
    if progress:
        progress({"event": "counts", "counts": data.counts()})
    settings = TrainSettings(seed=seed, threads=threads, quick=quick, **(QUICK if quick else {}))
    if max_steps:
        settings.max_steps = max_steps
    return fit_and_save(data, Path(out_dir), settings, progress=progress, embedder=get_embedder(),
                        data_dir=str(path))


def recalibrate(folder: Path, data_dir: str | None = None, *, data: ReaderData | None = None,
                embedder=None, adapt: bool = False,
                progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Re-run the dev calibration of a trained model in place (same data recipe, same seed);
    with ``adapt``, (re)train its query adapter first (``vectree reranker adapt``)."""
    from .data import build_reader_data

    reader = Reader.load(folder)
    t = reader.config.training
    # the folder the page-level calibration reads too (None: only in-memory data was given)
    path = resolve_data_dir(data_dir) if data_dir or data is None else None
    if data is None:
        if progress:
            progress({"event": "data", "data_dir": str(path)})
        data = build_reader_data(path, seed=int(t.get("seed", 13)), quick=bool(t.get("quick")))
    if adapt:
        if embedder is None:
            from vectree.retrieval.embed import get_embedder

            embedder = get_embedder()
        fit_query_adapter(reader, data, embedder, quick=bool(t.get("quick")), seed=int(t.get("seed", 13)),
                          progress=progress)
    return calibrate_and_save(reader, data, Path(folder), embedder=embedder, progress=progress,
                              data_dir=str(path) if path else None,
                              quick=bool(t.get("quick")))
