"""The vectree systems: the agent on single-paper QA, Layer 0 search on corpus routing.

* ``vectree`` on ``qasper_pdf`` / ``qasper``: the benchmark's PDFs are ingested through the real
  Dagster pipeline (:func:`vectree.pipelines.ingest.ingest_paths`: pages, section trees, passages, index) into a
  store under the run's work directory, and each question is asked with its paper given
  (``vectree.agent.ask.ask(Toolbox(store), question, paper=doc_id)``: the offline navigator, or the LLM
  agent when ``OPENAI_BASE_URL`` is set).  Cited pages are the pages of its valid citations;
  tokens per layer come from its trace.  Imported lazily: when the agent package is missing the
  system is reported as not run, with the import error.
* ``vectree`` / ``vectree-bm25`` / ``vectree-dense`` on ``pubmedqa``: Layer 0 search
  (:mod:`vectree.retrieval.search`) over compact entries built from the benchmark's documents -- one
  paper entry (title; the whole abstract, i.e. all labelled parts; the labels as section titles) and
  one section entry per labelled part -- in hybrid (BM25 + dense, fused), BM25-only or
  dense-only mode.  The tokens counted are those of the compact JSON results of the top 10
  (what the agent's ``search_papers`` would return).
* The same Layer 0 systems on ``scholarqa_multi``: one paper entry per paper (its title, its
  first snippet) and one section entry per snippet; the answer is extracted (the shared rule)
  from the snippets of the matched sections of the top papers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from .base import Doc, NotAvailable, PaperAnswer, Ranking, SynthAnswer, System, count_tokens

MODES = {"vectree": "hybrid", "vectree-bm25": "bm25", "vectree-dense": "dense", "vectree-no-rerank": "hybrid"}
# ablations of the agent: what each part of the trained reader adds
AGENT_VARIANTS = {
    "vectree": {"rerank": True, "reader": True, "calibrated": True},
    "vectree-sprout": {"rerank": True, "reader": True, "calibrated": True},
    "vectree-no-rerank": {"rerank": False, "reader": False, "calibrated": False},
    "vectree-no-reader": {"rerank": True, "reader": False, "calibrated": False},
    "vectree-no-calibration": {"rerank": True, "reader": True, "calibrated": False},
    "vectree-no-adapter": {"rerank": True, "reader": True, "calibrated": True, "adapter": False},
    "vectree-no-acronyms": {"rerank": True, "reader": True, "calibrated": True, "acronyms": False},
}
# Layer 0 reranking depth in the evaluation's routing and synthesis runs (the tool reranks fewer)
SYNTH_DEPTH = 20


# ---- the agent ------------------------------------------------------------------------------
class VectreeAgentSystem(System):
    """``within_paper`` is the Toolbox's ``search_within_paper`` mode: ``"passages"`` for
    ``vectree`` (its store has no SproutRAG model), ``"sprout"`` for ``vectree-sprout``, whose
    store gets the SproutRAG model before ingest, so the pipeline builds every paper's tree."""

    name = "vectree"
    description = "vectree agent (offline navigator, or the LLM agent when configured) over the ingested PDFs"
    tasks = ("paper_qa",)

    def __init__(self, name: str = "vectree"):
        self.name = name
        self.within_paper = "sprout" if name == "vectree-sprout" else "passages"
        self.variant = AGENT_VARIANTS.get(name, AGENT_VARIANTS["vectree"])
        self.model_dir: str | None = None
        if name in ("vectree-no-rerank", "vectree-no-reader", "vectree-no-calibration", "vectree-no-adapter",
                    "vectree-no-acronyms"):
            self.description = {
                "vectree-no-rerank": "ablation: the agent without the trained reranker/reader (hybrid ranking, rule reading)",
                "vectree-no-reader": "ablation: reranked passages, rule-based pages and answers (no reader heads, no calibration)",
                "vectree-no-calibration": "ablation: reranker + reader, pages by the old rule (best + runner-up), no abstention",
                "vectree-no-adapter": "ablation: reranker + reader + calibration, query vectors without the trained "
                                      "query adapter (the calibration was fitted with it)",
                "vectree-no-acronyms": "ablation: the agent with within-paper queries as asked (no expansion "
                                       "by the paper's own abbreviations)",
            }[name]
        if self.within_paper == "sprout":
            self.description = ("vectree agent with SproutRAG nodes in search_within_paper "
                                "(the model of VECTREE_SPROUT_MODEL or the store's live one)")

    def unavailable(self) -> str | None:
        try:
            import vectree.agent.ask  # noqa: F401
            import vectree.agent.tools  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - any import failure: the agent is not built here
            return f"the agent is not importable ({type(exc).__name__}: {exc})"
        if self.within_paper == "sprout":
            from .sprout import find_model_dir

            self.model_dir = find_model_dir()
            if not self.model_dir:
                return ("no trained SproutRAG model: set VECTREE_SPROUT_MODEL to a model folder "
                        "or train one into the store (`vectree sprout train`)")
        return None

    def config(self) -> dict[str, Any]:
        from vectree.retrieval.config import load_settings

        settings = load_settings()
        from vectree.retrieval.rerank.model import get_reader

        reader = get_reader() if self.variant["rerank"] else None
        return {"description": self.description, "agent": "llm" if settings.llm_configured else "offline",
                "reranker": reader.config.model_id if reader else None, **self.variant,
                "llm_model": settings.llm_model if settings.llm_configured else None,
                "pipeline": "vectree.pipelines.ingest.ingest_paths (Dagster, in-process)", "within_paper": self.within_paper,
                "sprout_model_dir": self.model_dir}

    def prepare(self, benchmark, ctx, docs: Sequence[Doc]) -> None:
        from vectree.agent.tools import Toolbox
        from vectree.pipelines.ingest import ingest_paths

        self.ctx = ctx
        corpus = Path(ctx.work_dir) / "vectree-corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        wanted = {}
        for pid, src in benchmark.papers.items():
            # a private folder with just this run's PDFs, so the store holds exactly these papers
            link = corpus / f"{_safe(pid)}.pdf"
            if not link.exists():
                # a hard link or a copy, never a symlink: corpus scans skip symlinks that leave
                # their folder (a corpus must not be a way to read files elsewhere)
                try:
                    os.link(Path(src.pdf).resolve(), link)
                except OSError:
                    link.write_bytes(Path(src.pdf).read_bytes())
            wanted[pid] = link
        # the passage variants (vectree and its ablations) read the same ingested store: one ingest
        store_root = Path(ctx.work_dir) / ("vectree-sprout-store" if self.name == "vectree-sprout" else "vectree-store")
        if self.model_dir:
            # published before ingest, so the pipeline's sprout_tree asset builds every paper's tree
            from vectree.retrieval.sprout.model import load_model, publish_model
            from vectree.retrieval.store import Store

            model = load_model(self.model_dir)
            model.config.model_id = model.config.model_id or "eval"
            publish_model(Store(store_root), model)
        store, report = ingest_paths([corpus], store_root)
        if report.failed_runs:
            raise NotAvailable(f"ingest failed for {sorted(report.failed_runs)}")
        by_path: dict[str, str] = {}
        for row in store.read_catalog():
            for p in [row.get("source_path")] + list(row.get("source_paths") or []):
                if p:
                    by_path[str(Path(p).resolve())] = row["doc_id"]
                    by_path[str(Path(p).absolute())] = row["doc_id"]
        self.doc_ids = {}
        for pid, link in wanted.items():
            doc_id = by_path.get(str(link.absolute())) or by_path.get(str(link.resolve()))
            if doc_id is None:
                raise NotAvailable(f"the ingested store has no paper for {link}")
            self.doc_ids[pid] = doc_id
        self.store = store
        self.toolbox = Toolbox(store, within_paper=self.within_paper,
                               reranker="auto" if self.variant["rerank"] else "off",
                               query_adapter=self.variant.get("adapter", True),
                               acronyms=self.variant.get("acronyms", True))

    def answer_paper(self, question, doc: Doc) -> PaperAnswer:
        doc_id = self.doc_ids[question.paper_id]
        res = self._ask(question.question, doc_id)
        pages = sorted({int(c["page"]) for c in res.citations
                        if c.get("valid", True) and c.get("doc_id") == doc_id and c.get("page") is not None})
        return self._answer(res, tuple(pages))

    def answer_corpus(self, question) -> PaperAnswer:
        """Asked of the whole store: the agent finds the papers (Layer 0) and cites pages in each."""
        res = self._ask(question.question, None)
        paper_of = {v: k for k, v in self.doc_ids.items()}
        pages = sorted({(paper_of[c["doc_id"]], int(c["page"])) for c in res.citations
                        if c.get("valid", True) and c.get("doc_id") in paper_of and c.get("page") is not None})
        return self._answer(res, tuple(pages))

    def _ask(self, question: str, doc_id: str | None):
        from vectree.agent.ask import ask
        from vectree.agent.navigator import OfflineNavigator
        from vectree.retrieval.config import load_settings

        if load_settings().llm_configured:
            return ask(self.toolbox, question, paper=doc_id)
        return OfflineNavigator(self.toolbox, reader=self.variant["reader"],
                                calibrated=self.variant["calibrated"]).answer(question, paper=doc_id)

    def _answer(self, res, pages: tuple) -> PaperAnswer:
        tokens_by_name = (res.trace or {}).get("tokens") or {}
        tokens = {int(k[-1]): int(v) for k, v in tokens_by_name.items() if k.startswith("layer") and k[-1].isdigit()}
        steps = [{"tool": s.get("tool"), "layer": s.get("layer"), "tokens": s.get("tokens"),
                  "ms": round(float(s.get("ms") or 0.0), 1)} for s in (res.trace or {}).get("steps", [])]
        return PaperAnswer(res.answer, pages, tokens, steps,
                           extra={"agent": getattr(res, "agent", ""), "citations": len(res.citations),
                                  "confidence": getattr(res, "confidence", None),
                                  "abstained": getattr(res, "abstained", False)})


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower()).strip("-") or "paper"


