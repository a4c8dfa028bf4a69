"""Output folders named on the command line: made and checked before any work is done.

A measurement takes minutes and an export writes hundreds of files; a folder that cannot be
written (``--out /proc/nope``, a path through a file, a read-only disk) should stop the
command at once with one line that names it, not with a traceback at the end.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["writable"]


def writable(path: str | Path, option: str = "--out") -> Path:
    """``path`` as a folder that can be made and written; a ValueError names the option,
    the folder and why, when it cannot be. The check leaves nothing behind: folders it had
    to make are removed again, so a command that fails later leaves no empty folder."""
    folder = Path(path)
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".napkin-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise ValueError(f"{option} {folder}: cannot write there ({err.strerror or err}); "
                         "give a folder you can write to") from None
    finally:
        for p in made:  # deepest first
            if p.is_dir():
                p.rmdir()
    return folder
