"""The probe that adopts a class-data sharing archive (harness/jvm_cds.py) with a real JVM: a
whole archive maps, a truncated one (a JVM killed while writing it) does not, and neither does
one for another class path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.harness import jvm_cds
from conformance.harness.spark import LOCAL_JVM_OPTIONS


def test_the_probe_maps_a_whole_archive_only(tmp_path: Path) -> None:
    pyspark = pytest.importorskip("pyspark")
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java")
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("spark-launcher_*.jar"))
    if not jars:
        pytest.skip("no spark-launcher jar")
    classpath = str(jars[0])
    archive = tmp_path / "a.tmp"
    # The launcher's main, without arguments: loads some of the jar's classes and exits.
    subprocess.run([java, "-cp", classpath, *LOCAL_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={archive}",
                    "-XX:+VerifySharedSpaces", jvm_cds.QUIET, "org.apache.spark.launcher.Main"],
                   capture_output=True, timeout=120, check=False)
    assert archive.stat().st_size > 0
    assert jvm_cds.probe(java, archive, classpath, LOCAL_JVM_OPTIONS)
    truncated = tmp_path / "b.tmp"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size * 3 // 4])
    assert not jvm_cds.probe(java, truncated, classpath, LOCAL_JVM_OPTIONS)
    assert not jvm_cds.probe(java, archive, str(tmp_path), LOCAL_JVM_OPTIONS)  # another class path
