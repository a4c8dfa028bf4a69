"""The code passes ruff's checks for unused and undefined names and likely bugs (the rules
are in pyproject.toml), so a dead import or a typo'd name fails here, not in a reader's run."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_code_passes_ruff():
    ruff = Path(sys.executable).parent / "ruff"
    assert ruff.exists(), "ruff is missing from the environment: run `make env` (requirements.txt)"
    targets = ["lib", "tests", "scripts", "benchmarks", *map(str, ROOT.glob("notebooks/*.py")),
               *map(str, ROOT.glob("book/*.py"))]
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise",
                           *targets], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"ruff found problems:\n{proc.stdout}{proc.stderr}"
