"""The local Spark JVM's class-data sharing archive (harness/jvm_cds.py): dumped under a name of its
own, adopted only once its JVM has exited and a probe mapped it whole, off on request; a session
that does not start with it starts without it. No JVM here (the probe is replaced)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.harness import jvm_cds, spark

OPTS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CONFORMANCE_JVM_CDS", raising=False)
    return tmp_path / "jvm"


def _dumped(dump: Path, pid: int, probes: list[Path], monkeypatch: pytest.MonkeyPatch, *, whole: bool = True) -> None:
    """The JVM `pid` wrote `dump` (as it would at its exit); the probe says `whole`."""
    jvm_cds.record_writer(dump, pid, "/spark/conf/:/spark/jars/*")
    dump.write_bytes(b"archive")

    def probe(java: str, archive: Path, classpath: str, options: Any) -> bool:
        assert classpath == "/spark/conf/:/spark/jars/*" and tuple(options) == OPTS
        probes.append(archive)
        return whole

    monkeypatch.setattr(jvm_cds, "probe", probe)


def _exited_pid() -> int:
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                       check=True)
    return int(p.stdout)


def test_a_dump_becomes_the_archive_once_its_jvm_has_exited_and_it_probes_whole(cache: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    options, archive, dump = jvm_cds.options("java", "openjdk 17", OPTS, None)
    assert archive is None and dump is not None and dump.parent == cache and dump.suffix == ".tmp"
    assert options == [f"-XX:ArchiveClassesAtExit={dump}", "-XX:+VerifySharedSpaces", jvm_cds.QUIET]
    probes: list[Path] = []
    _dumped(dump, _exited_pid(), probes, monkeypatch)

    options, archive, again = jvm_cds.options("java", "openjdk 17", OPTS, None)
    assert probes == [dump] and archive is not None and again is None
    assert options == [f"-XX:SharedArchiveFile={archive}", jvm_cds.QUIET]
    assert archive.read_bytes() == b"archive" and sorted(p.name for p in cache.iterdir()) == [archive.name]
    # Another installation (other jars, another Java) has an archive of its own.
    assert jvm_cds.options("java", "openjdk 21", OPTS, None)[1] is None


def test_a_dump_whose_jvm_still_runs_is_left_alone(cache: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _, _, dump = jvm_cds.options("java", "openjdk 17", OPTS, None)
    assert dump is not None
    # A process whose command line names the dump: the JVM writing it, as far as adopt can tell.
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(dump)])
    probes: list[Path] = []
    try:
        _dumped(dump, writer.pid, probes, monkeypatch)
        assert jvm_cds.options("java", "openjdk 17", OPTS, None)[1] is None
        assert probes == [] and dump.exists()
    finally:
        writer.kill()
        writer.wait()
    assert jvm_cds.options("java", "openjdk 17", OPTS, None)[1] is not None and probes == [dump]


def test_a_dump_that_does_not_probe_whole_is_removed(cache: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _, _, dump = jvm_cds.options("java", "openjdk 17", OPTS, None)
    assert dump is not None
    probes: list[Path] = []
    _dumped(dump, _exited_pid(), probes, monkeypatch, whole=False)
    options, archive, fresh = jvm_cds.options("java", "openjdk 17", OPTS, None)
    assert probes == [dump] and archive is None and fresh is not None and fresh != dump
    assert not dump.exists() and not dump.with_suffix(".json").exists()


def test_off_on_request(cache: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CONFORMANCE_JVM_CDS", "off")
    assert jvm_cds.options("java", "openjdk 17", OPTS, None) == ([], None, None)
    assert not cache.exists()


def test_a_session_that_does_not_start_with_the_archive_starts_without_it(cache: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cache.mkdir(parents=True)
    archive = cache / "spark-x.jsa"
    archive.write_bytes(b"damaged")
    monkeypatch.setattr(spark, "check_java", lambda: "openjdk 17")
    monkeypatch.setattr(spark, "_prepare_environment", lambda master: None)
    monkeypatch.setattr(spark, "_cds_options", lambda master, banner: (["-XX:SharedArchiveFile=x"], archive, None))
    started: list[str] = []

    class Session:
        class sparkContext:  # noqa: N801 - the attribute pyspark's session has
            @staticmethod
            def setLogLevel(level: str) -> None: ...

    def start(master: str, app: str, conf: dict[str, str]) -> Any:
        started.append(conf["spark.driver.extraJavaOptions"])
        if "SharedArchiveFile" in started[-1]:
            raise RuntimeError("Java gateway process exited before sending its port number")
        return Session()

    monkeypatch.setattr(spark, "_start", start)
    for name in ("_session", "_session_master", "_sources"):
        monkeypatch.setattr(spark, name, getattr(spark, name))
    monkeypatch.setattr(spark, "_session", None)
    try:
        assert isinstance(spark.spark_session("local[2]", sources=False), Session)
    finally:
        monkeypatch.setattr(spark, "_session", None)
    assert len(started) == 2 and "SharedArchiveFile" not in started[1]
    assert not archive.exists()


def test_where_the_archive_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONFORMANCE_JVM_CDS", raising=False)
    monkeypatch.delenv("CONFORMANCE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jvm_cds.cache_dir() == tmp_path / "xdg" / "cdc-conformance" / "jvm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))
    assert jvm_cds.cache_dir() == tmp_path / "home" / ".cache" / "cdc-conformance" / "jvm"

    def no_home(cls: type) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", classmethod(no_home))
    assert jvm_cds.cache_dir() is None  # no cache: the JVM starts as it would without
    assert jvm_cds.options("java", "openjdk 17", OPTS, None) == ([], None, None)
