"""The web app in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by
Selenium) against the service under uvicorn on 127.0.0.1 over the demo store.

Every test also checks that the browser sent no request outside the service and logged no console
error.  Screenshots of the views are saved as artefacts: under ``$VECTREE_SCREENSHOTS`` when set
(the README's images: ``VECTREE_SCREENSHOTS=docs/screenshots``), else in the test's temporary folder.
Without chromium the tests are skipped with a message, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import quote as urlquote

import pymupdf
import pytest

from tests.test_service import Served
from tests.test_web import add_quarantined_row, mark_some_sections
from vectree.demo import DEMO_QUESTIONS
from vectree.service.http import create_app

CHROMIUM = os.environ.get("VECTREE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("VECTREE_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_S = 90  # the first ask loads the embedding model on a busy 2-core machine


def _require_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[dev]')")
    if missing:
        msg = ("browser tests need Debian's chromium and chromium-driver (apt-get install chromium "
               f"chromium-driver) and selenium; missing: {', '.join(missing)}")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="session", autouse=True)
def browser_available() -> None:
    """Checked before any store is built (session scope: pytest sets up wider scopes first, and
    the demo store is session-wide), so a machine without chromium skips at once."""
    _require_browser()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = os.environ.get("VECTREE_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def save_shot(driver, folder: Path, name: str) -> Path:
    """A screenshot, reduced to a 64-colour palette (small enough to commit, still legible)."""
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    path = folder / f"{name}.png"
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


@pytest.fixture(scope="module")
def browser_store(demo_store, tmp_path_factory):
    from vectree.retrieval.store import Store

    root = tmp_path_factory.mktemp("browser") / "store"
    shutil.copytree(demo_store.root, root)
    store = Store(root)
    q = DEMO_QUESTIONS[0]
    other = next(r["doc_id"] for r in store.read_catalog() if r["slug"] != q["slug"])
    marks = mark_some_sections(store, other)
    bad = add_quarantined_row(store)
    from vectree.retrieval.snapshot import publish

    publish(store, force=True)  # the service reads published snapshots only
    return store, {"other": other, "marks": marks, "bad": bad}


def _driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,860", "--force-device-scale-factor=1", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--disable-extensions"):
        options.add_argument(arg)
    # performance: every request the page makes (DevTools Network events); browser: the console
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    # an explicit driver path: Selenium Manager would otherwise try to download one
    return webdriver.Chrome(service=Service(shutil.which(CHROMEDRIVER)), options=options)


class Browser:
    def __init__(self, driver, base: str):
        self.driver, self.base = driver, base

    def reset(self) -> None:
        """Forget which view was rendered, so the next :meth:`rendered` waits for a fresh one."""
        self.driver.execute_script("if (document.body) document.body.dataset.rendered = '';")

    def open(self, path: str) -> None:
        if self.driver.current_url.startswith(self.base):
            self.reset()  # a hash-only change keeps the document: clear the marker first
        self.driver.get(self.base + path)

    def wait(self, condition, timeout: float = WAIT_S):
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(condition)

    def rendered(self, view: str, timeout: float = WAIT_S) -> None:
        self.wait(lambda d: d.execute_script("return document.body.dataset.rendered") in (view, "error"), timeout)
        error = self.driver.find_elements("css selector", "main .error")
        assert not error, error[0].text

    def css(self, selector: str):
        return self.driver.find_elements("css selector", selector)

    def requests_and_errors(self) -> tuple[list[str], list[str]]:
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        errors = [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        return urls, errors


@pytest.fixture(scope="module")
def served(browser_store):
    _require_browser()
    store, _ = browser_store
    with Served(create_app(store.root, token="")) as client:
        yield client


@pytest.fixture(scope="module")
def browser(served):
    driver = _driver()
    try:
        yield Browser(driver, str(served.base_url).rstrip("/"))
    finally:
        driver.quit()


@pytest.fixture(autouse=True)
def stays_local_and_quiet(request):
    """After each browser test: no request left 127.0.0.1 and the console holds no error."""
    yield
    if "browser" not in request.fixturenames:
        return
    b: Browser = request.getfixturevalue("browser")
    urls, errors = b.requests_and_errors()
    outside = [u for u in urls if not (u.startswith(b.base + "/") or u == b.base
                                       or re.match(r"^(data|blob|about):", u))]
    assert not outside, f"requests outside the service: {outside}"
    assert not errors, f"console errors: {errors}"


@pytest.fixture(scope="module")
def question(browser_store):
    store, _ = browser_store
    q = DEMO_QUESTIONS[0]
    doc = next(r["doc_id"] for r in store.read_catalog() if r["slug"] == q["slug"])
    return q, doc


def test_corpus_page_lists_every_paper(browser, browser_store, served, shots):
    store, edits = browser_store
    browser.open("/")
    browser.rendered("corpus")
    rows = browser.css("#papers tbody tr")
    ok = [r for r in store.read_catalog() if r["status"] == "ok"]
    assert sorted(r.get_attribute("data-doc") for r in rows) == sorted(r["doc_id"] for r in ok)
    shown = {r.get_attribute("data-doc"): r.find_element("css selector", ".paper-title").text for r in rows}
    assert all(shown[r["doc_id"]] == r["title"] for r in ok)
    quarantined = browser.css("#quarantined tbody tr")
    assert len(quarantined) == 1 and edits["bad"]["error"] in quarantined[0].text
    assert served.get("/health").json()["snapshot"] in browser.css("main p.muted")[0].text
    save_shot(browser.driver, shots, "corpus")


def test_search_ranks_the_expected_paper_first_and_the_tree_opens(browser, browser_store, question, shots):
    from selenium.webdriver.common.keys import Keys

    q, doc = question
    _, edits = browser_store
    browser.open("/#/")
    browser.rendered("corpus")
    box = browser.css("#quick-search input")[0]
    browser.reset()
    box.send_keys(q["question"], Keys.ENTER)
    browser.rendered("search")
    results = browser.css("#results .result")
    assert results and results[0].get_attribute("data-doc") == doc
    assert results[0].find_element("css selector", ".snippet").text
    save_shot(browser.driver, shots, "search")
    # keyboard: the first result has focus; down and up move it, Enter opens the paper
    active = lambda: browser.driver.switch_to.active_element.get_attribute("data-doc")  # noqa: E731
    assert active() == doc
    browser.driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert active() == results[1].get_attribute("data-doc")
    browser.driver.switch_to.active_element.send_keys(Keys.ARROW_UP)
    browser.reset()
    browser.driver.switch_to.active_element.send_keys(Keys.ENTER)
    browser.rendered("paper")
    assert doc in browser.driver.current_url
    first = next(d for d in browser.css("#tree > li > details") if d.find_elements("css selector", ".summary"))
    assert first.get_attribute("open") is None
    summary_text = first.find_element("css selector", ".summary")
    assert not summary_text.is_displayed()
    first.find_element("css selector", "summary").click()
    assert first.get_attribute("open") is not None and summary_text.is_displayed()
    save_shot(browser.driver, shots, "paper")
    # within-paper search lists passages whose links open the page with the passage highlighted
    within = browser.css("#within-form input")[0]
    browser.reset()
    within.send_keys(q["question"], Keys.ENTER)
    browser.rendered("paper")
    hits = browser.css("#within-results .result")
    assert hits and "quote=" in hits[0].get_attribute("data-href")
    # the paper with edited marks shows them with their reasons
    browser.open(f"/#/paper/{edits['other']}")
    browser.rendered("paper")
    for node_id, mark in edits["marks"].items():
        item = browser.css(f'#tree li[data-node="{node_id}"]')[0]
        assert item.get_attribute("data-mark") == mark
        assert item.find_element("css selector", f".mark.{mark}").is_displayed()
        assert item.find_element("css selector", f".reason.{mark}").text
    # the paper filter keeps only the chosen paper
    browser.open(f"/#/search?q={urlquote(q['question'])}&paper={edits['other']}")
    browser.rendered("search")
    assert [r.get_attribute("data-doc") for r in browser.css("#results .result")] == [edits["other"]]


def test_ask_shows_citations_that_open_the_highlighted_page(browser, browser_store, question, shots):
    from selenium.webdriver.common.keys import Keys

    store, _ = browser_store
    q, doc = question
    browser.open("/#/ask")
    browser.rendered("ask")
    browser.driver.execute_script(
        "window.sawProgress = false; new MutationObserver(() => { if (document.getElementById('progress'))"
        " window.sawProgress = true; }).observe(document.body, {childList: true, subtree: true});")
    browser.reset()
    browser.css("#ask-form textarea")[0].send_keys(q["question"], Keys.ENTER)
    browser.rendered("ask")
    assert browser.driver.execute_script("return window.sawProgress") is True
    answer = browser.css("#answer")[0].text
    assert q["answer"].lower() in answer.lower()
    citations = browser.css("#citations > li")
    assert citations and citations[0].get_attribute("data-valid") == "true"
    assert "quote found" in citations[0].text
    # how sure: the answer's calibrated confidence, and each quote's calibrated evidence relevance
    assert re.search(r"Answer confidence 0\.\d\d \((strong|moderate|weak)\)", browser.css("#confidence")[0].text)
    assert re.search(r"evidence (0\.\d\d|1\.00)", citations[0].find_element("css selector", ".badge.evidence").text)
    # the trace sits behind a toggle, with tokens per disclosure layer
    trace = browser.css("#trace")[0]
    rows = trace.find_elements("css selector", "tbody tr")
    assert trace.get_attribute("open") is None and not rows[0].is_displayed()
    trace.find_element("css selector", "summary").click()
    assert rows[0].is_displayed() and "search_papers" in rows[0].text
    assert re.search(r"layer 0: [1-9]\d*", trace.text) and re.search(r"layer 2: [1-9]\d*", trace.text)
    save_shot(browser.driver, shots, "ask")

    quote = citations[0].find_element("css selector", "blockquote").text
    cite = citations[0].find_element("css selector", "a.cite")
    page = int(re.search(r"p\. (\d+)", cite.text).group(1))
    browser.reset()
    cite.click()
    browser.rendered("page-image")
    boxes = browser.css("#page-frame .hl")
    assert boxes, "no highlight box"
    # each box, mapped back from the image to PDF points, covers words of the quote on that page
    frame = browser.css("#page-frame")[0].rect
    with pymupdf.open(store.pdf_path(doc)) as pdf:
        pdf_page = pdf[page - 1]
        covered = []
        for box in boxes:
            r = box.rect
            assert r["width"] > 2 and r["height"] > 2
            assert frame["x"] <= r["x"] and r["x"] + r["width"] <= frame["x"] + frame["width"] + 1
            sx, sy = pdf_page.rect.width / frame["width"], pdf_page.rect.height / frame["height"]
            clip = pymupdf.Rect((r["x"] - frame["x"]) * sx, (r["y"] - frame["y"]) * sy,
                                (r["x"] - frame["x"] + r["width"]) * sx, (r["y"] - frame["y"] + r["height"]) * sy)
            covered += re.findall(r"\w+", pdf_page.get_textbox(clip).lower())
    quoted = re.findall(r"\w+", quote.lower())
    assert sum(w in set(covered) for w in quoted) >= 0.9 * len(quoted), (quote, covered)
    assert "exact match" in browser.css("#quote-status")[0].text
    save_shot(browser.driver, shots, "page")

    # zoom in keeps the boxes on the bigger image; next and previous move between pages
    width = frame["width"]
    browser.reset()
    browser.driver.find_element("xpath", "//div[@class='toolbar']//a[text()='+']").click()
    browser.rendered("page-image")
    assert browser.css("#page-frame")[0].rect["width"] > width * 1.1 and browser.css("#page-frame .hl")
    browser.reset()
    browser.driver.find_element("xpath", "//div[@class='toolbar']//a[contains(text(), 'next')]").click()
    browser.rendered("page-image")
    assert f"page {page + 1} of" in browser.css(".page-no")[0].text and not browser.css("#page-frame .hl")
    browser.reset()
    browser.driver.find_element("tag name", "body").send_keys(Keys.ARROW_LEFT)
    browser.rendered("page-image")
    assert f"page {page} of" in browser.css(".page-no")[0].text
    # back to the answer without asking again (it is kept for the tab)
    browser.open(f"/#/ask?q={urlquote(q['question'])}")
    browser.rendered("ask")
    assert browser.css("#answer")[0].text == answer


def test_docs_and_redoc_render_offline(browser, served):
    spec = served.get("/openapi.json").json()
    operations = sum(len(methods) for methods in spec["paths"].values())
    browser.open("/docs")
    browser.wait(lambda d: len(d.find_elements("css selector", ".opblock")) >= operations)
    assert len(browser.css(".opblock")) == operations
    assert any("/papers/{doc_id}/pages/{page}/boxes" in e.text for e in browser.css(".opblock-summary-path"))
    browser.open("/redoc")
    browser.wait(lambda d: len(d.find_elements("css selector", "[data-section-id*='operation/']")) >= operations)


def test_an_off_corpus_question_shows_where_to_look_and_supports_nothing(browser, browser_store):
    """The abstention says so, cites nothing, and links the possibly relevant pages."""
    from selenium.webdriver.common.keys import Keys

    browser.open("/#/ask")
    browser.rendered("ask")
    browser.reset()
    browser.css("#ask-form textarea")[0].send_keys("What is the best recipe for sourdough bread?", Keys.ENTER)
    browser.rendered("ask")
    assert "no good evidence" in browser.css("#answer")[0].text.lower()
    assert not browser.css("#citations > li") and not browser.css("#confidence")
    box = browser.css("#abstained")[0]
    assert "nothing below supports an answer" in box.text
    links = box.find_elements("css selector", "ul.possibly a")
    # a page where a passage was judged, or the paper when only papers were (the off-corpus floor)
    assert links and all(re.search(r"#/(page|paper)/", link.get_attribute("href")) for link in links)


def test_the_page_asks_for_the_token_once(browser_store):
    _require_browser()
    store, _ = browser_store
    with Served(create_app(store.root, token="s3cret")) as client:
        assert client.get("/corpus").status_code == 401
        driver = _driver()
        try:
            b = Browser(driver, str(client.base_url).rstrip("/"))
            b.open("/")
            b.wait(lambda d: d.find_element("id", "token-dialog").is_displayed())
            driver.find_element("id", "token-input").send_keys("s3cret")
            driver.find_element("css selector", "#token-form button").click()
            b.rendered("corpus")
            assert b.css("#papers tbody tr")
            assert driver.execute_script("return sessionStorage.getItem('vectree-token')") == "s3cret"
            b.open("/#/search?q=capacity")
            driver.refresh()  # a new load in the same tab: no second prompt
            b.rendered("search")
            assert not driver.find_element("id", "token-dialog").is_displayed()
            urls, errors = b.requests_and_errors()
            assert all(u.startswith(b.base) or re.match(r"^(data|blob|about):", u) for u in urls), urls
            assert not errors, errors
        finally:
            driver.quit()