# ---- Layer 0 --------------------------------------------------------------------------------
class Layer0System(System):
    """Layer 0 paper search of :mod:`vectree.retrieval.search` in one mode."""

    tasks = ("routing", "synthesis")

    def __init__(self, name: str = "vectree"):
        self.name = name
        self.mode = MODES[name]
        self.rerank = name == "vectree"
        self.reader = None
        self.description = {"hybrid": "Layer 0 hybrid search (Tantivy BM25 + LanceDB dense, fused) over compact entries"
                            + (", top candidates reranked by the trained reader; synthesis cites the papers "
                               "that pass the calibrated paper threshold" if self.rerank else ""),
                            "bm25": "Layer 0 search, BM25 (Tantivy) alone, over compact entries",
                            "dense": "Layer 0 search, dense (LanceDB) alone, over compact entries"}[self.mode]

    def unavailable(self) -> str | None:
        try:
            import vectree.retrieval.search  # noqa: F401
        except Exception as exc:  # noqa: BLE001
            return f"vectree.retrieval.search is not importable ({type(exc).__name__}: {exc})"
        return None

    def config(self) -> dict[str, Any]:
        from vectree.retrieval.search.index import default_fusion

        fusion, weight = default_fusion()
        cfg = {"description": self.description, "mode": self.mode,
               "reranker": self.reader.config.model_id if self.reader is not None else None}
        if self.mode == "hybrid":
            cfg.update(fusion=fusion, dense_weight=weight)
        return cfg

    def prepare(self, benchmark, ctx, docs: Sequence[Doc]) -> None:
        from vectree.retrieval.search import SearchIndex, build_index

        self.ctx = ctx
        self.task = benchmark.task
        if self.rerank:
            from vectree.retrieval.rerank.model import get_reader

            self.reader = get_reader()
        entries = self._entries(benchmark)
        root = Path(ctx.work_dir) / f"layer0-{benchmark.name}"
        if not (root / "CURRENT").exists():  # the three modes share one index
            build_index(root, entries, embedder=ctx.embedder, reason="evaluation")
        self.index = SearchIndex.open(root, embedder=ctx.embedder, auto_refresh=False)
        self.snippet_spans: dict[str, list[tuple[int, int]]] = {}
        if self.task == "synthesis":
            # where each snippet lies in the paper's document text (the reader works on spans)
            by_id = self.docs_by_id = {d.doc_id: d for d in docs}
            for doc_id, paper in benchmark.papers.items():
                text, pos, spans = by_id[doc_id].text, 0, []
                for snippet in paper.snippets:
                    start = text.find(snippet, pos)
                    spans.append((start, start + len(snippet)) if start >= 0 else (0, 0))
                    pos = max(pos, start + len(snippet)) if start >= 0 else pos
                self.snippet_spans[doc_id] = spans

    @staticmethod
    def _entries(benchmark) -> list:
        from vectree.retrieval.search import paper_entry, section_entry

        entries = []
        if benchmark.task == "routing":
            for d in benchmark.documents.values():
                labels = [label for label, _ in d.sections]
                # the paper entry holds the whole abstract, as a real paper's entry does (title and
                # abstract): a PubMedQA document *is* an abstract, cut into labelled parts
                entries.append(paper_entry(d.doc_id, d.title, " ".join(text for _, text in d.sections), labels))
                for i, (label, text) in enumerate(d.sections):
                    entries.append(section_entry(d.doc_id, f"s{i}", label, text, None, None))
        else:
            for p in benchmark.papers.values():
                entries.append(paper_entry(p.doc_id, p.title, p.snippets[0] if p.snippets else ""))
                for i, text in enumerate(p.snippets):
                    entries.append(section_entry(p.doc_id, f"s{i}", "", text, None, None))
        return entries

    def _search(self, question: str, k: int) -> list[dict]:
        hits = self.index.search(question, k, mode=self.mode)
        if self.reader is None:
            return hits
        from vectree.retrieval.rerank.apply import PAPER_DEPTH, rerank_papers

        depth = SYNTH_DEPTH if self.task == "synthesis" else PAPER_DEPTH
        return rerank_papers(self.reader, self.index, question, hits, k, depth=depth,
                             vector_map=self.reader.query_adapter)

    def rank_documents(self, question) -> Ranking:
        results = self._search(question.question, self.ctx.k_routing)
        tokens = count_tokens(json.dumps(results[:10], separators=(",", ":")))
        return Ranking([r["doc_id"] for r in results], {0: tokens})

    def synthesize(self, question) -> SynthAnswer:
        results = self._search(question.question, max(self.ctx.k_papers, SYNTH_DEPTH if self.reader else 0))
        if self.reader is not None:
            # how many papers: those passing the calibrated paper threshold and margin (HotpotQA dev)
            from vectree.retrieval.rerank.calibrate import select

            cal = self.reader.config.calibration or {}
            sel = cal.get("papers") or cal.get("selection") or {"threshold": 0.5, "margin": 0.3}
            chosen = select([r["relevance"] for r in results if "relevance" in r], sel["threshold"], sel["margin"])
            results = [results[i] for i in chosen][:2 * self.ctx.k_papers]
        else:
            results = results[:self.ctx.k_papers]
        papers = [r["doc_id"] for r in results]
        units, texts = [], []
        for r in results:
            spans = self.snippet_spans.get(r["doc_id"], [])
            chosen = [int(s["node_id"][1:]) for s in r.get("matched_sections") or []
                      if str(s.get("node_id", "")).startswith("s")] or [0]
            for i in chosen:
                if 0 <= i < len(spans) and spans[i][1] > spans[i][0]:
                    units.append((r["doc_id"], [spans[i]]))
                    texts.append(self.docs_by_id[r["doc_id"]].text[spans[i][0]:spans[i][1]])
        answer = self.ctx.reader.answer(question.question, units, max_words=self.ctx.answer_words)
        tokens = {0: count_tokens(json.dumps(results, separators=(",", ":"))),
                  2: sum(count_tokens(t) for t in texts)}
        return SynthAnswer(answer, papers, tokens)

    def close(self) -> None:
        self.index = None
