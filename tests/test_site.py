"""The built site in a real browser with the network blocked, and its pages as text.

Serves ``_build/html`` from a static host under a sub-path (as a project page
would be), opens every page in headless Chromium, refuses every request that
leaves the site, and checks that each chart is drawn with its marks on its plot,
equations are typeset, nothing is logged as an error or a warning (console, page
errors, failed requests, Vega's own warnings), the chapter fits a 400 px phone
screen without cut labels, and the page follows the system's light or dark setting.
It also opens the site from ``file://``. The tests marked ``site`` read the built
HTML without a browser: chapter numbers, every mention of a chapter a link, figure
numbers that agree between a chapter and the Figures page, and no typo a test can
catch. Run ``make book`` first.
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
from urllib.parse import unquote, urlparse

import pytest

from napkin import toc
from napkin.charts import DARK_BACKGROUND
from napkin_site.browser import CHARTS_SETTLED, LAUNCH_ARGS, chromium

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SUBPATH = "napkin-book"
CHROMIUM = chromium()
SKIP_PAGES = {"genindex.html", "search.html"}


def pages() -> list[str]:
    found = sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
                   if "_static" not in p.parts and "_sources" not in p.parts
                   and "figures" not in p.relative_to(HTML).parts[:1])
    return [p for p in found if p not in SKIP_PAGES and p != "index.html"]


def built() -> Path:
    if not (HTML / "index.html").is_file():
        pytest.fail("no built site in _build/html: run `make book` first")
    return HTML


@pytest.fixture(scope="session")
def site_url():
    built()
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
    """One page load with the network restricted to ``allowed`` prefixes. ``mode`` is the
    reader's choice with the theme button (kept in localStorage), ``scheme`` the system's
    light or dark setting. Every console message that is an error or a warning (Vega's
    own warnings among them), every uncaught error and every failed or refused request of
    the site's own is collected in ``errors``."""

    def __init__(self, browser, allowed: tuple[str, ...], width: int = 1280,
                 mode: str | None = None, scheme: str = "light", permissions=()):
        self.context = browser.new_context(viewport={"width": width, "height": 900},
                                           color_scheme=scheme)
        if permissions:
            self.context.grant_permissions(list(permissions), origin=allowed[0])
        if mode:  # the site's light/dark switch keeps the reader's choice in localStorage
            self.context.add_init_script(f"localStorage.setItem('mode', '{mode}');")
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type in ("error", "warning", "assert")
                     and self.errors.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", lambda r: r.status >= 400 and self.errors.append(
            f"HTTP {r.status}: {r.url}"))
        self.allowed = allowed

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.allowed):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _failed(self, request):
        # refused requests are reported as `blocked`; a request the browser drops because
        # the page navigated on (index.html's redirect, the next test page) is no failure
        if request.url not in self.blocked and request.failure != "net::ERR_ABORTED":
            self.errors.append(f"request failed: {request.url} ({request.failure})")

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
        if self.page.locator(".napkin-chart").count():
            self.page.wait_for_function(CHARTS_SETTLED, timeout=30_000)
        return self.page.evaluate(READ_PAGE)

    def close(self):
        self.context.close()


