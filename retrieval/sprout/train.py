"""Joint training of the SproutRAG model: ``L = L_ret + lambda * L_attn + mu * L_tau``.

Per document (all its queries at once), with ``s = cos(q, h)`` the query's cosine to every
contextual chunk vector:

* ``L_ret``: InfoNCE at temperature ``T`` (0.05): each positive chunk against the document's
  other chunks (hard negatives from the same document),
  ``-log exp(s_p/T) / (exp(s_p/T) + sum_neg exp(s_n/T))``, averaged over positives and queries.
* ``L_attn``: for a query with positives ``P`` (co-relevant chunks), each ``i in P`` should give
  its mutual attention to the other members of ``P``:
  ``-log(sum_{j in P, j != i} M_ij / sum_{j != i} M_ij)`` with ``M = (A + A^T)/2`` the mutual
  attention aggregated by ``softmax(alpha)``; its gradient reaches ``alpha`` and every
  attention head of the encoder (the reference's released training has no such pairs and no
  encoder gradient, so its aggregation never learns).
* ``L_tau``: binary cross-entropy of ``sigmoid((s - tau) / t)`` against chunk relevance, on
  detached scores, so it calibrates the threshold ``tau`` and temperature ``t`` (used for the
  candidate threshold and the expected-IE reranker) without bending the embeddings.

After every epoch the dev split is scored with the real pipeline (trees, beam search, rerank) and
the best epoch by mean dev IE@{1,3,5} is kept (model selection).  Runs are seeded and
single-process: the same data, config and thread count give the same weights.
"""

from __future__ import annotations

import copy
import resource
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .data import TrainingSet
from .encoder import EncoderConfig, aggregate_attention
from .model import SproutConfig, SproutModel
from .search import SearchParams, search_forest


@dataclass
class TrainConfig:
    seed: int = 13
    epochs: int = 10
    lr: float = 1e-3
    alpha_lr: float = 5e-2
    tau_lr: float = 2e-2
    weight_decay: float = 1e-2
    temperature: float = 0.05
    attn_weight: float = 0.1  # lambda
    threshold_weight: float = 1.0  # mu
    max_chunks: int = 1024  # longer training documents are cropped around their positives
    threads: int = 2
    dev_ks: tuple[int, ...] = (1, 3, 5)

    @classmethod
    def quick(cls, **kw) -> "TrainConfig":
        kw.setdefault("epochs", 4)
        return cls(**kw)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    model: SproutModel
    history: list[dict]
    best_epoch: int
    seconds: float
    peak_rss_mb: float
    dev_before: dict
    dev_best: dict

    def summary(self) -> dict:
        return {
            "best_epoch": self.best_epoch, "seconds": round(self.seconds, 1), "peak_rss_mb": round(self.peak_rss_mb, 1),
            "dev_before": self.dev_before, "dev_best": self.dev_best,
            "losses": [{k: h[k] for k in ("epoch", "loss", "l_ret", "l_attn", "l_tau")} for h in self.history if "loss" in h],
        }


def document_losses(model: SproutModel, x: torch.Tensor, para: torch.Tensor, xq: torch.Tensor,
                    positives: Sequence[Sequence[int]], cfg: TrainConfig) -> dict[str, torch.Tensor]:
    """The three losses for one document and its queries (see the module docstring)."""
    n = x.shape[0]
    h, maps = model.encoder(x, para)
    q = model.encode_query_tensor(xq)
    s = q @ h.T  # (Q, n)
    labels = torch.zeros_like(s)
    for i, pos in enumerate(positives):
        labels[i, list(pos)] = 1.0
    # InfoNCE, each positive against the negatives of its query
    logits = s / cfg.temperature
    neg = logits.masked_fill(labels.bool(), float("-inf"))
    lse_neg = torch.logsumexp(neg, dim=1, keepdim=True)
    per_pos = -logits + torch.logaddexp(logits, lse_neg)
    l_ret = ((per_pos * labels).sum(1) / labels.sum(1).clamp(min=1)).mean()
    # attention: co-relevant chunks attend to each other
    a = aggregate_attention(maps, model.alpha)
    m = (a + a.T) / 2 * (1 - torch.eye(n, dtype=a.dtype))
    terms = []
    for i, pos in enumerate(positives):
        if len(pos) < 2:
            continue
        p = labels[i]
        rows = m[list(pos)]
        num = (rows * p[None, :]).sum(1)
        den = rows.sum(1)
        terms.append(-(torch.log(num + 1e-9) - torch.log(den + 1e-9)).mean())
    l_attn = torch.stack(terms).mean() if terms else torch.zeros(())
    # threshold calibration on detached scores
    t = model.log_tau_temperature.exp()
    l_tau = F.binary_cross_entropy_with_logits((s.detach() - model.tau) / t, labels)
    return {"l_ret": l_ret, "l_attn": l_attn, "l_tau": l_tau}


