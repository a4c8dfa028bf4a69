"""Write the README's chapter map (napkin.surface.chapter_map) between its markers.

    python scripts/chapter_map.py          # rewrite README.md
    python scripts/chapter_map.py --check  # exit 1 if README.md is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from napkin import surface

README = Path(__file__).resolve().parents[1] / "README.md"
MARKERS = re.compile(r"(<!-- chapter-map -->\n).*?(<!-- /chapter-map -->)", re.S)


def rendered(text: str) -> str:
    if not MARKERS.search(text):
        raise SystemExit(f"{README} has no <!-- chapter-map --> markers; add them where the "
                         "map belongs")
    return MARKERS.sub(lambda m: m.group(1) + surface.chapter_map() + m.group(2), text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether it is current")
    args = ap.parse_args()
    text = README.read_text()
    new = rendered(text)
    if args.check:
        print("README's chapter map is current" if new == text else
              "README's chapter map is stale: run python scripts/chapter_map.py")
        return int(new != text)
    README.write_text(new)
    print(f"wrote the chapter map into {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
