"""The SproutRAG model: encoder, learned aggregation, learned threshold; save and load.

A model directory holds ``model.safetensors`` (every tensor) and ``config.json`` (the shapes,
the base encoder it was trained on, the search settings, training provenance and metrics).
:func:`load_model` refuses a model whose base encoder differs from the configured embedder
(:class:`vectree.retrieval.embed.EmbedderMismatchError`), since its inputs would mean nothing.

In a store, models live under ``<store>/sprout/models/<model_id>/`` and ``<store>/sprout/models/
CURRENT`` names the live one (:func:`current_model_dir`, :func:`publish_model`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from .encoder import EncoderConfig, SproutEncoder, aggregate_attention
from .lexical import LEXICAL_FEATURES, LeafTerms
from .search import FEATURE_NAMES, LEGACY_FEATURE_NAMES, Candidate, SearchParams, search_forest
from .tree import Tree, build_tree, mutual_attention, with_text_vectors

FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


class SproutUnavailableError(LookupError):
    """SproutRAG cannot answer here: no model or no tree (the message names the fix)."""


class ModelNotFoundError(SproutUnavailableError):
    """No trained SproutRAG model where one was looked for (the message says how to train one)."""


@dataclass
class SproutConfig:
    """Everything needed to rebuild a model around its weights."""

    base_encoder: str = "all-MiniLM-L6-v2"
    base_dim: int = 384
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    search: SearchParams = field(default_factory=SearchParams)
    max_window_chunks: int = 2048  # longer documents are encoded in consecutive windows
    scorer_hidden: int = 32  # the learned reranker's hidden width
    # the node features the reranker reads (names from search.FEATURE_NAMES); default: all of them
    scorer_features: list[str] = field(default_factory=lambda: list(FEATURE_NAMES))
    # the scorer's input columns, in order: every feature known when the model was trained
    # (models written before the lexical features have no such key and read LEGACY_FEATURE_NAMES)
    feature_space: list[str] = field(default_factory=lambda: list(FEATURE_NAMES))
    # nodes of at most this many chunks are represented by the MiniLM vector of their own text and
    # searched against the plain MiniLM query (tree.with_text_vectors); 0: progressive embeddings
    # and the query adapter throughout (models trained before text nodes)
    text_node_chunks: int = 0
    # the weight of this model's nodes as a vote in within-paper passage search (beside BM25 and
    # cosine, reciprocal-rank fusion), calibrated after training on the QASPER dev documents
    # (retrieval.passages.calibrate_sprout_weight); 1.0, a plain third vote, for older models
    within_paper_weight: float = 1.0
    within_paper_per_node: int | None = None  # passages of each node that vote (None: all it holds)
    within_paper_calibration: dict[str, Any] = field(default_factory=dict)
    tau_init: float = 0.0  # on the reranker's logit scale
    tau_temperature_init: float = 1.0
    model_id: str = ""
    created: str = ""
    training: dict[str, Any] = field(default_factory=dict)  # config, data hashes, losses, metrics

    def to_dict(self) -> dict:
        d = asdict(self)
        d["format_version"] = FORMAT_VERSION
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "SproutConfig":
        d = dict(d)
        version = d.pop("format_version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ValueError(f"SproutRAG model format {version} is not supported (expected {FORMAT_VERSION})")
        d.setdefault("feature_space", list(LEGACY_FEATURE_NAMES))
        enc = EncoderConfig(**d.pop("encoder", {}))
        search = SearchParams(**d.pop("search", {}))
        return cls(encoder=enc, search=search, **d)


@dataclass
class DocumentTree:
    """One document's SproutRAG structure: its tree (progressive embeddings of the contextual
    chunk vectors) and the aggregated attention it came from."""

    tree: Tree
    attention: np.ndarray  # (n, n) aggregated, before symmetrisation


class NodeScorer(nn.Module):
    """The learned reranker: node features (:func:`vectree.retrieval.sprout.search.node_features`) ->
    logit of the node's precision (the fraction of its sentences that answer the query).

    ``space``: the feature names its input layer has, in order (columns picked by name from the full
    :data:`FEATURE_NAMES` rows, so a model keeps working when features are added); ``use``: those
    it reads (the others read as their training mean)."""

    def __init__(self, space: Sequence[str] = FEATURE_NAMES, hidden: int = 32, use: Sequence[str] | None = None):
        super().__init__()
        unknown = (set(use or ()) | set(space)) - set(FEATURE_NAMES)
        if unknown:
            raise ValueError(f"unknown reranker features {sorted(unknown)}; known: {', '.join(FEATURE_NAMES)}")
        self.space = list(space)
        n_features = len(self.space)
        self.register_buffer("feature_mean", torch.zeros(n_features))
        self.register_buffer("feature_std", torch.ones(n_features))
        # features left out read as their mean: a fixed mask, not a weight (kept out of the state dict)
        mask = torch.tensor([1.0 if use is None or f in use else 0.0 for f in self.space])
        self.register_buffer("feature_mask", mask, persistent=False)
        self.register_buffer("columns", torch.tensor([FEATURE_NAMES.index(f) for f in self.space]), persistent=False)
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    @property
    def reads_lexical(self) -> bool:
        return any(f in LEXICAL_FEATURES and m > 0 for f, m in zip(self.space, self.feature_mask.tolist()))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = features[..., self.columns]
        return self.net((x - self.feature_mean) / self.feature_std * self.feature_mask).squeeze(-1)

    def numpy_fn(self, *, without: Sequence[str] = ()):
        """The same function in numpy (no torch call per document at query time); ``without``:
        features read as their training mean (an ablation)."""
        mean, std = self.feature_mean.numpy().copy(), self.feature_std.numpy().copy()
        mask = self.feature_mask.numpy().copy()
        for f in without:
            if f in self.space:
                mask[self.space.index(f)] = 0.0
        cols = self.columns.numpy().copy()
        w1, b1 = self.net[0].weight.detach().numpy().T.copy(), self.net[0].bias.detach().numpy().copy()
        w2, b2 = self.net[2].weight.detach().numpy()[0].copy(), float(self.net[2].bias.detach()[0])

        def score(features: np.ndarray) -> np.ndarray:
            return np.tanh(((features[..., cols] - mean) / std * mask) @ w1 + b1) @ w2 + b2

        return score


class SproutModel(nn.Module):
    """Trainable parts: the sentence-level encoder, ``alpha`` (layer x head aggregation logits),
    the node scorer (the learned reranker), ``tau`` and ``log_tau_temperature`` (the candidate
    threshold on the scorer's logit, and its calibration), a query adapter
    (``q = normalise(x + W x)``, ``W`` starting at zero)."""

    def __init__(self, config: SproutConfig | None = None):
        super().__init__()
        self.config = config or SproutConfig()
        cfg = self.config
        if cfg.encoder.input_dim != cfg.base_dim:
            raise ValueError("encoder input_dim must equal the base encoder's dimension")
        self.encoder = SproutEncoder(cfg.encoder)
        self.alpha = nn.Parameter(torch.zeros(cfg.encoder.n_layers, cfg.encoder.n_heads))
        self.tau = nn.Parameter(torch.tensor(float(cfg.tau_init)))
        self.log_tau_temperature = nn.Parameter(torch.tensor(float(np.log(cfg.tau_temperature_init))))
        self.query_adapter = nn.Linear(cfg.base_dim, cfg.base_dim)
        nn.init.zeros_(self.query_adapter.weight)
        nn.init.zeros_(self.query_adapter.bias)
        self.node_scorer = NodeScorer(cfg.feature_space, cfg.scorer_hidden, cfg.scorer_features)
        self._scorer_fn = None

    # ---- differentiable pieces (training) --------------------------------------------------
    def encode_query_tensor(self, xq: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(xq + self.query_adapter(xq), dim=-1)

    def alpha_weights(self) -> torch.Tensor:
        return self.alpha.reshape(-1).softmax(0).reshape(self.alpha.shape)

    # ---- inference ----------------------------------------------------------------------
    def search_params(self, **overrides) -> SearchParams:
        """The configured search settings with the *learned* threshold and temperature."""
        base = asdict(self.config.search)
        base.update(tau=float(self.tau.detach()), tau_temperature=float(self.log_tau_temperature.detach().exp()))
        base.update(overrides)
        return SearchParams(**base)

    def scorer_fn(self):
        """The reranker as a numpy function (rebuilt after every change of the weights)."""
        return self.node_scorer.numpy_fn()

    def search(self, trees: Sequence[Tree], query_vector: np.ndarray, k: int | None = None,
               params: SearchParams | None = None, node_units=None, scorer=None, query_text: str | None = None,
               **overrides) -> list[Candidate]:
        """:func:`vectree.retrieval.sprout.search.search_forest` with this model's threshold and reranker.

        A model whose scorer reads lexical features needs ``query_text`` and trees that carry their
        chunks' words (``Tree.terms``: :meth:`document_tree` with ``texts``, or :meth:`attach_terms`)."""
        params = params or self.search_params(**overrides)
        fn = scorer or (self.scorer_fn() if params.rerank == "learned" else None)
        if params.rerank == "learned" and scorer is None and self.node_scorer.reads_lexical:
            if query_text is None:
                raise ValueError(f"SproutRAG model {self.config.model_id or '(unnamed)'} scores nodes by the query's "
                                 "words too: pass query_text=")
            if any(t.terms is None for t in trees):
                raise ValueError("a tree has no chunk words (Tree.terms) for this model's lexical features: "
                                 "build it with texts= or call SproutModel.attach_terms")
        return search_forest(trees, query_vector, params, k, node_units=node_units, node_scorer=fn,
                             query_text=query_text)

    @staticmethod
    def attach_terms(tree: Tree, texts: Sequence[str]) -> Tree:
        """``tree`` with its chunks' BM25 words (``texts``: the chunks in leaf order), for the
        lexical features; returns the same tree."""
        if len(texts) != tree.n_leaves:
            raise ValueError(f"{tree.n_leaves} leaves but {len(texts)} chunk texts")
        tree.terms = LeafTerms.from_texts(list(texts))
        return tree

    @torch.no_grad()
    def encode_query(self, xq: np.ndarray) -> np.ndarray:
        """Query vector(s) from MiniLM query embedding(s)."""
        t = torch.as_tensor(np.asarray(xq, dtype=np.float32))
        return self.encode_query_tensor(t).numpy()

    @torch.no_grad()
    def contextualise(self, x: np.ndarray, para: Sequence[int], *, uniform_alpha: bool = False
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Contextual chunk vectors ``(n, dim)`` and aggregated attention ``(n, n)`` of one document.

        Documents longer than ``max_window_chunks`` are encoded window by window; chunk pairs in
        different windows get attention 0 (they meet only near the root).
        """
        self.eval()
        x = np.asarray(x, dtype=np.float32)
        n = len(x)
        para_t = torch.as_tensor(np.asarray(para, dtype=np.int64))
        h = np.zeros_like(x)
        att = np.zeros((n, n), dtype=np.float32)
        alpha = torch.zeros_like(self.alpha) if uniform_alpha else self.alpha
        step = max(1, self.config.max_window_chunks)
        for a in range(0, n, step):
            b = min(n, a + step)
            hh, maps = self.encoder(torch.from_numpy(x[a:b]), para_t[a:b])
            h[a:b] = hh.numpy()
            att[a:b, a:b] = aggregate_attention(maps, alpha).numpy()
        return h, att

    def document_tree(self, x: np.ndarray, para: Sequence[int], weights: Sequence[float] | None = None, *,
                      uniform_alpha: bool = False, texts: Sequence[str] | None = None,
                      encode: Callable[[list[str]], np.ndarray] | None = None) -> DocumentTree:
        """Build one document's tree from its MiniLM chunk embeddings and paragraph ids.

        A model with text nodes (``config.text_node_chunks``) needs the chunks' ``texts`` and the
        base encoder's ``encode`` (texts -> vectors) to embed its small nodes."""
        if len(x) == 0:
            raise ValueError("a document needs at least one chunk")
        h, att = self.contextualise(x, para, uniform_alpha=uniform_alpha)
        tree = build_tree(mutual_attention(att), h, None if weights is None else np.asarray(weights))
        if self.config.text_node_chunks:
            if texts is None or encode is None:
                raise ValueError(f"model {self.config.model_id or '(unnamed)'} represents nodes of up to "
                                 f"{self.config.text_node_chunks} chunks by their text: pass texts= and encode=")
            tree = with_text_vectors(tree, x, texts, encode, self.config.text_node_chunks)
        tree.groups = np.asarray(para, dtype=np.int64)  # what SearchParams.single_paragraph reads
        if texts is not None:
            self.attach_terms(tree, texts)
        return DocumentTree(tree, att)

    def search_query(self, xq: np.ndarray) -> np.ndarray:
        """The query vector(s) a search compares with node vectors: the plain (normalised) MiniLM
        query when small nodes carry MiniLM text vectors, else the query adapter's output."""
        if self.config.text_node_chunks:
            xq = np.asarray(xq, dtype=np.float32)
            return xq / np.maximum(np.linalg.norm(xq, axis=-1, keepdims=True), 1e-12)
        return self.encode_query(xq)

    def n_parameters(self) -> int:
        return int(sum(p.numel() for p in self.parameters()))


# ---- save / load -------------------------------------------------------------------------
def save_model(model: SproutModel, folder: str | os.PathLike) -> Path:
    """Write ``model.safetensors`` + ``config.json`` into ``folder`` (created); returns it."""
    from safetensors.torch import save_file

    from vectree.retrieval.store import atomic_write_bytes

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = model.config
    if not cfg.created:
        cfg.created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    tensors = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    tmp = folder / f".{WEIGHTS_FILE}.tmp"
    save_file(tensors, str(tmp), metadata={"format": "sprout", "base_encoder": cfg.base_encoder})
    os.replace(tmp, folder / WEIGHTS_FILE)
    atomic_write_bytes(folder / CONFIG_FILE, json.dumps(cfg.to_dict(), indent=1, sort_keys=True).encode())
    return folder


def load_model(folder: str | os.PathLike, *, check_embedder: bool = True) -> SproutModel:
    """Load a model written by :func:`save_model`.  With ``check_embedder``, the configured
    embedder (``vectree.retrieval.embed``) must be the model's base encoder."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg_path, w_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    if not cfg_path.exists() or not w_path.exists():
        raise ModelNotFoundError(f"no SproutRAG model in {folder} (needs {CONFIG_FILE} and {WEIGHTS_FILE})")
    cfg = SproutConfig.from_dict(json.loads(cfg_path.read_text()))
    if check_embedder:
        from vectree.retrieval.config import load_settings
        from vectree.retrieval.embed import DEFAULT_MODEL_NAME, EmbedderInfo

        configured = EmbedderInfo(load_settings().embed_model or DEFAULT_MODEL_NAME, cfg.base_dim)
        EmbedderInfo(cfg.base_encoder, cfg.base_dim).check_compatible(configured, where="SproutRAG model")
    model = SproutModel(cfg)
    state = load_file(str(w_path))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{w_path} does not match its config: missing {missing}, unexpected {unexpected}")
    model.eval()
    return model


# ---- models in a store ---------------------------------------------------------------------
#
# ``<store>/sprout/models/CURRENT`` says which model is live: a model id (a folder beside it, or
# the package's default model), or ``none`` (SproutRAG switched off: ``search_within_paper`` uses
# plain passages).  Without the file the package's default model is live, when one ships
# (``vectree/models/sprout/<id>/``; ``$VECTREE_SPROUT_DEFAULT_MODEL`` names another folder, or
# ``none`` for no default).  ``vectree sprout list`` / ``vectree sprout use NAME|none`` read and
# switch it.
OFF = "none"
PACKAGED_DIR = Path(__file__).resolve().parents[2].joinpath("models", "sprout")  # package data, not the store


class SproutOffError(SproutUnavailableError):
    """SproutRAG is switched off in this store (``vectree sprout use none``)."""


def models_dir(store) -> Path:
    return Path(store.sprout_models_dir)


def default_model_dir() -> Path | None:
    """The package's default model (trained on licence-compatible data only), or ``None``."""
    from vectree.retrieval.config import load_settings

    env = load_settings().sprout_default_model  # VECTREE_SPROUT_DEFAULT_MODEL
    if env is not None:
        if env.strip().lower() in ("", OFF):
            return None
        folder = Path(env)
        return folder if (folder / WEIGHTS_FILE).exists() else None
    if not PACKAGED_DIR.is_dir():
        return None
    found = sorted(p for p in PACKAGED_DIR.iterdir() if (p / WEIGHTS_FILE).exists())
    return found[-1] if found else None


def model_dir_by_id(store, model_id: str) -> Path | None:
    """A model's folder by id: the store's models first, then the package's default, then any
    other model the package ships (trees built by an earlier default stay searchable with it)."""
    folder = models_dir(store) / model_id
    if (folder / WEIGHTS_FILE).exists():
        return folder
    default = default_model_dir()
    if default is not None and model_id in (default.name, _config_id(default)):
        return default
    if PACKAGED_DIR.is_dir():
        for p in sorted(PACKAGED_DIR.iterdir()):
            if (p / WEIGHTS_FILE).exists() and model_id in (p.name, _config_id(p)):
                return p
    return None


def _config_id(folder: Path) -> str:
    try:
        return json.loads((folder / CONFIG_FILE).read_text()).get("model_id") or folder.name
    except (OSError, ValueError):
        return folder.name


def live_choice(store) -> str | None:
    """What ``CURRENT`` says: a model id, ``"none"`` (switched off), or ``None`` (no choice made)."""
    # through the store: a snapshot view answers with the model it was published with
    return store.read_sprout_model_pointer()


def sprout_switched_off(store) -> bool:
    return live_choice(store) == OFF


def current_model_dir(store) -> Path | None:
    """The live model's folder in ``store`` (or the package's default when the store chose none),
    or ``None`` when SproutRAG is switched off or no model exists."""
    choice = live_choice(store)
    if choice == OFF:
        return None
    if choice is None:
        return default_model_dir()
    return model_dir_by_id(store, choice)


def set_live_model(store, model_id: str) -> Path | None:
    """Make ``model_id`` the live model (``"none"``: switch SproutRAG off); returns its folder."""
    from vectree.retrieval.store import atomic_write_bytes

    if model_id != OFF:
        folder = model_dir_by_id(store, model_id)
        if folder is None:
            known = ", ".join(m["model_id"] for m in list_models(store)) or "none yet"
            raise ModelNotFoundError(f"no SproutRAG model {model_id!r} in {models_dir(store)} (known: {known}); "
                                     "`vectree sprout list` shows them, `vectree sprout train` trains one")
        load_model(folder)  # refuse a broken or incompatible model before it goes live
    store.write_sprout_model_pointer(model_id)
    return None if model_id == OFF else model_dir_by_id(store, model_id)


def model_summary(folder: Path) -> dict[str, Any]:
    """What ``vectree sprout list`` shows of one model (read from its config, no weights loaded)."""
    cfg = json.loads((folder / CONFIG_FILE).read_text())
    tr = cfg.get("training") or {}
    data = tr.get("data") or {}
    return {
        "model_id": cfg.get("model_id") or folder.name, "path": str(folder), "created": cfg.get("created", ""),
        "sources": sorted({k.split("/")[0] for k in (data.get("summary") or {})}),
        "benchmark_model": bool(data.get("benchmark_model")),
        "dev_ie_before": (tr.get("dev_before") or {}).get("mean_ie"),
        "dev_ie_after": (tr.get("dev_best") or {}).get("mean_ie"),
        "training_seconds": tr.get("seconds"),
    }


def list_models(store) -> list[dict[str, Any]]:
    """Every model the store can use (its own and the package's default), the live one marked."""
    live = current_model_dir(store)
    out = []
    folders = sorted(p for p in models_dir(store).iterdir() if (p / WEIGHTS_FILE).exists()) \
        if models_dir(store).is_dir() else []
    default = default_model_dir()
    for folder, origin in [(f, "store") for f in folders] + ([(default, "package default")] if default else []):
        try:
            row = model_summary(folder)
        except (OSError, ValueError) as exc:
            row = {"model_id": folder.name, "path": str(folder), "error": str(exc)}
        row["origin"] = origin
        row["live"] = live is not None and folder.resolve() == live.resolve()
        out.append(row)
    return out


def publish_model(store, model: SproutModel, *, make_live: bool = True) -> Path:
    """Save ``model`` under ``<store>/sprout/models/<model_id>``; with ``make_live`` (default) it
    becomes the live one."""
    if not model.config.model_id:
        raise ValueError("a published model needs a model_id")
    folder = save_model(model, models_dir(store) / model.config.model_id)
    if make_live:
        set_live_model(store, model.config.model_id)
    return folder


def load_current_model(store) -> SproutModel:
    folder = current_model_dir(store)
    if folder is None:
        if sprout_switched_off(store):
            raise SproutOffError(f"SproutRAG is switched off in {store.root}; `vectree sprout use NAME` "
                                 "switches a model back on (`vectree sprout list` shows them)")
        raise ModelNotFoundError(
            f"no trained SproutRAG model in {store.sprout_dir}; run `vectree sprout train` "
            "(or materialise sprout_model with config train: true)"
        )
    return load_model(folder)


CARD_FILE = "MODEL_CARD.md"


def model_card(model: SproutModel) -> str:
    """A model card: what the model is, what it was trained on (and so where it may go), its dev
    figures, how long training took, and how to use or roll it back."""
    cfg = model.config
    tr = cfg.training or {}
    data = tr.get("data") or {}
    sources = data.get("sources") or ["hotpotqa", "qasper"]
    bench = bool(data.get("benchmark_model"))
    lines = [f"# SproutRAG model `{cfg.model_id}`", ""]
    if bench:
        lines += ["**Benchmark model: never ship it.** It was trained with DragonBall (CC-BY-NC-SA-4.0, "
                  "non-commercial, share-alike); use it only to measure SproutRAG on that benchmark.", ""]
    else:
        lines += ["Trained on licence-compatible data only (" + " + ".join(sources) + "; no DragonBall).", ""]
    lines += [f"- created: {cfg.created}", f"- base encoder: {cfg.base_encoder} ({cfg.base_dim} dimensions)",
              f"- parameters: {model.n_parameters():,}",
              f"- training: {tr.get('seconds')} s on {((tr.get('train_config') or {}).get('threads'))} threads, "
              f"seed {(tr.get('train_config') or {}).get('seed')}, best encoder epoch {tr.get('best_epoch')}, "
              f"best reranker epoch {tr.get('best_rerank_epoch')}",
              f"- learned threshold tau: {tr.get('tau_after')}",
              *_single_paragraph_line(cfg),
              ("- node scorer: reads the query's words in each node too (BM25 of its chunks and the share of "
               "the query's words it holds: `retrieval.sprout.lexical`)" if model.node_scorer.reads_lexical else
               "- node scorer: cosine features only (no lexical features)"),
              (f"- node vectors: nodes of up to {cfg.text_node_chunks} chunks are represented by the "
               f"{cfg.base_encoder} vector of their own text (searched with the plain query), larger ones "
               "by their progressive embedding" if cfg.text_node_chunks else
               "- node vectors: progressive embeddings throughout, queries through the learned adapter"),
              (f"- evidence cap: a set of nodes is expected to hold at most {cfg.search.gold_cap:g} relevant "
               "sentences, the median evidence size of the training queries (`SearchParams.gold_cap`)"
               if cfg.search.gold_cap else "- evidence cap: none (the expected-IE greedy is uncapped)"),
              *_logit_scale_line(cfg),
              "- reproduce: `vectree sprout train --seed "
              f"{(tr.get('train_config') or {}).get('seed')}"
              + "".join(f" --source {s}" for s in sources) + (" --quick" if data.get("quick") else "") + "`",
              "", "## Data", "",
              f"Sources: {', '.join(sources)}.  Split rule: {data.get('split_rule', '')}.",
              "DragonBall, when used, is split by query: its dev queries are never trained on, and the "
              "evaluation reports DragonBall on them." if bench else
              "HotpotQA `test` questions are never trained on or selected with.", "",
              "| source/split | docs | queries | chunks |", "|---|---:|---:|---:|"]
    for key, v in sorted((data.get("summary") or {}).items()):
        lines.append(f"| {key} | {v['docs']} | {v['queries']} | {v['chunks']} |")
    lines += ["", "Files (sha256):", ""] + [f"- `{p}` {h[:12]}" for p, h in sorted((data.get("files") or {}).items())]
    lines += ["", "## Dev figures (IE = recall x precision of the returned sentences)", "",
              "| source | IE@1 before | IE@1 after | IE@3 before | IE@3 after | IE@5 before | IE@5 after |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    before, after = tr.get("dev_before") or {}, tr.get("dev_best") or {}
    for src in sorted(k for k, v in after.items() if isinstance(v, dict)):
        b, a = before.get(src) or {}, after[src]
        lines.append(f"| {src} | " + " | ".join(f"{b.get(f'ie@{k}', '')} | {a.get(f'ie@{k}', '')}" for k in (1, 3, 5)) + " |")
    lines += ["", f"Mean dev IE: {before.get('mean_ie')} (untrained, cosine rerank) -> {after.get('mean_ie')}.", ""]
    cal = cfg.within_paper_calibration or {}
    if cal.get("scores"):
        k, depth = cal.get("k"), cal.get("depth")
        lines += ["## Within-paper vote weight", "",
                  f"In `search_within_paper` this model's nodes vote beside BM25 and cosine with weight "
                  f"**{cfg.within_paper_weight}**, "
                  + (f"each node's best {cfg.within_paper_per_node} passages" if cfg.within_paper_per_node
                     else "all the passages of each node")
                  + f", chosen on the {cal.get('queries')} questions of the QASPER dev documents (each "
                  f"followed by the next documents' text up to {cal.get('min_chunks')} chunks, as a paper holds "
                  f"more than its evidence): mean of gold-chunk recall@{k} and @{depth} "
                  "(`vectree.retrieval.passages.calibrate_sprout_weight`; reproduce with "
                  "`benchmarks/calibrate_within_paper.py`).", "",
                  f"| weight / passages per node | recall@{k} | recall@{depth} | score |", "|---|---:|---:|---:|"]
        lines += [f"| {w} | {v.get(f'recall@{k}')} | {v.get(f'recall@{depth}')} | {v.get('score')} |"
                  for w, v in cal["scores"].items()]
        lines.append("")
    lines += ["## Use", "", f"- make it live in a store: `vectree sprout use {cfg.model_id}`",
              "- switch SproutRAG off (plain passages): `vectree sprout use none`; list models: `vectree sprout list`",
              f"- evaluate it: `VECTREE_SPROUT_MODEL=<this folder> vectree eval ... --system sprout`", ""]
    return "\n".join(lines)


def _single_paragraph_line(cfg: SproutConfig) -> list[str]:
    sp = (cfg.training or {}).get("single_paragraph_dev")
    if not sp:
        return []
    if sp.get("trained_for"):
        return ["- returned nodes: only those inside one paragraph (the reranker was trained on those; "
                "larger nodes only route the beam)"]
    return [f"- returned nodes: only those inside one paragraph ({'chosen' if sp.get('chosen') else 'not chosen'} on "
            f"dev: mean IE {sp.get('on')} with it, {sp.get('off')} without)"]


def _logit_scale_line(cfg: SproutConfig) -> list[str]:
    rec = (cfg.training or {}).get("logit_scale_dev")
    if not rec:
        return ([f"- greedy's logit scale: {cfg.search.logit_scale:g}"] if cfg.search.logit_scale != 1.0 else [])
    tried = ", ".join(f"{s} -> {v}" for s, v in rec.get("dev", {}).items())
    return [f"- greedy's logit scale: {cfg.search.logit_scale:g}: a node's precision is read as sigmoid(scale x logit) "
            f"by the expected-IE greedy (`SearchParams.logit_scale`), chosen on dev by mean IE ({tried})"]


def write_model_card(folder: str | os.PathLike, model: SproutModel) -> Path:
    from vectree.retrieval.store import atomic_write_bytes

    path = Path(folder) / CARD_FILE
    atomic_write_bytes(path, model_card(model).encode())
    return path
