"""Section extraction and repair with an LLM (any OpenAI-compatible endpoint).

The model reads the paper as page-tagged text (``[page 3]`` before each page's text), in windows
of consecutive pages sized to a configurable context (``context_tokens``), and returns the
sections it sees as JSON: ``title`` exactly as printed, ``level`` (1 = top), ``page_start``,
``page_end`` and a 1-3 sentence ``summary``.  Each window is told which sections the earlier
windows found, so numbering and levels carry on.

Structured output is asked for with a JSON schema (``response_format={"type": "json_schema"}``);
an endpoint that refuses that (HTTP 400/422) is asked again with ``json_object``, then with no
``response_format`` at all, and the reply is parsed defensively (code fences, ``<think>`` blocks,
prose around the JSON, trailing commas).  A reply that still is not JSON is sent back once with
the parse error; a second failure raises :class:`~vectree.retrieval.llm.LLMResponseError`.

:func:`repair_sections` sends failing entries back with the verifier's reasons and the text of
the candidate pages, and returns the corrections by entry id.

Nothing here decides what is true: :mod:`vectree.retrieval.trees.verify` checks every entry the model
returns against the page text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from vectree.retrieval.llm import LLMResponseError

from .normalize import title_key

DEFAULT_CONTEXT_TOKENS = 16000
CHARS_PER_TOKEN = 3.5  # conservative for English prose with numbers; keeps windows inside the context
PROMPT_RESERVE_TOKENS = 900  # instructions and the list of sections found so far

_SECTION_PROPS = {
    "title": {"type": "string", "description": "the heading exactly as printed, numbering included"},
    "level": {"type": "integer", "description": "1 = top-level section, 2 = subsection, ..."},
    "page_start": {"type": "integer", "description": "the [page N] where the heading is printed"},
    "page_end": {"type": "integer", "description": "the last [page N] of the section's content"},
    "summary": {"type": "string", "description": "1-3 sentences on what the section says"},
}
SECTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": _SECTION_PROPS,
                "required": list(_SECTION_PROPS),
                "additionalProperties": False,
            },
        }
    },
    "required": ["sections"],
    "additionalProperties": False,
}
_REPAIR_PROPS = {"id": {"type": "integer", "description": "the id of the entry being corrected"}, **_SECTION_PROPS}
REPAIR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": _REPAIR_PROPS,
                "required": list(_REPAIR_PROPS),
                "additionalProperties": False,
            },
        }
    },
    "required": ["sections"],
    "additionalProperties": False,
}

EXTRACT_SYSTEM = """You read scientific papers and list their sections.
The user gives page-tagged text: "[page N]" starts the text of page N.
Return JSON only: {"sections": [{"title": ..., "level": ..., "page_start": ..., "page_end": ..., "summary": ...}, ...]}
Rules:
- title: the heading exactly as printed in the text, character for character, with its number ("3.2 Results") if it has one.
- Only real section and subsection headings. Not figure or table captions, running headers, equations, list items or reference entries.
- level: 1 for a top-level section, 2 for a subsection, 3 below that.
- page_start: the N of the [page N] where the heading is printed. page_end: the last page with text of that section.
- summary: 1-3 sentences saying what the section reports, taken from its text.
- Keep document order. Do not invent headings that are not in the text."""

REPAIR_SYSTEM = """You correct entries of a paper's section list that failed a check against the page text.
Each entry has an id, what was claimed, and why the check failed. Candidate pages follow as page-tagged text.
For each entry whose heading really is in the text, return it with the same id, the title exactly as printed
(character for character) and page_start = the [page N] where that heading is printed; fix page_end and level if needed.
Leave out an entry whose heading is not in the text. Return JSON only: {"sections": [{"id": ..., "title": ..., "level": ...,
"page_start": ..., "page_end": ..., "summary": ...}]}"""


# ---------------------------------------------------------------------------------------------
# defensive JSON parsing

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")


def parse_json_reply(text: str | None) -> Any:
    """The JSON value in a model reply: bare, in a code fence, after a ``<think>`` block or inside
    prose; trailing commas tolerated.  Raises ``ValueError`` with the reason when there is none."""
    if text is None or not text.strip():
        raise ValueError("empty reply")
    text = _THINK.sub("", text).strip()
    attempts = [text]
    attempts += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for cand in attempts:
        for variant in (cand, _TRAILING_COMMA.sub(r"\1", cand)):
            try:
                return json.loads(variant)
            except json.JSONDecodeError:
                pass
    decoder = json.JSONDecoder()
    error = "no JSON object or array found"
    for m in re.finditer(r"[\[{]", text):
        chunk = text[m.start():]
        for variant in (chunk, _TRAILING_COMMA.sub(r"\1", chunk)):
            try:
                value, _ = decoder.raw_decode(variant)
                if isinstance(value, (dict, list)):
                    return value
            except json.JSONDecodeError as exc:
                error = f"invalid JSON: {exc}"
    raise ValueError(error)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        m = re.search(r"\d+", value)
        return int(m.group()) if m else None
    return None


def coerce_sections(value: Any, *, with_id: bool = False) -> tuple[list[dict[str, Any]], int]:
    """Section dicts from a parsed reply (``{"sections": [...]}``, a bare list, or one of a few
    other wrappers), with types fixed up.  Returns the sections and how many items were unusable
    (not an object, or no title)."""
    items: Any = value
    if isinstance(value, dict):
        for key in ("sections", "items", "entries", "headings", "toc", "result"):
            if isinstance(value.get(key), list):
                items = value[key]
                break
        else:
            items = [value] if "title" in value else []
    if not isinstance(items, list):
        return [], 1
    out: list[dict[str, Any]] = []
    bad = 0
    for item in items:
        if not isinstance(item, dict) or not str(item.get("title") or "").strip():
            bad += 1
            continue
        ps = _as_int(item.get("page_start", item.get("page")))
        pe = _as_int(item.get("page_end"))
        level = _as_int(item.get("level")) or 1
        entry = {
            "title": re.sub(r"\s+", " ", str(item["title"])).strip(),
            "level": max(1, min(level, 6)),
            "page_start": ps,
            "page_end": pe if pe is not None else ps,
            "summary": re.sub(r"\s+", " ", str(item.get("summary") or "")).strip(),
        }
        if with_id:
            entry["id"] = _as_int(item.get("id"))
        out.append(entry)
    return out, bad


# ---------------------------------------------------------------------------------------------
# structured output with fallbacks


@dataclass
class StructuredCaller:
    """Calls the model for JSON, stepping down the ``response_format`` modes an endpoint refuses.

    The mode that worked is kept for the next call (one paper makes several calls)."""

    llm: Any
    max_tokens: int = 4096
    modes: list[str] = field(default_factory=lambda: ["json_schema", "json_object", "none"])
    calls: int = 0
    notes: list[str] = field(default_factory=list)

    def _format(self, mode: str, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    def _chat(self, messages: list[dict[str, Any]], schema: dict[str, Any], name: str):
        while True:
            mode = self.modes[0]
            try:
                self.calls += 1
                return self.llm.chat(messages, response_format=self._format(mode, schema, name), max_tokens=self.max_tokens)
            except LLMResponseError as exc:
                if exc.status_code in (400, 422) and len(self.modes) > 1:
                    self.notes.append(f"endpoint refused response_format {mode} (HTTP {exc.status_code}); trying {self.modes[1]}")
                    self.modes.pop(0)
                    continue
                raise

    def call(self, messages: list[dict[str, Any]], schema: dict[str, Any], name: str) -> Any:
        """The parsed JSON reply; one corrective round trip when the first reply is not JSON."""
        reply = self._chat(messages, schema, name)
        try:
            return parse_json_reply(reply.content)
        except ValueError as first:
            self.notes.append(f"reply was not JSON ({first}); asked again")
            retry = messages + [
                {"role": "assistant", "content": reply.content or ""},
                {"role": "user", "content": f"That reply was not valid JSON ({first}). Reply with the JSON object only, nothing else."},
            ]
            reply = self._chat(retry, schema, name)
            try:
                return parse_json_reply(reply.content)
            except ValueError as second:
                raise LLMResponseError(f"the model's reply is not valid JSON after a retry: {second}") from second


# ---------------------------------------------------------------------------------------------
# windows and extraction


def page_windows(page_texts: Sequence[str], *, budget_chars: int) -> list[list[tuple[int, str]]]:
    """Consecutive pages grouped so that each window's tagged text fits ``budget_chars``; a page
    longer than the budget is split into parts that keep its page tag."""
    if budget_chars < 200:
        raise ValueError(f"context too small for page windows ({budget_chars} characters)")
    windows: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    used = 0
    for page_no, text in enumerate(page_texts, start=1):
        text = text or ""
        parts = [text[i:i + budget_chars - 40] for i in range(0, len(text), budget_chars - 40)] or [""]
        for part in parts:
            cost = len(part) + 12
            if current and used + cost > budget_chars:
                windows.append(current)
                current, used = [], 0
            current.append((page_no, part))
            used += cost
    if current:
        windows.append(current)
    return windows


def tagged(window: Sequence[tuple[int, str]]) -> str:
    return "\n\n".join(f"[page {p}]\n{t}" for p, t in window)


@dataclass
class ExtractConfig:
    """Sizes of one model call: the model's context, and the part of it kept for the reply
    (default a quarter of the context, at most 4096 tokens)."""

    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    output_tokens: int | None = None

    @property
    def max_output(self) -> int:
        return self.output_tokens or min(4096, max(256, self.context_tokens // 4))

    @property
    def budget_chars(self) -> int:
        """Characters of page text per window."""
        room = self.context_tokens - self.max_output - PROMPT_RESERVE_TOKENS
        if room < 64:
            raise ValueError(
                f"a context of {self.context_tokens} tokens leaves no room for page text after {self.max_output} "
                f"output and {PROMPT_RESERVE_TOKENS} prompt tokens; raise VECTREE_LLM_CONTEXT_TOKENS"
            )
        return int(room * CHARS_PER_TOKEN)


def extract_sections(
    llm: Any, page_texts: Sequence[str], *, title: str = "", config: ExtractConfig | None = None,
    caller: StructuredCaller | None = None,
) -> list[dict[str, Any]]:
    """Sections of the whole paper, window by window, merged in document order.

    A section reported by two windows (a heading repeated across the overlap, or a page split) is
    kept once.  A section whose ``page_end`` is the last page of its window, with windows after
    it, may run on: its end becomes the page where the next section at its level or above starts.
    """
    config = config or ExtractConfig()
    caller = caller or StructuredCaller(llm, max_tokens=config.max_output)
    n_pages = len(page_texts)
    windows = page_windows(page_texts, budget_chars=config.budget_chars)
    merged: list[dict[str, Any]] = []
    open_ended: list[int] = []
    for w_index, window in enumerate(windows):
        first, last = window[0][0], window[-1][0]
        context = ""
        if merged:
            recent = merged[-12:]
            context = "Sections found on earlier pages (do not repeat them; continue their numbering and levels):\n" + "\n".join(
                f"- {e['title']} (level {e['level']}, page {e['page_start']})" for e in recent
            ) + "\n\n"
        prompt = (
            f"Paper: {title or 'untitled'} ({n_pages} pages). This part holds pages {first}-{last}.\n"
            f"{context}List every section heading printed in this part.\n\n{tagged(window)}"
        )
        value = caller.call(
            [{"role": "system", "content": EXTRACT_SYSTEM}, {"role": "user", "content": prompt}],
            SECTIONS_SCHEMA, "section_list",
        )
        sections, bad = coerce_sections(value)
        if bad:
            caller.notes.append(f"pages {first}-{last}: {bad} unusable item(s) in the reply")
        for s in sections:
            key = title_key(s["title"])
            dup = next((e for e in merged[-20:] if title_key(e["title"]) == key
                        and s["page_start"] is not None and e["page_start"] is not None
                        and abs(e["page_start"] - s["page_start"]) <= 1), None)
            if dup is not None:
                continue
            merged.append(s)
            if w_index + 1 < len(windows) and s["page_end"] == last:
                open_ended.append(len(merged) - 1)
    for i in open_ended:
        e = merged[i]
        nxt = next((m for m in merged[i + 1:] if m["level"] <= e["level"] and m["page_start"]), None)
        if nxt is not None and e["page_start"] is not None:
            e["page_end"] = max(e["page_end"] or e["page_start"], nxt["page_start"])
        elif e["page_start"] is not None:
            e["page_end"] = n_pages
    return merged


def repair_sections(
    llm: Any, entries: Sequence[Mapping[str, Any]], failures: Sequence[Any], page_texts: Sequence[str], *,
    title: str = "", config: ExtractConfig | None = None, caller: StructuredCaller | None = None,
) -> dict[int, dict[str, Any]]:
    """Send failing entries back with the verifier's reasons and the text of their candidate
    pages; return the corrections keyed by entry index (entries the model leaves out are absent).

    ``failures`` are :class:`~vectree.retrieval.trees.verify.EntryCheck` objects of the failing entries.
    Candidate pages: the claimed page and its neighbours, and up to two pages elsewhere where the
    verifier saw the title; all of them trimmed to fit the context.
    """
    config = config or ExtractConfig()
    caller = caller or StructuredCaller(llm, max_tokens=config.max_output)
    n_pages = len(page_texts)
    if not failures:
        return {}
    pages: list[int] = []
    lines = []
    for check in failures:
        e = entries[check.index]
        claimed = {k: e.get(k) for k in ("title", "level", "page_start", "page_end")}
        lines.append(f"- id {check.index}: {json.dumps(claimed, ensure_ascii=False)} failed: {'; '.join(check.reasons)}")
        ps = e.get("page_start") if isinstance(e.get("page_start"), int) else check.page_start
        for p in [ps - 1, ps, ps + 1, *check.elsewhere[:2]]:
            if 1 <= p <= n_pages and p not in pages:
                pages.append(p)
    pages.sort()
    budget = config.budget_chars - sum(len(x) for x in lines)
    per_page = max(400, budget // max(1, len(pages)))
    window = [(p, (page_texts[p - 1] or "")[:per_page]) for p in pages]
    prompt = (
        f"Paper: {title or 'untitled'} ({n_pages} pages).\nEntries that failed the check:\n" + "\n".join(lines)
        + f"\n\nCandidate pages:\n\n{tagged(window)}"
    )
    value = caller.call(
        [{"role": "system", "content": REPAIR_SYSTEM}, {"role": "user", "content": prompt}], REPAIR_SCHEMA, "section_repairs",
    )
    fixes, _ = coerce_sections(value, with_id=True)
    wanted = {c.index for c in failures}
    out: dict[int, dict[str, Any]] = {}
    for f in fixes:
        idx = f.pop("id", None)
        if idx in wanted and idx not in out:
            out[idx] = f
    return out
