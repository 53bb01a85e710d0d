"""Encoders in any language: a subprocess that speaks JSON lines (protocol version 1).

The adapter starts the command, writes one request per line to its stdin and reads one reply
per line from its stdout; stderr is the encoder's log (its tail is kept for findings). The
protocol (handshake, messages, the event form, errors, timeouts) is described in
`docs/subprocess-encoders.md`; every message has a JSON Schema under `schemas/v1/`, and both
directions are validated (`wire.py`).

`SubprocessEncoder` implements the encoder SPI, so the harness runs it like any in-process
encoder. What goes wrong becomes the encoder's finding, never a crash or a hang of ours:

* a reply that is not JSON, not an object, not for the pending request, not of the protocol's
  version, not valid against its schema, or longer than `max_line_bytes`, and any line on
  stdout that is no reply (noise) -> `ProtocolViolation` (an `EncoderError`: `encoder.no-crash`);
* an `error` reply -> `EncoderReportedError` (`encoder.no-crash`); `options` errors in `open`
  are a `ConfigurationError` (usage), `infrastructure` errors an `InfrastructureError`;
* the process exits, or closes its stdout, before answering -> `EncoderExited`
  (`encoder.no-crash`, with the exit status);
* no answer within the request's timeout -> `SubprocessHung` (an `EncoderHung`:
  `encoder.responsive`).

Each carries the encoder's name, the offending line (cut short) and the tail of its stderr.
After a violation, a timeout or an exit the whole process group is killed and reaped at once;
after `close()` the process gets `exit_grace` seconds to exit before it is killed. Every
`open()` starts a fresh process (so a shard after a failure starts clean). POSIX only: the
adapter multiplexes the pipes with `selectors` and kills the process group.
"""

from __future__ import annotations

import atexit
import functools
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, ParamSpec, TypeVar

from ..errors import InfrastructureError
from ..model.events import Event
from ..model.serde import EventWriter
from . import wire
from .spi import ConfigurationError, EncoderContext, EncoderError, EncoderHung, EncoderInfo, EncoderKind, Record
from .wire import Handshake, MessageInvalid

# `find_encoder("cmd:node my-encoder.js", protocol)` runs a command line as an encoder: the name
# is all a Spark task needs to start its own subprocess.
COMMAND_PREFIX = "cmd:"
P = ParamSpec("P")
R = TypeVar("R")
_READ_CHUNK = 1 << 16
DEFAULT_REQUEST_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class SubprocessSpec:
    """How to start an encoder process and how long to wait for it."""

    argv: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # added to the suite's own environment
    start_timeout: float = 30.0  # process start and handshake (a JVM takes seconds to start)
    # Every later request; None: the run's --encoder-timeout (the context's call_timeout), or
    # DEFAULT_REQUEST_TIMEOUT_S where the context has none.
    request_timeout: float | None = None
    exit_grace: float = 2.0  # after `close`, before the process is killed
    max_line_bytes: int = 64 << 20  # a reply longer than this is a violation (and is not buffered further)
    stderr_tail_bytes: int = 16 << 10
    # Requests are built by the suite; validating them too (a few µs each) keeps our own side honest.
    validate_requests: bool = True

    def __post_init__(self) -> None:
        if not self.argv:
            raise ConfigurationError("the encoder command is empty")

    @classmethod
    def from_command(cls, command: str | Sequence[str], **settings: Any) -> SubprocessSpec:
        """A command line (split as a POSIX shell would, without running a shell) or argv."""
        if isinstance(command, str):
            try:
                argv = tuple(shlex.split(command))
            except ValueError as e:
                raise ConfigurationError(f"cannot parse the encoder command {command!r}: {e}") from None
        else:
            argv = tuple(command)
        return cls(argv, **settings)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


# -- errors -------------------------------------------------------------------------------------------

