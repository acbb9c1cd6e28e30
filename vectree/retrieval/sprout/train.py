"""Training the SproutRAG model.

**Stage 1, joint encoder training** ``L = L_ret + lambda * L_attn`` per document (all its queries
at once), with ``s = cos(q, h)`` the query's cosine to every contextual chunk vector:

* ``L_ret`` = chunk InfoNCE + node InfoNCE, temperature ``T`` = 0.05.  Chunks: each positive
  chunk against the document's other chunks (hard negatives from the same document) and against
  a bank of detached chunk vectors of the previous documents (so that scores stay comparable
  across documents, which multi-document search needs: without it, contextual scores rank
  chunks of different documents worse than plain MiniLM does).  Nodes: the
  tree the current attention builds is formed (non-differentiable merges), its progressive node
  vectors stay differentiable in ``h``, and the nodes that are (nearly) the best single answer --
  by IE against the query's positives -- are the positives against every other node.
* ``L_attn``: for a query with positives ``P`` (co-relevant chunks), each ``i in P`` should give
  its mutual attention to the other members of ``P``:
  ``-log(sum_{j in P, j != i} M_ij / sum_{j != i} M_ij)``, ``M = (A + A^T)/2`` aggregated by
  ``softmax(alpha)``; its gradient reaches ``alpha`` and every attention head (the reference's
  released training has no such pairs and no encoder gradient, so its aggregation never learns).

The epoch is selected by the dev split's chunk R-precision.

**Stage 2, reranker and threshold** ``L = L_rerank + mu * L_tau`` on node features
(:func:`vectree.retrieval.sprout.search.node_features`): ``L_rerank`` = BCE of the node-precision logit
``z`` against the node's true precision + a listwise term putting the best single-answer nodes
first by ``log(sigmoid(z)^2 * size)``; ``L_tau`` = BCE of ``sigmoid((z - tau) / t)`` against "most
of the node is relevant", on detached logits, which learns the candidate threshold ``tau``.
Each query is trained alone on its document and again inside a forest with the documents routing
would pick for it (the other documents' nodes all negatives).  The features are **cross-fitted**: the training documents are split in two folds, an encoder is
trained (stage 1, same schedule) on each fold, and each document's features come from the encoder
that never saw it -- trained on its own documents, an encoder's scores are far more confident than
on new ones, and a reranker fitted to those would not transfer.  The epoch is selected by dev IE
with the full pipeline (trees, beam search, threshold, rerank).

**Text nodes** (``TrainConfig.text_node_chunks``, 8 by default, 4 with ``quick``): stage 1 is
unchanged (its node loss uses the differentiable progressive vectors); stage 2 and every dev
figure use the trees as search sees them, whose small nodes carry the MiniLM vector of their own
text, embedded through ``TrainingSet.encode`` (set by ``build_training_set`` and the Dagster
asset, both through the training cache; ``train`` falls back to the uncached encoder).

Runs are seeded and single-process: the same data, config and thread count give the same weights.
"""

from __future__ import annotations

import copy
import hashlib
import resource
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .data import TrainingSet
from .encoder import EncoderConfig, aggregate_attention
from .model import SproutConfig, SproutModel
from .lexical import LEXICAL_FEATURES, QueryLexicon
from .search import FEATURE_NAMES, SearchParams, node_features, unit_rows
from .tree import Tree, mutual_attention, progressive_weights, single_linkage, tree_from_merges


