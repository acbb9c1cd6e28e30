"""The offline extractor: the demo corpus (true headings known), the shared real PDFs (their
embedded outlines as gold), and a synthetic paper full of heading look-alikes."""

from __future__ import annotations

import pymupdf
import pytest

from vectree.retrieval.pdf import parse_pdf
from vectree.retrieval.trees.evaluate import outline_gold, score
from vectree.retrieval.trees.normalize import MatchText, title_key
from vectree.retrieval.trees.offline import extract_offline
from vectree.retrieval.trees.summaries import document_idf, extractive_summary, section_ranges, split_sentences
from vectree.retrieval.trees.schema import assemble_tree, check_invariants
from vectree.retrieval.trees.verify import verify_entries


def run(parsed, *, use_outline=False):
    record = {"title": parsed.title, "n_pages": parsed.n_pages, "outline": parsed.outline}
    result = extract_offline(record, parsed.pages, use_outline=use_outline)
    verdict = verify_entries(result.entries, [p["text"] for p in parsed.pages])
    return result, verdict


def assemble(parsed, result, verdict):
    root = {"title": parsed.title, "summary": parsed.abstract, "n_pages": parsed.n_pages, "verified": True,
            "verify_note": None}
    return assemble_tree("doc", root, result.entries, verdict.checks, source=result.source)


# ---- the demo corpus ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_parsed(demo_pdfs):
    return {p.stem: parse_pdf(p) for p in demo_pdfs}


def test_layout_headings_of_the_demo_corpus_match_the_truth(demo_parsed):
    from vectree.demo import demo_headings

    for slug, parsed in demo_parsed.items():
        truth = demo_headings(slug)
        result, verdict = run(parsed)  # the outline hidden, layout only
        assert result.source == "layout"
        gold = [{"title": t, "page": p, "level": lv} for lv, t, p in truth]
        s = score(gold, result.entries)
        assert s["recall"] >= 0.95 and s["precision"] >= 0.95, (slug, s["misses"], s["extras"])
        assert s["page_acc"] == 1.0, (slug, [(g["title"], g["page"], e["page_start"]) for g, e in s["pairs"]])
        levels_ok = sum(g["level"] == e["level"] for g, e in s["pairs"])
        assert levels_ok >= 0.9 * len(s["pairs"]), slug
        assert verdict.verified_fraction == 1.0, [c.reasons for c in verdict.failures]
        assert check_invariants(assemble(parsed, result, verdict), parsed.n_pages) == []


def test_demo_outline_papers_use_their_outline(demo_parsed):
    from vectree.demo import OUTLINE_SLUGS, demo_headings

    assert OUTLINE_SLUGS
    for slug in OUTLINE_SLUGS:
        parsed = demo_parsed[slug]
        result, verdict = run(parsed, use_outline=True)
        assert result.source == "outline"
        assert [(e["level"], e["title"], e["page_start"]) for e in result.entries] == demo_headings(slug)
        assert verdict.verified_fraction == 1.0


def test_demo_summaries_are_extractive_and_capped(demo_parsed):
    parsed = next(iter(demo_parsed.values()))
    result, _ = run(parsed)
    text = MatchText.of(" ".join(p["text"] for p in parsed.pages))
    summarised = [e for e in result.entries if e["summary"]]
    assert len(summarised) >= 0.8 * len(result.entries)
    for e in summarised:
        words = e["summary"].rstrip(" …").split()
        assert len(words) <= 60
        # extractive: the summary's opening words are the paper's own
        assert text.contains(" ".join(words[:6])), e["summary"]


# ---- the shared real PDFs -------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared_parsed(shared_pdfs):
    return {p: parse_pdf(p) for p in shared_pdfs}


def test_shared_pdfs_trees_are_sound_and_verified(shared_parsed):
    n = ok = 0
    for path, parsed in shared_parsed.items():
        if parsed.status != "ok":
            continue
        for use_outline in (False, True):
            result, verdict = run(parsed, use_outline=use_outline)
            nodes = assemble(parsed, result, verdict)
            assert check_invariants(nodes, parsed.n_pages) == [], path
            n += len(verdict.checks)
            ok += verdict.n_verified
        assert result.entries or parsed.n_pages <= 2, f"no sections found in {path}"
    assert n and ok / n >= 0.9


def test_shared_pdfs_layout_headings_against_their_outlines(shared_parsed):
    totals = {"gold": 0, "got": 0, "matched": 0, "pages_ok": 0}
    papers = 0
    for path, parsed in shared_parsed.items():
        if parsed.status != "ok" or not parsed.outline:
            continue
        gold, _ = outline_gold(parsed.outline, parsed.title, [p["text"] for p in parsed.pages])
        if not gold:
            continue
        papers += 1
        result, _ = run(parsed)
        s = score(gold, result.entries)
        for k in totals:
            totals[k] += s[k]
    assert papers >= 10
    assert totals["matched"] / totals["got"] >= 0.8  # precision
    assert totals["matched"] / totals["gold"] >= 0.8  # recall
    assert totals["pages_ok"] / totals["matched"] >= 0.9


# ---- heading look-alikes --------------------------------------------------------------------

BODY = ("The method is evaluated on three public benchmarks with careful controls and the results are "
        "reported with confidence intervals so that readers can compare them. ") * 3


