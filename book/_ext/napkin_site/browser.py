"""Headless Chromium for the built site: how the site test and the screenshot script start it.

Both drive the same browser the same way (Debian's ``chromium`` runs headless as root only
with these flags, and a fresh profile each launch), and both must wait until every chart of
a page is drawn before they read or photograph it: the site's own script
(``static/napkin.js``) marks each chart it draws. Nothing here imports Sphinx.
"""

from __future__ import annotations

import os
import shutil

__all__ = ["LAUNCH_ARGS", "chromium", "wait_for_charts"]

LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-quic"]

#: True once every chart of the page is drawn or has said why it could not be.
CHARTS_SETTLED = ("() => [...document.querySelectorAll('.napkin-chart')].every("
                  "el => el.dataset.drawn === 'true' || "
                  "el.classList.contains('napkin-chart-error'))")


def chromium() -> str | None:
    """The Chromium to drive: ``$NAPKIN_CHROMIUM``, else the first one on ``PATH``."""
    return (os.environ.get("NAPKIN_CHROMIUM") or shutil.which("chromium")
            or shutil.which("chromium-browser") or shutil.which("google-chrome"))


def wait_for_charts(page, timeout_ms: int = 30_000) -> None:
    """Wait until the page's charts are drawn (napkin.js marks each one)."""
    if page.locator(".napkin-chart").count():
        page.wait_for_function(CHARTS_SETTLED, timeout=timeout_ms)
