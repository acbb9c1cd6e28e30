"""LLM-judged metrics, run only when an OpenAI-compatible endpoint is configured.

Without ``OPENAI_BASE_URL`` none of this runs and the metrics are absent from ``results.json``
(the report says "not run"); they are never estimated.  With an endpoint
(``VECTREE_LLM_MODEL`` names the model), every call uses temperature 0 and asks for JSON:

* ``llm_judge_correctness`` (paper QA): the judge sees the question, the reference answers and
  the prediction and says whether the prediction is correct (1) or not (0).
* ``answer_accuracy`` (PubMedQA): the answer model reads the question and the system's top-ranked
  abstract and answers yes / no / maybe; 1 when that equals ``final_decision``.  Routing quality
  therefore shows in it: a wrong abstract rarely gives the right answer.
* ``answer_composite`` (multi-paper synthesis): ``0.75 x factuality F1 + 0.25 x scaled cosine``.
  Factuality F1: the judge lists the atomic claims of the prediction and of the expert answer,
  then checks each prediction claim against the expert answer (precision) and each expert
  claim against the prediction (recall).  Scaled cosine: ``max(0, answer_cosine)``.

A reply that is not the JSON asked for scores the item as ``None`` (left out of the mean) and
the reason is kept in the item's ``llm_errors``.
"""

from __future__ import annotations

import json
import re
from typing import Any

SYSTEM = "You are a strict evaluator. Reply with JSON only, no prose."


class Judge:
    def __init__(self, client, model: str, embedder=None, documents: dict | None = None):
        self.client = client
        self.model = model
        self.embedder = embedder
        self.documents = documents or {}

    @classmethod
    def from_settings(cls, settings, embedder=None, documents: dict | None = None) -> "Judge":
        from openai import OpenAI  # why local: openai costs ~2 s to import; only runs with an LLM judge need it

        client = OpenAI(base_url=settings.llm_base_url, api_key=settings.llm_api_key or "not-needed",
                        timeout=120, max_retries=1)
        return cls(client, settings.llm_model, embedder, documents)

    def _json(self, prompt: str) -> Any:
        resp = self.client.chat.completions.create(
            model=self.model, temperature=0, messages=[{"role": "system", "content": SYSTEM},
                                                       {"role": "user", "content": prompt}])
        text = resp.choices[0].message.content or ""
        m = re.search(r"(\{.*\}|\[.*\])", text, re.S)
        if not m:
            raise ValueError(f"the judge did not reply with JSON: {text[:120]!r}")
        return json.loads(m.group(1))

    # ---- per task ---------------------------------------------------------------------
    def score_item(self, task: str, question, item: dict[str, Any], bench=None) -> None:
        try:
            if task == "paper_qa":
                item["llm_judge_correctness"] = self.correctness(
                    question.question, [r.answer for r in question.references], item.get("answer", ""))
            elif task == "routing":
                top = (item.get("top") or [None])[0]
                docs = getattr(bench, "documents", {}) if bench is not None else self.documents
                doc = docs.get(top) if top else None
                item["llm_answer"] = self.yes_no_maybe(question.question, doc.text if doc else "")
                item["answer_accuracy"] = float(item["llm_answer"] == question.label)
            elif task == "synthesis":
                f1 = self.factuality_f1(item.get("answer", ""), question.expert_answer)
                item["factuality_f1"] = f1
                item["answer_composite"] = 0.75 * f1 + 0.25 * max(0.0, float(item.get("answer_cosine", 0.0)))
        except Exception as exc:  # noqa: BLE001 - a bad reply scores nothing, it never stops the run
            item.setdefault("llm_errors", []).append(f"{type(exc).__name__}: {exc}")

    def correctness(self, question: str, references: list[str], prediction: str) -> float:
        got = self._json(
            "Question: " + question + "\nReference answers (any one is correct):\n"
            + "\n".join(f"- {r}" for r in references) + f"\nPrediction: {prediction}\n"
            'Is the prediction correct? Reply {"correct": true} or {"correct": false}.')
        return 1.0 if bool(got.get("correct")) else 0.0

    def yes_no_maybe(self, question: str, context: str) -> str:
        got = self._json(f"Context:\n{context[:6000]}\n\nQuestion: {question}\n"
                         'Answer from the context only. Reply {"answer": "yes"}, {"answer": "no"} or {"answer": "maybe"}.')
        answer = str(got.get("answer", "")).strip().lower()
        if answer not in ("yes", "no", "maybe"):
            raise ValueError(f"answer {answer!r} is not yes, no or maybe")
        return answer

    def claims(self, text: str) -> list[str]:
        got = self._json(f"Text:\n{text}\n\nList its atomic factual claims. Reply {{\"claims\": [\"...\", ...]}}.")
        return [str(c) for c in got.get("claims", []) if str(c).strip()]

    def supported(self, claims: list[str], reference: str) -> list[bool]:
        if not claims:
            return []
        got = self._json(f"Reference:\n{reference}\n\nClaims:\n" + "\n".join(f"{i}. {c}" for i, c in enumerate(claims))
                         + '\nFor each claim, is it supported by the reference? Reply {"supported": [true, false, ...]} '
                           "with one value per claim, in order.")
        values = [bool(v) for v in got.get("supported", [])]
        if len(values) != len(claims):
            raise ValueError(f"{len(values)} verdicts for {len(claims)} claims")
        return values

    def factuality_f1(self, prediction: str, reference: str) -> float:
        pred_claims, ref_claims = self.claims(prediction), self.claims(reference)
        p_ok = self.supported(pred_claims, reference)
        r_ok = self.supported(ref_claims, prediction)
        precision = sum(p_ok) / len(p_ok) if p_ok else 0.0
        recall = sum(r_ok) / len(r_ok) if r_ok else 0.0
        return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
