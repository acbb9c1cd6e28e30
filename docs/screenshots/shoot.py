"""Screenshots of the Dagster UI for the README, taken in headless Chromium.

    python docs/screenshots/shoot.py STORE [--port 3333]

Starts ``dagster-webserver`` on STORE (its ``dagster/`` instance, as ``make ui`` does), waits for
it, and saves next to this script: ``asset-graph.png`` (the lineage upstream of ``search_index``,
every stage with its materialised partitions), ``paper-partition.png`` (one paper partition of
``paper_pages`` with its metadata) and ``runs.png`` (the runs with their job names and tags).  Needs ``chromium`` and ``chromedriver``
(Debian: ``apt-get install chromium chromium-driver``) and the ``selenium`` package.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def wait_for(url: str, seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5)
            return
        except OSError:
            time.sleep(2)
    raise SystemExit(f"{url} did not answer within {seconds:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--port", type=int, default=3333)
    ap.add_argument("--wait", type=float, default=25.0, help="seconds to let each page render")
    ap.add_argument("--partition", default="helix212-dataset-9a2ec8ccd5", help="the paper partition to show")
    args = ap.parse_args()
    store = Path(args.store).resolve()
    env = {**os.environ, "DAGSTER_HOME": str(store / "dagster"), "VECTREE_STORE": str(store),
           "DAGSTER_DISABLE_TELEMETRY": "1"}
    web = subprocess.Popen([str(Path(sys.executable).parent / "dagster-webserver"), "-w", "workspace.yaml",
                            "-h", "127.0.0.1", "-p", str(args.port)], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{args.port}"
        wait_for(f"{base}/server_info", 300)
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1600,1000", "--force-device-scale-factor=1"):
            opts.add_argument(a)
        opts.binary_location = "/usr/bin/chromium"
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        try:
            from selenium.webdriver.common.by import By

            partition = args.partition
            for path, name in (
                ("/assets/search_index?view=lineage&lineageScope=upstream&lineageDepth=6", "asset-graph.png"),
                (f"/assets/paper_pages?view=partitions&partition={partition}", "paper-partition.png"),
                ("/runs", "runs.png"),
            ):
                driver.get(base + path)
                time.sleep(args.wait)  # the UI renders asynchronously (GraphQL, then layout)
                # the first visit shows a newsletter dialog over the page
                for button in driver.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
                    button.click()
                    time.sleep(2)
                driver.save_screenshot(str(HERE / name))
                print(f"saved {HERE / name} ({driver.title})")
        finally:
            driver.quit()
    finally:
        web.terminate()
        web.wait(timeout=30)


if __name__ == "__main__":
    main()