def clip(data: bytes | str, limit: int = 300) -> str:
    """A line for a message: decoded leniently, control characters escaped, cut at `limit`."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    shown = text[:limit].encode("unicode_escape").decode("ascii")
    return shown + (f"… ({len(text) - limit} more characters)" if len(text) > limit else "")


class _Evidence:
    """What a subprocess failure carries: who, why, the offending line and the stderr tail."""

    encoder: str
    reason: str
    line: str | None
    stderr_tail: str
    exit_status: int | None
    detail: str | None

    def _set(self, encoder: str, reason: str, line: bytes | None, stderr_tail: str, exit_status: int | None,
             detail: str | None) -> str:
        self.encoder, self.reason, self.stderr_tail = encoder, reason, stderr_tail
        self.line = None if line is None else clip(line)
        self.exit_status, self.detail = exit_status, detail
        parts = [f"{encoder}: {reason}"]
        if self.line is not None:
            parts.append(f"offending line: {self.line}")
        tail = [s for s in stderr_tail.splitlines() if s.strip()][-5:]
        if tail:
            parts.append("stderr ends with: " + clip(" | ".join(tail), 500))
        return "; ".join(parts)

    @property
    def evidence(self) -> str:
        """The long form for a finding's `actual`: offending line, detail, whole stderr tail."""
        out = []
        if self.exit_status is not None:
            out.append(f"exit status: {self.exit_status}")
        if self.line is not None:
            out.append(f"offending line: {self.line}")
        if self.detail:
            out.append(f"detail:\n{self.detail}")
        out.append(f"stderr (last {len(self.stderr_tail)} characters):\n{self.stderr_tail}" if self.stderr_tail
                   else "stderr: (empty)")
        return "\n".join(out)


class SubprocessEncoderError(_Evidence, EncoderError):
    """The encoder process failed (reported against it: `encoder.no-crash`)."""

    def __init__(self, encoder: str, reason: str, *, line: bytes | None = None, stderr_tail: str = "",
                 exit_status: int | None = None, detail: str | None = None) -> None:
        super().__init__(self._set(encoder, reason, line, stderr_tail, exit_status, detail))


class ProtocolViolation(SubprocessEncoderError):
    """A line on stdout that is not the reply the protocol asks for."""


class WrongProtocolVersion(ProtocolViolation):
    """The handshake's reply names another protocol version."""


class EncoderExited(SubprocessEncoderError):
    """The process exited (or closed its stdout) with a request unanswered."""


class EncoderReportedError(SubprocessEncoderError):
    """The encoder answered a request with an `error` reply."""


class SubprocessHung(_Evidence, EncoderHung):
    """No reply within the request's timeout (`encoder.responsive`); the process was killed."""

    def __init__(self, encoder: str, reason: str, *, stderr_tail: str = "") -> None:
        super().__init__(self._set(encoder, reason, None, stderr_tail, None, None))


class EncoderCommandError(ConfigurationError):
    """The command cannot be started at all (not found, not executable): the user must act."""


class ProtocolMismatch(ConfigurationError):
    """The encoder speaks another CDC protocol than the run checks."""


class UnsupportedOptions(ConfigurationError):
    """The run asks for option values the encoder's capabilities do not include."""

    def __init__(self, message: str, unsupported: Sequence[str]) -> None:
        super().__init__(message)
        self.unsupported = tuple(unsupported)


class SubprocessInfrastructureError(InfrastructureError):
    """The encoder reported that a service it needs (the registry…) cannot be used."""


class SuiteProtocolError(RuntimeError):
    """The suite built a request that breaks its own schema: a bug in cdc-conformance."""


# -- the process ----------------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


class _Eof(Exception):
    pass


class _TooLong(Exception):
    def __init__(self, head: bytes) -> None:
        super().__init__()
        self.head = head