#: What a page drew: each chart's size, marks, texts cut or outside it, and marks off its
#: plot (the DOM's view of napkin.charts.misdrawn: each mark group's items against the
#: plot's background rectangle, in the page as drawn).
READ_PAGE = """() => {
    const ROLES = ['role-axis', 'role-legend', 'role-title'];
    function plotOf(group) {  // the plot a mark group is drawn in: its scope's background
        for (let el = group.parentElement; el && el.tagName === 'g'; el = el.parentElement) {
            const bg = el.firstElementChild;
            const owner = el.parentElement;
            if (bg && bg.matches('path.background') && owner &&
                (owner.matches('.role-frame') || owner.matches('.role-scope'))) {
                return bg.getBoundingClientRect();
            }
        }
        return null;
    }
    function offPlot(svg) {
        const problems = [];
        for (const group of svg.querySelectorAll('g.role-mark')) {
            const kind = [...group.classList].find(c => c.startsWith('mark-'));
            if (['mark-group', 'mark-text'].includes(kind) || group.getAttribute('clip-path')) {
                continue;
            }
            let inside = false;
            for (let el = group.parentElement; el && el !== svg; el = el.parentElement) {
                if (ROLES.some(r => el.classList.contains(r))) { inside = true; break; }
            }
            if (inside) { continue; }
            const plot = plotOf(group);
            if (!plot || plot.width < 1 || plot.height < 1) { continue; }
            const items = [...group.children].filter(el => el.getAttribute('opacity') !== '0' &&
                getComputedStyle(el).opacity !== '0').map(el => [el, el.getBoundingClientRect()])
                .filter(([, r]) => r.width > 0 || r.height > 0);
            if (!items.length) { continue; }
            const name = group.getAttribute('class').split(' ').pop();
            for (const [el, r] of items) {
                const slack = kind === 'mark-symbol' ? Math.max(r.width, r.height) / 2 + 1.5
                    : 2 + parseFloat(el.getAttribute('stroke-width') || '1');
                if (r.left < plot.left - slack || r.right > plot.right + slack ||
                    r.top < plot.top - slack || r.bottom > plot.bottom + slack) {
                    problems.push(`${name}: ${kind} drawn outside its ` +
                        `${Math.round(plot.width)} x ${Math.round(plot.height)} plot`);
                    break;
                }
            }
            if (['mark-symbol', 'mark-line'].includes(kind) &&
                    (kind === 'mark-line' || items.length > 2)) {
                const xs = items.map(([, r]) => (r.left + r.right) / 2);
                const ys = items.map(([, r]) => (r.top + r.bottom) / 2);
                const flat = (v, a, b) => Math.max(...v) - Math.min(...v) < 1.5 &&
                    (Math.abs(v[0] - a) < 1.5 || Math.abs(v[0] - b) < 1.5);
                const oneLine = kind !== 'mark-line' ||
                    items.every(([, r]) => r.height < 1.5 || r.width < 1.5);
                if (oneLine && (flat(ys, plot.top, plot.bottom) ||
                                flat(xs, plot.left, plot.right))) {
                    problems.push(`${name}: every item sits on one edge of the plot`);
                }
            }
        }
        return problems;
    }
    const charts = [...document.querySelectorAll('.napkin-chart')].map(el => {
        const svg = el.querySelector('svg.marks');
        const box = svg ? svg.getBoundingClientRect() : null;
        const frame = svg ? box : el.getBoundingClientRect();
        const overflow = [...el.querySelectorAll('svg.marks text')].filter(t => {
            const b = t.getBoundingClientRect();
            return b.width > 0 && (b.right > frame.right + 1 || b.left < frame.left - 1);
        }).map(t => t.textContent.slice(0, 40));
        // a legend label cut with an ellipsis although the chart had room for more
        const cutShort = [...el.querySelectorAll('.role-legend-label text')].filter(t =>
            t.textContent.endsWith('\u2026') &&
            t.getBoundingClientRect().right < frame.right - 60).map(t => t.textContent);
        // an axis label Vega cut with an ellipsis (labelLimit): the reader loses its words
        const cutAxis = [...el.querySelectorAll('.role-axis-label text')].filter(t =>
            t.textContent.endsWith('\u2026')).map(t => t.textContent);
        return {id: el.id, drawn: el.dataset.drawn === 'true', overflow, cutShort, cutAxis,
                offPlot: svg ? offPlot(svg) : [],
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
            theme: document.documentElement.dataset.theme,
            scrollWidth: document.documentElement.scrollWidth,
            viewport: window.innerWidth};
}"""


def _check(result: dict, visit: Visit, where: str):
    assert not visit.blocked, f"{where}: requests left the site: {visit.blocked[:5]}"
    assert not visit.errors, f"{where}: console errors or warnings: {visit.errors[:5]}"
    for chart in result["charts"]:
        assert chart["drawn"], f"{where}: chart {chart['id']} not drawn: {chart['error']}"
        assert chart["marks"] > 5 and chart["width"] > 100 and chart["height"] > 50, \
            f"{where}: chart {chart['id']} looks empty: {chart}"
        assert chart["label"] and len(chart["label"]) > 20, \
            f"{where}: chart {chart['id']} has no accessible label (its caption)"
        assert not chart["offPlot"], f"{where}: chart {chart['id']} draws marks where a " \
                                     f"reader cannot see them: {chart['offPlot']}"
    assert result["math"] >= result["mathSources"], f"{where}: equations not typeset"


