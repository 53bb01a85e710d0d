"""What a reader needs to trust a report: which suite ran (version, commit), on what machine
(Python, Java, Spark), against which encoder (name, kind, version) and how configured.

Everything here is asked once per process and never fails a run: what cannot be found is
recorded as null ("unknown"), e.g. the commit of a suite installed from a wheel.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ..encoders.spi import EncoderInfo, EncoderKind

SUITE = "cdc-conformance"


@functools.cache
def suite_version() -> str:
    try:
        return metadata.version(SUITE)
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def suite_commit() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout the suite's code runs from; (None, None) outside one. Only
    a checkout whose top level holds this very package counts: a suite installed into a virtual
    environment inside another project's checkout must not report that project's commit."""
    package = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None:
        return None, None
    top = _git(package, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != package.parent:
        return None, None
    commit = _git(package, "rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = _git(package.parent, "status", "--porcelain", "--untracked-files=no", "--", package.name)
    return commit, None if status is None else bool(status)


def _java_version() -> str | None:
    """The version of the Java that Spark and Debezium start (JAVA_HOME's, else the PATH's)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        return None
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return m.group(1) if m else None


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def environment() -> dict[str, Any]:
    """The machine's versions of what a run may use (null: not installed here)."""
    return {"python": platform.python_version(), "python_implementation": platform.python_implementation(),
            "java": _java_version(), "spark": _dist_version("pyspark"), "os": platform.platform(terse=True)}


def tool() -> dict[str, Any]:
    """The report's `tool` object: the suite's version and the commit it ran from."""
    commit, dirty = suite_commit()
    return {"name": SUITE, "version": suite_version(), "commit": commit, "dirty": dirty,
            "python": platform.python_version()}


def encoder_identity(info: EncoderInfo) -> dict[str, Any]:
    """The encoder under test as the report names it: its name in the run, its kind, and the
    implementation and version it says it is (the suite's own for references and mutants)."""
    if info.kind in (EncoderKind.REFERENCE, EncoderKind.MUTANT):
        who: tuple[str, str] | None = (SUITE, suite_version())
    else:
        who = info.identify() if info.identify is not None else None
    return {"name": info.name, "protocol": info.protocol, "kind": str(info.kind),
            "implementation": who[0] if who else None, "version": who[1] if who else None}


def configuration(settings: Mapping[str, Any]) -> dict[str, Any]:
    """How the run was configured, as JSON: settings that are None or empty are left out, URLs
    are given without their credentials (the caller redacts), tuples become lists."""
    out: dict[str, Any] = {}
    for k, v in settings.items():
        if v is None or v == "" or v == () or v == []:
            continue
        out[k] = list(v) if isinstance(v, tuple) else v
    return out
