"""``python -m napkin results check``: refuse a submission that is malformed or impossible.

One :class:`Problem` per thing wrong, each naming the file, the field, what is wrong and
what to do; never a traceback. In order: the file must be JSON, of a schema version this
book knows, in the shape of :data:`napkin.readers.schema.FIELDS`; its rates must be
possible (:mod:`.bounds`): decode within 1.1x its own ceiling unless speculative decoding
ran, prefill below the device's peak; it must carry nothing personal (a path, an e-mail
address, this machine's user or host name); and it must not repeat a measurement already
accepted in ``data/readers/``. ``tests/test_readers.py`` runs it over every accepted file.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from . import bounds
from .schema import SCHEMA, shape_problems

SHARE_AGAIN = "share it again with `python -m napkin share` rather than editing it by hand"
#: What a personal string looks like: a path (home or any absolute one), a ~ path, an e-mail.
PERSONAL = (
    (re.compile(r"(?i)(/home/|/Users/|[A-Z]:\\Users\\|~/)"), "a home-directory path"),
    (re.compile(r"(?<![\w.:/])/(?:[\w.-]+/)+[\w.-]*"), "a file path"),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"), "an e-mail address"),
)
#: Account and host names too common to mean anyone.
GENERIC_NAMES = {"root", "user", "admin", "runner", "localhost", "ubuntu", "debian", "ci",
                 "jovyan", "vscode", "codespace"}


@dataclass(frozen=True)
class Problem:
    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


def accepted_dir() -> Path:
    """``data/readers/``: the submissions the readers' page shows."""
    from ..tables import data_dir

    return data_dir() / "readers"


def load(path: Path) -> tuple[dict | None, list[Problem]]:
    """The parsed file, or the one problem that stops it being read."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(name, "(file)", "no such file; give the path of a submission, "
                                              "e.g. results/share/*.json")]
    except (OSError, UnicodeDecodeError) as err:
        return None, [Problem(name, "(file)", f"cannot be read ({err.__class__.__name__}); "
                                              "give a UTF-8 JSON file")]
    try:
        return json.loads(text), []
    except json.JSONDecodeError as err:
        return None, [Problem(name, "(file)", f"is not valid JSON ({err.msg} at line "
                                              f"{err.lineno}, column {err.colno}); {SHARE_AGAIN}")]


def check_document(doc, name: str, accepted: Path | None = None) -> list[Problem]:
    """Every problem of one parsed submission (``name``: how messages refer to it)."""
    if not isinstance(doc, dict):
        return [Problem(name, "(file)", f"is a JSON {type(doc).__name__}, not a submission "
                                        f"object; {SHARE_AGAIN}")]
    if doc.get("schema") != SCHEMA:
        return [Problem(name, "schema", f"is {doc.get('schema')!r}; this book reads {SCHEMA} "
                                        "only: update the book (git pull) or share again")]
    shape = shape_problems(doc)
    if shape:  # the rates cannot be judged in a misshapen file; what is personal still can
        return [Problem(name, field, f"{what}; {SHARE_AGAIN} (fields: data/README.md)")
                for field, what in shape] + _personal(doc, name)
    return (_impossible(doc, name) + _personal(doc, name)
            + _duplicates(doc, name, accepted or accepted_dir()))


def check_file(path: str | Path, accepted: Path | None = None) -> list[Problem]:
    doc, problems = load(Path(path))
    return problems or check_document(doc, str(path), accepted)


def _impossible(doc: dict, name: str) -> list[Problem]:
    out = []
    for i, run in enumerate(doc["runs"]):
        at = f"runs[{i}]"
        for kind in ("prefill", "decode"):
            r = run[kind]
            mean = sum(r["samples"]) / len(r["samples"])
            if len(r["samples"]) != r["repetitions"]:
                out.append(Problem(name, f"{at}.{kind}.repetitions", f"is {r['repetitions']} "
                                   f"but there are {len(r['samples'])} samples; {SHARE_AGAIN}"))
            elif abs(mean - r["tokens_per_s"]) > 0.01 * mean:
                out.append(Problem(name, f"{at}.{kind}.tokens_per_s", f"is "
                                   f"{r['tokens_per_s']:,.2f} but its samples average "
                                   f"{mean:,.2f}; {SHARE_AGAIN}"))
        ceiling = bounds.ceiling_tokens_per_s(run)
        decode = run["decode"]["tokens_per_s"]
        if decode > bounds.DECODE_SLACK * ceiling and not doc["speculative"]:
            out.append(Problem(name, f"{at}.decode.tokens_per_s", (
                f"{decode:,.1f} tokens/s is {decode / ceiling:.2f}x its ceiling "
                f"({ceiling:,.1f} = bandwidth / bytes per token), above the "
                f"{bounds.DECODE_SLACK}x that noise allows: check ceiling.bandwidth_bytes_per_s "
                f"and model.bytes_per_token, or set speculative to true if speculative "
                f"decoding ran")))
        peak = bounds.prefill_peak(doc, run)
        flops = bounds.prefill_flops(run)
        if peak is not None and flops > peak.value:
            out.append(Problem(name, f"{at}.prefill.tokens_per_s", (
                f"{run['prefill']['tokens_per_s']:,.1f} tokens/s needs at least "
                f"{flops / 1e12:,.1f} TFLOP/s (2 x matmul parameters x tokens/s), above the "
                f"device's {peak.value / 1e12:,.1f} ({peak.what}): check model.params and "
                f"machine.gpu, and measure again")))
        out += _spec_bandwidth(doc, run, name, at)
    return out


def _spec_bandwidth(doc: dict, run: dict, name: str, at: str) -> list[Problem]:
    """A ceiling said to be a chip's spec must be that chip's figure in the book's data."""
    from .. import hardware

    c = run["ceiling"]
    if c["origin"] != "spec":
        return []
    if c["chip"] not in hardware.chips():
        return [Problem(name, f"{at}.ceiling.chip", f"is {c['chip']!r}, not a chip of "
                        "data/hardware_specs.csv; name one, or set origin to given")]
    listed = hardware.chip(c["chip"]).bandwidth_bytes_per_s
    if abs(c["bandwidth_bytes_per_s"] - listed) > 0.01 * listed:
        return [Problem(name, f"{at}.ceiling.bandwidth_bytes_per_s", (
            f"is {c['bandwidth_bytes_per_s'] / 1e9:,.1f} GB/s, but data/hardware_specs.csv "
            f"lists {listed / 1e9:,.1f} for {c['chip']}: share again, or set origin to given"))]
    return []