@pytest.mark.browser
def test_every_page_offline(browser, site_url):
    drawn = 0
    for page in pages():
        visit = Visit(browser, allowed=(site_url,))
        result = visit.open(site_url + page)
        _check(result, visit, page)
        drawn += len(result["charts"])
        visit.close()
    print(f"\n{drawn} charts drawn offline, their marks checked against their plots, on "
          f"{len(pages())} pages")
    assert drawn > 0, "the site has no charts at all"


@pytest.mark.browser
def test_the_visit_catches_every_kind_of_error(browser, site_url):
    """The collector the other tests rely on hears a console warning and error, an uncaught
    error, a request for a file the site lacks, and a Vega warning from a chart."""
    visit = Visit(browser, allowed=(site_url,))
    visit.open(site_url + "notebooks/01_napkin_ceiling.html")
    assert not visit.errors, visit.errors
    visit.page.evaluate("""() => {
        console.warn('napkin-test warning'); console.error('napkin-test error');
        setTimeout(() => { throw new Error('napkin-test uncaught'); }, 0);
        const img = document.createElement('img');
        img.src = '_static/napkin-test-missing.png'; document.body.appendChild(img);
        const el = document.createElement('div'); el.id = 'napkin-test-chart';
        el.className = 'napkin-chart'; document.body.appendChild(el);
        window.napkinDraw('napkin-test-chart', {mark: 'point', data: {values: [{a: 1}]},
            encoding: {x: {field: 'nope', type: 'quantitative'}}});
    }""")
    visit.page.wait_for_function(CHARTS_SETTLED, timeout=30_000)
    visit.page.wait_for_timeout(500)
    found = "\n".join(visit.errors)
    for expected in ("warning: napkin-test warning", "error: napkin-test error",
                     "napkin-test uncaught", "napkin-test-missing.png", "Infinite extent"):
        assert expected in found, f"the visit did not catch {expected!r}: {visit.errors}"
    visit.close()


@pytest.mark.browser
def test_the_mark_check_finds_marks_off_the_plot(browser, site_url):
    """The DOM check finds what napkin.charts.misdrawn finds offline: points drawn beyond
    the plot, and points all on one edge of it."""
    visit = Visit(browser, allowed=(site_url,))
    visit.open(site_url + "book/essay.html")
    visit.page.evaluate("""() => {
        const rows = [{a: 0.2, b: 1}, {a: 5, b: 2}, {a: 0.5, b: 3}];
        const specs = {
            'off': {x: {field: 'a', type: 'quantitative',
                        scale: {domain: [0, 1], clamp: false}},
                    y: {field: 'b', type: 'quantitative'}},
            'edge': {x: {field: 'b', type: 'quantitative'},
                     y: {field: 'a', type: 'quantitative',
                         scale: {domain: [10, 20], clamp: true}}}};
        for (const [id, encoding] of Object.entries(specs)) {
            const el = document.createElement('div');
            el.id = 'napkin-test-' + id; el.className = 'napkin-chart';
            document.querySelector('article').appendChild(el);
            window.napkinDraw(el.id, {width: 300, height: 200, mark: 'point',
                                      data: {values: rows}, encoding});
        }
    }""")
    result = visit._read()
    found = {c["id"]: c["offPlot"] for c in result["charts"]}
    assert any("outside" in p for p in found["napkin-test-off"]), found
    assert any("one edge" in p for p in found["napkin-test-edge"]), found
    visit.close()


@pytest.mark.site
def test_served_vega_matches_altair():
    """The site's bundle is the pinned vl-convert's, at the versions Altair writes specs for."""
    import altair as alt
    import vl_convert as vlc

    from napkin_site.assets import BUNDLE, vega_bundle

    served = (HTML / "_static" / BUNDLE).read_text(encoding="utf-8")
    assert served == vega_bundle(), "the site's vega-bundle.js is stale: rebuild with `make book`"
    assert f'"{alt.VEGALITE_VERSION}"' in served, "bundle lacks Altair's Vega-Lite version"
    assert vlc.get_vega_version().split(".")[0] == alt.VEGA_VERSION.split(".")[0]
    assert vlc.get_vega_embed_version().split(".")[0] == alt.VEGAEMBED_VERSION.split(".")[0]


