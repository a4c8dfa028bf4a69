"""The built site in a real browser with the network blocked.

Serves ``_build/html`` from a static host under a sub-path (as a project page
would be), opens every page in headless Chromium, refuses every request that
leaves the site, and checks that each chart is drawn, equations are typeset,
nothing is logged as an error, and the chapter fits a 400 px phone screen.
It also opens the site from ``file://``. Run ``make book`` first.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SUBPATH = "napkin-book"
CHROMIUM = os.environ.get("NAPKIN_CHROMIUM") or shutil.which("chromium") \
    or shutil.which("chromium-browser") or shutil.which("google-chrome")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-quic"]
SKIP_PAGES = {"genindex.html", "search.html"}


def pages() -> list[str]:
    found = sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
                   if "_static" not in p.parts and "_sources" not in p.parts)
    return [p for p in found if p not in SKIP_PAGES and p != "index.html"]


@pytest.fixture(scope="session")
def site_url():
    if not (HTML / "index.html").is_file():
        pytest.fail("no built site in _build/html: run `make book` first")
    root = Path(tempfile.mkdtemp())
    (root / SUBPATH).symlink_to(HTML, target_is_directory=True)
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{SUBPATH}/"
    server.shutdown()
    shutil.rmtree(root)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM:
        pytest.skip("Chromium not found (install Debian's `chromium`, or set NAPKIN_CHROMIUM); "
                    "the site cannot be checked in a real browser here")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:  # Playwright gives each launch a fresh, empty profile
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


class Visit:
    """One page load with the network restricted to ``allowed`` prefixes."""

    def __init__(self, browser, allowed: tuple[str, ...], width: int = 1280,
                 mode: str | None = None):
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        if mode:  # the site's light/dark switch keeps the reader's choice in localStorage
            self.context.add_init_script(f"localStorage.setItem('mode', '{mode}');")
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type in ("error", "warning")
                     and self.errors.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.allowed = allowed

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.allowed):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def open(self, url: str) -> dict:
        """Load ``url``, wait for its charts, and read what it drew. A page may still be
        settling when it fires ``load`` (the theme rewrites the address, the previous page's
        scripts finish): a read that lands in a navigation is made again once it is over."""
        from playwright.sync_api import Error

        self.page.goto(url, wait_until="load")
        for attempt in range(3):
            try:
                return self._read()
            except Error as err:
                if "context was destroyed" not in str(err) or attempt == 2:
                    raise
                self.page.wait_for_load_state("load")

    def _read(self) -> dict:
        charts = self.page.locator(".napkin-chart")
        n = charts.count()
        if n:
            self.page.wait_for_function(
                "() => [...document.querySelectorAll('.napkin-chart')].every("
                "el => el.dataset.drawn === 'true' || el.classList.contains('napkin-chart-error'))",
                timeout=30_000)
        return self.page.evaluate("""() => {
            const charts = [...document.querySelectorAll('.napkin-chart')].map(el => {
                const svg = el.querySelector('svg.marks');
                const box = svg ? svg.getBoundingClientRect() : null;
                const svgBox = el.querySelector('svg.marks');
                const frame = svgBox ? svgBox.getBoundingClientRect() : el.getBoundingClientRect();
                const overflow = [...el.querySelectorAll('svg.marks text')].filter(t => {
                    const b = t.getBoundingClientRect();
                    return b.width > 0 && (b.right > frame.right + 1 || b.left < frame.left - 1);
                }).map(t => t.textContent.slice(0, 40));
                // a legend label cut with an ellipsis although the chart had room for more
                const cutShort = [...el.querySelectorAll('.role-legend-label text')].filter(t =>
                    t.textContent.endsWith('\u2026') &&
                    t.getBoundingClientRect().right < frame.right - 60).map(t => t.textContent);
                return {id: el.id, drawn: el.dataset.drawn === 'true', overflow, cutShort,
                        label: (el.closest('[aria-roledescription="visualization"]') ||
                                el.querySelector('[aria-roledescription="visualization"]') ||
                                el).getAttribute('aria-label'),
                        error: el.classList.contains('napkin-chart-error') ? el.textContent : null,
                        marks: svg ? svg.querySelectorAll('path, rect, text, line').length : 0,
                        width: box ? box.width : 0, height: box ? box.height : 0,
                        container: el.getBoundingClientRect().width};
            });
            return {charts, math: document.querySelectorAll('mjx-container svg').length,
                    mathSources: document.querySelectorAll('.math').length,
                    scrollWidth: document.documentElement.scrollWidth,
                    viewport: window.innerWidth};
        }""")

    def close(self):
        self.context.close()


def _check(result: dict, visit: Visit, where: str):
    assert not visit.blocked, f"{where}: requests left the site: {visit.blocked[:5]}"
    assert not visit.errors, f"{where}: console errors or warnings: {visit.errors[:5]}"
    for chart in result["charts"]:
        assert chart["drawn"], f"{where}: chart {chart['id']} not drawn: {chart['error']}"
        assert chart["marks"] > 5 and chart["width"] > 100 and chart["height"] > 50, \
            f"{where}: chart {chart['id']} looks empty: {chart}"
        assert chart["label"] and len(chart["label"]) > 20, \
            f"{where}: chart {chart['id']} has no accessible label (its caption)"
    assert result["math"] >= result["mathSources"], f"{where}: equations not typeset"


def test_every_page_offline(browser, site_url):
    drawn = 0
    for page in pages():
        visit = Visit(browser, allowed=(site_url,))
        result = visit.open(site_url + page)
        _check(result, visit, page)
        drawn += len(result["charts"])
        visit.close()
    print(f"\n{drawn} charts drawn offline on {len(pages())} pages")
    assert drawn > 0, "the site has no charts at all"


def test_served_vega_matches_altair():
    """The site's bundle is the pinned vl-convert's, at the versions Altair writes specs for."""
    import altair as alt
    import vl_convert as vlc

    from napkin.site import BUNDLE, vega_bundle

    served = (HTML / "_static" / BUNDLE).read_text(encoding="utf-8")
    assert served == vega_bundle(), "the site's vega-bundle.js is stale: rebuild with `make book`"
    assert f'"{alt.VEGALITE_VERSION}"' in served, "bundle lacks Altair's Vega-Lite version"
    assert vlc.get_vega_version().split(".")[0] == alt.VEGA_VERSION.split(".")[0]
    assert vlc.get_vega_embed_version().split(".")[0] == alt.VEGAEMBED_VERSION.split(".")[0]


def test_chapters_fit_a_phone(browser, site_url):
    for page in pages():
        visit = Visit(browser, allowed=(site_url,), width=400)
        result = visit.open(site_url + page)
        _check(result, visit, f"{page} at 400 px")
        for chart in result["charts"]:
            assert chart["width"] <= chart["container"] + 1, \
                f"{page}: chart {chart['id']} is wider than its column at 400 px"
            assert not chart["overflow"], \
                f"{page}: chart {chart['id']} cuts off text at 400 px: {chart['overflow']}"
            assert not chart["cutShort"], \
                f"{page}: chart {chart['id']} cuts legend labels short at 400 px although " \
                f"there is room: {chart['cutShort']}"
        assert result["scrollWidth"] <= result["viewport"] + 1, \
            f"{page}: the page scrolls sideways at 400 px"
        visit.close()


CHART_LOOK = """() => [...document.querySelectorAll('figure.napkin-figure')].map(f => ({
    id: f.id,
    background: getComputedStyle(f.querySelector('svg.marks')).backgroundColor,
    caption: getComputedStyle(f.querySelector('figcaption')).color,
    box: getComputedStyle(f.parentElement).backgroundColor}))"""


def _luminance(css_color: str) -> float:
    r, g, b = (int(v) for v in re.findall(r"\d+", css_color)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_charts_follow_dark_mode(browser, site_url):
    """In the theme's dark mode charts are drawn dark, with light captions on the page's own
    background; switching back to light redraws them light, without a reload."""
    from napkin.charts import DARK_BACKGROUND

    dark_rgb = "rgb({}, {}, {})".format(*(int(DARK_BACKGROUND[i:i + 2], 16) for i in (1, 3, 5)))
    visit = Visit(browser, allowed=(site_url,), mode="dark")
    result = visit.open(site_url + "notebooks/01_napkin_ceiling.html")
    _check(result, visit, "chapter 1 in dark mode")
    look = visit.page.evaluate(CHART_LOOK)
    assert look, "chapter 1 has no figures"
    for fig in look:
        assert fig["background"] == dark_rgb, f"{fig['id']} is not drawn dark: {fig}"
        assert _luminance(fig["caption"]) > 0.6, f"{fig['id']}: caption too dark: {fig}"
        assert fig["box"] == "rgba(0, 0, 0, 0)", f"{fig['id']} sits on a light box: {fig}"
    visit.page.evaluate("document.documentElement.setAttribute('data-theme', 'light')")
    visit.page.wait_for_function(
        "() => [...document.querySelectorAll('figure.napkin-figure svg.marks')].every("
        "s => getComputedStyle(s).backgroundColor === 'rgb(255, 255, 255)')", timeout=30_000)
    assert not visit.errors, f"switching to light mode logged errors: {visit.errors[:5]}"
    visit.close()


def test_site_opens_from_file(browser):
    visit = Visit(browser, allowed=("file://",))
    index = visit.open((HTML / "index.html").as_uri())
    _check(index, visit, "index.html via file://")
    chapter = next(p for p in pages() if p.startswith("notebooks/"))
    result = visit.open((HTML / chapter).as_uri())
    _check(result, visit, f"{chapter} via file://")
    assert result["charts"], "no charts on the first chapter"
    visit.close()


@pytest.mark.parametrize("where", ["file", "host"])
def test_search_finds_chapters_offline(browser, site_url, where):
    """The search page answers from its own index, from a static host and from file://,
    without a console error (file:// refuses the fetches for result snippets)."""
    base = HTML.as_uri() + "/" if where == "file" else site_url
    visit = Visit(browser, allowed=("file://",) if where == "file" else (site_url,))
    visit.page.goto(base + "search.html?q=ridge+point", wait_until="load")
    visit.page.wait_for_function(
        "() => /Search finished/.test(document.querySelector('#search-results')?.textContent)",
        timeout=30_000)
    titles = visit.page.evaluate(
        "[...document.querySelectorAll('#search-results li > a')].map(a => a.textContent)")
    visit.page.wait_for_timeout(500)  # let any snippet fetches settle
    assert "The ridge point and batching" in titles, f"search via {where}: {titles}"
    assert not visit.blocked, f"search via {where} left the site: {visit.blocked[:5]}"
    assert not visit.errors, f"search via {where} logged errors: {visit.errors[:5]}"
    visit.close()


def test_only_the_table_of_contents_is_built():
    """A stray notebook (a vendored example, a scratch file) must never be built or run."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {toc["root"]} | {ch["file"] for part in toc["parts"] for ch in part["chapters"]}
    built = {p.removesuffix(".html") for p in pages()}
    assert built == files, f"built pages outside _toc.yml: {sorted(built - files)}"
    executed = ROOT / "_build" / "jupyter_execute"
    stray = [p for p in executed.rglob("*.ipynb")
             if p.relative_to(executed).with_suffix("").as_posix() not in files]
    assert not stray, f"notebooks executed outside _toc.yml: {stray}"


@pytest.fixture()
def jupyterlab(tmp_path):
    """A JupyterLab server on a folder of its own, with no token, for one test."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lab = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--allow-root",
         f"--port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.token=",
         "--ServerApp.password=", f"--ServerApp.root_dir={tmp_path}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / ".config"),
             "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / ".workspaces")})
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "api", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start within a minute")
        yield url, tmp_path
    finally:
        lab.terminate()
        lab.wait(timeout=30)


def test_a_chapter_figure_draws_in_jupyterlab(browser, jupyterlab):
    """A reader who opens a chapter in `make lab` sees its charts, drawn by JupyterLab's own
    Vega with the network blocked, not a placeholder."""
    import json

    import nbformat

    url, root = jupyterlab
    chapter = json.loads((ROOT / "notebooks" / "01_napkin_ceiling.ipynb").read_text())
    figure = next(out for cell in chapter["cells"] for out in cell.get("outputs", [])
                  if "napkin_figure" in out.get("metadata", {}))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("figure", outputs=[nbformat.from_dict(figure)])]
    nbformat.write(nb, root / "figure.ipynb")
    visit = Visit(browser, allowed=(url,))
    visit.page.goto(url + "lab/workspaces/napkin-test/tree/figure.ipynb?reset")
    visit.page.wait_for_function(
        "() => document.querySelector('.jp-OutputArea-output .vega-embed svg, "
        ".jp-OutputArea-output .vega-embed canvas')", timeout=60_000)
    label = visit.page.evaluate(
        "document.querySelector('.jp-OutputArea-output [aria-roledescription=visualization]')"
        "?.getAttribute('aria-label')")
    assert label == figure["metadata"]["napkin_figure"]["caption"]
    assert not visit.blocked, f"JupyterLab left the machine: {visit.blocked[:3]}"
    visit.close()
