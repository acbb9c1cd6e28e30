"""The registry of evaluated systems: one name, one factory, the tasks it answers.

``make_system(name, task)`` returns a ready-to-prepare :class:`~.base.System`, or raises
:class:`NotApplicable` when the system has nothing to say on that task (the harness records it
as not run, with the reason).  ``systems_for(task)`` lists the names that apply.

===================  =============================================================  ===========
name                 what                                                           tasks
===================  =============================================================  ===========
vectree              paper QA: the agent; routing / synthesis: Layer 0 hybrid       qa, r, syn
vectree-sprout       paper QA: the agent, SproutRAG nodes in search_within_paper    qa
vectree-no-rerank    ablation: no trained reranker/reader (hybrid + rules)           qa, r, syn
vectree-no-reader    ablation: reranked passages, rule-based pages and answer        qa
vectree-no-calibration  ablation: reranker + reader, rule pages, no abstention      qa
vectree-no-adapter   ablation: the agent without the reader's query adapter          qa
vectree-no-acronyms  ablation: within-paper queries not expanded by the paper's acronyms  qa
vectree-bm25         Layer 0 search, BM25 alone                                     r, syn
vectree-dense        Layer 0 search, dense alone                                    r, syn
bm25                 Tantivy BM25 over fixed 256-token chunks                       all
dense-rag            MiniLM over fixed 256-token chunks                             all
fixed-128            MiniLM over fixed 128-token chunks                             all
reranked-dense-rag   dense top-50 reranked by the trained reader ($VECTREE_CROSS_ENCODER: yours)  all
raptor               RAPTOR, extractive summaries, collapsed tree                   all
flat                 MiniLM over SproutRAG's 1-2-sentence chunks                    all
paragraphs           MiniLM over whole paragraphs                                   all
paragraphs-bm25      paragraphs, cosine + 0.3 x relative BM25                       sent
sprout (+ablations)  SproutRAG through retrieval.sprout                             sent, qa
===================  =============================================================  ===========
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .base import (Doc, Hit, NotAvailable, PaperAnswer, Ranking, RetrieverSystem, RunContext,  # noqa: F401
                   SynthAnswer, System)


class NotApplicable(ValueError):
    """The system does not answer this benchmark's task."""


class UnknownSystem(KeyError):
    pass


@dataclass(frozen=True)
class SystemSpec:
    name: str
    tasks: tuple[str, ...]
    make: Callable[[str], System]
    summary: str


# why the factories import their system lazily: `vectree --help` reads this registry, and each
# system's module loads its own heavy stack (LanceDB, Tantivy, torch, scikit-learn) only to run
def _agent_or_layer0(task: str) -> System:
    from .vectree import Layer0System, VectreeAgentSystem

    return VectreeAgentSystem() if task == "paper_qa" else Layer0System("vectree")


def _agent(name):
    def make(task):
        from .vectree import VectreeAgentSystem

        return VectreeAgentSystem(name)
    return make


def _agent_or_layer0_named(name):
    def make(task):
        from .vectree import Layer0System, VectreeAgentSystem

        return VectreeAgentSystem(name) if task == "paper_qa" else Layer0System(name)
    return make


def _layer0(name):
    def make(task):
        from .vectree import Layer0System

        return Layer0System(name)
    return make


def _bm25(task):
    from .lexical import BM25System

    return BM25System()


def _dense(task):
    from .dense import DenseSystem

    return DenseSystem()


def _fixed128(task):
    from .dense import DenseSystem

    return DenseSystem(128, name="fixed-128")


def _reranked(task):
    from .dense import RerankedDenseSystem

    return RerankedDenseSystem()


def _raptor(task):
    from .raptor import RaptorSystem

    return RaptorSystem()


def _flat(task):
    from .dense import FlatSystem

    return FlatSystem()


def _paragraphs_bm25(task):
    from .paragraphs import ParagraphBM25System

    return ParagraphBM25System()


def _paragraphs(task):
    from .paragraphs import ParagraphSystem

    return ParagraphSystem()


def _sprout(name):
    def make(task):
        from .sprout import SproutSystem

        return SproutSystem(name)
    return make