@dataclass
class TrainConfig:
    seed: int = 13
    epochs: int = 3  # stage 1 (encoder); the best by dev R-precision is kept
    rerank_epochs: int = 8  # stage 2 (reranker + threshold); the best by dev IE is kept
    lr: float = 3e-4
    structure_lr: float = 1e-2  # the position / paragraph attention biases
    scorer_lr: float = 3e-4
    alpha_lr: float = 2e-2
    tau_lr: float = 2e-2
    weight_decay: float = 1e-2
    temperature: float = 0.05
    attn_weight: float = 0.1  # lambda
    node_weight: float = 1.0  # the node InfoNCE inside L_ret
    node_positive_ratio: float = 0.9  # nodes within this fraction of the best node's IE are positives
    threshold_weight: float = 1.0  # mu
    cross_fit: bool = True
    bank_size: int = 2048  # chunks of recent other documents used as extra negatives (stage 1)
    forest_size: int = 8  # stage 2 also trains on forests of this many documents (multi-document search)
    max_chunks: int = 1024  # longer training documents are cropped around their positives
    threads: int = 2
    dev_ks: tuple[int, ...] = (1, 3, 5)
    # the new model's SproutConfig.text_node_chunks (and its search's scan_chunks): nodes of up to
    # this many chunks are represented by the MiniLM vector of their text; 0: progressive only
    text_node_chunks: int = 8
    # stage 2 learns to rank only the nodes inside one paragraph, and the model searches only those
    # (SearchParams.single_paragraph on).  False: every node, and the restriction is turned on
    # after training only if it raises dev IE.  Chosen on dev (HotpotQA + QASPER, seed 13): mean
    # dev IE .2300 trained for it against .2287 for every node (HotpotQA IE@1 .422 vs .353,
    # QASPER .237 vs .275)
    single_paragraph: bool = True
    # the scorer also reads the query's words in each node (retrieval.sprout.lexical): the BM25
    # features; False trains the cosine-only scorer of the models before (v1..v3)
    lexical: bool = True

    @classmethod
    def quick(cls, **kw) -> "TrainConfig":
        """A run of well under two minutes on 2 cores (with the small training set of ``quick``):
        fewer epochs, and the reranker trained on the encoder's own features (no cross-fitting)."""
        kw.setdefault("epochs", 2)
        kw.setdefault("rerank_epochs", 3)
        kw.setdefault("cross_fit", False)
        # text nodes of up to 4 chunks: embedding the small nodes of every tree version the run
        # builds is most of a quick run's time (8 chunks: 104 s of training, 149 s in all, cold)
        kw.setdefault("text_node_chunks", 4)
        return cls(**kw)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    model: SproutModel
    history: list[dict]
    best_epoch: int
    best_rerank_epoch: int
    seconds: float
    peak_rss_mb: float
    dev_before: dict
    dev_best: dict


