"""Where a cited quote sits on its page: the rectangles PyMuPDF finds for it in the stored PDF.

The web app draws these boxes over the rendered page image.  Coordinates are PDF points in the
coordinate system of the *rendered* page (rotation applied, origin top left), together with the
page's size in points, so a client scales them to whatever pixel size it shows the image at.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pymupdf

WINDOW_WORDS = 5  # a quote the page's text layer cannot match whole is searched in runs of this many words
MIN_PARTIAL_WORDS = 3  # shorter tails are skipped: three common words match almost anywhere


def _clean(quote: str) -> str:
    # snippets carry ellipses where they were cut; they are not on the page
    return re.sub(r"\s+", " ", quote.replace("…", " ")).strip()


def quote_boxes(pdf_path: str | Path, page_no: int, quote: str) -> dict[str, Any]:
    """The boxes of ``quote`` on 1-based ``page_no`` of ``pdf_path``.

    ``match`` says how they were found: ``exact`` (the whole quote, possibly across lines; one box
    a line), ``partial`` (the quote did not match whole, e.g. because the stored page text was
    de-hyphenated or reordered, so runs of :data:`WINDOW_WORDS` words were searched; ``coverage``
    is the share of runs found) or ``none``.
    """
    text = _clean(quote)
    with pymupdf.open(pdf_path) as pdf:
        if not 1 <= page_no <= pdf.page_count:
            raise IndexError(f"page {page_no} is out of range: the PDF has pages 1-{pdf.page_count}")
        page = pdf[page_no - 1]
        to_view = page.rotation_matrix  # search_for answers in unrotated coordinates; the image is rotated
        rects, match, coverage = [], "none", 0.0
        if text:
            rects = page.search_for(text)
            if rects:
                match, coverage = "exact", 1.0
            else:
                words = text.split()
                runs = [words[i:i + WINDOW_WORDS] for i in range(0, len(words), WINDOW_WORDS)]
                runs = [r for r in runs if len(r) >= MIN_PARTIAL_WORDS]
                found = 0
                for run in runs:
                    hits = page.search_for(" ".join(run))
                    if hits:
                        found += 1
                        rects.extend(hits)
                if found:
                    match, coverage = "partial", round(found / len(runs), 3)
        boxes = []
        for r in rects:
            v = r * to_view
            v.normalize()
            boxes.append([round(v.x0, 2), round(v.y0, 2), round(v.x1, 2), round(v.y1, 2)])
        return {"page": page_no, "width": round(page.rect.width, 2), "height": round(page.rect.height, 2),
                "quote": quote, "match": match, "coverage": coverage, "boxes": boxes}
