"""Every page works with the network off, in the reader's colours, with the build's stamp.

Altair's notebook HTML fetches vega, vega-lite and vega-embed from a CDN, and Sphinx loads
MathJax from one, so an offline reader would see errors instead of charts and equations.
This writes the three Vega libraries, bundled by the pinned ``vl-convert-python`` at the
versions the pinned Altair expects, and MathJax 3 (from the pinned ``django-static-mathjax``
wheel, SVG output, so no web fonts) into the site's ``_static`` folder, and loads them on
every page before the figures that call them (see :mod:`napkin.charts`), with the site's
own script and style (``static/napkin.js``, ``static/napkin.css``) and the dark-mode chart
colours for that script. It also writes the footer's version stamp and drops the inline
script Sphinx 7 lists twice.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from napkin.charts import DARK_CONFIG

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
    from napkin.exports import book_version
    from napkin.measure import machine

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


#: Runs in the page's head, before anything is drawn. Unless the reader chose light or dark
#: with the theme button (pydata keeps the choice in localStorage), ``default_mode: auto``
#: leaves the page ``data-theme="auto"``, or the theme of an earlier visit, until the theme's
#: deferred script resolves it from the system's setting; resolving it here first means the
#: page and its charts are drawn in the right colours once, not light and then redrawn dark.
RESOLVE_AUTO = """(function () {
  var root = document.documentElement;
  var chosen = root.dataset.mode === "light" || root.dataset.mode === "dark";
  if (!chosen || (root.dataset.theme !== "light" && root.dataset.theme !== "dark")) {
    root.dataset.theme = window.matchMedia &&
      window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
})();
"""


def theme_script() -> str:
    """The dark-mode chart colours for napkin.js, from the one definition in
    :mod:`napkin.charts` that the dark exports use too, and the system's light or dark
    setting applied before the page draws (:data:`RESOLVE_AUTO`)."""
    return (f"window.napkinDarkConfig = {json.dumps(DARK_CONFIG, sort_keys=True)};\n"
            + RESOLVE_AUTO)


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


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("builder-inited", _write_assets)
    app.add_js_file(BUNDLE, priority=200)
    app.add_js_file(THEME, priority=205)
    app.add_js_file("napkin.js", priority=210)
    app.add_css_file("napkin.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
