"""The command line on bad paths: one line that says what is wrong, never a traceback, and
no work done before it says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from napkin import folders
from napkin.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _bad_folders(tmp_path: Path) -> list[Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    return [Path("/proc/nope"), a_file / "under-a-file"]


@pytest.mark.parametrize("command", [["figures"], ["measure", "--quick"], ["depth", "--quick"],
                                     ["verify", "--quick"], ["share"]])
def test_an_unwritable_out_folder_is_one_line_before_any_work(command, tmp_path, capsys,
                                                              monkeypatch):
    import napkin.exports
    from napkin.measure import depth, session, verify
    from napkin.readers import submission

    def refuse(*args, **kwargs):
        raise AssertionError("the command started its work before checking --out")

    for module in (session, depth, verify):
        monkeypatch.setattr(module, "run", refuse)
    monkeypatch.setattr(submission, "latest_record", refuse)
    monkeypatch.setattr(napkin.exports, "export_all", refuse)
    for bad in _bad_folders(tmp_path):
        assert main([*command, "--out", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0, f"more than one line: {err}"
        assert err.startswith("error: --out ") and str(bad) in err, err


def test_figures_to_an_unwritable_folder_prints_no_traceback():
    """The reader's command, as typed, in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-m", "napkin", "figures", "--out", "/proc/nope"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: --out /proc/nope: cannot write there (No such file or directory); "
        "give a folder you can write to"]


def test_a_folder_given_as_a_file_is_one_line(capsys):
    assert main(["share", "/etc"]) == 1
    assert capsys.readouterr().err == "error: /etc: Is a directory\n"


def test_an_error_while_running_is_one_line(tmp_path, capsys, monkeypatch):
    """An OSError after the checks (a disk that filled up, a folder removed mid-run) is one
    line naming the file, with a non-zero exit."""
    import napkin.exports

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "fig.png"))

    monkeypatch.setattr(napkin.exports, "export_all", full_disk)
    assert main(["figures", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"error: {tmp_path / 'fig.png'}: No space left on device\n"


def test_writable_checks_and_leaves_nothing_behind(tmp_path):
    assert folders.writable(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()
    (tmp_path / "c").mkdir()
    folders.writable(tmp_path / "c")
    assert (tmp_path / "c").is_dir() and not any((tmp_path / "c").iterdir())


def test_a_text_table_lines_up_and_marks_what_is_missing():
    """The one formatter every command's table goes through: fixed widths, a template per
    column, "-" (or the column's own mark) where a row lacks a field, no trailing blanks."""
    from napkin.texttable import Column, render

    columns = (Column("name", 6, "{name}", "<"),
               Column("rate", 14, "{r[mean]:>6.1f} ±{r[sd]:>4.1f}"),
               Column("note", 6, "{note}", missing=""))
    rows = [{"name": "a", "r": {"mean": 1.5, "sd": 0.5}, "note": "x"}, {"name": "b", "r": None}]
    assert render(columns, rows).splitlines() == [
        "name            rate  note",
        "-" * 26,
        "a          1.5 ± 0.5     x",
        "b                  -"]