# ---- losses --------------------------------------------------------------------------------
def node_targets(member: np.ndarray, weights: np.ndarray, positives: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per query and node: the node's IE as a single answer unit (recall x precision over the
    query's positive sentences) and its precision.  ``member``: ``(nodes, n)`` 0/1."""
    w = np.asarray(weights, dtype=np.float32)
    size = member @ w
    gold = np.zeros((len(positives), len(w)), dtype=np.float32)
    for i, pos in enumerate(positives):
        gold[i, list(pos)] = 1.0
    covered = (gold * w) @ member.T
    total = (gold * w).sum(1, keepdims=True)
    precision = covered / size[None, :]
    return (covered / np.maximum(total, 1e-9)) * precision, precision


def median_evidence(data) -> float | None:
    """The median number of sentences a training query's evidence holds (its positives' weights):
    the search's ``gold_cap``.  None without queries."""
    sizes = [sum(d.weights[i] for i in q.positives) for d in data.docs for q in d.queries if q.positives]
    return float(np.median(sizes)) if sizes else None


def best_nodes(ie: np.ndarray, ratio: float) -> np.ndarray:
    return ie >= np.maximum(ratio * ie.max(1, keepdims=True), 1e-6)


def encoder_losses(model: SproutModel, x: torch.Tensor, para: torch.Tensor, weights: Sequence[float],
                   xq: torch.Tensor, positives: Sequence[Sequence[int]], cfg: TrainConfig,
                   bank: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Stage-1 losses of one document and its queries (see the module docstring).

    ``bank``: detached chunk vectors of other documents (recent steps), extra negatives that keep
    scores comparable across documents; ``out["h"]`` returns this document's vectors for it.
    """
    n = x.shape[0]
    h, maps = model.encoder(x, para)
    q = model.encode_query_tensor(xq)
    s = q @ h.T  # (Q, n)
    labels = torch.zeros_like(s)
    for i, pos in enumerate(positives):
        labels[i, list(pos)] = 1.0
    logits = s / cfg.temperature
    neg = logits.masked_fill(labels.bool(), float("-inf"))
    if bank is not None and len(bank):
        neg = torch.cat([neg, (q @ bank.T) / cfg.temperature], dim=1)
    lse_neg = torch.logsumexp(neg, dim=1, keepdim=True)
    per_pos = -logits + torch.logaddexp(logits, lse_neg)
    l_leaf = ((per_pos * labels).sum(1) / labels.sum(1).clamp(min=1)).mean()
    a = aggregate_attention(maps, model.alpha)
    m = (a + a.T) / 2 * (1 - torch.eye(n, dtype=a.dtype))
    terms = []
    for i, pos in enumerate(positives):
        if len(pos) < 2:
            continue
        rows = m[list(pos)]
        terms.append(-(torch.log((rows * labels[i][None, :]).sum(1) + 1e-9) - torch.log(rows.sum(1) + 1e-9)).mean())
    l_attn = torch.stack(terms).mean() if terms else torch.zeros(())
    out = {"l_leaf": l_leaf, "l_attn": l_attn, "l_node": torch.zeros(()), "h": h.detach()}
    if cfg.node_weight and n > 1:
        merges = single_linkage(mutual_attention(a.detach().numpy()))
        prog, member = progressive_weights(merges, n)
        sn = q @ F.normalize(torch.from_numpy(prog) @ h, dim=-1).T
        ie, _ = node_targets(member, np.asarray(weights, dtype=np.float32), positives)
        best = torch.from_numpy(best_nodes(ie, cfg.node_positive_ratio))
        nl = sn / cfg.temperature
        out["l_node"] = (torch.logsumexp(nl, 1) - torch.logsumexp(nl.masked_fill(~best, float("-inf")), 1)).mean()
    out["l_ret"] = out["l_leaf"] + cfg.node_weight * out["l_node"]
    out["loss"] = out["l_ret"] + cfg.attn_weight * out["l_attn"]
    return out


@dataclass
class _RerankItem:
    features: torch.Tensor  # (Q, nodes, F)
    precision: torch.Tensor  # (Q, nodes)
    best: torch.Tensor  # (Q, nodes) bool
    log_size: torch.Tensor  # (nodes,)


def rerank_losses(model: SproutModel, item: _RerankItem, cfg: TrainConfig) -> dict[str, torch.Tensor]:
    """Stage-2 losses on one document's node features (see the module docstring)."""
    z = model.node_scorer(item.features)
    l_bce = F.binary_cross_entropy_with_logits(z, item.precision)
    lv = 2 * F.logsigmoid(z) + item.log_size[None, :]
    l_list = (torch.logsumexp(lv, 1) - torch.logsumexp(lv.masked_fill(~item.best, float("-inf")), 1)).mean()
    t = model.log_tau_temperature.exp()
    l_tau = F.binary_cross_entropy_with_logits((z.detach() - model.tau) / t, (item.precision >= 0.5).float())
    l_rerank = l_bce + l_list
    return {"l_rerank": l_rerank, "l_tau": l_tau, "loss": l_rerank + cfg.threshold_weight * l_tau}


# ---- helpers ---------------------------------------------------------------------------------
def _crop(x: np.ndarray, para: list[int], weights: list[int], positives: list[list[int]], max_chunks: int,
          rng: np.random.Generator):
    n = len(x)
    if n <= max_chunks:
        return x, para, weights, positives
    centre = int(np.median([p for pos in positives for p in pos]))
    start = int(np.clip(centre - max_chunks // 2 + rng.integers(-max_chunks // 4, max_chunks // 4 + 1), 0, n - max_chunks))
    end = start + max_chunks
    pos = [[p - start for p in ps if start <= p < end] for ps in positives]
    return x[start:end], para[start:end], weights[start:end], pos


def _doc_tree(model: SproutModel, doc, x: np.ndarray, ts: TrainingSet, *, uniform_alpha: bool = False) -> Tree:
    """The document's tree as search will see it (text nodes embedded when the model has them)."""
    return model.document_tree(x, doc.para, doc.weights, uniform_alpha=uniform_alpha, texts=doc.chunks,
                               encode=ts.encode).tree


@torch.no_grad()
def _doc_rerank_items(model: SproutModel, ts: TrainingSet, cfg: TrainConfig) -> list[_RerankItem]:
    """Reranker training items of the documents of ``ts`` under ``model`` (no gradient).

    Each document with queries gives one item searched alone and, with ``forest_size > 1``, per
    query one searched together with the ``forest_size - 1`` other documents of ``ts`` that
    routing would pick for it (best leaf), whose nodes are all negatives: the reranker learns to
    compare nodes across similar documents, as multi-document search needs.
    """
    rng = np.random.default_rng(cfg.seed + 7)
    prepared = []
    for doc, x, xq in zip(ts.docs, ts.x, ts.xq):
        if doc.n < 2:
            continue
        tree = _doc_tree(model, doc, x, ts)
        member = np.zeros((tree.n_nodes, tree.n_leaves), dtype=np.float32)
        for v in range(tree.n_nodes):
            member[v, tree.leaf_order[tree.lo[v]:tree.hi[v]]] = 1.0
        prepared.append((doc, tree, unit_rows(tree.vectors), model.search_query(xq) if len(xq) else xq, member))
    items = []
    for i, (doc, tree, units, q, member) in enumerate(prepared):
        if not doc.queries:
            continue
        ie, precision = node_targets(member, np.asarray(doc.weights, dtype=np.float32), [qq.positives for qq in doc.queries])
        keep_of = {j: (prepared[j][1].single_group() if cfg.single_paragraph else None) for j in range(len(prepared))}
        if keep_of[i] is not None:
            ie = np.where(keep_of[i][None, :], ie, 0.0)  # the best node is the best one search may return
        best = best_nodes(ie, cfg.node_positive_ratio)
        single = [(None, [i])]
        routed = []
        if cfg.forest_size > 1 and len(prepared) > 1:
            # per query, the other documents routing would pick: those whose best leaf scores highest
            for qi, qv in enumerate(q):
                best_leaf = np.array([float((u[: t.n_leaves] @ qv).max()) if j != i else -np.inf
                                      for j, (_, t, u, _, _) in enumerate(prepared)])
                others = np.argsort(-best_leaf, kind="stable")[: cfg.forest_size - 1]
                routed.append(([qi], [i] + [int(j) for j in others]))
        for queries, forest in single + routed:
            qs = list(range(len(q))) if queries is None else queries
            feats = []
            for qi in qs:
                qv = q[qi]
                scores = [prepared[j][2] @ qv for j in forest]
                best_leaf = max(float(sc[: prepared[j][1].n_leaves].max()) for sc, j in zip(scores, forest))
                best_node = max(float(sc.max()) for sc in scores)
                lexicon = QueryLexicon([prepared[j][1].terms for j in forest], doc.queries[qi].text) \
                    if all(prepared[j][1].terms is not None for j in forest) else None
                best_bm25 = max(float(lexicon[m].bm25.max()) for m in range(len(forest))) if lexicon else None
                feats.append(np.concatenate([node_features(prepared[j][1], sc[: prepared[j][1].n_leaves], sc,
                                                           best_leaf, best_node,
                                                           lexicon[m] if lexicon else None, best_bm25)
                                             for m, (sc, j) in enumerate(zip(scores, forest))]))
            pad = sum(prepared[j][1].n_nodes for j in forest[1:])
            keep = np.concatenate([keep_of[j] if keep_of[j] is not None else np.ones(prepared[j][1].n_nodes, bool)
                                   for j in forest])
            items.append(_RerankItem(
                torch.from_numpy(np.stack(feats)[:, keep]),
                torch.from_numpy(np.pad(precision[qs], ((0, 0), (0, pad))).astype(np.float32)[:, keep]),
                torch.from_numpy(np.pad(best[qs], ((0, 0), (0, pad)))[:, keep]),
                torch.from_numpy(np.concatenate([np.log(prepared[j][1].weight) for j in forest]).astype(np.float32)[keep])))
    return items


@torch.no_grad()
def dev_r_precision(model: SproutModel, ts: TrainingSet) -> dict:
    """Chunk R-precision (gold among the top-|gold| chunks), per source and mean: stage 1's selection."""
    per: dict[str, list[float]] = {}
    for doc, x, xq in zip(ts.docs, ts.x, ts.xq):
        h, _ = model.contextualise(x, doc.para)
        q = model.encode_query(xq)
        for qi, query in enumerate(doc.queries):
            gold = set(query.positives)
            top = np.argsort(-(h @ q[qi]), kind="stable")[: len(gold)]
            per.setdefault(doc.source, []).append(len(gold & set(int(t) for t in top)) / len(gold))
    out = {s: round(float(np.mean(v)), 4) for s, v in sorted(per.items())}
    out["mean"] = round(float(np.mean(list(out.values()))), 4) if out else 0.0
    return out


class _DevCache:
    """Dev documents' trees and query vectors under a fixed encoder (stage 2 changes only the reranker)."""

    def __init__(self, model: SproutModel, ts: TrainingSet, *, uniform_alpha: bool = False):
        self.rows = []
        for doc, x, xq in zip(ts.docs, ts.x, ts.xq):
            tree = _doc_tree(model, doc, x, ts, uniform_alpha=uniform_alpha)
            self.rows.append((doc, tree, unit_rows(tree.vectors), model.search_query(xq) if len(xq) else xq))


MULTI_DOC_SOURCES = ("qasper", "dragonball")


def dev_metrics(model: SproutModel, ts: TrainingSet | None = None, ks: Sequence[int] = (1, 3, 5),
                params: SearchParams | None = None, *, uniform_alpha: bool = False, cache: _DevCache | None = None,
                multi_doc_sources: Sequence[str] = MULTI_DOC_SOURCES) -> dict:
    """IE/recall/precision at k on a training-format split with the real retrieval pipeline.

    A unit's size is its sentence count; gold = the query's positive chunks, weighted by their
    sentences (chunks are whole sentences, so this is the sentence-level scorer's count).  Every
    query searches its own document; queries of ``multi_doc_sources`` are also scored searching
    every dev document of their source at once (``<source>-multi``), the multi-document case.
    """
    params = params or model.search_params()
    scorer = model.scorer_fn() if params.rerank == "learned" else None
    cache = cache or _DevCache(model, ts, uniform_alpha=uniform_alpha)
    per_source: dict[str, list[dict]] = {}
    by_source: dict[str, list[int]] = {}
    for i, (doc, *_rest) in enumerate(cache.rows):
        by_source.setdefault(doc.source, []).append(i)

    def score(hits, forest, own, gold, w):
        gw = w[list(gold)].sum()
        row = {}
        for k in ks:
            chunks = [forest[c.doc].leaves(c.node) if c.doc == own else [] for c in hits[:k]]
            sizes = [forest[c.doc].weight[c.node] for c in hits[:k]]
            covered = {c for u in chunks for c in u} & gold
            returned = float(sum(sizes))
            r = w[list(covered)].sum() / gw if gw else 0.0
            p = w[list(covered)].sum() / returned if returned else 0.0
            row[f"ie@{k}"], row[f"recall@{k}"], row[f"precision@{k}"] = r * p, r, p
        row["units"] = len(hits[: max(ks)])
        return row

    for i, (doc, tree, units, qv) in enumerate(cache.rows):
        w = np.asarray(doc.weights, dtype=float)
        multi = doc.source in multi_doc_sources and len(by_source[doc.source]) > 1
        idx = by_source[doc.source]
        forest = [cache.rows[j][1] for j in idx]
        forest_units = [cache.rows[j][2] for j in idx]
        for qi, query in enumerate(doc.queries):
            gold = set(query.positives)
            hits = model.search([tree], qv[qi], max(ks), params=params, node_units=[units], scorer=scorer,
                                query_text=query.text)
            per_source.setdefault(doc.source, []).append(score(hits, [tree], 0, gold, w))
            if multi:
                hits = model.search(forest, qv[qi], max(ks), params=params, node_units=forest_units, scorer=scorer,
                                    query_text=query.text)
                per_source.setdefault(f"{doc.source}-multi", []).append(score(hits, forest, idx.index(i), gold, w))
    out: dict = {}
    for src, rows in sorted(per_source.items()):
        out[src] = {key: round(float(np.mean([r[key] for r in rows])), 4) for key in rows[0]}
        out[src]["n"] = len(rows)
    if out:
        out["mean_ie"] = round(float(np.mean([v[f"ie@{k}"] for v in out.values() if isinstance(v, dict) for k in ks])), 4)
    return out


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _fold(key: str) -> int:
    return int(hashlib.sha256(f"sprout-fold:{key}".encode()).hexdigest()[:8], 16) % 2


# ---- stage 1 ---------------------------------------------------------------------------------
def _train_encoder(model: SproutModel, ts: TrainingSet, cfg: TrainConfig, epochs: int, *,
                   dev: TrainingSet | None = None, log=None, tag: str = "", progress=None,
                   phase: str = "encoder") -> tuple[list[dict], int]:
    """Stage 1 on ``model`` in place; with ``dev``, keep the epoch with the best R-precision."""
    rng = np.random.default_rng(cfg.seed)
    structure = [p for n, p in model.encoder.named_parameters() if n.endswith(("rel_bias", "para_bias"))]
    ids = {id(p) for p in structure}
    rest = [p for p in model.encoder.parameters() if id(p) not in ids] + list(model.query_adapter.parameters())
    groups = [
        {"params": rest, "lr": cfg.lr, "weight_decay": cfg.weight_decay},
        {"params": structure, "lr": cfg.structure_lr, "weight_decay": 0.0},
        {"params": [model.alpha], "lr": cfg.alpha_lr, "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups)
    docs = [i for i, d in enumerate(ts.docs) if d.queries]
    total = max(epochs * len(docs), 1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[g["lr"] for g in groups], total_steps=total,
                                                pct_start=0.1, anneal_strategy="cos")
    history: list[dict] = []
    best_score, best_epoch, best_state = -1.0, 0, copy.deepcopy(model.state_dict())
    if dev is not None:
        r0 = dev_r_precision(model, dev)
        history.append({"stage": 1, "epoch": 0, "dev_r_precision": r0, "alpha": model.alpha_weights().detach().tolist()})
        best_score = r0["mean"]
    for epoch in range(1, epochs + 1):
        model.train()
        sums = {"loss": 0.0, "l_ret": 0.0, "l_leaf": 0.0, "l_node": 0.0, "l_attn": 0.0}
        bank: list[torch.Tensor] = []
        for i in rng.permutation(docs):
            d = ts.docs[int(i)]
            x, para, wts, pos = _crop(ts.x[int(i)], d.para, d.weights, [q.positives for q in d.queries], cfg.max_chunks, rng)
            keep = [j for j, p in enumerate(pos) if p]
            if not keep:
                continue
            losses = encoder_losses(model, torch.from_numpy(np.ascontiguousarray(x)), torch.as_tensor(para),
                                    wts, torch.from_numpy(ts.xq[int(i)][keep]), [pos[j] for j in keep], cfg,
                                    bank=torch.cat(bank) if bank else None)
            bank.append(losses["h"])
            while sum(len(b) for b in bank) > cfg.bank_size:
                bank.pop(0)
            opt.zero_grad()
            losses["loss"].backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            for k in sums:
                sums[k] += float(losses[k].detach())
        row = {"stage": 1, "epoch": epoch, **{k: round(v / max(len(docs), 1), 5) for k, v in sums.items()},
               "alpha": model.alpha_weights().detach().tolist()}
        if dev is not None:
            row["dev_r_precision"] = dev_r_precision(model, dev)
            if row["dev_r_precision"]["mean"] > best_score:
                best_score, best_epoch, best_state = row["dev_r_precision"]["mean"], epoch, copy.deepcopy(model.state_dict())
        history.append(row)
        if progress:
            progress({"phase": phase, "epoch": epoch, "epochs": epochs, "loss": row["loss"],
                      "dev": row.get("dev_r_precision", {}).get("mean"), "metric": "dev R-precision"})
        if log:
            log(f"stage 1{tag} epoch {epoch}: loss {row['loss']:.4f} (chunk {row['l_leaf']:.4f} node {row['l_node']:.4f} "
                f"attn {row['l_attn']:.4f}) dev R-precision {row.get('dev_r_precision', {}).get('mean')}")
    if dev is not None:
        model.load_state_dict(best_state)
    else:
        best_epoch = epochs
    return history, best_epoch


def train(train_set: TrainingSet, dev_set: TrainingSet, config: TrainConfig | None = None, *,
          model_config: SproutConfig | None = None, log: Callable[[str], None] | None = print,
          progress: Callable[[dict], None] | None = None) -> TrainResult:
    """Train a :class:`SproutModel`: stage 1 (encoder) then stage 2 (reranker, threshold).

    ``log`` receives a line per step; ``progress`` a dict per epoch (``phase``: ``encoder``,
    ``fold 0``/``fold 1`` (cross-fitting) or ``reranker``; ``epoch``, ``epochs``, ``loss``,
    ``dev`` and the ``metric`` it is) -- what ``vectree sprout train`` draws its bars from.
    """
    cfg = config or TrainConfig()
    encode = train_set.encode or dev_set.encode
    if encode is None and (model_config.text_node_chunks if model_config else cfg.text_node_chunks):
        from .encoder import embed_texts

        encode = embed_texts  # uncached: the callers (build_training_set, the asset) pass a cached one
    train_set, dev_set = replace(train_set, encode=encode), replace(dev_set, encode=encode)
    if not train_set.docs:
        raise ValueError("empty training set")
    if not dev_set.docs:
        raise ValueError("empty dev set: model selection needs one")
    threads_before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    started = time.perf_counter()
    try:
        torch.manual_seed(cfg.seed)
        dim = int(train_set.x[0].shape[1])
        mc = model_config or SproutConfig(base_encoder=train_set.info.get("base_encoder", "all-MiniLM-L6-v2"),
                                          base_dim=dim, encoder=EncoderConfig(input_dim=dim),
                                          text_node_chunks=cfg.text_node_chunks,
                                          scorer_features=[f for f in FEATURE_NAMES
                                                           if cfg.lexical or f not in LEXICAL_FEATURES],
                                          search=SearchParams(scan_chunks=cfg.text_node_chunks,
                                                              single_paragraph=cfg.single_paragraph,
                                                              gold_cap=median_evidence(train_set)))
        model = SproutModel(mc)
        init_state = copy.deepcopy(model.state_dict())
        dev_before = dev_metrics(model, dev_set, cfg.dev_ks, model.search_params(rerank="cosine"))
        if log:
            log(f"untrained (cosine rerank): dev IE {dev_before.get('mean_ie')}")
        if progress:
            progress({"phase": "before", "dev": dev_before})
        history, best_epoch = _train_encoder(model, train_set, cfg, cfg.epochs, dev=dev_set, log=log,
                                             progress=progress)
        # cross-fitted reranker features
        if cfg.cross_fit:
            items = []
            for fold in (0, 1):
                other = train_set.where(lambda d, f=fold: _fold(d.key) != f)
                mine = train_set.where(lambda d, f=fold: _fold(d.key) == f)
                fm = SproutModel(copy.deepcopy(mc))
                fm.load_state_dict(init_state)
                fh, _ = _train_encoder(fm, other, cfg, max(best_epoch, 1), log=log, tag=f" (fold {fold})",
                                       progress=progress, phase=f"fold {fold}")
                history += [{**h, "fold": fold} for h in fh]
                items += _doc_rerank_items(fm, mine, cfg)
        else:
            items = _doc_rerank_items(model, train_set, cfg)
        _init_scaler(model, items)
        stage2, best_rerank, dev_cache = _train_reranker(model, items, dev_set, cfg, log=log, progress=progress)
        history += stage2
        dev_best = next(h["dev"] for h in stage2 if h["epoch"] == best_rerank)
        if cfg.single_paragraph:  # trained for it (and searched that way since stage 2): nothing to choose
            single_record = {"off": None, "on": dev_best["mean_ie"], "chosen": True, "trained_for": True}
        else:
            dev_best, single_record = _choose_single_paragraph(model, dev_cache, cfg, dev_best, log=log)
        dev_best, scale_record = choose_logit_scale(model, dev_cache, cfg.dev_ks, dev_best, log=log)
        seconds = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads_before)
    model.eval()
    model.config.training = {
        "train_config": cfg.to_dict(), "data": train_set.info, "best_epoch": best_epoch,
        "best_rerank_epoch": best_rerank, "seconds": round(seconds, 1), "dev_before": dev_before,
        "dev_best": dev_best, "single_paragraph_dev": single_record,
        "logit_scale_dev": scale_record,
        "history": [{k: v for k, v in h.items() if k != "alpha"} for h in history],
        "alpha_before": history[0]["alpha"], "alpha_after": model.alpha_weights().detach().tolist(),
        "tau_before": float(mc.tau_init), "tau_after": float(model.tau.detach()),
        "n_parameters": model.n_parameters(), "peak_rss_mb": round(_peak_rss_mb(), 1),
    }
    return TrainResult(model, history, best_epoch, best_rerank, seconds, _peak_rss_mb(), dev_before, dev_best)


# ---- stage 2 ---------------------------------------------------------------------------------
@torch.no_grad()
def _init_scaler(model: SproutModel, items: list[_RerankItem]) -> None:
    f = torch.cat([it.features.reshape(-1, it.features.shape[-1]) for it in items])[:, model.node_scorer.columns]
    model.node_scorer.feature_mean.copy_(f.mean(0))
    model.node_scorer.feature_std.copy_(f.std(0) + 1e-3)


def _train_reranker(model: SproutModel, items: list[_RerankItem], dev: TrainingSet, cfg: TrainConfig, *,
                    log=None, progress=None) -> tuple[list[dict], int]:
    rng = np.random.default_rng(cfg.seed + 1)
    groups = [
        {"params": list(model.node_scorer.net.parameters()), "lr": cfg.scorer_lr, "weight_decay": cfg.weight_decay},
        {"params": [model.tau, model.log_tau_temperature], "lr": cfg.tau_lr, "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups)
    cache = _DevCache(model, dev)
    history: list[dict] = []
    best_score, best_epoch, best_state = -1.0, 0, copy.deepcopy(model.state_dict())
    for epoch in range(1, cfg.rerank_epochs + 1):
        sums = {"loss": 0.0, "l_rerank": 0.0, "l_tau": 0.0}
        for i in rng.permutation(len(items)):
            losses = rerank_losses(model, items[int(i)], cfg)
            opt.zero_grad()
            losses["loss"].backward()
            opt.step()
            for k in sums:
                sums[k] += float(losses[k].detach())
        dev_m = dev_metrics(model, ks=cfg.dev_ks, cache=cache)
        row = {"stage": 2, "epoch": epoch, **{k: round(v / max(len(items), 1), 5) for k, v in sums.items()},
               "tau": round(float(model.tau.detach()), 5),
               "tau_temperature": round(float(model.log_tau_temperature.detach().exp()), 5), "dev": dev_m}
        history.append(row)
        if dev_m["mean_ie"] > best_score:
            best_score, best_epoch, best_state = dev_m["mean_ie"], epoch, copy.deepcopy(model.state_dict())
        if progress:
            progress({"phase": "reranker", "epoch": epoch, "epochs": cfg.rerank_epochs, "loss": row["loss"],
                      "dev": dev_m["mean_ie"], "metric": "dev IE"})
        if log:
            log(f"stage 2 epoch {epoch}: loss {row['loss']:.4f} (rerank {row['l_rerank']:.4f} tau {row['l_tau']:.4f}) "
                f"dev IE {dev_m['mean_ie']} tau {row['tau']:.3f}")
    model.load_state_dict(best_state)
    return history, best_epoch, cache


LOGIT_SCALES = (1.0, 1.5, 2.0, 3.0)


def choose_logit_scale(model: SproutModel, cache: _DevCache, ks: Sequence[int] = (1, 3, 5),
                       dev_best: dict | None = None, *, scales: Sequence[float] = LOGIT_SCALES,
                       log=None) -> tuple[dict, dict]:
    """Set ``search.logit_scale`` to the scale of ``scales`` with the best mean dev IE (the smallest
    on a tie; ``dev_best``: the figures at the model's current settings, measured when absent).

    The scorer is trained to estimate a node's precision (BCE) and to rank single nodes (the
    listwise loss); how sharply the expected-IE greedy should trust that estimate when it weighs a
    confident small node against a large uncertain one is a search setting, chosen on dev like
    ``single_paragraph``.  The tau gate is unchanged (it reads the plain logit).  Returns the dev
    metrics of the scale kept and the record ``{"chosen": s, "dev": {scale: mean IE}}``."""
    current = model.config.search.logit_scale
    results: dict[float, dict] = {}
    for s in scales:
        if dev_best is not None and s == current:
            results[s] = dev_best
        else:
            results[s] = dev_metrics(model, ks=ks, params=model.search_params(logit_scale=s), cache=cache)
    chosen = max(scales, key=lambda s: (results[s]["mean_ie"], -s))
    model.config.search.logit_scale = float(chosen)
    record = {"chosen": float(chosen), "dev": {f"{s:g}": results[s]["mean_ie"] for s in scales}}
    if log:
        log("greedy's logit scale on dev: " + ", ".join(f"{s:g} -> {results[s]['mean_ie']}" for s in scales)
            + f"; kept {chosen:g}")
    return results[chosen], record


def _choose_single_paragraph(model: SproutModel, cache: _DevCache, cfg: TrainConfig, dev_best: dict, *,
                             log=None) -> tuple[dict, dict]:
    """Turn ``search.single_paragraph`` on (return only nodes inside one paragraph) when it raises
    the trained model's mean dev IE: a structural choice made on dev like the rest.  Returns the
    dev metrics of the setting kept and the record of the choice (both mean dev IEs)."""
    on = dev_metrics(model, ks=cfg.dev_ks, params=model.search_params(single_paragraph=True), cache=cache)
    chosen = on["mean_ie"] > dev_best["mean_ie"]
    model.config.search.single_paragraph = chosen
    if log:
        log(f"single-paragraph nodes only: dev IE {on['mean_ie']} against {dev_best['mean_ie']} with every "
            f"node: {'on' if chosen else 'off'}")
    record = {"off": dev_best["mean_ie"], "on": on["mean_ie"], "chosen": chosen, "trained_for": False}
    return (on if chosen else dev_best), record
