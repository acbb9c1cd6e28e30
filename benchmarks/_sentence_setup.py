"""Shared set-up of the sentence-benchmark scripts (DragonBall, HotpotQA): the benchmark, the
questions with gold of one SproutRAG split, the corpus and the harness's cached embedder."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def sentence_arguments(description: str, splits: tuple[str, ...] = ("all", "dev", "train", "test"),
                       default_split: str = "all"):
    """The arguments every sentence-benchmark script takes: ``benchmark``, ``--data``, ``--split``;
    the caller adds its own and parses."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("benchmark", choices=["dragonball", "hotpotqa"])
    ap.add_argument("--data", default=None)
    ap.add_argument("--split", default=default_split, choices=list(splits))
    return ap


def load_sentence_benchmark(name: str, data: str | None, split: str = "all"):
    """``(bench, questions, docs, embedder, data_dir)``.  ``split``: ``all``, or a split name of
    ``dragonball_split`` / ``hotpotqa_split`` (by query id)."""
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.evaluation.loaders import load_benchmark, questions_of
    from vectree.evaluation.runner import corpus_docs
    from vectree.retrieval.config import load_settings
    from vectree.retrieval.sprout.data import dragonball_split, hotpotqa_split

    data = data or str(REPO.parent / "shared" / "data" / name)
    settings = load_settings()
    bench = load_benchmark(name, data)
    questions = [q for q in questions_of(bench) if q.gold]
    if split != "all":
        split_of = dragonball_split if name == "dragonball" else hotpotqa_split
        questions = [q for q in questions if split_of(q.query_id) == split]
    emb = cached_embedder(settings.embed_model, directory=settings.eval_cache)
    return bench, questions, corpus_docs(bench), emb, data
