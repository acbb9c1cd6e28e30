"""SproutRAG and its ablations, through the public functions of :mod:`vectree.retrieval.sprout`.

Every variant chunks each document into SproutRAG's leaves (``vectree.retrieval.sprout.chunks.chunk_text``:
1-2 pysbd sentences), embeds them with MiniLM (the harness's cached embedder), builds one tree
per document and searches the trees of the query's scope with ``search_forest`` (hierarchical
beam search, the model's learned threshold and reranker, never a node with its own descendant,
through ``SproutModel.search``); a returned
node is the character spans of its chunks, which the sentence scorer counts.

* ``sprout``: the trained model (``SproutModel.document_tree``: contextual chunk vectors and
  learned attention aggregation), its query adapter and its learned search parameters;
* ``sprout-uniform``: the same model with uniform attention averaging (alpha = 0);
* ``sprout-leaves``: the same model, leaf-only retrieval (no tree);
* ``sprout-embtree``: the tree's structure from the cosine of MiniLM chunk embeddings instead of
  attention; everything else as ``sprout`` (contextual node vectors, query adapter, reranker), so
  only the merge order differs;
* ``sprout-fixedtau``: the same model with its threshold at its untrained value (``tau_init``,
  temperature ``tau_temperature_init``) instead of the learned one;
* ``sprout-nolex``: the same model with its scorer's lexical features (the query's words in the
  node, :mod:`vectree.retrieval.sprout.lexical`) read as their training mean: what they add;
* ``sprout-onepara``: the same model returning only nodes inside one paragraph (its
  ``single_paragraph`` search parameter on, whatever its training chose on dev);
* ``sprout-token``: the token-level encoder of the reference (MiniLM's token attentions
  averaged into chunk-pair attention in 512-token windows), plain MiniLM vectors and query.

A model with text nodes (``text_node_chunks``) gives every variant its text-node vectors, so each
ablation still changes one thing only.  Diagnostics and experiments (not the method; they read no
gold): ``sprout-paranodes`` / ``sprout-paratext`` rank only the tree's paragraph nodes, by the
node vector / by the MiniLM vector of their text (representation against granularity, see
``benchmarks/diag_sprout_nodes.py``); ``sprout-textcos`` returns the k best non-nested nodes of up
to 4 chunks by the cosine of their text vector (``TEXTCOS_CHUNKS``), no learned scorer.

The model: ``$VECTREE_SPROUT_MODEL`` (a folder with ``model.safetensors`` + ``config.json``),
else the live model of the store ``$VECTREE_STORE`` names (the package's default model when the
store chose none).  Without one the variants are reported as not run, with the command that
trains one.
"""

from __future__ import annotations

from typing import Any, Collection, Sequence

import numpy as np

from .base import Doc, Hit, NotAvailable, RetrieverSystem

VARIANTS = {
    "sprout": "SproutRAG: learned attention tree, hierarchical beam search, learned threshold",
    "sprout-uniform": "SproutRAG ablation: uniform attention averaging (alpha = 0)",
    "sprout-leaves": "SproutRAG ablation: leaf-only retrieval (no tree)",
    "sprout-embtree": "SproutRAG ablation: tree from MiniLM embedding similarity, no attention",
    "sprout-fixedtau": "SproutRAG ablation: untrained threshold tau (the learned one replaced by its initial value)",
    "sprout-nolex": "SproutRAG ablation: the scorer's lexical (BM25) features read as their training mean",
    "sprout-token": "SproutRAG ablation: token-level MiniLM attention (512-token windows)",
    "sprout-onepara": "SproutRAG variant: only nodes inside one paragraph are returned (single_paragraph on)",
    "sprout-textnodes": "SproutRAG, inner nodes of up to 8 chunks scored by the MiniLM vector of their text",
    # diagnostics (representation vs granularity): only the tree's paragraph nodes, ranked by cosine
    "sprout-paranodes": "diagnostic: the tree's paragraph nodes only, ranked by the progressive node vector",
    "sprout-paratext": "diagnostic: the tree's paragraph nodes only, ranked by the MiniLM vector of their text",
    "sprout-textcos": "experiment: nodes of up to 4 chunks embedded from their text, k non-nested by cosine",
}
TEXT_NODE_CHUNKS = 8


TEXTCOS_CHUNKS = 4  # sprout-textcos: the largest node (in chunks) the experiment returns


def find_model_dir() -> str | None:
    from vectree.retrieval.config import load_settings

    settings = load_settings()
    if settings.sprout_model:  # VECTREE_SPROUT_MODEL
        return str(settings.sprout_model)

    try:
        from vectree.retrieval.sprout.model import current_model_dir, default_model_dir
        from vectree.retrieval.store import Store

        root = settings.store_root
        found = current_model_dir(Store(root)) if root.exists() else default_model_dir()
        return str(found) if found else None
    except Exception:  # noqa: BLE001 - no store, or the sprout package is incomplete
        return None


