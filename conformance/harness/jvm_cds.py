"""Class-data sharing for the local Spark JVM: most of a local session's start is the JVM loading,
parsing and verifying Spark's classes from its jars, the same classes every run. The first run
writes them to an archive as the JVM exits (`-XX:ArchiveClassesAtExit`, Java 13+); later runs
map it (`-XX:SharedArchiveFile`). Measured on 2 cores under load (2026-11-27): the session's
start 8.2-12.4 s → 4.2-5.7 s, its first job 5.7-9.1 s → 5.0-7.4 s.

Where it lives: `$CONFORMANCE_CACHE_DIR`, else `$XDG_CACHE_HOME/cdc-conformance`, else
`~/.cache/cdc-conformance`, in `jvm/` (about 160 MB per Java and pyspark installation);
`CONFORMANCE_JVM_CDS=off` turns it off. The JVM refuses an archive made by another JVM build or
for another class path by itself (it then starts as it would without).

An archive is written under a name of its own (`*.tmp`, as the JVM exits: after this process,
possibly) and only adopted as the archive (renamed) once its JVM has exited and another JVM, with
the same class path, has mapped it and checked every region (`-XX:+VerifySharedSpaces`: a
truncated archive, from a JVM killed while writing it, would crash a JVM that maps it). A session
that does not start with the archive is started again without it, and the archive removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

#: A dump whose writer is unknown (its JVM never said it was the writer) is removed after this long.
STALE_S = 24 * 3600.0
#: The JVM's own messages about sharing would reach the user's terminal (and an archive written
#: after this process has exited, the terminal after the prompt).
QUIET = "-Xlog:cds*=off"
_PROBE_TIMEOUT_S = 60.0
_OFF = {"0", "off", "false", "no"}


def cache_dir() -> Path | None:
    """The directory of the archives (created), or None where CDS is off or it cannot be made."""
    if os.environ.get("CONFORMANCE_JVM_CDS", "").strip().lower() in _OFF:
        return None
    base = os.environ.get("CONFORMANCE_CACHE_DIR")
    try:
        if not base:
            xdg = os.environ.get("XDG_CACHE_HOME")
            base = str(Path(xdg) / "cdc-conformance") if xdg else str(Path.home() / ".cache" / "cdc-conformance")
        path = Path(base) / "jvm"
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home directory to be found
        return None
    return path if os.access(path, os.W_OK) else None


def archive_key(java_banner: str, jvm_options: Sequence[str], jars: Path | None) -> str:
    """What an archive is for: the Java build, the JVM options, and the jars (names, sizes and
    times) of the installation that loads them."""
    h = hashlib.sha256(java_banner.encode())
    h.update("\0".join(jvm_options).encode())
    if jars is not None and jars.is_dir():
        for jar in sorted(jars.iterdir()):
            with contextlib.suppress(OSError):
                st = jar.stat()
                h.update(f"\0{jar.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def probe(java: str, archive: Path, classpath: str, jvm_options: Sequence[str]) -> bool:
    """Whether a JVM with `jvm_options` and the class path it was dumped for maps `archive`, every
    region read and checked (a truncated archive makes that JVM crash, a damaged one is refused
    with a warning)."""
    try:
        p = subprocess.run([java, "-cp", classpath, *jvm_options, f"-XX:SharedArchiveFile={archive}",
                            "-XX:+VerifySharedSpaces", "-Xshare:auto", f"-XX:ErrorFile={os.devnull}",
                            "-XX:-CreateCoredumpOnCrash", "-version"],
                           capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    # A refused archive is a warning ("Unable to use shared archive…"); the JVM then goes on.
    return p.returncode == 0 and "[warning]" not in p.stdout + p.stderr


def writer_done(dump: Path) -> tuple[bool, str | None]:
    """Whether the JVM that dumps `dump` has exited (its process gone, or another), and the class
    path it ran with (None: not recorded)."""
    try:
        info = json.loads(dump.with_suffix(".json").read_text(encoding="utf-8"))
        pid, classpath = int(info["pid"]), str(info["classpath"])
    except (OSError, ValueError, KeyError, TypeError):
        return False, None
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return True, classpath  # no such process
    if state == b"Z":
        return True, classpath  # exited, not yet reaped
    # An empty command line: a process just starting (or ending), which may be the writer.
    return bool(cmdline) and dump.name.encode() not in cmdline, classpath


def record_writer(dump: Path | None, pid: int, classpath: str) -> None:
    """Say which JVM dumps `dump` as it exits, and with which class path (for `adopt`)."""
    if dump is not None:
        with contextlib.suppress(OSError):
            dump.with_suffix(".json").write_text(json.dumps({"pid": pid, "classpath": classpath}), encoding="utf-8")


def adopt(directory: Path, key: str, java: str, jvm_options: Sequence[str], *, now: float | None = None) -> Path | None:
    """The archive for `key` if there is one; else a dump of it whose JVM has exited and which
    probes whole, made the archive (renamed into place, atomically); else None. Dumps that will
    never be adopted are removed."""
    final = directory / f"spark-{key}.jsa"
    now = time.time() if now is None else now
    for tmp in sorted(directory.glob(f"spark-{key}.*.tmp")):
        done, classpath = writer_done(tmp)
        if final.is_file():
            if done or _age(tmp, now) >= STALE_S:
                _remove(tmp)  # another dump is the archive already
        elif done and classpath is not None and probe(java, tmp, classpath, jvm_options):
            with contextlib.suppress(OSError):
                os.replace(tmp, final)
            _remove(tmp)
        elif done or _age(tmp, now) >= STALE_S:
            _remove(tmp)
    for said in directory.glob(f"spark-{key}.*.json"):
        tmp = said.with_suffix(".tmp")
        if not tmp.exists() and (writer_done(tmp)[0] or _age(said, now) >= STALE_S):
            _remove(tmp)  # its JVM exited without writing the archive (killed)
    return final if final.is_file() else None


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except OSError:
        return 0.0


def _remove(dump: Path) -> None:
    for path in (dump, dump.with_suffix(".json")):
        with contextlib.suppress(OSError):
            path.unlink()


def options(java: str, java_banner: str, jvm_options: Sequence[str], jars: Path | None
            ) -> tuple[list[str], Path | None, Path | None]:
    """The JVM options that map the archive (and the archive, None), or that dump one as the JVM
    exits (and None, the dump's path); none where CDS is off."""
    directory = cache_dir()
    if directory is None:
        return [], None, None
    key = archive_key(java_banner, jvm_options, jars)
    archive = adopt(directory, key, java, jvm_options)
    if archive is not None:
        return [f"-XX:SharedArchiveFile={archive}", QUIET], archive, None
    # CRCs in the dump, for the probe that adopts it.
    dump = directory / f"spark-{key}.{uuid.uuid4().hex[:12]}.tmp"
    return [f"-XX:ArchiveClassesAtExit={dump}", "-XX:+VerifySharedSpaces", QUIET], None, dump


def discard(archive: Path | None) -> None:
    """Remove an archive a JVM did not start with."""
    if archive is not None:
        with contextlib.suppress(OSError):
            archive.unlink()
