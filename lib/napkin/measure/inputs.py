"""What a measurement is given, checked before llama.cpp sees it: a GGUF file, and the
context depths to measure at. Every runner and session checks the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def check_model(path: str | Path) -> Path:
    """A GGUF path that exists and starts with the GGUF magic, or a clear error."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model file not found: {path}")
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file (it starts with {magic!r}); "
                         "point --model at a .gguf file")
    return path


def check_depths(depths: Sequence[int]) -> list[int]:
    """Depths as sorted, distinct whole numbers of tokens >= 0."""
    out = sorted({int(d) for d in depths})
    if not out or out[0] < 0 or any(int(d) != d for d in depths):
        raise ValueError(f"depths must be whole numbers of tokens >= 0, got {list(depths)}")
    return out
