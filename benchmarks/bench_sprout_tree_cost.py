"""What a SproutRAG tree costs to build per paper: progressive node vectors (v1) against text
nodes (v2: nodes of up to 8 chunks embedded from their own text), side by side on real PDFs.

    .venv/bin/python benchmarks/bench_sprout_tree_cost.py [--pdfs ../shared/data/pdfs] [--limit 8]

For each PDF: parse (PyMuPDF), chunk, embed the chunks once (shared by both models, as the
pipeline reuses passage vectors), then build the tree with each packaged model and time it; the
text-node model also embeds its small inner nodes.  Prints per-paper seconds, chunks and embedded
node texts, and the totals with their ratio.  Cold embedding (no cache), one torch thread per
process setting of the machine; run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", type=Path, default=REPO.parent / "shared" / "data" / "pdfs")
    ap.add_argument("--limit", type=int, default=8)
    args = ap.parse_args()

    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.pdf import parse_pdf
    from vectree.retrieval.sprout.chunks import chunk_pages
    from vectree.retrieval.sprout.model import PACKAGED_DIR, load_model

    models = {p.name: load_model(p) for p in sorted(PACKAGED_DIR.iterdir()) if (p / "model.safetensors").exists()}
    emb = get_embedder()
    emb.encode_documents(["warm up"])
    pdfs = sorted(args.pdfs.rglob("*.pdf"))[: args.limit]
    totals = {name: 0.0 for name in models}
    texts_total = {name: 0 for name in models}
    chunk_total = 0.0
    print("| paper | chunks | chunk embedding s | " + " | ".join(f"{n} s | {n} node texts" for n in models) + " |")
    print("|---|---:|---:|" + "---:|---:|" * len(models))
    for pdf in pdfs:
        parsed = parse_pdf(pdf)
        if parsed.status != "ok" or not parsed.pages:
            continue
        _, chunks = chunk_pages([p["text"] for p in parsed.pages])
        if len(chunks) < 2:
            continue
        texts = [c.text for c in chunks]
        t = time.perf_counter()
        x = emb.encode_documents(texts)
        embed_s = time.perf_counter() - t
        chunk_total += embed_s
        row = [pdf.name[:40], str(len(chunks)), f"{embed_s:.2f}"]
        for name, model in models.items():
            counted = []

            def encode(batch, counted=counted):
                counted.append(len(batch))
                return emb.encode_documents(batch)

            t = time.perf_counter()
            model.document_tree(x, [c.paragraph for c in chunks], [c.n_sentences for c in chunks],
                                texts=texts, encode=encode)
            dt = time.perf_counter() - t
            totals[name] += dt
            texts_total[name] += sum(counted)
            row += [f"{dt:.2f}", str(sum(counted))]
        print("| " + " | ".join(row) + " |")
    names = list(models)
    print(f"| **total** | | **{chunk_total:.1f}** | " + " | ".join(f"**{totals[n]:.1f}** | {texts_total[n]}" for n in names) + " |")
    if len(names) >= 2:
        first, last = chunk_total + totals[names[0]], chunk_total + totals[names[-1]]
        print(f"\nchunk embedding + tree, {names[-1]} / {names[0]}: {last:.1f} s / {first:.1f} s = {last / first:.2f}x")


if __name__ == "__main__":
    main()
