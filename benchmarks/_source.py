"""What code a benchmark measures (shared by the benchmarks, which run as scripts)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def source_state() -> dict[str, Any]:
    """The imported package's directory and a hash of its sources, and, when it is this checkout's,
    the commit and the uncommitted files (others edit it too). Measure an export
    (``git archive`` + ``PYTHONPATH=``) to keep edits out of a long run."""
    import conformance

    pkg = Path(conformance.__file__).resolve().parent
    h = hashlib.sha1()
    for f in sorted(pkg.rglob("*.py")):
        h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes() + b"\0")
    state: dict[str, Any] = {"package_dir": str(pkg), "sources_sha1": h.hexdigest()}

    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True,
                                  check=False, timeout=30).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return ""

    if pkg == REPO / "conformance":
        state["commit"] = git("rev-parse", "HEAD").strip()
        state["modified"] = sorted(line[3:] for line in git("status", "--porcelain", "--", "conformance")
                                   .splitlines())
    return state