@pytest.mark.browser
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
            assert not chart["cutAxis"], \
                f"{page}: chart {chart['id']} cuts axis labels at 400 px: {chart['cutAxis']}"
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


DARK_RGB = "rgb({}, {}, {})".format(*(int(DARK_BACKGROUND[i:i + 2], 16) for i in (1, 3, 5)))


@pytest.mark.browser
def test_charts_follow_dark_mode(browser, site_url):
    """In the theme's dark mode charts are drawn dark, with light captions on the page's own
    background; switching back to light redraws them light, without a reload."""
    dark_rgb = DARK_RGB
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


#: Every table of the page body (the book's styled tables and the theme's own): the colour
#: of its text and of what shows behind its cells (the nearest ancestor that paints one).
TABLE_LOOK = """() => [...document.querySelectorAll('article table')].map(t => {
    const cell = t.querySelector('tbody td') || t.querySelector('td, th');
    let el = cell, background = 'rgba(0, 0, 0, 0)';
    for (; el; el = el.parentElement) {
        const bg = getComputedStyle(el).backgroundColor;
        if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') { background = bg; break; }
    }
    const box = t.closest('.cell_output .output');
    return {id: t.id || t.className, text: getComputedStyle(cell).color, background,
            box: box ? getComputedStyle(box).backgroundColor : null};
})"""


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_page_follows_the_system_setting(browser, site_url, scheme):
    """A reader who has not chosen with the theme button gets the system's setting: the
    page, its charts and its tables, with no console message on the way."""
    visit = Visit(browser, allowed=(site_url,), scheme=scheme)
    result = visit.open(site_url + "notebooks/02_spark_gap.html")
    _check(result, visit, f"chapter 2 with a {scheme} system setting")
    assert result["theme"] == scheme, f"the page is {result['theme']} on a {scheme} system"
    look = visit.page.evaluate(CHART_LOOK)
    assert look and all(f["background"] == (DARK_RGB if scheme == "dark" else
                                            "rgb(255, 255, 255)") for f in look), look
    visit.close()


@pytest.mark.browser
def test_the_readers_choice_beats_the_system_setting(browser, site_url):
    visit = Visit(browser, allowed=(site_url,), scheme="dark", mode="light")
    result = visit.open(site_url + "notebooks/01_napkin_ceiling.html")
    _check(result, visit, "chapter 1, light chosen on a dark system")
    assert result["theme"] == "light"
    visit.close()


@pytest.mark.browser
def test_tables_are_readable_in_dark_mode(browser, site_url):
    """No light block on a dark page: every table's cells show light text on a dark ground,
    on every page that has a table."""
    checked = 0
    for page in pages():
        visit = Visit(browser, allowed=(site_url,), scheme="dark")
        visit.open(site_url + page)
        for table in visit.page.evaluate(TABLE_LOOK):
            where = f"{page}: table {table['id']} in dark mode"
            assert _luminance(table["text"]) > 0.6, f"{where} has dark text: {table}"
            assert _luminance(table["background"]) < 0.35, f"{where} sits on a light " \
                                                           f"block: {table}"
            checked += 1
        visit.close()
    print(f"\n{checked} tables checked in dark mode")
    assert checked > 10


FIGURE_LABELS = """() => [...document.querySelectorAll('figure.napkin-figure')].map(f => ({
    name: f.id, label: f.querySelector('figcaption .napkin-figure-number')?.textContent,
    ref: f.querySelector('figcaption .napkin-figure-ref code')?.textContent,
    cite: f.querySelector('figcaption .napkin-figure-ref a')?.getAttribute('href')}))"""