def _strings(value, where: str = ""):
    """(field, text) of every string in a nested document."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def local_names() -> list[str]:
    """This machine's user and host names, where they could identify someone."""
    names = []
    for get in (getpass.getuser, socket.gethostname):
        try:
            n = get().split(".")[0]
        except Exception:  # noqa: BLE001 - no user name in a container is no name to hide
            continue
        if len(n) >= 3 and n.lower() not in GENERIC_NAMES:
            names.append(n)
    return names


def _personal(doc: dict, name: str) -> list[Problem]:
    out = []
    names = [re.compile(rf"(?i)(?<![\w]){re.escape(n)}(?![\w])") for n in local_names()]
    for field, text in _strings(doc):
        text = re.sub(r"https?://\S+", "", text)  # a source's address is not personal
        found = [what for pattern, what in PERSONAL if pattern.search(text)]
        if any(p.search(text) for p in names):
            found.append("this machine's user or host name")
        if found:
            out.append(Problem(name, field, f"contains {found[0]}; remove it (a submission "
                                            "says nothing about who or where you are)"))
    return out


def fingerprint(doc: dict) -> tuple:
    """What makes two files the same measurement: when, and every run's model and samples."""
    return (doc["measured_at"], tuple((r["model"]["sha256"], tuple(r["decode"]["samples"]),
                                       tuple(r["prefill"]["samples"])) for r in doc["runs"]))


def _is_itself(path: Path, accepted: Path) -> bool:
    """Whether the accepted file ``accepted`` is the file being checked, ``path``: the same
    file on disk (however the path is spelled: a symlink, another letter case on macOS), or
    an accepted entry of the same name and bytes seen through another checkout's
    ``data/readers/`` (a virtual environment made in one clone and used from another)."""
    try:
        if path.exists() and os.path.samefile(path, accepted):
            return True
        return path.name == accepted.name and path.read_bytes() == accepted.read_bytes()
    except OSError:
        return False


def _duplicates(doc: dict, name: str, accepted: Path) -> list[Problem]:
    """An accepted file that holds the same measurement under another name. A file is never
    its own duplicate; two different accepted files with one measurement are."""
    me = fingerprint(doc)
    here = Path(name)
    for other in sorted(Path(accepted).glob("*.json")):
        if _is_itself(here, other):
            continue
        theirs, problems = load(other)
        try:
            same = not problems and fingerprint(theirs) == me
        except (KeyError, TypeError):
            continue
        if same:
            return [Problem(name, "measured_at", f"the same measurement is already accepted as "
                                                 f"data/readers/{other.name}; nothing to add")]
    return []


def check_files(paths, accepted: Path | None = None) -> list[Problem]:
    return [p for path in paths for p in check_file(path, accepted)]
