"""Fonts and figure images for the typesetter: STIX faces subset without ligatures, and
matplotlib charts drawn to PNG in memory."""

from __future__ import annotations

import io
import logging
from functools import lru_cache
from pathlib import Path

from .model import Figure

# Unicode ranges kept in the subset fonts: Latin, Greek, punctuation, super/subscripts,
# letter-like symbols, arrows and the common mathematical operators.
_FONT_RANGES = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x2010, 0x205E), (0x2070, 0x209F),
    (0x20AC, 0x20AC), (0x2100, 0x214F), (0x2190, 0x21FF), (0x2200, 0x22FF),
    (0x2300, 0x23FF), (0x25A0, 0x25FF),
]
_FONT_FILES = {
    "regular": "STIXGeneral.ttf",
    "bold": "STIXGeneralBol.ttf",
    "italic": "STIXGeneralItalic.ttf",
    "bolditalic": "STIXGeneralBolIta.ttf",
}


@lru_cache(maxsize=1)
def font_faces() -> dict[str, bytes] | None:
    """STIX faces subset to :data:`_FONT_RANGES` with no GSUB table (hence no ligatures).

    Returns ``None`` when matplotlib (which ships the fonts) or fontTools is missing;
    the renderer then uses MuPDF's built-in serif face.
    """
    try:  # why local: matplotlib and fontTools cost ~0.5 s to import; only a render needs them
        import matplotlib
        from fontTools import subset
        from fontTools.ttLib import TTFont
    except Exception:  # pragma: no cover - optional dependency missing
        return None
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    font_dir = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    unicodes = [c for a, b in _FONT_RANGES for c in range(a, b + 1)]
    faces: dict[str, bytes] = {}
    for key, name in _FONT_FILES.items():
        path = font_dir / name
        if not path.exists():  # pragma: no cover
            return None
        font = TTFont(str(path), recalcTimestamp=False)
        opts = subset.Options()
        opts.layout_features = ["kern"]
        opts.drop_tables += ["GSUB", "FFTM"]
        opts.name_IDs = ["*"]
        opts.notdef_outline = True
        sub = subset.Subsetter(opts)
        sub.populate(unicodes=unicodes)
        sub.subset(font)
        buf = io.BytesIO()
        font.save(buf)
        faces[key] = buf.getvalue()
    return faces


def figure_png(fig: Figure, width_pt: float, dpi: int = 150) -> bytes:
    """Draw ``fig`` with matplotlib's Agg canvas (no pyplot state) and return PNG bytes."""
    if fig.image is not None:
        return fig.image
    # why local: matplotlib is slow to import and only papers with charts need it
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    w_in = width_pt / 72.0
    h_in = w_in * fig.aspect
    rc = {
        "font.family": "serif",
        "font.serif": ["STIXGeneral", "DejaVu Serif"],
        "mathtext.fontset": "stix",
        "font.size": 8.5,
        "axes.linewidth": 0.7,
        "lines.linewidth": 1.3,
        "lines.markersize": 4,
        "svg.hashsalt": "vectree",
    }
    with matplotlib.rc_context(rc):
        mfig = MplFigure(figsize=(w_in, h_in), dpi=dpi)
        FigureCanvasAgg(mfig)
        ax = mfig.add_subplot()
        if fig.kind == "bar":
            cats = [str(c) for c in (fig.series[0].x if fig.series else [])]
            n = max(1, len(fig.series))
            bw = 0.8 / n
            for i, s in enumerate(fig.series):
                xs = [j - 0.4 + bw * (i + 0.5) for j in range(len(cats))]
                ax.bar(xs, list(s.y), width=bw * 0.92, label=s.label or None)
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats)
        else:
            for s in fig.series:
                if fig.kind == "scatter" and not s.style:
                    ax.scatter(list(s.x), list(s.y), s=10, label=s.label or None)
                elif s.style:
                    ax.plot(list(s.x), list(s.y), s.style, label=s.label or None)
                else:
                    ax.plot(list(s.x), list(s.y), label=s.label or None)
        if fig.logx:
            ax.set_xscale("log")
        if fig.logy:
            ax.set_yscale("log")
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(fig.ylabel)
        ax.grid(True, alpha=0.3, linewidth=0.5)
        if any(s.label for s in fig.series):
            ax.legend(frameon=False, fontsize=7.5)
        mfig.tight_layout(pad=0.4)
        buf = io.BytesIO()
        mfig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()

