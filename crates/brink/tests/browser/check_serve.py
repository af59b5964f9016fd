"""Walks brink serve's pages in the system's headless Chromium, as a user would: the live page
of a run in progress (does it gain points?), the runs list, ticking two runs and comparing
them, and one run's report. Prints one JSON object; the Rust test decides what passes.

usage: python3 check_serve.py URL_WITH_TOKEN RUNNING_ID CHROMIUM
"""

import json
import sys
import tempfile

from playwright.sync_api import sync_playwright

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def main() -> None:
    url, running, chromium = sys.argv[1], sys.argv[2], sys.argv[3]
    base = url.split("?")[0].rstrip("/")
    seen = {"console_errors": [], "page_errors": [], "dialogs": [], "foreign": []}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        page = ctx.new_page()
        page.on("console", lambda m: seen["console_errors"].append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: seen["page_errors"].append(str(e)))
        page.on("request", lambda r: None if r.url.startswith(base) else seen["foreign"].append(r.url))

        def on_dialog(d):
            seen["dialogs"].append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)

        # The URL brink serve printed: its token becomes the cookie every later page uses.
        page.goto(url, wait_until="load")
        page.goto(f"{base}/live/{running}", wait_until="load")
        page.wait_for_timeout(300)
        first = int(page.get_attribute("body", "data-points") or "0")
        page.wait_for_timeout(3000)
        later = int(page.get_attribute("body", "data-points") or "0")
        seen["live_points"] = [first, later]
        seen["live_canvases"] = page.eval_on_selector_all("canvas", "els => els.length")

        page.goto(f"{base}/", wait_until="load")
        seen["runs_text"] = page.inner_text("body")
        seen["runs_rows"] = page.eval_on_selector_all("table.runs tbody tr", "els => els.length")
        seen["runs_imgs"] = page.eval_on_selector_all("img", "els => els.length")
        boxes = page.query_selector_all("input[name=run]:not([disabled])")
        seen["tickable"] = len(boxes)
        seen["button_disabled_before"] = page.is_disabled("#compare-button")
        boxes[0].check()
        boxes[1].check()
        seen["button_disabled_after"] = page.is_disabled("#compare-button")
        page.click("#compare-button")
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)
        seen["compare_url"] = page.url
        seen["compare_text"] = page.inner_text("body")
        seen["compare_canvases"] = page.eval_on_selector_all("canvas", "els => els.length")

        run_link = page.get_attribute("nav.top a[href^='/run/']", "href")
        page.goto(base + run_link, wait_until="load")
        page.wait_for_timeout(300)
        seen["run_figures"] = page.eval_on_selector_all("figure.chart", "els => els.length")
        seen["run_legends"] = page.eval_on_selector_all(".u-legend", "els => els.length")
        seen["run_imgs"] = page.eval_on_selector_all("img", "els => els.length")
        seen["run_text"] = page.inner_text("body")
        ctx.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