class SproutSystem(RetrieverSystem):
    tasks = ("sentences", "paper_qa")

    def __init__(self, name: str = "sprout"):
        if name not in VARIANTS:
            raise ValueError(f"unknown SproutRAG variant {name!r}")
        self.name = name
        self.description = VARIANTS[name]
        self.model = None
        self.model_dir = None

    def unavailable(self) -> str | None:
        try:
            from vectree.retrieval.sprout.model import load_model
            from vectree.retrieval.sprout.tree import build_tree  # noqa: F401
        except Exception as exc:  # noqa: BLE001
            return f"vectree.retrieval.sprout is not importable ({type(exc).__name__}: {exc})"
        self.model_dir = find_model_dir()
        if not self.model_dir:
            return ("no trained SproutRAG model: train one with `vectree sprout train` (`--quick`: under two "
                    "minutes), or set VECTREE_SPROUT_MODEL to a model folder; if SproutRAG was switched off, "
                    "`vectree sprout list` shows the models and `vectree sprout use NAME` switches one on")
        try:
            self.model = load_model(self.model_dir)
        except Exception as exc:  # noqa: BLE001
            return f"cannot load the SproutRAG model at {self.model_dir}: {exc}"
        return None

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"description": self.description, "model_dir": self.model_dir}
        if self.model is not None:
            cfg["model_id"] = self.model.config.model_id
            cfg["search"] = self._params().to_dict()
        return cfg

    def notes(self) -> list[str]:
        if self.model is None:
            return []
        cfg = self.model.config
        tr = cfg.training or {}
        before = (tr.get("dev_before") or {}).get("mean_ie")
        after = (tr.get("dev_best") or {}).get("mean_ie")
        seed = (tr.get("train_config") or {}).get("seed", "?")
        data = tr.get("data") or {}
        sources = data.get("sources") or ["hotpotqa", "qasper"]
        kind = "benchmark model, never shipped" if data.get("benchmark_model") else "licence-compatible data"
        return [f"sprout*: SproutRAG model `{cfg.model_id}` ({self.model.n_parameters():,} parameters, base "
                f"{cfg.base_encoder}; trained on the {' + '.join(sources)} train splits ({kind}), seed {seed}, "
                f"dev IE {before} -> {after}, best epoch {tr.get('best_epoch')})"]

    def _params(self):
        overrides = {"leaves_only": True} if self.name == "sprout-leaves" else {}
        if self.name == "sprout-onepara":
            overrides = {"single_paragraph": True}
        if self.name == "sprout-fixedtau":
            overrides = {"tau": float(self.model.config.tau_init),
                         "tau_temperature": float(self.model.config.tau_temperature_init)}
        return self.model.search_params(**overrides)

    def index(self, docs: Sequence[Doc]) -> None:
        from vectree.retrieval.sprout.chunks import chunk_text

        if self.model is None:
            reason = self.unavailable()
            if reason:
                raise NotAvailable(reason)
        emb = self.ctx.embedder
        self.doc_order: list[str] = []
        self.trees: list = []
        self.units: list[np.ndarray] = []
        self.chunks: list[list] = []
        self.doc_objs: list[Doc] = []
        self.candidates: list[np.ndarray] = []  # per document: the nodes a diagnostic variant ranks
        all_chunks = [(d, chunk_text(d.text)) for d in docs]
        texts = [c.text for _, cs in all_chunks for c in cs]
        vecs = emb.encode_documents(texts) if texts else np.zeros((0, emb.info.dim), np.float32)
        pos = 0
        for d, cs in all_chunks:
            x = vecs[pos:pos + len(cs)]
            pos += len(cs)
            if not cs:
                continue
            tree = self._tree(x, cs)
            self.doc_order.append(d.doc_id)
            self.trees.append(tree)
            v = tree.vectors
            units = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            if self.name == "sprout-textnodes":
                units = self._text_units(tree, cs, units, np.flatnonzero(tree.hi - tree.lo <= TEXT_NODE_CHUNKS))
            elif self.name == "sprout-textcos":
                self.candidates.append(np.flatnonzero(tree.hi - tree.lo <= TEXTCOS_CHUNKS))
                units = self._text_units(tree, cs, units, self.candidates[-1])
            elif self.name in ("sprout-paranodes", "sprout-paratext"):
                self.candidates.append(self._paragraph_nodes(tree, cs))
                if self.name == "sprout-paratext":
                    units = self._text_units(tree, cs, units, self.candidates[-1])
            self.units.append(units)
            self.chunks.append(cs)
            self.doc_objs.append(d)
        self.position = {d: i for i, d in enumerate(self.doc_order)}

    @staticmethod
    def _paragraph_nodes(tree, chunks) -> np.ndarray:
        """The nodes whose leaves are exactly the chunks of one paragraph (one per paragraph that
        the tree keeps whole)."""
        per_para: dict[int, int] = {}
        for c in chunks:
            per_para[c.paragraph] = per_para.get(c.paragraph, 0) + 1
        out = []
        for v in range(tree.n_nodes):
            paras = {chunks[j].paragraph for j in tree.leaf_order[tree.lo[v]:tree.hi[v]]}
            if len(paras) == 1 and tree.size(v) == per_para[next(iter(paras))]:
                out.append(v)
        return np.asarray(out, dtype=np.int64)

    def _text_units(self, tree, chunks, units, nodes):
        """``units`` with ``nodes`` given the (normalised) MiniLM vector of their own text."""
        from vectree.retrieval.sprout.tree import text_vectors

        vecs = text_vectors(tree, [c.text for c in chunks], nodes, self.ctx.embedder.encode_documents)
        units = units.copy()
        units[nodes] = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return units

    def _tree(self, x: np.ndarray, chunks):
        from vectree.retrieval.sprout.tree import build_tree, mutual_attention

        para = [c.paragraph for c in chunks]
        text = {"texts": [c.text for c in chunks], "encode": self.ctx.embedder.encode_documents}
        weights = np.asarray([c.n_sentences for c in chunks], dtype=np.float64)
        if self.name in ("sprout", "sprout-leaves", "sprout-fixedtau", "sprout-onepara", "sprout-nolex", "sprout-textnodes", "sprout-paranodes",
                         "sprout-paratext", "sprout-textcos"):
            return self.model.document_tree(x, para, weights, **text).tree
        if self.name == "sprout-uniform":
            return self.model.document_tree(x, para, weights, uniform_alpha=True, **text).tree
        if self.name == "sprout-embtree":
            h, _ = self.model.contextualise(x, para)
            sim = (x @ x.T).astype(np.float64)
            np.fill_diagonal(sim, -np.inf)  # the convention of mutual_attention: never with itself
            return self._with_text(build_tree(sim, h, weights), x, text, para)
        from vectree.retrieval.sprout.encoder import token_chunk_attention

        # (layers x heads, n, n) maps averaged uniformly, as the reference does
        att = token_chunk_attention([c.text for c in chunks], embedder=self.ctx.embedder.inner).mean(axis=0)
        return self._with_text(build_tree(mutual_attention(att), x, weights), x, text, para)

    def _with_text(self, tree, x, text, para):
        """The model's text nodes, paragraphs and chunk words on a tree built another way (the
        ablations change one thing only)."""
        from vectree.retrieval.sprout.tree import with_text_vectors

        tree = with_text_vectors(tree, x, text["texts"], text["encode"], self.model.config.text_node_chunks)
        tree.groups = np.asarray(para, dtype=np.int64)
        return self.model.attach_terms(tree, text["texts"])

    def _rank_candidates(self, picks, qv, k):
        """The diagnostics' search: the ``k`` best candidate nodes by cosine, none nested in another."""
        q = qv / max(float(np.linalg.norm(qv)), 1e-12)
        scored = sorted(((float(s), i, int(v)) for i in picks
                         for v, s in zip(self.candidates[i], self.units[i][self.candidates[i]] @ q)), key=lambda t: -t[0])
        taken: list[tuple[int, int, float]] = []
        for s, i, v in scored:
            if len(taken) == k:
                break
            lo, hi = self.trees[i].lo, self.trees[i].hi
            if not any(i == j and lo[v] < hi[w] and lo[w] < hi[v] for j, w, _ in taken):
                taken.append((i, v, s))
        return [self._hit(i, v, s) for i, v, s in taken]

    def _hit(self, i: int, v: int, score: float) -> Hit:
        tree, chunks, doc = self.trees[i], self.chunks[i], self.doc_objs[i]
        leaves = tree.leaves(v)
        spans = tuple((chunks[j].start, chunks[j].end) for j in leaves)
        return Hit(doc.doc_id, spans, " ".join(chunks[j].text for j in leaves), score, doc.pages_of(spans), 2,
                   f"{doc.doc_id}:{v}")

    def search(self, query: str, k: int, scope: Collection[str] | None = None) -> list[Hit]:
        picks = list(range(len(self.trees))) if scope is None else sorted(
            self.position[d] for d in set(scope) if d in self.position)
        if not picks:
            return []
        xq = self.ctx.embedder.encode_query(query)
        qv = self.model.search_query(xq) if self.name != "sprout-token" else xq
        if self.candidates:  # a diagnostic: text vectors against the plain query, node vectors against qv
            return self._rank_candidates(picks, qv if self.name == "sprout-paranodes" else xq, k)
        # the model's own search: its learned threshold and reranker, whatever built the trees
        scorer = None
        if self.name == "sprout-nolex":
            from vectree.retrieval.sprout.lexical import LEXICAL_FEATURES

            scorer = self.model.node_scorer.numpy_fn(without=LEXICAL_FEATURES)
        cands = self.model.search([self.trees[i] for i in picks], qv, k, params=self._params(),
                                  node_units=[self.units[i] for i in picks], scorer=scorer, query_text=query)
        return [self._hit(picks[c.doc], c.node, float(c.score)) for c in cands]
