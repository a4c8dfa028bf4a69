"""Sphinx extension for the book's site: every page works with the network off.

Altair's notebook HTML fetches vega, vega-lite and vega-embed from a CDN, and
Sphinx loads MathJax from one, so an offline reader would see errors instead of
charts and equations. This extension writes the three Vega libraries, bundled
by the pinned ``vl-convert-python`` at the versions the pinned Altair expects,
and MathJax 3 (from the pinned ``django-static-mathjax`` wheel, SVG output, so
no web fonts) into the site's ``_static`` folder, and loads them on every page
before the figures that call them (see :mod:`napkin.charts`). It also turns each
notebook figure output into the page's ``<figure>`` (:class:`FigureOutput`) and
gives the page script the dark-mode chart colours. :class:`ErrataCards` renders the
errata as cards (:mod:`napkin.errata`).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pandas as pd
from docutils import nodes

from .charts import DARK_CONFIG, JUPYTER_MIME, METADATA_KEY, figure_html

STATIC = Path(__file__).with_name("static")
BUNDLE = "vega-bundle.js"
THEME = "napkin-theme.js"
MATHJAX = "mathjax/tex-svg-full.js"


def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one classic script defining three globals.

    The bundle's own top-level names (``_`` among them) are wrapped in a function
    scope: at top level they would clash with Sphinx's ``const _`` in doctools.js.
    """
    import altair as alt
    import vl_convert as vlc

    major, minor = alt.VEGALITE_VERSION.split(".")[:2]
    bundle = vlc.javascript_bundle(vl_version=f"v{major}.{minor}")
    return f"(function () {{\n{bundle}\n}}).call(window);\n"


def library_versions() -> dict:
    """The versions the site must serve: what the pinned Altair writes specs for."""
    import altair as alt

    return {"vega": alt.VEGA_VERSION, "vega-lite": alt.VEGALITE_VERSION,
            "vega-embed": alt.VEGAEMBED_VERSION}


def mathjax_dir() -> Path:
    """MathJax 3's ES5 build, as shipped in the django-static-mathjax wheel."""
    import mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax"


def _configure(app, config):
    config.html_static_path.append(str(STATIC))
    config.mathjax_path = MATHJAX
    config.html_theme_options = {**config.html_theme_options,
                                 "extra_footer": version_stamp(config.html_baseurl)}


def version_stamp(base_url: str = "") -> str:
    """The footer line: which commit and day the site was built from, on what machine its
    live figures were measured, and where it is published (``html.baseurl`` of
    ``_config.yml``, the one setting the figure citations read too)."""
    from .exports import book_version
    from .measure import machine

    version = book_version()
    where = (f' Published at <a href="{escape(base_url)}">{escape(base_url)}</a>.'
             if base_url else "")
    return (f'<p class="napkin-stamp">Version {escape(version["commit"])}, built '
            f'{version["date"]}. Live figures measured on '
            f'{escape(machine.cpu_model())} while building.{where}</p>')


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_assets(app):
    """Write the libraries before any page, so pages get their cache-busting checksums."""
    if app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    _write(static / BUNDLE, vega_bundle())
    _write(static / THEME, theme_script())
    source = mathjax_dir()
    _write(static / MATHJAX, (source / "es5" / "tex-svg-full.js").read_text(encoding="utf-8"))
    _write(static / "mathjax" / "LICENSE", (source / "LICENSE").read_text(encoding="utf-8"))


def theme_script() -> str:
    """The dark-mode chart colours for napkin.js, from the one definition in
    :mod:`napkin.charts` that the dark exports use too."""
    return f"window.napkinDarkConfig = {json.dumps(DARK_CONFIG, sort_keys=True)};\n"


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    """Sphinx 7 lists some inline scripts twice, once with filename None and once
    with '' (sphinx-thebe's ``const THEBE_JS_URL``): a redeclaration, so a console error."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", str(script)) or "", tuple(sorted(attributes.items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    scripts[:] = unique


class FigureOutput:
    """myst-nb mime plugin: a notebook figure becomes the site's ``<figure>``.

    Notebooks store a figure as Vega-Lite 5 JSON (what JupyterLab draws) with its
    name, caption and source in the output's metadata; the site builds the HTML that
    draws it with the site's own Vega from those (:func:`napkin.charts.figure_html`).
    """

    mime_priority_overrides = [("*", JUPYTER_MIME, 1),
                               ("*", "application/vnd.vegalite.v6+json", None)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if inline or data.mime_type != JUPYTER_MIME:
            return None
        meta = data.output_metadata.get(METADATA_KEY)
        if not meta:  # a bare Altair chart: myst-nb warns, and the strict build fails
            return None
        spec = data.content if isinstance(data.content, dict) else json.loads(data.string)
        return [nodes.raw(text=figure_html(meta, spec), format="html",
                          classes=["output", "text_html"])]


class ErrataCards:
    """The errata as one card each (a wide table does not fit a phone), differences first.

    ``df`` is :func:`napkin.errata.all_errata`; a card links its chapter's page under
    ``chapters_url``.
    """

    def __init__(self, df: pd.DataFrame, chapters_url: str = "../notebooks/"):
        order = df.assign(_agrees=df["verdict"] == "agrees").sort_values("_agrees", kind="stable")
        self.df, self.url = order.drop(columns="_agrees"), chapters_url

    def card(self, e: pd.Series) -> str:
        holds = "the conclusion holds" if e["conclusion_holds"] else "the conclusion fails"
        return (f'<div class="napkin-erratum napkin-verdict-{e["verdict"].replace(" ", "-")}">'
                f'<p class="napkin-erratum-head"><strong>{escape(e["topic"])}</strong> '
                f'<span class="napkin-badge">{escape(e["verdict"])}; {holds}</span></p>'
                f'<dl><dt>The essay says</dt><dd>{escape(e["essay_says"])}</dd>'
                f'<dt>The data says</dt><dd>{escape(e["data_says"])}</dd>'
                f'<dt>Why it matters</dt><dd>{escape(e["explanation"])}</dd>'
                f'<dt>Where</dt><dd><a href="{self.url}{e["chapter"]}.html">{e["chapter"]}</a>; '
                f'source: <a href="{escape(e["source"])}">{escape(e["source"])}</a></dd></dl>'
                f"</div>")

    def html(self) -> str:
        return "\n".join(self.card(e) for _, e in self.df.iterrows())

    def _repr_mimebundle_(self, include=None, exclude=None):
        text = "\n".join(f"- {r.topic}: {r.verdict}" for r in self.df.itertuples())
        return {"text/html": self.html(), "text/plain": text}


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("builder-inited", _write_assets)
    app.add_js_file(BUNDLE, priority=200)
    app.add_js_file(THEME, priority=205)
    app.add_js_file("napkin.js", priority=210)
    app.add_css_file("napkin.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