def _crop(x: np.ndarray, para: list[int], positives: list[list[int]], max_chunks: int, rng: np.random.Generator):
    n = len(x)
    if n <= max_chunks:
        return x, para, positives
    centre = int(np.median([p for pos in positives for p in pos]))
    start = int(np.clip(centre - max_chunks // 2 + rng.integers(-max_chunks // 4, max_chunks // 4 + 1), 0, n - max_chunks))
    end = start + max_chunks
    pos = [[p - start for p in ps if start <= p < end] for ps in positives]
    return x[start:end], para[start:end], pos


def dev_metrics(model: SproutModel, ts: TrainingSet, ks: Sequence[int] = (1, 3, 5), params: SearchParams | None = None,
                *, uniform_alpha: bool = False) -> dict:
    """IE/recall/precision at k on a training-format split with the real retrieval pipeline.

    A unit's size is its sentence count; gold = the query's positive chunks, weighted by their
    sentences (chunks are whole sentences, so this is the sentence-level scorer's count).
    """
    params = params or model.search_params()
    per_source: dict[str, list[dict]] = {}
    for doc, x, xq in zip(ts.docs, ts.x, ts.xq):
        dt_ = model.document_tree(x, doc.para, doc.weights, uniform_alpha=uniform_alpha)
        w = np.asarray(doc.weights, dtype=float)
        qv = model.encode_query(xq) if len(xq) else xq
        for qi, query in enumerate(doc.queries):
            hits = search_forest([dt_.tree], qv[qi], params, k=max(ks))
            gold = set(query.positives)
            gw = w[list(gold)].sum()
            row = {}
            for k in ks:
                units = [dt_.tree.leaves(c.node) for c in hits[:k]]
                covered = {c for u in units for c in u} & gold
                returned = sum(w[u].sum() for u in units)
                r = w[list(covered)].sum() / gw if gw else 0.0
                p = w[list(covered)].sum() / returned if returned else 0.0
                row[f"ie@{k}"], row[f"recall@{k}"], row[f"precision@{k}"] = r * p, r, p
            per_source.setdefault(doc.source, []).append(row)
    out: dict = {}
    for src, rows in sorted(per_source.items()):
        out[src] = {key: round(float(np.mean([r[key] for r in rows])), 4) for key in rows[0]}
        out[src]["n"] = len(rows)
    if out:
        out["mean_ie"] = round(float(np.mean([v[f"ie@{k}"] for v in out.values() if isinstance(v, dict) for k in ks])), 4)
    return out


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def train(train_set: TrainingSet, dev_set: TrainingSet, config: TrainConfig | None = None, *,
          model_config: SproutConfig | None = None, log: Callable[[str], None] | None = print,
          progress: Callable[[int, int], None] | None = None) -> TrainResult:
    """Train a :class:`SproutModel` on ``train_set``, selecting the epoch by dev IE."""
    cfg = config or TrainConfig()
    if not train_set.docs:
        raise ValueError("empty training set")
    threads_before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    started = time.perf_counter()
    base = train_set.info.get("base_encoder", "all-MiniLM-L6-v2")
    dim = int(train_set.x[0].shape[1])
    mc = model_config or SproutConfig(base_encoder=base, base_dim=dim, encoder=EncoderConfig(input_dim=dim))
    model = SproutModel(mc)
    enc_params = list(model.encoder.parameters()) + list(model.query_adapter.parameters())
    opt = torch.optim.AdamW([
        {"params": enc_params, "lr": cfg.lr, "weight_decay": cfg.weight_decay},
        {"params": [model.alpha], "lr": cfg.alpha_lr, "weight_decay": 0.0},
        {"params": [model.tau, model.log_tau_temperature], "lr": cfg.tau_lr, "weight_decay": 0.0},
    ])
    docs = [i for i, d in enumerate(train_set.docs) if d.queries]
    steps_total = cfg.epochs * len(docs)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=[cfg.lr, cfg.alpha_lr, cfg.tau_lr], total_steps=max(steps_total, 1), pct_start=0.1,
        anneal_strategy="cos")
    history: list[dict] = []
    dev_before = dev_metrics(model, dev_set, cfg.dev_ks) if dev_set.docs else {}
    history.append({"epoch": 0, "dev": dev_before, "alpha": model.alpha_weights().tolist(),
                    "tau": float(model.tau), "tau_temperature": float(model.log_tau_temperature.exp())})
    if log:
        log(f"epoch 0: dev {dev_before.get('mean_ie')} tau {float(model.tau):.3f}")
    best_score, best_epoch, best_state = dev_before.get("mean_ie", -1.0), 0, copy.deepcopy(model.state_dict())
    step = 0
    try:
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            sums = {"loss": 0.0, "l_ret": 0.0, "l_attn": 0.0, "l_tau": 0.0}
            for i in rng.permutation(docs):
                d = train_set.docs[int(i)]
                x, para, pos = _crop(train_set.x[int(i)], d.para, [q.positives for q in d.queries], cfg.max_chunks, rng)
                keep = [j for j, p in enumerate(pos) if p]
                if not keep:
                    continue
                losses = document_losses(
                    model, torch.from_numpy(np.ascontiguousarray(x)), torch.as_tensor(para, dtype=torch.long),
                    torch.from_numpy(train_set.xq[int(i)][keep]), [pos[j] for j in keep], cfg)
                loss = losses["l_ret"] + cfg.attn_weight * losses["l_attn"] + cfg.threshold_weight * losses["l_tau"]
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                step += 1
                sums["loss"] += float(loss)
                for k in ("l_ret", "l_attn", "l_tau"):
                    sums[k] += float(losses[k])
                if progress:
                    progress(step, steps_total)
            n = max(len(docs), 1)
            row = {"epoch": epoch, **{k: round(v / n, 5) for k, v in sums.items()}}
            row["dev"] = dev_metrics(model, dev_set, cfg.dev_ks) if dev_set.docs else {}
            row["alpha"] = model.alpha_weights().tolist()
            row["tau"] = round(float(model.tau), 5)
            row["tau_temperature"] = round(float(model.log_tau_temperature.exp()), 5)
            row["seconds"] = round(time.perf_counter() - started, 1)
            history.append(row)
            score = row["dev"].get("mean_ie", -row["loss"])
            if log:
                log(f"epoch {epoch}: loss {row['loss']:.4f} (ret {row['l_ret']:.4f} attn {row['l_attn']:.4f} "
                    f"tau {row['l_tau']:.4f}) dev {row['dev'].get('mean_ie')} tau {row['tau']:.3f} "
                    f"t {row['tau_temperature']:.3f} [{row['seconds']}s]")
            if score > best_score:
                best_score, best_epoch, best_state = score, epoch, copy.deepcopy(model.state_dict())
    finally:
        torch.set_num_threads(threads_before)
    model.load_state_dict(best_state)
    model.eval()
    seconds = time.perf_counter() - started
    dev_best = next(h["dev"] for h in history if h["epoch"] == best_epoch)
    model.config.training = {
        "train_config": cfg.to_dict(), "data": train_set.info, "best_epoch": best_epoch,
        "seconds": round(seconds, 1), "dev_before": dev_before, "dev_best": dev_best,
        "history": [{k: v for k, v in h.items() if k != "alpha"} for h in history],
        "alpha_before": history[0]["alpha"], "alpha_after": model.alpha_weights().tolist(),
        "n_parameters": model.n_parameters(),
    }
    return TrainResult(model, history, best_epoch, seconds, _peak_rss_mb(), dev_before, dev_best)
