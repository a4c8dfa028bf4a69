"""Figures for slides: every figure of the book as SVG, PNG and PDF, with its data.

The figures are read from the executed notebooks (each :class:`napkin.charts.Figure`
output carries its Vega-Lite spec and its name, caption and source), so a chapter
added later is exported without registering anything. For each figure:

    <name>.svg / .png (2x) / .pdf          light, for documents and light slides
    <name>-dark.svg / .png / .pdf          the same on a dark background
    <name>.csv                             the data drawn (the spec's datasets)
    <name>.json                            name, title, caption, source, version, machine

Every image carries a one-line credit (source, book, version) inside the picture,
so a slide that crops the caption still attributes it.
"""

from __future__ import annotations

import copy
import csv
import datetime as dt
import hashlib
import json
import re
import subprocess
from html import escape
from pathlib import Path

from . import essay, folders, toc
from .charts import DARK_BACKGROUND, DARK_CONFIG, METADATA_KEY, book_spec

ROOT = Path(__file__).resolve().parents[2]
#: The book's title with its subtitle, as the index and CITATION.cff give it.
BOOK_TITLE = f"{essay.TITLE}: a reproducible book"
EXPORT_WIDTH = 720  # px; 2x PNG is 1440+ px wide, enough for a full-width slide
LIGHT = {"background": "#ffffff", "credit": "#6b6459"}
DARK = {"background": DARK_BACKGROUND, "credit": "#b9b3a9"}
FORMATS = ("svg", "png", "pdf")


def book_version(root: Path = ROOT) -> dict:
    """The git commit the book was built from (``+dirty`` when edited) and today's date."""
    def git(*args):
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    commit = git("rev-parse", "--short=10", "HEAD") or "unversioned"
    if commit != "unversioned" and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    return {"commit": commit, "date": dt.date.today().isoformat()}


def notebook_figures(path: Path) -> list[dict]:
    """Every napkin Figure stored in one executed notebook, in page order."""
    nb = json.loads(Path(path).read_text())
    found = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get(METADATA_KEY)
            if not meta:
                continue
            spec = next((v for k, v in out["data"].items()
                         if k.startswith("application/vnd.vegalite.")), None)
            if spec is None:
                raise ValueError(f"{path}: figure {meta['name']} has no Vega-Lite spec")
            found.append({**meta, "spec": book_spec(spec), "chapter": Path(path).stem})
    return found


def collect(notebooks: list[Path]) -> list[dict]:
    figures, seen = [], {}
    for path in notebooks:
        for fig in notebook_figures(path):
            if fig["name"] in seen:
                raise ValueError(f"figure name {fig['name']} is used in both {seen[fig['name']]} "
                                 f"and {path.name}; figure names must be unique")
            seen[fig["name"]] = path.name
            figures.append(fig)
    return figures


def _notebook_of(root: Path, docname: str, executed: bool) -> Path | None:
    """A page's notebook: the freshly executed copy when the book has been built (it holds
    this machine's live figures), else the committed one; None for a Markdown page."""
    built = root / "_build" / "jupyter_execute" / f"{docname}.ipynb"
    committed = root / f"{docname}.ipynb"
    if executed and built.is_file():
        return built
    return committed if committed.is_file() else None


def book_notebooks(root: Path = ROOT, executed: bool = True) -> list[Path]:
    """The notebooks in ``_toc.yml`` order (see :func:`_notebook_of` for which copy)."""
    found = (_notebook_of(Path(root), p.docname, executed) for p in toc.pages(root))
    return [p for p in found if p is not None]


def book_figures(root: Path = ROOT, executed: bool = True) -> list[dict]:
    """Every figure of the book in reading order, as :func:`notebook_figures` gives it, with
    its page (``docname``, ``page_title``, ``chapter_number``) and its number in the chapter
    (``label``, "Figure 9.2"): the n-th figure of a chapter's notebook is its n-th figure on
    the page, which is how the site numbers it (``book/_ext/napkin_site``)."""
    figures, seen = [], {}
    for page in toc.pages(root):
        path = _notebook_of(Path(root), page.docname, executed)
        for i, fig in enumerate(notebook_figures(path) if path else [], 1):
            if fig["name"] in seen:
                raise ValueError(f"figure name {fig['name']} is used in both {seen[fig['name']]} "
                                 f"and {page.docname}; figure names must be unique")
            seen[fig["name"]] = page.docname
            figures.append({**fig, "docname": page.docname, "page_title": page.title,
                            "chapter_number": page.number,
                            "label": toc.figure_label(page.number, i)})
    return figures


def title_of(spec: dict, caption: str = "") -> str:
    """The chart's own title, which names a figure on the Figures page and in its exports.
    An interactive chart computes its title from the reader's settings; it is named by its
    fixed subtitle, else by the first clause of its caption, marked "(interactive)"."""
    title = spec.get("title", "")
    if isinstance(title, dict):
        subtitle = title.get("subtitle")
        title = title.get("text", "")
        if isinstance(title, dict):  # an expression: the readout of an interactive chart
            fixed = (" ".join(subtitle) if isinstance(subtitle, list) else subtitle) or \
                re.split(r"(?<=\w)[.:;](?:\s|$)", caption, maxsplit=1)[0]
            return f"{fixed.strip()} (interactive)" if fixed.strip() else "Interactive chart"
    return " ".join(title) if isinstance(title, list) else str(title)


def credit(fig: dict, version: dict) -> str:
    machine = f" Measured on {fig['machine']}." if fig.get("machine") else ""
    label = f"{fig['label']}, " if fig.get("label") else ""
    return (f"Source: {fig['source']}{machine} | {BOOK_TITLE}, {label}{fig['name']}, "
            f"version {version['commit']} ({version['date']})")


