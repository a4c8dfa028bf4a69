"""Maintainer tool: photograph pages of the built site at a phone's and a laptop's width.

    python scripts/screenshots.py OUT_DIR [PAGE ...] [--site _build/html] [--sizes phone laptop]
                                  [--dark] [--viewport-only]

Each PAGE is a path under the built site (``notebooks/08_what_to_buy.html``; default: the
index). Pages are opened from ``file://`` in headless Chromium, as a reader opens a downloaded
copy, with the network blocked; once every chart is drawn the whole page is saved as
``OUT_DIR/<page>-<size>.png`` (``notebooks-08_what_to_buy-phone.png``). Sizes: ``phone`` is
390x844, ``laptop`` 1366x900. OUT_DIR must lie outside the repository: screenshots are for
review, never committed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))  # the site's headless-browser harness

from napkin_site.browser import LAUNCH_ARGS, chromium, wait_for_charts  # noqa: E402

SIZES = {"phone": (390, 844), "laptop": (1366, 900)}


def shoot(site: Path, out: Path, pages: list[str], sizes: list[str], dark: bool = False,
          full_page: bool = True) -> list[Path]:
    """Save one PNG per page and size; returns the files written."""
    from playwright.sync_api import sync_playwright

    browser_path = chromium()
    if not browser_path:
        raise SystemExit("error: no Chromium found (install Debian's `chromium`, or set "
                         "NAPKIN_CHROMIUM)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, headless=True,
                                    args=LAUNCH_ARGS)
        for size in sizes:
            width, height = SIZES[size]
            context = browser.new_context(viewport={"width": width, "height": height},
                                          color_scheme="dark" if dark else "light")
            context.route("**/*", lambda route: route.continue_()
                          if route.request.url.startswith("file://") else route.abort())
            page = context.new_page()
            for name in pages:
                page.goto((site / name).as_uri(), wait_until="load")
                wait_for_charts(page)
                page.wait_for_timeout(300)  # let the last chart's layout settle
                stem = name.removesuffix(".html").replace("/", "-")
                path = out / f"{stem}-{size}{'-dark' if dark else ''}.png"
                page.screenshot(path=str(path), full_page=full_page)
                written.append(path)
                print(path, flush=True)
            context.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for the PNGs (outside the repository)")
    parser.add_argument("pages", nargs="*", default=["index.html"],
                        help="pages under the site, e.g. notebooks/08_what_to_buy.html")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html",
                        help="the built site (default: _build/html)")
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["phone", "laptop"])
    parser.add_argument("--dark", action="store_true", help="the system asks for dark mode")
    parser.add_argument("--viewport-only", action="store_true",
                        help="only the first screenful, not the whole page")
    args = parser.parse_args(argv)
    out, site = args.out.resolve(), args.site.resolve()
    if out == ROOT or ROOT in out.parents:
        parser.error(f"OUT_DIR {args.out} is inside the repository; give a folder outside it")
    if not (site / "index.html").is_file():
        parser.error(f"--site {args.site} has no index.html: build the book first (make book)")
    missing = [p for p in args.pages if not (site / p).is_file()]
    if missing:
        parser.error(f"no such page in {args.site}: {', '.join(missing)}")
    shoot(site, out, args.pages, args.sizes, args.dark, not args.viewport_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
