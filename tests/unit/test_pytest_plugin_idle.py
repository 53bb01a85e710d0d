"""The pytest plugin is installed with the suite (entry point `pytest11`) and must cost nothing
where it is not configured: in this repository's own test run and in any other project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RECORDER = """\
import sys

def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m == "conformance" or m.startswith("conformance."))
    (session.config.rootpath / "loaded.txt").write_text("\\n".join(loaded))
"""


def test_this_repositorys_run_has_the_plugin_loaded_and_idle(request: pytest.FixtureRequest) -> None:
    from conformance.pytest_plugin import CheckItem

    manager = request.config.pluginmanager
    assert manager.get_plugin("conformance") is sys.modules["conformance.pytest_plugin"]
    assert manager.get_plugin("conformance-session") is None
    assert not any(isinstance(item, CheckItem) for item in request.session.items)
    assert request.config.getini("conformance_protocol") == ""


def test_a_project_that_does_not_configure_it_imports_nothing_of_the_suite(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    (tmp_path / "conftest.py").write_text(RECORDER)
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    assert "cdc-conformance" in done.stdout  # listed among the plugins…
    assert "cdc-conformance:" not in done.stdout and "collected 1 item" in done.stdout  # …and idle
    assert (tmp_path / "loaded.txt").read_text().split() == ["conformance", "conformance.pytest_plugin"]
    markers = subprocess.run([sys.executable, "-m", "pytest", "--markers"], cwd=tmp_path, capture_output=True,
                             text=True, env=env, timeout=120)
    assert "conformance_must" not in markers.stdout