_LIVE: weakref.WeakSet[_Process] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _kill_all() -> None:
    """No encoder process outlives the suite, whatever path it took out."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        p.kill()


class _Process:
    """One encoder process: non-blocking pipes multiplexed with a selector, so that neither a
    child that stops reading nor one that stops writing can block us past a deadline."""

    def __init__(self, spec: SubprocessSpec) -> None:
        self.spec = spec
        try:
            self.proc = subprocess.Popen(
                spec.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                cwd=spec.cwd, env={**os.environ, **spec.env} if spec.env else None,
                # Its own process group: a wrapper script's children are killed with it.
                start_new_session=True)
        except OSError as e:
            raise EncoderCommandError(f"cannot start the encoder command {spec.command!r}: {e.strerror or e}"
                                      f"{f' (in {spec.cwd})' if spec.cwd else ''}") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self._in, self._out, self._err = self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.proc.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._out, selectors.EVENT_READ, "out")
        self._sel.register(self._err, selectors.EVENT_READ, "err")
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline
        self._stderr = bytearray()
        self.out_eof = False
        self._err_eof = False
        self._reaped = False
        with _LIVE_LOCK:
            _LIVE.add(self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def _read_err(self) -> None:
        try:
            chunk = os.read(self._err, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._err_eof = True
            self._sel.unregister(self._err)
            return
        self._stderr += chunk
        extra = len(self._stderr) - self.spec.stderr_tail_bytes
        if extra > 0:
            del self._stderr[:extra]

    def _read_out(self) -> None:
        try:
            chunk = os.read(self._out, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.out_eof = True
            self._sel.unregister(self._out)
            return
        self._buf += chunk

    def _next_line(self) -> bytes | None:
        nl = self._buf.find(b"\n", self._scanned)
        if nl < 0:
            self._scanned = len(self._buf)
            if len(self._buf) > self.spec.max_line_bytes:
                raise _TooLong(bytes(self._buf[:400]))
            return None
        line = bytes(self._buf[:nl])
        del self._buf[:nl + 1]
        self._scanned = 0
        if len(line) > self.spec.max_line_bytes:
            raise _TooLong(line[:400])
        return line.removesuffix(b"\r")

    def exchange(self, request: bytes | None, timeout: float) -> bytes:
        """Write `request` (if any), then return the next line of stdout (without its newline).
        Raises _Timeout, _Eof (stdout closed) or _TooLong."""
        deadline = time.monotonic() + timeout
        pending = memoryview(request) if request else None
        if pending is not None:
            # Most requests fit the pipe: write at once, and wait for writability only if not.
            try:
                pending = pending[os.write(self._in, pending):] or None
            except BlockingIOError:
                pass
            except OSError:  # EPIPE: it closed stdin (exiting?); its stdout will say
                pending = None
        if pending is not None:
            self._sel.register(self._in, selectors.EVENT_WRITE, "in")
        try:
            while True:
                line = self._next_line()
                if line is not None:
                    return line
                if self.out_eof:
                    raise _Eof()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Timeout()
                for key, _ in self._sel.select(remaining):
                    if key.data == "out":
                        self._read_out()
                    elif key.data == "err":
                        self._read_err()
                    elif pending is not None:
                        try:
                            n = os.write(self._in, pending[:_READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except OSError:  # EPIPE: it closed stdin (exiting?); its stdout will say
                            n = len(pending)
                        pending = pending[n:]
                        if not pending:
                            self._sel.unregister(self._in)
                            pending = None
        finally:
            if pending is not None:
                self._sel.unregister(self._in)

    def status(self) -> int | None:
        """The exit status if it has exited (negative: killed by that signal), without reaping
        it: the process group stays ours to kill until `kill()` reaps the leader."""
        if self._reaped:
            return self.proc.returncode
        try:
            r = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self.proc.returncode
        if r is None:
            return None
        return r.si_status if r.si_code == os.CLD_EXITED else -r.si_status

    def wait_exit(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            if st is not None or time.monotonic() >= deadline:
                return st
            time.sleep(0.005)

    def drain_stderr(self, timeout: float) -> None:
        """Read what is on stderr (its last words): what is there already, and what comes
        within `timeout` seconds (up to its end)."""
        deadline = time.monotonic() + timeout
        while not self._err_eof:
            ready = self._sel.select(max(0.0, deadline - time.monotonic()))
            if not ready:
                return
            for key, _ in ready:
                if key.data == "err":
                    self._read_err()
                elif key.data == "out":
                    self._read_out()
            if time.monotonic() > deadline + 0.05:  # it keeps writing: enough
                return

    def close_stdin(self) -> None:
        """End of input: a well-behaved encoder exits now."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> int | None:
        """Kill the process group, reap the leader, close the pipes. Idempotent; never blocks
        for long (a SIGKILLed process is gone at once)."""
        if self._reaped:
            return self.proc.returncode
        self._reaped = True
        try:
            os.killpg(self.pid, signal.SIGKILL)  # the leader is not reaped yet: its group id is still ours
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process stuck in the kernel
            pass
        self._sel.close()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return self.proc.returncode


# -- the encoder ------------------------------------------------------------------------------------------

