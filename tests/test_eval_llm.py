"""LLM-judged metrics through the real ``openai`` client against a scripted OpenAI-compatible
server on 127.0.0.1 (the only LLM the tests ever reach)."""

from __future__ import annotations

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from vectree.evaluation.runner import run_benchmark
from tests.eval_folders import write_pubmedqa, write_qasper_pdf, write_scholarqa_multi


def _reply(prompt: str) -> dict:
    if "Is the prediction correct?" in prompt:
        return {"correct": "waggle" in prompt.split("Prediction:")[-1].lower()}
    if '{"answer": "yes"}' in prompt:
        return {"answer": "yes"}
    if "atomic factual claims" in prompt:
        return {"claims": ["first claim", "second claim"]}
    if "supported by the reference" in prompt:
        n = len(re.findall(r"^\d+\. ", prompt, re.M))
        return {"supported": [i == 0 for i in range(n)]}
    return {}


class _Handler(BaseHTTPRequestHandler):
    calls: list[str] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        _Handler.calls.append(prompt)
        content = "Sure: " + json.dumps(_reply(prompt))  # the judge must find the JSON in prose
        payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": content}}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "VECTREE_EVAL_CACHE")}
    os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    os.environ["OPENAI_API_KEY"] = "test"
    os.environ["VECTREE_EVAL_CACHE"] = str(tmp_path_factory.mktemp("llm-cache"))
    yield
    server.shutdown()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def test_llm_metrics_run_when_an_endpoint_is_configured(llm, tmp_path):
    routing = run_benchmark("pubmedqa", write_pubmedqa(tmp_path / "a"), ["bm25"], work_dir=tmp_path / "w1")[0]
    # the scripted model always says "yes": right on the two yes questions, wrong on the maybe one
    assert routing["metrics"]["answer_accuracy"] == pytest.approx(2 / 3)
    assert [i["llm_answer"] for i in routing["per_item"]] == ["yes", "yes", "yes"]
    assert routing["config"]["llm"] and not any("not run" in n for n in routing["notes"])

    qa = run_benchmark("qasper_pdf", write_qasper_pdf(tmp_path / "b"), ["bm25"], work_dir=tmp_path / "w2")[0]
    per = {i["question_id"]: i for i in qa["per_item"]}
    assert per["q-bees"]["llm_judge_correctness"] == (1.0 if "waggle" in per["q-bees"]["answer"].lower() else 0.0)
    assert qa["metrics"]["llm_judge_correctness"] == pytest.approx(
        sum(i["llm_judge_correctness"] for i in qa["per_item"]) / 4)

    syn = run_benchmark("scholarqa_multi", write_scholarqa_multi(tmp_path / "c"), ["bm25"], work_dir=tmp_path / "w3")[0]
    for item in syn["per_item"]:
        # two claims each way, the first supported: precision = recall = 0.5, factuality F1 0.5
        assert item["factuality_f1"] == pytest.approx(0.5)
        assert item["answer_composite"] == pytest.approx(0.75 * 0.5 + 0.25 * max(0.0, item["answer_cosine"]))
    assert "answer_composite" in syn["metrics"]
    assert any("atomic factual claims" in c for c in _Handler.calls)