def write_tricky(path):
    """Two pages with a running header, page numbers, a bold figure caption, a bold table row,
    a numbered list, numbered references and an equation, between the real headings."""
    doc = pymupdf.open()
    headings = []

    def body(page, y, text):
        """A paragraph below y; returns the y under it (no overlaps)."""
        rect = pymupdf.Rect(72, y, 540, y + 200)
        spare = page.insert_textbox(rect, text, fontsize=10)
        return y + (200 - spare) + 14

    def page_furniture(page, n):
        page.insert_text((72, 40), "Journal of Synthetic Results, Vol. 3", fontsize=8)
        page.insert_text((300, 770), str(n), fontsize=8)

    p1 = doc.new_page()
    page_furniture(p1, 1)
    p1.insert_text((72, 80), "Widgets Considered Harmful", fontsize=18, fontname="hebo")
    y = 120
    for kind, text in [
        ("h", "Abstract"), ("b", BODY), ("h", "1 Introduction"), ("b", BODY),
        ("b", "1. We first list a numbered item that is body text and not a heading at all."),
        ("b", "2. A second numbered item follows it in the very same plain body style."),
        ("h", "2 Method"), ("b", BODY),
        ("cap", "Figure 1: Bold caption that must not become a heading"),
    ]:
        if kind == "h":
            y += 10
            p1.insert_text((72, y), text, fontsize=12, fontname="hebo")
            headings.append((text, 1))
            y += 8
        elif kind == "cap":
            p1.insert_text((72, y + 10), text, fontsize=10, fontname="hebo")
            y += 24
        else:
            y = body(p1, y, text)
    p2 = doc.new_page()
    page_furniture(p2, 2)
    y = 80
    p2.insert_text((72, y), "2.1 Data", fontsize=11, fontname="hebo")
    headings.append(("2.1 Data", 2))
    y = body(p2, y + 8, BODY) + 10
    for x, cell in [(72, "Model"), (250, "Accuracy"), (420, "Runtime")]:  # a bold table head row
        p2.insert_text((x, y), cell, fontsize=10, fontname="hebo")
    for x, cell in [(72, "Baseline"), (250, "0.71"), (420, "12 s")]:
        p2.insert_text((x, y + 14), cell, fontsize=10)
    y += 40
    p2.insert_text((200, y), "3 x + 2 = y", fontsize=10)  # an equation line starting with a number
    y += 24
    p2.insert_text((72, y), "3 Results", fontsize=12, fontname="hebo")
    headings.append(("3 Results", 1))
    y = body(p2, y + 8, BODY) + 10
    p2.insert_text((72, y), "References", fontsize=12, fontname="hebo")
    headings.append(("References", 1))
    y += 16
    for i in range(1, 4):
        p2.insert_text((72, y), f"{i + 3}. Author A, Author B. A paper about widgets. Journal {i}, 2019.", fontsize=9)
        y += 12
    doc.set_metadata({"title": "Widgets Considered Harmful"})
    doc.save(path)
    return headings


def test_heading_look_alikes_are_left_out(tmp_path):
    truth = write_tricky(tmp_path / "tricky.pdf")
    parsed = parse_pdf(tmp_path / "tricky.pdf")
    result, verdict = run(parsed)
    got = [(e["title"], e["level"]) for e in result.entries]
    assert got == truth
    assert verdict.verified_fraction == 1.0
    pages = {e["title"]: (e["page_start"], e["page_end"]) for e in result.entries}
    assert pages["2 Method"] == (1, 2) and pages["2.1 Data"] == (2, 2) and pages["References"] == (2, 2)


# ---- pieces ---------------------------------------------------------------------------------

def test_section_ranges_end_where_the_next_peer_starts():
    # (page, level, heading opens its page)
    starts = [(1, 1, False), (2, 2, False), (3, 2, True), (5, 1, True), (6, 1, False)]
    assert section_ranges(starts, 8) == [(1, 4), (2, 2), (3, 4), (5, 6), (6, 8)]


def test_split_sentences_keeps_abbreviations_together():
    text = "We follow Smith et al. in this. Results are in Fig. 3 and Tab. 2. The end is near! Is it?"
    assert split_sentences(text) == [
        "We follow Smith et al. in this.", "Results are in Fig. 3 and Tab. 2.", "The end is near!", "Is it?",
    ]


def test_extractive_summary_picks_the_central_sentence():
    sentences = [
        "Battery capacity fade was measured over one thousand cycles in this study.",
        "The weather in the laboratory city was pleasant during the entire summer period.",
        "Capacity fade of the battery cells grew faster at high temperature over the cycles.",
        "Cycles at high temperature showed battery capacity fade twice as fast as at room temperature.",
    ]
    idf = document_idf(sentences)
    summary = extractive_summary(sentences, idf, max_tokens=40, max_sentences=1)
    assert summary in (sentences[0], sentences[2], sentences[3])
    assert "weather" not in summary
    capped = extractive_summary([" ".join(["word"] * 80) + "."], idf, max_tokens=20)
    assert capped.endswith("…") and len(capped.split()) <= 20


def test_title_key_is_stable_for_demo_style_headings():
    assert title_key("2.1 Cell Preparation") == title_key("2.1. Cell preparation")
