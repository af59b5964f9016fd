"""Opens pages in the system's headless Chromium at 1280 x 900 and measures them: the page's
scroll width, the right edge of chosen elements, the widths of scrolling boxes, and the charts
the page was given. Saves a screenshot of each page beside OUT. Prints one JSON object; the
Rust test decides what passes.

usage: python3 check_widths.py OUT URL [URL ...] CHROMIUM
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

MEASURE = """() => {
  const right = sel => Array.from(document.querySelectorAll(sel)).map(e => e.getBoundingClientRect().right);
  const boxes = Array.from(document.querySelectorAll('.scroll')).map(e => [e.clientWidth, e.scrollWidth]);
  const data = document.getElementById('brink-charts');
  const charts = data ? JSON.parse(data.textContent).map(c => ({
    title: c.title, x: c.x.length, series: c.series.map(s => s.label), x_log: c.x_log,
    marks: c.marks.map(m => m.label)
  })) : [];
  return {
    scroll_width: document.documentElement.scrollWidth,
    verdict_right: right('th.verdict'),
    against_right: right('th.against'),
    trend_rows: document.querySelectorAll('table.trends tbody tr').length,
    boxes: boxes,
    sticky: Array.from(document.querySelectorAll('table.steps td:first-child')).map(e => getComputedStyle(e).position),
    step_rows: (t => t ? Array.from(t.querySelectorAll('tbody tr:not(.why)')).map(e => e.getBoundingClientRect().height) : [])(document.querySelector('table.steps')),
    why_rows: Array.from(document.querySelectorAll('table.steps tr.why')).map(e => e.textContent),
    charts: charts,
  };
}"""


def main() -> None:
    out, urls, chromium = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
    seen = {"pages": [], "page_errors": []}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        page = ctx.new_page()
        page.on("pageerror", lambda e: seen["page_errors"].append(str(e)))
        for i, url in enumerate(urls):
            page.goto(url, wait_until="load")
            page.wait_for_timeout(300)
            m = page.evaluate(MEASURE)
            m["url"] = url
            shot = f"{out}.{i}.png"
            page.screenshot(path=shot, full_page=True)
            m["screenshot"] = shot
            seen["pages"].append(m)
        ctx.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