@pytest.mark.browser
def test_figures_page_cites_with_a_working_copy_button(browser, site_url):
    """Each citation block on the Figures page has the theme's copy button, and the button
    copies that citation, from a static host and from file://."""
    url = site_url + "book/figures.html"
    visit = Visit(browser, allowed=(site_url,), permissions=("clipboard-read",
                                                              "clipboard-write"))
    visit.open(url)
    blocks = visit.page.locator(".napkin-cite div.highlight pre")
    buttons = visit.page.locator(".napkin-cite button.copybtn")
    assert blocks.count() > 0 and buttons.count() == blocks.count(), \
        f"{blocks.count()} citation blocks, {buttons.count()} copy buttons"
    visit.page.evaluate("document.querySelector('.napkin-cite').open = true")
    for i in (0, 1):  # the text and the BibTeX of the first figure
        buttons.nth(i).click()
        copied = visit.page.evaluate("navigator.clipboard.readText()")
        assert copied.strip() == blocks.nth(i).inner_text().strip()
    assert not visit.errors, visit.errors
    visit.close()
    visit = Visit(browser, allowed=("file://",))
    visit.open((HTML / "book" / "figures.html").as_uri())
    visit.page.evaluate("document.querySelector('.napkin-cite').open = true")
    button = visit.page.locator(".napkin-cite button.copybtn").first
    button.click()
    visit.page.wait_for_function(
        "() => document.querySelector('.napkin-cite button.copybtn')"
        ".getAttribute('data-tooltip') !== 'Copy'", timeout=5_000)
    assert button.get_attribute("data-tooltip") == "Copied!", button.get_attribute("data-tooltip")
    assert not visit.errors and not visit.blocked, (visit.errors, visit.blocked)
    visit.close()


@pytest.mark.browser
def test_figure_numbers_agree_between_chapters_and_the_figures_page(browser, site_url):
    """Every figure in a chapter carries "Figure N.k" (N its chapter, k its place in it), its
    name and a cite link to its own entry on the Figures page, which gives the same number."""
    chapters = {p.docname: p.number for p in toc.chapters(ROOT)}
    visit = Visit(browser, allowed=(site_url,))
    visit.open(site_url + "book/figures.html")
    listed = dict(visit.page.evaluate(
        "[...document.querySelectorAll('.napkin-gallery-item')].map(s => "
        "[s.id, s.querySelector('.napkin-figure-number').textContent])"))
    checked, seen = 0, set()
    for docname, number in chapters.items():
        visit.open(f"{site_url}{docname}.html")
        figures = visit.page.evaluate(FIGURE_LABELS)
        for k, fig in enumerate(figures, 1):
            assert fig["label"] == f"Figure {number}.{k}", (docname, fig)
            assert fig["ref"] == fig["name"], (docname, fig)
            assert fig["cite"] == f"../book/figures.html#{fig['name']}", (docname, fig)
            assert listed.get(fig["name"]) == fig["label"], \
                f"{fig['name']} is {fig['label']} in its chapter, " \
                f"{listed.get(fig['name'])} on the Figures page"
            checked += 1
            seen.add(fig["name"])
    # a page outside the numbered chapters (the readers' page) numbers its own figures 1, 2,
    # ...; a chapter's figure it shows (the index shows chapter 1's) keeps the chapter's number
    for page in toc.pages(ROOT):
        if page.number or page.docname == "book/figures":
            continue
        visit.open(f"{site_url}{page.docname}.html")
        own = [f for f in visit.page.evaluate(FIGURE_LABELS) if f["name"] not in seen]
        for k, fig in enumerate(own, 1):
            assert fig["label"] == f"Figure {k}", (page.docname, fig)
            assert listed.get(fig["name"]) == fig["label"], (page.docname, fig)
            checked += 1
    print(f"\n{checked} figure numbers checked in {len(chapters)} chapters and the other pages")
    assert checked == len(listed), "the Figures page lists figures no page shows"
    visit.close()


@pytest.mark.browser
def test_site_opens_from_file(browser):
    visit = Visit(browser, allowed=("file://",))
    index = visit.open((HTML / "index.html").as_uri())
    _check(index, visit, "index.html via file://")
    chapter = next(p for p in pages() if p.startswith("notebooks/"))
    result = visit.open((HTML / chapter).as_uri())
    _check(result, visit, f"{chapter} via file://")
    assert result["charts"], "no charts on the first chapter"
    visit.close()


