"""The compatibility site as a person sees it: headless Chromium loads every page of a built site
from file:// with no console error, no page error and no failed request, and draws the SVG badge.
Skips where Chromium or Playwright (the `test` extra) is not installed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.reporting.site import build_site

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "site"
SITE = ROOT / "site"


def _chromium() -> str | None:
    """A Chromium to drive: $CHROMIUM, else the system's (Debian's `chromium` package)."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (found := shutil.which(name)):
            return found
    return None


CHROMIUM = _chromium()
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (the test extra)")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (apt install chromium, or set "
                                                          "$CHROMIUM to one)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    build_site([FIX], out)  # three versions and an interrupted run: a finding, its SQL, a trend
    return out


def test_every_page_loads_without_a_console_error(browser: Any, built: Path) -> None:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    pages = sorted(built.rglob("*.html"))
    assert len(pages) > 60
    for p in pages:
        response = page.goto(p.as_uri(), wait_until="load")
        assert response is not None and response.ok, p
        # The page has its title, and the stylesheet applied (a relative link that works from file://).
        title, background = page.evaluate("[document.title, getComputedStyle(document.body).backgroundColor]")
        assert title.endswith("· cdc-conformance") and background == "rgb(246, 248, 250)", p
        assert not problems, f"{p}: {problems}"
    # The index as a person sees it: the matrix is there, its cells coloured.
    page.goto((built / "index.html").as_uri())
    colours = page.eval_on_selector_all("td.cell.fail, td.cell.pass, td.cell.incomplete",
                                        "cells => cells.map(c => getComputedStyle(c).backgroundColor)")
    assert set(colours) == {"rgb(255, 235, 233)", "rgb(218, 251, 225)", "rgb(234, 238, 242)"}
    page.close()


def test_the_committed_site_opens_on_every_encoder_and_protocol(browser: Any) -> None:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto((SITE / "index.html").as_uri())
    rows = page.eval_on_selector_all("tr[data-encoder]", "rows => rows.map(r => [r.dataset.encoder, "
                                     "r.querySelectorAll('td.cell a').length])")
    names = {name.rsplit(" ", 1)[0] if "unknown" not in name else name.split(" ")[0]: n for name, n in rows}
    assert names == {"Debezium PostgreSQL connector": 2, "debezium/reference": 1, "maxscale-kafkacdc/reference": 1,
                     "node-ticdc-simple": 1, "ticdc-avro/mutant/json-compact": 1, "ticdc-avro/reference": 1,
                     "ticdc-simple/reference": 1}
    for href in page.eval_on_selector_all("td.cell a", "links => links.map(a => a.href)"):
        page.goto(href)
        assert page.locator("table.matrix").count() >= 1, href
    assert not problems
    page.close()


def test_the_svg_badge_renders(browser: Any, built: Path) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    svg = built / "badges" / "node-ticdc-simple-0.2.0--ticdc-simple.svg"
    page.goto(svg.as_uri())
    width = int(page.evaluate("document.documentElement.getAttribute('width')"))
    box = page.evaluate("(() => { const b = document.documentElement.getBBox(); return [b.width, b.height]; })()")
    assert box == [width, 20]
    # The text was laid out (a font was found and drew it), and fits in its half of the badge.
    lengths = page.evaluate("[...document.querySelectorAll('text')].map(t => t.getComputedTextLength())")
    assert len(lengths) == 4 and all(n > 20 for n in lengths)
    assert lengths[2] < width - lengths[0]
    # And it is drawn into the page that shows it, at its own size.
    page.goto((built / "enc" / "node-ticdc-simple-0.2.0--ticdc-simple.html").as_uri())
    natural = page.eval_on_selector(".badges img", "img => [img.complete, img.naturalWidth, img.naturalHeight]")
    assert natural == [True, width, 20]
    shot = page.locator(".badges img").screenshot()
    assert shot.startswith(b"\x89PNG") and len(shot) > 500
    assert not errors
    page.close()