ALL = ("paper_qa", "routing", "sentences", "synthesis")
REGISTRY: dict[str, SystemSpec] = {s.name: s for s in [
    SystemSpec("vectree", ("paper_qa", "routing", "synthesis"), _agent_or_layer0,
               "the agent (paper QA) / Layer 0 hybrid search (routing, synthesis)"),
    SystemSpec("vectree-sprout", ("paper_qa",), _agent("vectree-sprout"),
               "the agent with SproutRAG nodes in search_within_paper"),
    SystemSpec("vectree-no-rerank", ("paper_qa", "routing", "synthesis"), _agent_or_layer0_named("vectree-no-rerank"),
               "ablation: the agent / Layer 0 without the trained reranker and reader"),
    SystemSpec("vectree-no-reader", ("paper_qa",), _agent("vectree-no-reader"),
               "ablation: reranked passages, rule-based page choice and answer"),
    SystemSpec("vectree-no-calibration", ("paper_qa",), _agent("vectree-no-calibration"),
               "ablation: reranker + reader, pages by rule, no abstention"),
    SystemSpec("vectree-no-adapter", ("paper_qa",), _agent("vectree-no-adapter"),
               "ablation: the agent without the reader's trained query adapter"),
    SystemSpec("vectree-no-acronyms", ("paper_qa",), _agent("vectree-no-acronyms"),
               "ablation: within-paper queries as asked, not expanded by the paper's own abbreviations"),
    SystemSpec("vectree-bm25", ("routing", "synthesis"), _layer0("vectree-bm25"), "Layer 0 search, BM25 alone"),
    SystemSpec("vectree-dense", ("routing", "synthesis"), _layer0("vectree-dense"), "Layer 0 search, dense alone"),
    SystemSpec("bm25", ALL, _bm25, "Tantivy BM25 over fixed 256-token chunks"),
    SystemSpec("dense-rag", ALL, _dense, "MiniLM over fixed 256-token chunks, top-k"),
    SystemSpec("fixed-128", ALL, _fixed128, "MiniLM over fixed 128-token chunks, top-k"),
    SystemSpec("reranked-dense-rag", ALL, _reranked, "dense top-50 reranked by the trained reader (or VECTREE_CROSS_ENCODER)"),
    SystemSpec("raptor", ALL, _raptor, "RAPTOR: GMM clusters, extractive summaries, collapsed tree"),
    SystemSpec("flat", ALL, _flat, "MiniLM over SproutRAG's 1-2-sentence chunks (no tree)"),
    SystemSpec("paragraphs", ALL, _paragraphs, "MiniLM over whole paragraphs (paragraph retrieval)"),
    SystemSpec("paragraphs-bm25", ("sentences",), _paragraphs_bm25, "paragraphs, MiniLM cosine + a share of BM25"),
    SystemSpec("sprout", ("sentences", "paper_qa"), _sprout("sprout"), "SproutRAG"),
    SystemSpec("sprout-uniform", ("sentences",), _sprout("sprout-uniform"), "SproutRAG, uniform attention"),
    SystemSpec("sprout-leaves", ("sentences",), _sprout("sprout-leaves"), "SproutRAG, leaf-only retrieval"),
    SystemSpec("sprout-embtree", ("sentences",), _sprout("sprout-embtree"), "SproutRAG, embedding-similarity tree"),
    SystemSpec("sprout-fixedtau", ("sentences",), _sprout("sprout-fixedtau"), "SproutRAG, untrained threshold"),
    SystemSpec("sprout-token", ("sentences",), _sprout("sprout-token"), "SproutRAG, token-level attention"),
    SystemSpec("sprout-nolex", ("sentences",), _sprout("sprout-nolex"), "SproutRAG, no lexical features"),
    SystemSpec("sprout-onepara", ("sentences",), _sprout("sprout-onepara"),
               "SproutRAG, only nodes inside one paragraph"),
    SystemSpec("sprout-textnodes", ("sentences",), _sprout("sprout-textnodes"), "SproutRAG, text-embedded nodes"),
    SystemSpec("sprout-paranodes", ("sentences",), _sprout("sprout-paranodes"), "diagnostic: paragraph nodes, node vectors"),
    SystemSpec("sprout-paratext", ("sentences",), _sprout("sprout-paratext"), "diagnostic: paragraph nodes, text vectors"),
    SystemSpec("sprout-textcos", ("sentences",), _sprout("sprout-textcos"), "diagnostic: text nodes, cosine"),
]}

# what `vectree eval` runs when no --system is given: the method and its published baselines
DEFAULT_SYSTEMS = {
    "paper_qa": ("vectree", "vectree-no-rerank", "vectree-no-reader", "vectree-no-calibration", "vectree-no-adapter",
                 "vectree-no-acronyms",
                 "vectree-sprout",
                 "sprout", "bm25", "dense-rag", "reranked-dense-rag", "raptor"),
    "routing": ("vectree", "vectree-no-rerank", "vectree-bm25", "vectree-dense", "bm25", "dense-rag",
                "reranked-dense-rag", "raptor"),
    "sentences": ("sprout", "flat", "paragraphs", "paragraphs-bm25", "bm25", "dense-rag", "fixed-128", "reranked-dense-rag", "raptor",
                  "sprout-uniform", "sprout-leaves", "sprout-embtree", "sprout-fixedtau", "sprout-onepara",
                  "sprout-nolex", "sprout-token"),
    "synthesis": ("vectree", "vectree-no-rerank", "bm25", "dense-rag", "reranked-dense-rag", "raptor"),
}


def system_names() -> list[str]:
    return list(REGISTRY)


def systems_for(task: str) -> list[str]:
    return [n for n, s in REGISTRY.items() if task in s.tasks]


def make_system(name: str, task: str) -> System:
    spec = REGISTRY.get(name)
    if spec is None:
        raise UnknownSystem(f"unknown system {name!r}; known: {', '.join(REGISTRY)}")
    if task not in spec.tasks:
        raise NotApplicable(f"{name} does not answer {task} benchmarks (it answers {', '.join(spec.tasks)})")
    return spec.make(task)
