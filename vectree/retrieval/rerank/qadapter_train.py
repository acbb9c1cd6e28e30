"""Training of the query adapter (:mod:`.qadapter`): kept apart so that loading an adapter (which
the reader does) never imports the calibration code that training scores dev with."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Sequence

import numpy as np

from .qadapter import QueryAdapter


def train_query_adapter(train: Sequence, dev: Sequence, embedder, *, epochs: int = 12, seed: int = 13,
                        lr: float = 1e-3, decay: float = 1e-3, temperature: float = 0.05, batch: int = 64,
                        progress: Callable[[dict[str, Any]], None] | None = None,
                        vectors: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None,
                        ) -> tuple[QueryAdapter, dict[str, Any]]:
    """Train ``D`` on ``train`` (reader examples: question, text, rel, group), keep the epoch with
    the best dev MRR (all sources together); return the adapter and its figures.

    Adam (lr 1e-3) with the L2 term on ``D`` was measured best of the tried recipes (Adam without
    the L2 term and SGD with momentum both lost dev MRR after a few epochs)."""
    import torch

    from .calibrate import group_metrics

    started = time.perf_counter()
    torch.manual_seed(seed)
    qvec, tvec = vectors or embed_examples(list(train) + list(dev), embedder)
    qs, ts = sorted(qvec), sorted(tvec)
    qi, ti = {q: i for i, q in enumerate(qs)}, {t: i for i, t in enumerate(ts)}
    Q = torch.tensor(np.stack([qvec[q] for q in qs]))
    T = torch.tensor(np.stack([tvec[t] for t in ts]))
    groups: dict[str, dict[str, Any]] = defaultdict(lambda: {"q": None, "pos": [], "neg": []})
    for e in train:
        g = groups[e.group]
        g["q"] = qi[e.question]
        (g["pos"] if e.rel else g["neg"]).append(ti[e.text])
    items = [(g["q"], p, g["neg"]) for _, g in sorted(groups.items()) for p in g["pos"]]
    if not items:
        raise ValueError("no training positives for the query adapter")
    dim = Q.shape[1]
    D = torch.zeros(dim, dim, requires_grad=True)
    opt = torch.optim.Adam([D], lr=lr)
    dev_q = torch.tensor([qi[e.question] for e in dev], dtype=torch.long)
    dev_t = torch.tensor([ti[e.text] for e in dev], dtype=torch.long)

    def adapt(q):
        out = q + q @ D
        return out / out.norm(dim=-1, keepdim=True)

    def dev_mrr(identity: bool = False) -> dict[str, float]:
        with torch.no_grad():
            qa = Q if identity else adapt(Q)
            scores = (qa[dev_q] * T[dev_t]).sum(-1).numpy()
        out = {"all": group_metrics(dev, scores)["mrr"]}
        for src in sorted({e.source for e in dev}):
            idx = [i for i, e in enumerate(dev) if e.source == src]
            out[src] = group_metrics([dev[i] for i in idx], scores[idx])["mrr"]
        return {k: round(float(v), 4) for k, v in out.items()}

    before = dev_mrr(identity=True)
    best = {"epoch": 0, "dev_mrr": before, "matrix": np.zeros((dim, dim), np.float32)}
    log = []
    rng = np.random.default_rng(seed)
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(items))
        total = 0.0
        for s in range(0, len(order), batch):
            chunk = [items[j] for j in order[s:s + batch]]
            q = adapt(Q[[c[0] for c in chunk]])
            pos = T[[c[1] for c in chunk]]
            negs = sorted({n for c in chunk for n in c[2]})
            cand = torch.cat([pos, T[negs]]) if negs else pos
            logits = q @ cand.T / temperature
            # another positive of the same question in the batch is not a negative
            same = torch.tensor([[chunk[a][0] == chunk[b][0] and a != b for b in range(len(chunk))]
                                 for a in range(len(chunk))])
            mask = torch.zeros_like(logits, dtype=torch.bool)
            mask[:, :len(chunk)] = same
            loss = (torch.nn.functional.cross_entropy(logits.masked_fill(mask, -1e4), torch.arange(len(chunk)))
                    + decay * (D ** 2).sum())
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(chunk)
        figures = dev_mrr()
        log.append({"epoch": epoch, "loss": round(total / len(items), 4), **{f"dev_mrr_{k}": v for k, v in figures.items()}})
        if progress:
            progress({"event": "adapter_epoch", **log[-1], "epochs": epochs})
        if figures["all"] > best["dev_mrr"]["all"] + 1e-6:
            best = {"epoch": epoch, "dev_mrr": figures, "matrix": D.detach().numpy().copy()}
    info = {"dim": dim, "epochs": epochs, "chosen_epoch": best["epoch"], "seed": seed, "lr": lr, "l2": decay,
            "temperature": temperature, "batch": batch, "train_positives": len(items),
            "dev_mrr_before": before, "dev_mrr_after": best["dev_mrr"], "log": log,
            "seconds": round(time.perf_counter() - started, 1)}
    return QueryAdapter(best["matrix"], info), info


def embed_examples(examples: Sequence, embedder) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Base vectors of every distinct question (query side) and text (document side)."""
    qs = sorted({e.question for e in examples})
    ts = sorted({e.text for e in examples})
    return dict(zip(qs, embedder.encode_queries(qs))), dict(zip(ts, embedder.encode_documents(ts)))