@pytest.mark.browser
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
    assert any(t.endswith("The ridge point and batching") for t in titles), \
        f"search via {where}: {titles}"
    assert not visit.blocked, f"search via {where} left the site: {visit.blocked[:5]}"
    assert not visit.errors, f"search via {where} logged errors: {visit.errors[:5]}"
    visit.close()


@pytest.mark.site
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
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a busy machine: stop it the hard way
            lab.kill()
            lab.wait(timeout=30)


@pytest.mark.browser
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


# -- the built pages as text (no browser) ------------------------------------------------------

def _soup(page: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup((built() / page).read_text(encoding="utf-8"), "html.parser")


def _article(soup):
    return soup.select_one("article.bd-article") or soup.select_one("main") or soup


#: Where a mention of a chapter is not prose: links, code, headings, notebook outputs.
NOT_PROSE = {"a", "code", "pre", "script", "style", "h1", "h2", "h3", "h4", "h5", "h6",
             "kbd", "samp"}
MENTION = re.compile(r"\b[Cc]hapters?\s+\d+")


def bare_chapter_mentions(soup) -> list[str]:
    """Each "chapter N" in the prose of a page that is not inside a link."""
    found = []
    for text in _article(soup).find_all(string=MENTION):
        parents = list(text.parents)
        in_table = any(p.name in ("td", "th") for p in parents)
        if any(p.name in NOT_PROSE for p in parents) or not in_table and any(
                "cell_output" in (p.get("class") or []) and p.find("figure") is None
                for p in parents):  # a notebook's output, but its figures' captions and tables
            continue
        if any(p.name in ("p", "li", "dd", "td", "th", "figcaption") for p in parents):
            found += [m.group(0) for m in MENTION.finditer(text)]
    return found


@pytest.mark.site
def test_every_mention_of_a_chapter_is_a_link():
    """"chapter 3", "chapters 6 and 8", "chapters 6-10": every number is a link to that
    chapter's page (napkin_site.links.ChapterReferences), none is left bare."""
    chapters = {str(p.number): p.docname for p in toc.chapters(ROOT)}
    bare, linked = {}, 0
    for page in pages():
        soup = _soup(page)
        if found := bare_chapter_mentions(soup):
            bare[page] = found
        for span in _article(soup).select("span.napkin-chapter-ref"):
            number = re.search(r"\d+$", span.get_text()).group(0)
            href = span.find("a")["href"]
            assert urlparse(href).path.endswith(f"{Path(chapters[number]).name}.html") or \
                (href.startswith("#") and page == f"{chapters[number]}.html"), \
                f"{page}: {span.get_text()!r} links {href}"
            linked += 1
    print(f"\n{linked} mentions of a chapter linked on {len(pages())} pages")
    assert not bare, f"bare mentions of a chapter: {bare}"
    assert linked > 20


@pytest.mark.site
def test_the_bare_mention_check_finds_one():
    from bs4 import BeautifulSoup

    soup = BeautifulSoup('<main><p>As chapter 3 shows, and <a href="x">chapter 4</a> too.'
                         '</p><pre>chapter 5</pre><div class="cell_output"><p>chapter 6</p>'
                         '<table><tr><td>chapter 8\'s: quartiles</td></tr></table></div>'
                         '</main>', "html.parser")
    assert bare_chapter_mentions(soup) == ["chapter 3", "chapter 8"]


@pytest.mark.site
def test_chapters_are_numbered_in_headings_titles_and_sidebar():
    for chapter in toc.chapters(ROOT):
        soup = _soup(f"{chapter.docname}.html")
        heading = " ".join(_article(soup).find("h1").get_text(" ", strip=True).split())
        assert heading.startswith(f"{chapter.number} {chapter.title}"), heading
        assert soup.title.get_text().startswith(f"{chapter.number} {chapter.title}"), \
            soup.title.get_text()
        sections = [" ".join(h.get_text(" ", strip=True).split())
                    for h in _article(soup).find_all("h2")]
        assert sections and all(re.match(rf"{chapter.number}\.\d+ ", h) for h in sections), \
            sections
        nav = [" ".join(a.get_text(" ", strip=True).split())
               for a in soup.select("nav.bd-docs-nav a.reference")]
        assert f"{chapter.number} {chapter.title}" in nav, nav
    for page in toc.pages(ROOT):
        if page.number is None:
            heading = _article(_soup(f"{page.docname}.html")).find("h1").get_text(" ", strip=True)
            assert not re.match(r"\d", heading), f"{page.docname} is numbered: {heading}"


#: Words a count of one must not be followed by ("1 GPUs"), and plural hedges ("user(s)").
#: A rate's unit is not a plural noun: a live cell may measure a spread of "± 1 tokens/s".
ONE_PLURAL = re.compile(r"(?<![\d.,])\b1\s+(GPUs|CPUs|users|chips|tokens|sequences|requests|"
                        r"runs|models|machines|layers|heads|bytes|seconds|engines|cards)\b(?!/)")
HEDGE = re.compile(r"\w\(s\)(?=[\s'\".,;:)]|$)")
#: A citation label as the book's bibliography style makes it: a few letters of the authors
#: (a "+" for more), two digits of the year, a letter for a second work that year.
LABEL = re.compile(r"[A-Za-z][A-Za-z0-9+]{0,9}\d\d[a-z]?")


def page_text(soup) -> str:
    """What a reader reads on a page: its prose and outputs, and the chart specs whose
    titles and labels the browser draws, not its code."""
    article = _article(soup)
    scripts = " ".join(s.get_text() for s in article.find_all("script"))
    for hidden in article.select("div.cell_input, pre, code, script, style"):
        hidden.decompose()
    return article.get_text(" ") + " " + scripts


@pytest.mark.site
def test_no_typo_a_test_can_catch():
    problems = []
    for page in pages():
        soup = _soup(page)
        labels = [a.get_text().strip("[]") for a in _article(soup).select(
            "a.reference.internal[href*='references.html#'], span.label")]
        text = page_text(soup)
        problems += [f"{page}: {m.group(0)!r}" for m in ONE_PLURAL.finditer(text)]
        problems += [f"{page}: hedged plural {text[max(0, m.start() - 20):m.end() + 10]!r}"
                     for m in HEDGE.finditer(text)]
        problems += [f"{page}: citation label {label!r} looks unresolved"
                     for label in labels if label and not LABEL.fullmatch(label)]
    assert not problems, "\n".join(problems)


@pytest.mark.site
def test_the_typo_checks_catch_what_they_are_for():
    assert ONE_PLURAL.search("the rented B200 engine (1 GPUs)")
    assert not ONE_PLURAL.search("8 GPUs, 1 GPU, 1.1 GPUs, 21 GPUs, ± 1 tokens/s")
    assert HEDGE.search("' user(s) at once'") and not HEDGE.search("(s) of the essay")
    assert not LABEL.fullmatch("USEIAdministration25") and not LABEL.fullmatch("ggmlocontributors25b")
    assert all(LABEL.fullmatch(x) for x in ("Ger25", "ALTdJ+23", "am17an25", "vLLMteam26",
                                            "DeepSeekAI24a"))


@pytest.mark.site
def test_every_link_in_the_site_resolves():
    """Every relative link and anchor on every page points at a file and an id that exist:
    the chapter links, the figures' cite links, the essay's table, the Figures page."""
    ids: dict[Path, set[str]] = {}

    def ids_of(path: Path) -> set[str]:
        if path not in ids:
            ids[path] = {el["id"] for el in _soup(path.relative_to(HTML).as_posix())
                         .find_all(id=True)}
        return ids[path]

    checked, broken = 0, []
    for page in pages():
        here = HTML / page
        for a in _article(_soup(page)).find_all("a", href=True):
            url = urlparse(a["href"])
            if url.scheme or a["href"].startswith(("mailto:", "javascript:")):
                continue
            target = (here.parent / unquote(url.path)).resolve() if url.path else here
            if not target.exists():
                broken.append(f"{page}: {a['href']} (no file)")
            elif url.fragment and target.suffix == ".html" and url.fragment not in ids_of(target):
                broken.append(f"{page}: {a['href']} (no #{url.fragment})")
            checked += 1
    print(f"\n{checked} links checked on {len(pages())} pages")
    assert not broken, "\n".join(broken[:20])
