"""How long the answers in flight are, per MLPerf LLM benchmark, from the submissions' own
outputs: each closed submission's TEST06 compliance log (``mlperf_log_accuracy.json``) holds
the token ids it generated for 100 samples, as 32-bit integers in hex.

Continuous batching keeps a sequence in the batch for as many steps as its answer is long, so
the sequences in flight at a random step are drawn in proportion to their length (the
inspection paradox): their mean answer is ``E[o^2] / E[o]`` tokens, ``E[o^2] / E[o]^2`` times
the mean answer. That ratio (``output_inflight_ratio`` in ``datasets.csv``) is what this
script measures, pooled over every log of a benchmark whose mean answer is within a factor of
two of the dataset's (a log written in another integer width would be off by two or more)
and that parses (a few are truncated).

    python scripts/research/mlperf/output_lengths.py PATH_TO/inference_results_v5.1 [COMMIT]

``PATH_TO`` is a git clone of github.com/mlcommons/inference_results_v5.1; the script reads
the commit's tree (``HEAD`` by default) and prints one CSV row per benchmark.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

DATASETS = Path(__file__).with_name("datasets.csv")
LOG = "TEST06/accuracy/mlperf_log_accuracy.json"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def lengths(repo: Path, commit: str, path: str) -> list[int]:
    """Tokens of each answer in one TEST06 log (eight hex digits a token)."""
    return [len(x["data"]) // 8 for x in json.loads(_git(repo, "show", f"{commit}:{path}"))]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    repo, commit = Path(args[0]), (args[1] if len(args) > 1 else "HEAD")
    commit = _git(repo, "rev-parse", commit).strip()
    means = {r["benchmark_model"]: float(r["output_mean_tokens"] or r["output_max_tokens"])
             for r in csv.DictReader(DATASETS.open())}
    pooled, logs, skipped = defaultdict(list), defaultdict(int), defaultdict(int)
    for path in _git(repo, "ls-tree", "-r", "--name-only", commit).splitlines():
        if not (path.startswith("closed/") and path.endswith(LOG)):
            continue
        bench = path.split("/")[-5]
        if bench not in means:
            continue
        try:
            got = lengths(repo, commit, path)
        except (json.JSONDecodeError, KeyError):  # truncated or not a log
            skipped[bench] += 1
            continue
        mean = sum(got) / max(len(got), 1)
        if not got or not 0.5 <= mean / means[bench] <= 2:
            skipped[bench] += 1
            continue
        pooled[bench] += got
        logs[bench] += 1
    out = csv.writer(sys.stdout)
    out.writerow(["benchmark_model", "output_inflight_ratio", "answers", "logs", "skipped_logs",
                  "mean_answer_tokens"])
    for bench, got in sorted(pooled.items()):
        m1 = sum(got) / len(got)
        m2 = sum(x * x for x in got) / len(got)
        out.writerow([bench, f"{m2 / m1 ** 2:.2f}", len(got), logs[bench], skipped[bench],
                      f"{m1:.1f}"])
    print(f"# commit {commit}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
