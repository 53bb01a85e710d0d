"""Server processes the suite starts, and their end: at exit, on Ctrl-C, on SIGTERM, and when
the suite itself dies; what embedded servers and the servers users run have in common.

* Every server runs as a direct child started through `spawn()`, in its own process group, with
  the kernel's parent-death signal set (Linux `PR_SET_PDEATHSIG`, after the switch to the
  server's user, which would clear it): if the suite is killed outright (SIGKILL, OOM), the
  kernel stops the server. This is why PostgreSQL's `postgres` runs as our child rather than
  daemonized through `pg_ctl`, whose server would be re-parented to init.
* `atexit` stops every server still running; SIGTERM and SIGHUP, where nobody else handles them,
  are turned into a clean exit first so that `atexit` runs. Ctrl-C (SIGINT) raises
  KeyboardInterrupt, and the interpreter runs `atexit` on the way out.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

_PR_SET_PDEATHSIG = 1
_lock = threading.Lock()
_stoppers: dict[int, Callable[[], None]] = {}
_installed = False


def _preexec(uid: int | None, gid: int | None) -> Callable[[], None]:
    def run() -> None:
        os.setsid()
        if gid is not None:
            os.setgroups([gid])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
        # After setuid: a change of credentials clears the parent-death signal.
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return run


def spawn(argv: Sequence[str], *, user: tuple[int, int] | None = None, log: Any = None,
          env: dict[str, str] | None = None, cwd: str | None = None) -> subprocess.Popen[bytes]:
    """Start a server process that cannot outlive the suite. `user` is (uid, gid) to run as."""
    uid, gid = user if user is not None else (None, None)
    return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT if log else subprocess.DEVNULL, env=env, cwd=cwd,
                            preexec_fn=_preexec(uid, gid), close_fds=True)  # noqa: PLW1509 - see _preexec


def register(key: int, stop: Callable[[], None]) -> None:
    """Remember how to stop something (a server) at exit; `key` identifies it for `unregister`."""
    _install()
    with _lock:
        _stoppers[key] = stop


def unregister(key: int) -> None:
    with _lock:
        _stoppers.pop(key, None)


def stop_all() -> None:
    """Stop everything registered (newest first). Idempotent; never raises."""
    while True:
        with _lock:
            if not _stoppers:
                return
            key = next(reversed(_stoppers))
            stop = _stoppers.pop(key)
        with contextlib.suppress(Exception):
            stop()


def terminate(proc: subprocess.Popen[bytes], *, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
    """Ask a server to stop with `sig`, wait up to `timeout`, then kill its process group."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: str, lines: int = 6) -> str:
    """The last lines of a server's log, on one line."""
    try:
        with open(path, errors="replace") as f:
            return " | ".join(x.strip() for x in f.readlines()[-lines:] if x.strip())
    except OSError:
        return "(no log)"


class EmbeddedServer:
    """What an embedded server keeps: its process (a child through `spawn`), started on a free
    port, and the temporary directory it lives in (`base`, its log `log_name` there)."""

    label: ClassVar[str]  # "MariaDB", "PostgreSQL"
    log_name: ClassVar[str]
    stop_signal: ClassVar[int] = signal.SIGTERM
    proc: subprocess.Popen[bytes] | None = None
    base: str | None = None
    startup: float = 60.0

    def alive(self) -> str | None:
        if self.proc is None:
            return f"the embedded {self.label} server was never started"
        rc = self.proc.poll()
        if rc is None:
            return None
        return f"the embedded {self.label} server (pid {self.proc.pid}) exited with status {rc}: {self.log_tail()}"

    def log_tail(self) -> str:
        return tail(os.path.join(self.base, self.log_name)) if self.base else ""

    def launch_on_a_free_port(self, launch: Callable[[int], bool]) -> str | None:
        """`launch(port)` until it starts the server (three tries); None, or the log's tail (the
        process stopped and its directory removed)."""
        for _attempt in range(3):
            if launch(free_port()):
                return None
        why = self.log_tail()
        self._stop_process()
        self._remove()
        return why

    def wait_ready(self, connect: Callable[[], Any]) -> bool:
        """Whether the server answers `connect()` within `startup` seconds (False: it exited)."""
        assert self.proc is not None
        deadline = time.monotonic() + self.startup
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                connect().close()
                return True
            except Exception:  # noqa: BLE001 - not ready yet
                time.sleep(0.05)
        return False

    def _stop_process(self) -> None:
        if self.proc is not None:
            terminate(self.proc, sig=self.stop_signal)

    def _remove(self) -> None:
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None

    def stop_server(self) -> None:
        unregister(id(self))
        self._stop_process()
        self.proc = None
        self._remove()


class ExternalServer:
    """A server the user runs (`mariadb://…`, `postgresql://…`): checked on first use. Put first
    among the bases of an `Upstream` that has `_check_server`."""

    kind = "external"
    _url: str  # with its credentials: only for `shareable_url`, never printed
    _checked = False
    _check_server: Callable[[], None]

    def shareable_url(self) -> str:
        return self._url

    def start(self) -> None:
        if not self._checked:
            self._check_server()
            self._checked = True


def _on_signal(signum: int, frame: object) -> None:
    stop_all()
    # Then die of the same signal, as if we had never handled it.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)