def _reported(method: Callable[P, R]) -> Callable[P, R]:
    """An SPI method whose failures reach the harness with one frame, this one: the finding
    shows the encoder's evidence, not the adapter's internals."""

    @functools.wraps(method)
    def spi_call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except (SubprocessEncoderError, SubprocessHung) as e:
            raise e.with_traceback(None) from None

    return spi_call


def _claimed_name(reply: Mapping[str, Any]) -> str | None:
    """`name version` from a handshake reply, however broken the rest of it is."""
    impl = reply.get("implementation")
    if isinstance(impl, dict) and isinstance(impl.get("name"), str):
        return clip(f"{impl['name']} {impl.get('version', '')}".strip(), 80)
    return None


def _protocol_defaults(protocol: str) -> dict[str, str] | None:
    from ..protocols import UnknownProtocol, get_protocol

    try:
        return {o.name: o.default for o in get_protocol(protocol).options}
    except UnknownProtocol:
        return None


class SubprocessEncoder:
    """The encoder SPI over a subprocess (protocol version 1). `protocol`: the CDC protocol the
    run checks (the handshake must name it); `registry_url` is sent in `open` when the
    context has none (runners that build contexts without it)."""

    def __init__(self, spec: SubprocessSpec, *, protocol: str | None = None, registry_url: str | None = None) -> None:
        self.spec = spec
        self.protocol = protocol
        self._registry_url = registry_url
        self._proc: _Process | None = None
        self._ctx: EncoderContext | None = None
        self._writer = EventWriter()
        self._next_id = 1
        self.handshake: Handshake | None = None
        self._claimed: str | None = None  # "name version" from a handshake that was refused
        self._ticked_at: float | None = None  # the time of the tick done with the last encode
        self._request_timeout = spec.request_timeout or DEFAULT_REQUEST_TIMEOUT_S
        self.last_pid: int | None = None  # for tests and diagnostics

    # -- naming -------------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """How findings name the encoder: its own name and version once it has said them."""
        cmd = clip(self.spec.command, 120)
        name = self.handshake.implementation.label if self.handshake is not None else self._claimed
        return f"encoder {name} (`{cmd}`)" if name else f"encoder `{cmd}`"

    # -- SPI ----------------------------------------------------------------------------------------

    @_reported
    def open(self, ctx: EncoderContext) -> None:
        self._shutdown()  # every open starts a fresh process
        self._request_timeout = (self.spec.request_timeout if self.spec.request_timeout is not None else
                                 ctx.call_timeout if ctx.call_timeout is not None else DEFAULT_REQUEST_TIMEOUT_S)
        self._ctx = ctx
        self._writer = EventWriter()
        self._next_id = 1
        self.handshake = None
        self._claimed = None
        self._ticked_at = None
        hs = self._start()
        expected = self.protocol
        if expected is not None and hs.protocol != expected:
            self._shutdown()
            raise ProtocolMismatch(f"{self.label} speaks {hs.protocol!r}, but the run checks {expected!r}; "
                                   f"choose --protocol {hs.protocol} or another encoder")
        bad = hs.capabilities.unsupported(ctx.options, _protocol_defaults(expected or hs.protocol))
        if bad:
            self._shutdown()
            raise UnsupportedOptions(f"{self.label} does not support {'; '.join(bad)}", bad)
        self._call(wire.open_request(
            self._id(), now=float(ctx.clock()), protocol=hs.protocol, options=ctx.options,
            partitions=ctx.partitions, topic_prefix=ctx.topic_prefix, time_zone=ctx.time_zone,
            registry_url=ctx.registry_url if ctx.registry_url is not None else self._registry_url), "open")

    @_reported
    def encode(self, event: Event) -> list[Record]:
        ctx = self._require_open()
        assert self.handshake is not None
        ev, tables = self._writer.write(event)
        now = float(ctx.clock())
        # The harness ticks after every event, at the event's time: an encoder that needs ticks
        # does that tick in the same round trip (`tick: true`), and the tick() that follows at
        # the same time has nothing left to do. Half the round trips, the same records in the
        # same order.
        ticks = self.handshake.capabilities.needs_ticks
        reply = self._call(wire.encode_request(self._id(), now=now, event=ev, tables=tables, tick=ticks), "encode")
        self._ticked_at = now if ticks else None
        return self._records(reply)

    @_reported
    def tick(self, now: float) -> list[Record]:
        self._require_open()
        assert self.handshake is not None
        ticked_at, self._ticked_at = self._ticked_at, None
        if not self.handshake.capabilities.needs_ticks or ticked_at == now:
            return []
        return self._records(self._call(wire.tick_request(self._id(), now=float(now)), "tick"))

    @_reported
    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return  # never opened, or already failed (and killed)
        try:
            self._call(wire.close_request(self._id()), "close")
            proc.close_stdin()
            proc.wait_exit(self.spec.exit_grace)
        finally:
            self._shutdown()

    # -- protocol -----------------------------------------------------------------------------------

    def _id(self) -> int:
        i = self._next_id
        self._next_id += 1
        return i

    def _require_open(self) -> EncoderContext:
        if self._proc is None or self._ctx is None:
            raise SubprocessEncoderError(self.label, "called after the process was closed or failed (open it first)")
        return self._ctx

    def _start(self) -> Handshake:
        self._proc = _Process(self.spec)
        self.last_pid = self._proc.pid
        reply = self._call(wire.start_request(self._id()), "start", timeout=self.spec.start_timeout)
        self.handshake = Handshake.from_json(reply)
        return self.handshake

    def _shutdown(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()

    def _violation(self, cls: type[SubprocessEncoderError], reason: str, line: bytes | None = None) -> NoReturn:
        """Kill the process (its state is unknown), then raise with its stderr's last words."""
        proc = self._proc
        status = None
        if proc is not None:
            status = proc.wait_exit(0.2) if proc.out_eof else proc.status()
            proc.drain_stderr(0.2 if status is not None else 0.0)
            tail = proc.stderr_tail()
            self._shutdown()
        else:
            tail = ""
        raise cls(self.label, reason, line=line, stderr_tail=tail, exit_status=status)

    def _call(self, request: dict[str, Any], cmd: str, *, timeout: float | None = None) -> dict[str, Any]:
        proc = self._proc
        if proc is None:
            raise SubprocessEncoderError(self.label, f"{cmd} called after the process was closed or failed")
        if self.spec.validate_requests:
            try:
                wire.validate(f"{cmd}.request", request)
            except MessageInvalid as e:
                raise SuiteProtocolError(f"cdc-conformance built an invalid {cmd} request ({e}); "
                                         "this is a bug in the suite, please report it") from None
        rid = request["id"]
        limit = self._request_timeout if timeout is None else timeout
        try:
            raw = proc.exchange(wire.dumps(request), limit)
        except _Timeout:
            proc.drain_stderr(0.0)
            tail = proc.stderr_tail()
            self._shutdown()
            raise SubprocessHung(self.label, f"no reply to {cmd} (request {rid}) within {limit:g} s; the process "
                                             "was killed", stderr_tail=tail) from None
        except _TooLong as e:
            self._violation(ProtocolViolation, f"a line on stdout is longer than {self.spec.max_line_bytes} bytes "
                                               f"(the reply to {cmd}, request {rid}, or noise)", e.head)
        except _Eof:
            st = proc.wait_exit(1.0)
            how = f"exited with status {st}" if st is not None else "closed its stdout"
            self._violation(EncoderExited, f"{how} before replying to {cmd} (request {rid})")
        return self._check_reply(raw, cmd, rid)

    def _check_reply(self, raw: bytes, cmd: str, rid: int) -> dict[str, Any]:
        try:
            reply = wire.loads(raw)
        except (ValueError, RecursionError):
            self._violation(ProtocolViolation, f"wrote a line that is not JSON while request {rid} ({cmd}) waited "
                                               "for its reply (stdout is for replies only; log to stderr)", raw)
        if not isinstance(reply, dict):
            self._violation(ProtocolViolation, f"the reply to {cmd} (request {rid}) is a JSON "
                                               f"{type(reply).__name__}, not an object", raw)
        if "id" not in reply:
            self._violation(ProtocolViolation, f"a reply without an id while request {rid} ({cmd}) waited", raw)
        if reply["id"] != rid:
            other = clip(repr(reply["id"]), 40)
            self._violation(ProtocolViolation, f"a reply for request {other} while request {rid} ({cmd}) waited "
                                               "(one reply per request, in order)", raw)
        if "error" in reply:
            self._reported_error(reply, cmd, raw)
        if cmd == "start":
            self._claimed = _claimed_name(reply)
        if cmd == "start" and reply.get("version") != wire.PROTOCOL_VERSION:
            self._violation(WrongProtocolVersion, f"the handshake names protocol version {reply.get('version')!r}; "
                                                  f"this suite speaks version {wire.PROTOCOL_VERSION}", raw)
        try:
            wire.validate(f"{cmd}.reply", reply)
        except MessageInvalid as e:
            self._violation(ProtocolViolation, f"the reply to {cmd} (request {rid}) breaks schemas/v1/{cmd}.reply.json:"
                                               f" {e}", raw)
        return reply

    def _reported_error(self, reply: dict[str, Any], cmd: str, raw: bytes) -> NoReturn:
        try:
            wire.validate("error.reply", reply)
        except MessageInvalid as e:
            self._violation(ProtocolViolation, f"an error reply to {cmd} breaks schemas/v1/error.reply.json: {e}", raw)
        err = reply["error"]
        kind, message, detail = err["kind"], err["message"], err.get("detail")
        proc = self._proc
        tail = proc.stderr_tail() if proc is not None else ""
        if kind == "options" and cmd == "open":
            self._shutdown()
            raise ConfigurationError(f"{self.label} refused the options: {message}")
        if kind == "infrastructure":
            self._shutdown()
            raise SubprocessInfrastructureError(f"{self.label} cannot use a service it needs: {message}")
        # The encoder's own failure; it answered properly, so `close` may still end it gracefully.
        raise EncoderReportedError(self.label, f"{cmd} failed: {message}", stderr_tail=tail, detail=detail)

    def _records(self, reply: Mapping[str, Any]) -> list[Record]:
        try:
            return [wire.record_from_json(r, f"record {i}") for i, r in enumerate(reply["records"])]
        except MessageInvalid as e:
            self._violation(ProtocolViolation, str(e), wire.dumps(reply)[:400])


# -- handshake only, and EncoderInfo --------------------------------------------------------------------------

def probe(spec: SubprocessSpec) -> Handshake:
    """Start the command, do the handshake, close it: who it is and what it can do (for
    `conformance list`, a smoke test, or to learn the protocol before a run). Raises the same
    errors as `open()`."""
    enc = SubprocessEncoder(spec)
    try:
        hs = enc._start()
        enc.close()
        return hs
    finally:
        enc._shutdown()


class _Capabilities:
    """The options a command's encoder does not support, from its handshake (probed once)."""

    def __init__(self, spec: SubprocessSpec, protocol: str) -> None:
        self.spec, self.protocol = spec, protocol
        self._handshake: Handshake | None = None

    def __call__(self, options: Mapping[str, str]) -> list[str]:
        if self._handshake is None:
            self._handshake = probe(self.spec)
        return self._handshake.capabilities.unsupported(options, _protocol_defaults(self.protocol))

    def identify(self) -> tuple[str, str] | None:
        """(name, version) from the handshake (the same probe), None where it cannot start."""
        if self._handshake is None:
            try:
                self._handshake = probe(self.spec)
            except Exception:  # noqa: BLE001 - a report says "unknown" rather than fail on it
                return None
        return self._handshake.implementation.name, self._handshake.implementation.version


def command_encoder(command: str | Sequence[str], *, protocol: str, name: str | None = None, description: str = "",
                    registry_url: str | None = None, **settings: Any) -> EncoderInfo:
    """An EncoderInfo that runs `command` (a command line or argv) through the subprocess
    protocol: what `conformance run --encoder-cmd "…"` and a plug-in's entry point return.
    `settings` are `SubprocessSpec` fields (cwd, env, request_timeout, start_timeout…)."""
    spec = SubprocessSpec.from_command(command, **settings)
    caps = _Capabilities(spec, protocol)
    return EncoderInfo(
        name=name or COMMAND_PREFIX + spec.command, protocol=protocol, kind=EncoderKind.EXTERNAL,
        factory=functools.partial(SubprocessEncoder, spec, protocol=protocol, registry_url=registry_url),
        description=description or f"subprocess encoder (JSON lines, protocol v{wire.PROTOCOL_VERSION}): "
                                   f"{spec.command}",
        bounds_own_calls=True, unsupported=caps, identify=caps.identify)

