"""Opens a brink HTML page in the system's headless Chromium (never a downloaded browser) and
prints one JSON object with what a user would see: console errors, page errors, dialogs
(an injected alert would show here), every request the page made, the number of charts drawn
(canvas elements), every src/href attribute, the text of the page and any element whose tag
came from data. The Rust test that calls this decides what passes.

usage: python3 check_page.py URL CHROMIUM
"""

import json
import shutil
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
    url = sys.argv[1]
    chromium = sys.argv[2] if len(sys.argv) > 2 else shutil.which("chromium")
    seen = {"console_errors": [], "page_errors": [], "dialogs": [], "requests": []}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=chromium,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        page = ctx.new_page()
        page.on(
            "console",
            lambda m: seen["console_errors"].append(m.text) if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: seen["page_errors"].append(str(e)))
        page.on("request", lambda r: seen["requests"].append(r.url))

        def on_dialog(d):
            seen["dialogs"].append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)
        page.goto(url, wait_until="load", timeout=30000)
        page.wait_for_timeout(500)
        seen["canvases"] = page.eval_on_selector_all("canvas", "els => els.length")
        seen["figures"] = page.eval_on_selector_all("figure.chart", "els => els.length")
        seen["legends"] = page.eval_on_selector_all(".u-legend", "els => els.length")
        seen["links"] = page.eval_on_selector_all(
            "[src],[href]",
            "els => els.map(e => e.getAttribute('src') || e.getAttribute('href'))",
        )
        seen["imgs"] = page.eval_on_selector_all("img", "els => els.length")
        seen["text"] = page.inner_text("body")
        bg = "getComputedStyle(document.body).backgroundColor"
        # Each chart's pixels, to tell a chart redrawn in the dark palette from the same one.
        pixels = "els => els.map(c => c.toDataURL())"
        page.emulate_media(color_scheme="light")
        page.wait_for_timeout(300)
        seen["light_bg"] = page.evaluate(bg)
        light = page.eval_on_selector_all("canvas", pixels)
        page.emulate_media(color_scheme="dark")
        page.wait_for_timeout(300)
        seen["dark_bg"] = page.evaluate(bg)
        dark = page.eval_on_selector_all("canvas", pixels)
        seen["dark_legends"] = page.eval_on_selector_all(".u-legend", "els => els.length")
        # Charts whose pixels changed with the scheme (redrawn in its colours).
        seen["recoloured"] = sum(1 for a, b in zip(light, dark) if a != b)
        seen["dark_canvases"] = len(dark)
        ctx.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
