"""Publishing: one base URL that every citation and the footer agree on, the Pages workflow,
and the light install for readers who only want the measurement."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from napkin.measure import backend
from napkin_site import assets, figures

ROOT = Path(__file__).resolve().parents[1]


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def base_url() -> str:
    return config()["html"]["baseurl"]


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_one_base_url_everywhere():
    url = base_url()
    assert url.startswith("https://") and url.endswith("/")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["url"] == url, "CITATION.cff url differs from _config.yml html.baseurl"
    assert cff["repository-code"] == config()["repository"]["url"]
    for page in ("README.md", "book/intro.md"):
        assert url in (ROOT / page).read_text(), f"{page} cites another address"


def test_figure_citations_and_footer_read_the_setting():
    version = {"commit": "abc1234567", "date": "2026-12-01"}
    fig = {"name": "fig-x", "caption": "A caption.", "source": "data", "chapter": "01_x",
           "title": "T", "docname": "notebooks/01_x", "page_title": "The X",
           "chapter_number": 1, "label": "Figure 1.2"}
    html = figures.item_html(fig, base_url(), version, "../")
    assert f"{base_url()}book/figures.html#fig-x" in html
    assert "Figure 1.2" in html and ">chapter 1: The X</a>" in html
    stamp = assets.version_stamp(base_url())
    assert f'href="{base_url()}"' in stamp and "Published at" in stamp
    assert "Published at" not in assets.version_stamp()


def test_one_title_everywhere():
    """The book's title with its subtitle, as the figure citations and exports give it, is
    the one CITATION.cff and the index give."""
    from napkin import exports

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["title"] == exports.BOOK_TITLE
    intro = " ".join((ROOT / "book" / "intro.md").read_text().replace("> ", " ").split())
    assert exports.BOOK_TITLE in intro.replace("*", "")


def test_pages_workflow_builds_with_the_books_own_commands():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    assert flow[True]["push"]["branches"] == ["main"]  # YAML reads the key `on` as True
    assert flow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    steps = flow["jobs"]["build"]["steps"]
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
    assert python["with"] == {"python-version": "3.11", "cache": "pip",
                              "cache-dependency-path": "requirements.txt"}
    runs = " ".join(s.get("run", "") for s in steps)
    assert "make book" in runs and "html.baseurl" in runs.replace('["html"]["baseurl"]',
                                                                  "html.baseurl")
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages"))
    assert upload["with"]["path"] == "_build/html"
    deploy = flow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages")


def test_measure_extra_pins_what_the_book_pins():
    text = (ROOT / "pyproject.toml").read_text()
    extra = re.search(r"^measure = \[(.*)\]$", text, re.M).group(1)
    wanted = dict(re.findall(r'"([A-Za-z0-9_.-]+)==([^"]+)"', extra))
    assert {"gguf", "llama-cpp-python", "psutil"} <= set(wanted)
    for name, version in wanted.items():
        assert pins()[name.lower()] == version, name


def test_readme_gpu_builds_name_the_pinned_binding():
    readme = (ROOT / "README.md").read_text()
    pinned = pins()["llama-cpp-python"]
    commands = re.findall(r"llama-cpp-python==(\S+)", readme)
    assert commands and set(commands) == {pinned}
    for flag in backend.GPU_BUILDS.values():
        assert flag in readme
    for words in ('pip install -e ".[measure]"', "python -m napkin measure", "LLAMA_BENCH",
                  "--bandwidth", "NAPKIN_BANDWIDTH_GB_PER_S"):
        assert words in readme, words


def test_make_measure_passes_the_readers_choices():
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile[makefile.index("\nmeasure:"):].split("\n\n")[0]
    assert "--llama-bench $(LLAMA_BENCH)" in rule and "--bandwidth $(BANDWIDTH)" in rule
