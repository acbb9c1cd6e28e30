"""The sentence-level encoder (SLLM) and the token-level ablation.

Default (:class:`SproutEncoder`): frozen MiniLM chunk embeddings are the tokens of a small
trainable transformer encoder that reads the *whole* document's chunk sequence, so attention
spans every chunk of the document, not a 512-token window.  Position enters as a learned
relative-position bias per head (log-spaced distance buckets, so it works for any document
length) plus a learned same-paragraph bias per head (paragraphs are structure every source has:
PDF blocks, DragonBall lines, HotpotQA paragraphs).  It returns the contextualised chunk
embeddings ``h = normalise(x + W_out(z))`` (``W_out`` starts at zero, so an untrained model *is*
MiniLM) and the attention maps of every layer and head.

Ablation (:func:`token_chunk_attention`): MiniLM's own token-level attention maps, every layer
and head, averaged over token pairs into chunk-pair attention, inside windows of at most 512
tokens packed with whole chunks; chunk pairs in different windows get zero attention (the
reference truncates to one window instead, and so drops most of a long document).

:func:`embed_texts` embeds chunk texts with the shared MiniLM, optionally through the project's
on-disk cache (:class:`vectree.retrieval.embedcache.CachedEmbedder`), which benchmarks and training
use so MiniLM runs once per text.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


# ---- MiniLM chunk embeddings with an optional disk cache ----------------------------------
def embed_texts(texts: Sequence[str], *, cache_dir: str | os.PathLike | None = None, embedder=None,
                queries: bool = False, progress: Callable[[int, int], None] | None = None,
                batch: int = 2048) -> np.ndarray:
    """MiniLM embeddings (unit rows, float32) of ``texts``; with ``cache_dir``, through the cache.

    ``progress(done, total)`` is called after each ``batch`` of texts that had to be embedded
    (cache hits cost nothing and are not reported)."""
    from vectree.retrieval.embed import get_embedder

    embedder = embedder or get_embedder()
    encode = embedder.encode_queries if queries else embedder.encode_documents
    texts = list(texts)

    def encode_all(todo: list[str]) -> np.ndarray:
        if progress is None or len(todo) <= batch:
            return encode(todo)
        parts = []
        for start in range(0, len(todo), batch):
            parts.append(encode(todo[start:start + batch]))
            progress(min(start + batch, len(todo)), len(todo))
        return np.concatenate(parts)

    if cache_dir is None or not texts:
        return encode_all(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    from vectree.retrieval.embedcache import CachedEmbedder  # the project's one embedding cache

    cache = CachedEmbedder(embedder, cache_dir)
    try:
        return cache.encode_cached(texts, queries=queries, encode=encode_all)
    finally:
        cache.close()


# ---- the trainable sentence-level encoder --------------------------------------------------
@dataclass
class EncoderConfig:
    """Shape of :class:`SproutEncoder` (recorded in the model's config JSON)."""

    input_dim: int = 384
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    ffn_dim: int = 256
    n_buckets: int = 8  # distance buckets per side: 0, 1, 2, 3-4, 5-8, ..., the last open-ended
    dropout: float = 0.1
    para_bias_init: float = 1.0  # prior: attend within the paragraph
    locality_init: float = 0.25  # prior: attention logit falls by this per distance bucket

    def to_dict(self) -> dict:
        return asdict(self)


def distance_buckets(n: int, n_buckets: int, device=None) -> torch.Tensor:
    """``(n, n)`` bucket index of the signed distance ``j - i`` (0 .. 2 * n_buckets - 2)."""
    pos = torch.arange(n, device=device)
    d = pos[None, :] - pos[:, None]
    mag = d.abs()
    # 0 -> 0, 1 -> 1, 2 -> 2, 3..4 -> 3, 5..8 -> 4, ...: 1 + ceil(log2 |d|) for |d| >= 1
    b = torch.where(mag == 0, torch.zeros_like(mag),
                    1 + torch.ceil(torch.log2(mag.clamp(min=1).float())).long())
    b = b.clamp(max=n_buckets - 1)
    return (n_buckets - 1) + torch.sign(d) * b


class _Layer(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.h = cfg.n_heads
        self.dh = cfg.d_model // cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.o = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, cfg.ffn_dim), nn.GELU(), nn.Linear(cfg.ffn_dim, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)
        # structural priors (learned from here): nearby chunks and chunks of one paragraph attend more
        buckets = torch.arange(2 * cfg.n_buckets - 1) - (cfg.n_buckets - 1)
        self.rel_bias = nn.Parameter(-cfg.locality_init * buckets.abs().float().repeat(cfg.n_heads, 1))
        self.para_bias = nn.Parameter(torch.full((cfg.n_heads,), float(cfg.para_bias_init)))

    def forward(self, z: torch.Tensor, rel: torch.Tensor, same_para: torch.Tensor):
        n = z.shape[0]
        q, k, v = self.qkv(self.ln1(z)).view(n, 3, self.h, self.dh).permute(1, 2, 0, 3)  # each (H, n, dh)
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        logits = logits + self.rel_bias[:, rel] + self.para_bias[:, None, None] * same_para
        attn = logits.softmax(dim=-1)  # (H, n, n)
        out = (attn @ v).transpose(0, 1).reshape(n, -1)
        z = z + self.drop(self.o(out))
        z = z + self.drop(self.ff(self.ln2(z)))
        return z, attn


class SproutEncoder(nn.Module):
    """Transformer over one document's chunk sequence: ``(x, paragraph ids) -> (h, attention)``.

    ``x``: ``(n, input_dim)`` frozen MiniLM chunk embeddings; ``para``: ``(n,)`` paragraph index of
    each chunk.  Returns ``h`` ``(n, input_dim)`` unit rows and the attention maps ``(L, H, n, n)``.
    """

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        self.cfg = cfg
        self.inp = nn.Linear(cfg.input_dim, cfg.d_model)
        self.layers = nn.ModuleList(_Layer(cfg) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.input_dim)
        nn.init.zeros_(self.out.weight)  # start as MiniLM: h = x
        nn.init.zeros_(self.out.bias)

    def forward(self, x: torch.Tensor, para: torch.Tensor):
        if x.ndim != 2 or x.shape[1] != self.cfg.input_dim:
            raise ValueError(f"expected chunk embeddings of shape (n, {self.cfg.input_dim}), got {tuple(x.shape)}")
        n = x.shape[0]
        rel = distance_buckets(n, self.cfg.n_buckets, x.device)
        same = (para[:, None] == para[None, :]).to(x.dtype)
        z = self.inp(x)
        maps = []
        for layer in self.layers:
            z, a = layer(z, rel, same)
            maps.append(a)
        h = F.normalize(x + self.out(self.ln(z)), dim=-1)
        return h, torch.stack(maps)


def aggregate_attention(maps: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """One ``(n, n)`` matrix: ``sum_{l,h} softmax(alpha)_{l,h} A_{l,h}`` (softmax over all layer x head)."""
    w = alpha.reshape(-1).softmax(dim=0)
    return torch.einsum("k,kij->ij", w, maps.reshape(-1, *maps.shape[-2:]))


# ---- the token-level ablation ------------------------------------------------------------------
def _token_model(embedder):
    st = embedder.model
    auto = st[0].auto_model
    if getattr(auto.config, "_attn_implementation", "eager") != "eager":
        auto.set_attn_implementation("eager")  # SDPA kernels do not return attention maps
    return auto, st.tokenizer


def token_chunk_attention(chunk_texts: Sequence[str], *, window_tokens: int = 512, embedder=None) -> np.ndarray:
    """MiniLM token attention averaged into chunk-pair attention: ``(layers * heads, n, n)`` float32.

    Chunks are packed in order into windows of at most ``window_tokens`` tokens ([CLS] and [SEP]
    included); entry ``[k, i, j]`` is the mean over token pairs (token of chunk ``i``, token of
    chunk ``j``) of head ``k``'s attention; pairs in different windows are 0.
    """
    from vectree.retrieval.embed import get_embedder

    embedder = embedder or get_embedder()
    model, tok = _token_model(embedder)
    n = len(chunk_texts)
    ids = [tok(t, add_special_tokens=False)["input_ids"][: window_tokens - 2] for t in chunk_texts]
    n_maps = model.config.num_hidden_layers * model.config.num_attention_heads
    out = np.zeros((n_maps, n, n), dtype=np.float32)
    windows, cur, used = [], [], 0
    for i, t in enumerate(ids):
        if cur and used + len(t) > window_tokens - 2:
            windows.append(cur)
            cur, used = [], 0
        cur.append(i)
        used += len(t)
    if cur:
        windows.append(cur)
    cls, sep = tok.cls_token_id, tok.sep_token_id
    for win in windows:
        seq = [cls]
        owner = [-1]
        for i in win:
            seq.extend(ids[i])
            owner.extend([i] * len(ids[i]))
        seq.append(sep)
        owner.append(-1)
        with torch.no_grad():
            res = model(input_ids=torch.tensor([seq]), attention_mask=torch.ones(1, len(seq), dtype=torch.long),
                        output_attentions=True)
        att = torch.cat([a[0] for a in res.attentions]).numpy()  # (L*H, T, T)
        owner_arr = np.array(owner)
        # P: (len(win), T) averaging matrix over each chunk's tokens
        p = np.zeros((len(win), len(seq)), dtype=np.float32)
        for r, i in enumerate(win):
            mask = owner_arr == i
            if mask.any():
                p[r, mask] = 1.0 / mask.sum()
        block = (p @ att) @ p.T  # (L*H, r, r): two matmuls, not a three-operand einsum
        idx = np.array(win)
        out[:, idx[:, None], idx[None, :]] = block
    return out
