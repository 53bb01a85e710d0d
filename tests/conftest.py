from __future__ import annotations

import os
import sys
from pathlib import Path

# Hypothesis writes its example database into the working directory unless told otherwise.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(__file__).resolve().parent.parent / ".hypothesis"))
# The suite's own example database (failing examples replayed first on the next run) would make a
# test depend on the ones before it: off, except where a test names a directory of its own.
os.environ.setdefault("CONFORMANCE_EXAMPLES_DB", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))
# A protocol that lives outside the suite (tests/plugins: a package and its dist-info with the
# entry point), installed the way a third-party distribution is: found on sys.path. Subprocesses
# (the CLI) and Spark's Python workers find it through PYTHONPATH.
PLUGINS = str(Path(__file__).resolve().parent / "plugins")
sys.path.insert(0, PLUGINS)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (PLUGINS, os.environ.get("PYTHONPATH")) if p)

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
