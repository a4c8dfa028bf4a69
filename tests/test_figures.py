"""Citable figures: every chart exported, valid, with its data; names stable; CITATION.cff valid."""

from __future__ import annotations

import csv
import json
import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

from napkin import exports

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
FIGURES = SITE / "figures"
LOCK = ROOT / "book" / "figure-names.txt"


def committed_figures() -> list[dict]:
    return exports.collect(exports.book_notebooks(ROOT, executed=False))


def test_figure_names_are_unique_and_match_the_lock_file():
    """Renaming a figure breaks every citation of it: it must be a deliberate change."""
    names = [f["name"] for f in committed_figures()]
    assert len(names) == len(set(names))
    locked = [line for line in LOCK.read_text().splitlines() if line and not line.startswith("#")]
    assert sorted(names) == sorted(locked), (
        "figure names changed; if deliberate, update book/figure-names.txt "
        f"(added {sorted(set(names) - set(locked))}, removed {sorted(set(locked) - set(names))})")


@pytest.mark.slow  # renders every figure; make test runs it, make check leaves it
def test_every_figure_draws_with_the_vega_lite_jupyterlab_ships():
    """Notebook front ends get each figure as Vega-Lite 5 (napkin.charts.JUPYTER_MIME):
    a spec using something only Vega-Lite 6 has would draw in the book but not in
    JupyterLab. 5.8 is the oldest 5.x that vl-convert carries."""
    import vl_convert as vlc

    from napkin.charts import jupyter_spec

    figures = committed_figures()
    assert figures
    for fig in figures:
        svg = vlc.vegalite_to_svg(jupyter_spec(fig["spec"]), vl_version="5.8")
        assert svg.startswith("<svg") and "<path" in svg, fig["name"]


@pytest.mark.slow  # renders every figure twice
def test_every_figure_draws_its_marks_on_its_plot():
    """No mark at a coordinate that is not a number, outside its plot, or all on one edge,
    at a laptop's and a phone's width (rendered offline by the site's Vega-Lite)."""
    from napkin.charts import misdrawn

    for fig in committed_figures():
        for width in (640, 320):
            problems = misdrawn(fig["spec"], width)
            assert not problems, f"{fig['name']} at {width} px: {problems}"


def test_citation_cff_validates_against_the_cff_schema():
    import jsonschema

    wheel = next((ROOT / ".cache" / "wheels").glob("cffconvert-2.0.0-*.whl"), None)
    assert wheel, "the CFF schema comes from cffconvert's wheel: run `make env`"
    with zipfile.ZipFile(wheel) as z:
        schema = json.loads(z.read("cffconvert/schemas/1.2.0/schema.json"))
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    cff = json.loads(json.dumps(cff, default=str))  # dates as the strings the schema expects
    jsonschema.validate(cff, schema)


def test_credit_wraps_inside_the_picture():
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="100" '
           'viewBox="0 0 300 100"><rect width="300" height="100"/></svg>')
    out = exports.add_credit(svg, "word " * 60, exports.LIGHT)
    assert 'height="1' in out and "napkin-credit" in out and out.count("<tspan") > 2


# -- the built site (after `make book`) --------------------------------------------------------

@pytest.fixture(scope="module")
def index():
    path = FIGURES / "index.json"
    if not path.is_file():
        pytest.fail("no exported figures in _build/html/figures: run `make book` first")
    return json.loads(path.read_text())


@pytest.mark.site
def test_every_chart_in_the_site_is_exported(index):
    charts = set()
    for page in SITE.rglob("*.html"):
        if "_static" in page.parts or page.name in ("figures.html",):
            continue
        charts |= set(re.findall(r'class="napkin-chart" id="(fig-[a-z0-9-]+)-chart"',
                                 page.read_text()))
    assert charts, "the site has no charts"
    assert sorted(charts) == sorted(index["figures"])


@pytest.mark.site
@pytest.mark.parametrize("suffix", ["", "-dark"])
def test_exports_are_valid_files(index, suffix):
    import xml.etree.ElementTree as ET

    for name in index["figures"]:
        svg = FIGURES / f"{name}{suffix}.svg"
        root = ET.fromstring(svg.read_text())
        assert root.tag.endswith("svg") and svg.stat().st_size > 5_000
        assert "napkin-credit" in svg.read_text(), f"{svg.name} lacks its credit line"
        png = (FIGURES / f"{name}{suffix}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
        width = int.from_bytes(png[16:20], "big")
        assert width >= 2 * exports.EXPORT_WIDTH, f"{name}{suffix}.png is not 2x"
        pdf = (FIGURES / f"{name}{suffix}.pdf").read_bytes()
        assert pdf[:5] == b"%PDF-" and len(pdf) > 5_000


@pytest.mark.site
def test_csv_is_exactly_the_data_drawn(index):
    built = {f["name"]: f for f in exports.collect(exports.book_notebooks(ROOT))}
    for name in index["figures"]:
        _, rows = exports.primary_dataset(built[name]["spec"])
        with (FIGURES / f"{name}.csv").open(newline="") as f:
            written = list(csv.DictReader(f))
        assert len(written) == len(rows), name
        for got, want in zip(written, rows):
            for key, value in want.items():
                assert got[key] == ("" if value is None else str(value)), (name, key)


@pytest.mark.site
def test_metadata_names_version_and_credit(index):
    for name in index["figures"]:
        meta = json.loads((FIGURES / f"{name}.json").read_text())
        assert meta["name"] == name and meta["caption"] and meta["source"]
        assert meta["version"]["commit"] and re.fullmatch(r"\d{4}-\d\d-\d\d", meta["version"]["date"])
        assert meta["version"]["commit"] in meta["credit"]
        if meta["live"]:
            assert meta["machine"], f"live figure {name} does not say what it was measured on"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text())
    return parser


@pytest.mark.site
def test_figures_page_links_all_resolve(index):
    page = SITE / "book" / "figures.html"
    parsed = _parse(page)
    for name in index["figures"]:
        assert name in parsed.ids, f"no stable anchor #{name} on the Figures page"
    checked = 0
    for link in parsed.links:
        url = urlparse(link)
        if url.scheme or link.startswith(("mailto:", "javascript:")) or not url.path:
            continue
        target = (page.parent / unquote(url.path)).resolve()
        assert target.exists(), f"broken link on the Figures page: {link}"
        if url.fragment and target.suffix == ".html":
            assert url.fragment in _parse(target).ids, f"missing anchor: {link}"
        checked += 1
    assert checked > 10 * len(index["figures"])
