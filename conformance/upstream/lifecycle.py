"""Server processes the suite starts, and their end: at exit, on Ctrl-C, on SIGTERM, and when
the suite itself dies.

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
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

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