def _merge(base: dict, patch: dict) -> dict:
    out = dict(base)
    for key, value in patch.items():
        out[key] = _merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def _static_spec(spec: dict, dark: bool) -> dict:
    spec = copy.deepcopy(spec)
    if spec.get("width") == "container":
        spec["width"] = EXPORT_WIDTH
    if dark:
        spec["config"] = _merge(spec.get("config", {}), DARK_CONFIG)
    return spec


def _wrap_credit(text: str, width_px: float, font_px: float = 11) -> list[str]:
    """Split the credit into lines that fit the picture (about 0.55 em per character)."""
    per_line = max(40, int(width_px / (0.55 * font_px)))
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > per_line:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines


def add_credit(svg: str, text: str, colors: dict) -> str:
    """Extend the SVG at the bottom with the credit, on the picture's background."""
    match = re.search(r'<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"', svg)
    if not match:
        raise ValueError("unexpected SVG from vl-convert: no width/height on the root element")
    width, height = float(match.group(1)), float(match.group(2))
    lines = _wrap_credit(text, width - 10)
    extra = 8 + 14 * len(lines)
    new_h = height + extra
    svg = re.sub(r'(<svg[^>]*\sheight=")[\d.]+(")', rf"\g<1>{new_h:g}\g<2>", svg, count=1)
    svg = re.sub(r'(<svg[^>]*\sviewBox="0 0 [\d.]+ )[\d.]+(")', rf"\g<1>{new_h:g}\g<2>", svg,
                 count=1)
    tspans = "".join(f'<tspan x="6" dy="{0 if i == 0 else 14}">{escape(line)}</tspan>'
                     for i, line in enumerate(lines))
    footer = (f'<rect x="0" y="{height:g}" width="{width:g}" height="{extra:g}" '
              f'fill="{colors["background"]}"/>'
              f'<text class="napkin-credit" x="6" y="{height + 14:g}" font-size="11" '
              f'font-family="sans-serif" fill="{colors["credit"]}">{tspans}</text>')
    return svg.replace("</svg>", footer + "</svg>", 1) if svg.rstrip().endswith("</svg>") else \
        svg[:svg.rindex("</svg>")] + footer + "</svg>"


def datasets(spec: dict) -> dict[str, list[dict]]:
    """The data a spec draws: its named datasets, or its inline values."""
    if spec.get("datasets"):
        return spec["datasets"]
    values = spec.get("data", {}).get("values")
    return {"data": values} if values else {}


def write_csv(rows: list[dict], path: Path) -> None:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def primary_dataset(spec: dict) -> tuple[str, list[dict]]:
    """The largest dataset: the points or bars (a shaded band is a one-row helper)."""
    data = datasets(spec)
    if not data:
        raise ValueError("the figure has no inline data to export")
    name = max(data, key=lambda k: len(data[k]))
    return name, data[name]


def export_figure(fig: dict, outdir: Path, version: dict) -> dict:
    """Write one figure's images, data and metadata; returns the metadata written."""
    import vl_convert as vlc

    outdir.mkdir(parents=True, exist_ok=True)
    name = fig["name"]
    digest = hashlib.sha256(json.dumps([fig["spec"], fig["caption"], fig["source"],
                                        fig.get("label"), version],
                                       sort_keys=True).encode()).hexdigest()[:16]
    meta_path = outdir / f"{name}.json"
    if meta_path.is_file() and json.loads(meta_path.read_text()).get("digest") == digest:
        return json.loads(meta_path.read_text())  # unchanged since the last export
    text = credit(fig, version)
    files = {}
    for dark, suffix, colors in ((False, "", LIGHT), (True, "-dark", DARK)):
        svg = add_credit(vlc.vegalite_to_svg(_static_spec(fig["spec"], dark)), text, colors)
        (outdir / f"{name}{suffix}.svg").write_text(svg)
        (outdir / f"{name}{suffix}.png").write_bytes(vlc.svg_to_png(svg, scale=2))
        (outdir / f"{name}{suffix}.pdf").write_bytes(vlc.svg_to_pdf(svg))
        files.update({f"{fmt}{suffix}": f"{name}{suffix}.{fmt}" for fmt in FORMATS})
    dataset, rows = primary_dataset(fig["spec"])
    write_csv(rows, outdir / f"{name}.csv")
    files["csv"] = f"{name}.csv"
    meta = {"name": name, "title": title_of(fig["spec"], fig["caption"]), "caption": fig["caption"],
            "source": fig["source"], "chapter": fig["chapter"], "number": fig.get("label"),
            "live": fig.get("live", False),
            "machine": fig.get("machine"), "book": BOOK_TITLE, "version": version,
            "credit": text, "dataset": dataset, "files": files, "digest": digest}
    tmp = meta_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    tmp.replace(meta_path)
    return meta


def export_all(outdir: Path, figures: list[dict] | None = None, progress=print) -> list[dict]:
    """Export ``figures`` (default: :func:`book_figures`) into ``outdir``, which is made;
    a folder that cannot be written is a ValueError that names it, before any work."""
    figures = figures if figures is not None else book_figures()
    outdir = folders.writable(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    version = book_version()
    written = []
    for i, fig in enumerate(figures, 1):
        progress(f"[{i}/{len(figures)}] {fig['name']}")
        written.append(export_figure(fig, Path(outdir), version))
    index = Path(outdir) / "index.json"
    index.write_text(json.dumps({"version": version, "figures": [m["name"] for m in written]},
                                indent=2) + "\n")
    return written
