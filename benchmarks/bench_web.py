"""Time to first render of each web view, measured in headless Chromium (Navigation Timing).

The service runs in this process under uvicorn on 127.0.0.1 over ``--store`` (default: the demo
corpus, built into a temporary store).  Each view is loaded ``--runs`` times as a fresh
navigation from ``about:blank`` after one warm-up load, and the table shows, in milliseconds from
navigation start (median and worst):

* ``DOMContentLoaded``: the HTML shell and its script have loaded;
* ``first paint``: the first contentful paint (the header and the "Loading…" line);
* ``view rendered``: the view's data is on screen (the ``vectree:rendered:<view>`` performance
  mark the app sets); for the page view, the page image has decoded with its highlight boxes.

The ask view's figure includes the agent's whole run (the answer cache is cleared every time).

Usage: python benchmarks/bench_web.py [--store PATH] [--runs 5] [--label NAME]
Needs Debian's chromium and chromium-driver and the selenium package (the dev extra).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import httpx
import uvicorn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TIMING_JS = """
const nav = performance.getEntriesByType('navigation')[0];
const fcp = performance.getEntriesByName('first-contentful-paint')[0];
const mark = performance.getEntriesByName('vectree:rendered:' + arguments[0])[0];
return [nav ? nav.domContentLoadedEventEnd : null, fcp ? fcp.startTime : null, mark ? mark.startTime : null];
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_store(folder: Path) -> Path:
    from vectree.cli import run_ingest
    from vectree.demo import build_demo_corpus

    pdfs = build_demo_corpus(folder / "corpus")
    run_ingest([str(pdfs[0].parent)], str(folder / "store"), quiet=True)
    return folder / "store"


def driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,860",
                "--no-first-run", "--disable-background-networking", "--disable-component-update"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def views(client: httpx.Client) -> list[tuple[str, str, str]]:
    """``(label, hash route, mark)`` for each view, from the store's own first paper and answer."""
    papers = client.get("/corpus").json()["papers"]
    paper = papers[0]
    query = " ".join(paper["title"].split()[:6])
    question = f"What does the paper {paper['title']} report?"
    answer = client.post("/ask", json={"question": question}, timeout=600).json()  # also warms the agent
    cited = next((c for c in answer["citations"] if c.get("valid")), None)
    page = (f"#/page/{cited['doc_id']}/{cited['page']}?{urlencode({'quote': cited['quote']})}" if cited
            else f"#/page/{paper['doc_id']}/1")
    return [
        ("corpus", "#/", "corpus"),
        ("search", f"#/search?q={quote(query)}", "search"),
        ("paper", f"#/paper/{paper['doc_id']}", "paper"),
        ("page (with highlight)" if cited else "page", page, "page-image"),
        ("ask (agent included)", f"#/ask?q={quote(question)}", "ask"),
    ]


def measure(d, base: str, route: str, mark: str) -> tuple[float, float, float]:
    from selenium.webdriver.support.ui import WebDriverWait

    d.get("about:blank")
    d.get(f"{base}/")  # same origin, so the ask cache can be cleared before the measured load
    d.execute_script("sessionStorage.clear()")
    d.get("about:blank")
    d.get(f"{base}/{route}")
    WebDriverWait(d, 600, poll_frequency=0.02).until(
        lambda drv: drv.execute_script("return performance.getEntriesByName('vectree:rendered:' + arguments[0]).length",
                                       mark))
    return tuple(d.execute_script(TIMING_JS, mark))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", help="store to serve (default: the demo corpus, built into a temporary store)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--label", default=None, help="name of the store in the table heading")
    args = ap.parse_args()
    from vectree.service.http import create_app

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(args.store) if args.store else demo_store(Path(tmp))
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(store, token=""), host="127.0.0.1", port=port,
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        d = driver()
        try:
            with httpx.Client(base_url=base, timeout=120) as client:
                n_papers = len(client.get("/corpus").json()["papers"])
                plan = views(client)
            rows = []
            for label, route, mark in plan:
                measure(d, base, route, mark)  # warm-up: server caches and the browser's static cache
                runs = [measure(d, base, route, mark) for _ in range(args.runs)]
                rows.append((label, *[[r[i] for r in runs] for i in range(3)]))
        finally:
            d.quit()
            server.should_exit = True
            thread.join(timeout=10)
    name = args.label or ("demo corpus" if not args.store else str(store))
    print(f"\nTime to first render, {name} ({n_papers} papers), headless Chromium, {args.runs} runs, ms: median (max)\n")
    print("| view | DOMContentLoaded | first paint | view rendered |")
    print("|---|---:|---:|---:|")
    fmt = lambda xs: f"{statistics.median(xs):.0f} ({max(xs):.0f})"  # noqa: E731
    for label, dcl, fcp, rendered in rows:
        print(f"| {label} | {fmt(dcl)} | {fmt(fcp)} | {fmt(rendered)} |")


if __name__ == "__main__":
    main()
