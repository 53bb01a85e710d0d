"""Fault schedules for the embedded Kafka cluster, and the thread that injects them.

A schedule is text such as::

    broker-down@2s:3s,produce-errors@5s:NOT_LEADER_FOR_PARTITION×5,latency@1s:4s:500ms

Grammar (also quoted in the error for bad input)::

    schedule := fault ("," fault)*          (empty text: no faults)
    fault    := KIND "@" START (":" ARG)*
    time     := NUMBER ("s" | "ms")         2s, 1.5s, 500ms
    count    := ("×" | "x" | "*") INTEGER   appended to an error name: NOT_LEADER_FOR_PARTITION×5

    broker-down@START:DURATION[:BROKER]     broker refuses connections, then comes back
    produce-errors@START:ERROR[×N]          the next N Produce requests fail with ERROR
    fetch-errors@START:ERROR[×N]            the next N Fetch requests fail with ERROR
    latency@START:DURATION:RTT[:BROKER]     responses are delayed by RTT for DURATION
    lost-acks@START:DURATION[:BROKER]       writes happen, responses are held until the end
    disconnects@START:N                     the next N Produce requests drop the connection
    leader-moves@START:DURATION:N           every watched partition changes leader N times

START is measured from :meth:`FaultInjector.start`, or, with an ``arm`` probe, from the moment
the probe first says that production has begun (in a Spark run the executors start producing
seconds after the driver starts the injector). BROKER is a broker id (1..brokers); the
default is the leader of partition 0 of the first watched topic for ``broker-down`` (broker 1
if unknown) and every broker for ``latency`` and ``lost-acks``. ERROR is a
``confluent_kafka.KafkaError`` name, case-insensitive, leading underscore optional. ``str()``
of a parsed schedule is its canonical text (times in s or ms, ``×`` for counts), which parses
back to the same schedule.

How each fault is injected into librdkafka's mock cluster, and what clients see (measured
with librdkafka 2.16 on this project's embedded cluster):

* ``broker-down``: the broker closes its connections and refuses new ones; leadership does not
  move, so its partitions are unavailable. A producer with ``message.timeout.ms=2000`` saw
  ``_MSG_TIMED_OUT`` reports from ~1.3 s after the broker went down until it came back.
* ``produce-errors`` / ``fetch-errors``: pushed on the cluster-wide error stack of the API, so
  the next N such requests to *any* broker fail. Injected errors are answered **before** the
  append: nothing is written, so they cannot simulate "written but the ack was lost".
  Caveat (a mock artifact, see :mod:`conformance.infra.mockcluster`): an *idempotent*
  producer sending small batches can get a success report for a message that a
  produce-error made it drop; measured with ``NOT_LEADER_FOR_PARTITION×5`` and one message
  every 20 ms, one message per run. Bursts (1000 messages at once) lost nothing.
* ``disconnects``: N ``_TRANSPORT`` errors on Produce, i.e. the broker drops the connection
  instead of answering (again before the append).
* ``lost-acks``: the broker's round-trip time is raised to at least :data:`LOST_ACK_RTT_MS`
  (and at least the fault's duration), so every request is processed and appended but its
  response is held back until the fault ends. Only clients whose request times out first lose
  the ack: librdkafka's client-side limit is ``socket.timeout.ms`` (default 60 s; note that a
  producer's ``request.timeout.ms`` is only the *broker-side* ack timeout) or what remains of
  ``message.timeout.ms``. Measured with ``socket.timeout.ms=1000`` and a 4 s fault: the
  producer retried and every batch was in the log twice, idempotent or not (the mock only
  de-duplicates transactional producers); with ``message.timeout.ms=2500`` every message was
  reported failed (``_MSG_TIMED_OUT``) yet every one was in the log.
* ``latency``: the broker round-trip time for DURATION, then 0 (which releases held responses).
* ``leader-moves``: ``set_partition_leader`` for every partition of the watched topics, N
  times at START + k·DURATION/N (k = 0..N-1), round-robin over the brokers from each
  partition's leader at the start. Each move bumps the leader epoch. Leadership is not moved
  back at the end.

Overlapping faults that touch the same state (two latencies on one broker) simply apply in
time order: the last action wins. :meth:`FaultInjector.stop` undoes whatever is still active
(brokers up, RTT 0, pending injected errors cleared).

The timing core is a pure function, :func:`plan`, which turns a schedule into time-ordered
:class:`Action` objects against any :class:`FaultTarget` (the mock cluster, or a fake in
tests); the injector only walks the plan.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from types import TracebackType
from typing import ClassVar, Final, Protocol, Self

from .mockcluster import ApiKey, error_code, error_name

__all__ = [
    "FAULT_RUN_CLIENT_CONFIG",
    "GRAMMAR",
    "LOST_ACK_RTT_MS",
    "Action",
    "BrokerDown",
    "Disconnects",
    "Fault",
    "FaultInjector",
    "FaultSchedule",
    "FaultTarget",
    "FaultsUnsupported",
    "Latency",
    "LeaderMoves",
    "LostAcks",
    "RequestErrors",
    "plan",
]

#: Minimum response delay for ``lost-acks``: above the socket timeouts a fault-testing client
#: is configured with (librdkafka's default ``socket.timeout.ms`` is 60 s, so set it lower,
#: e.g. 1000-5000 ms, in clients that should lose acks).
LOST_ACK_RTT_MS: Final = 10_000

#: Client settings for runs under a fault schedule: the "network" of the test. A request
#: unanswered for 3 s is given up and retried, as a client on a real network would, so that
#: ``lost-acks`` (responses held for 10 s) really loses acknowledgements of written messages.
FAULT_RUN_CLIENT_CONFIG: Final = {"socket.timeout.ms": "3000"}

GRAMMAR: Final = """\
Fault schedule grammar: comma-separated faults KIND@START[:ARG...]; times like 2s, 1.5s, 500ms;
counts as ×N, xN or *N after an error name.
  broker-down@START:DURATION[:BROKER]    e.g. broker-down@2s:3s or broker-down@2s:3s:2
  produce-errors@START:ERROR[×N]         e.g. produce-errors@5s:NOT_LEADER_FOR_PARTITION×5
  fetch-errors@START:ERROR[×N]           e.g. fetch-errors@1s:REQUEST_TIMED_OUT×3
  latency@START:DURATION:RTT[:BROKER]    e.g. latency@1s:4s:500ms
  lost-acks@START:DURATION[:BROKER]      e.g. lost-acks@4s:3s
  disconnects@START:N                    e.g. disconnects@6s:5
  leader-moves@START:DURATION:N          e.g. leader-moves@3s:2s:5
BROKER is a broker id (1..number of brokers); ERROR a confluent_kafka.KafkaError name."""


class FaultsUnsupported(RuntimeError):
    """Faults were requested for a cluster that cannot inject them (not embedded)."""


# --------------------------------------------------------------------------------------------
# Parsing helpers
# --------------------------------------------------------------------------------------------

_TIME = re.compile(r"^(\d+(?:\.\d+)?)(ms|s)$")
_COUNTED = re.compile(r"^(.+?)\s*[×x*]\s*(\d+)$")
_BARE_COUNT = re.compile(r"^(?:[×x*]\s*)?(\d+)$")


class _Bad(ValueError):
    """Why one item is invalid; FaultSchedule.parse adds the item and the grammar."""


def _parse_time(text: str, what: str) -> int:
    m = _TIME.match(text.strip())
    if m is None:
        raise _Bad(f"{what} {text!r} is not a time such as 2s, 1.5s or 500ms")
    try:
        value = Decimal(m.group(1)) * (1000 if m.group(2) == "s" else 1)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise _Bad(f"{what} {text!r} is not a number") from None
    if value != value.to_integral_value():
        raise _Bad(f"{what} {text!r} is finer than a millisecond")
    if value > 24 * 3600 * 1000:
        raise _Bad(f"{what} {text!r} is longer than a day")
    return int(value)


def _render_time(ms: int) -> str:
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    if ms < 1000:
        return f"{ms}ms"
    return f"{Decimal(ms) / 1000}s"


def _parse_count(text: str, what: str) -> int:
    m = _BARE_COUNT.match(text.strip())
    if m is None or not 1 <= int(m.group(1)) <= 100_000:
        raise _Bad(f"{what} {text!r} is not a count from 1 to 100000")
    return int(m.group(1))


def _parse_broker(text: str) -> int:
    value = text.strip()
    if not value.isdigit() or int(value) < 1:
        raise _Bad(f"broker {text!r} is not a broker id (1, 2, ...)")
    return int(value)


def _parse_error(text: str) -> tuple[str, int]:
    m = _COUNTED.match(text.strip())
    name, count = (m.group(1), int(m.group(2))) if m else (text.strip(), 1)
    if not 1 <= count <= 100_000:
        raise _Bad(f"count {count} is not from 1 to 100000")
    try:
        code = error_code(name)
    except ValueError as e:
        raise _Bad(str(e).rstrip(".")) from None
    if code == 0:
        raise _Bad("NO_ERROR is not an error to inject")
    return error_name(code), count


def _arity(args: list[str], low: int, high: int, usage: str) -> None:
    if not low <= len(args) <= high:
        raise _Bad(f"expected {usage}")


# --------------------------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Span:
    """A fault from ``start_ms`` for ``duration_ms``."""

    kind: ClassVar[str]
    start_ms: int
    duration_ms: int

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.duration_ms


@dataclass(frozen=True, slots=True)
class _BrokerWindow(_Span):
    """A fault of one broker (or the default / every broker: None) for ``duration_ms``."""

    broker: int | None = None

    def __str__(self) -> str:
        tail = f":{self.broker}" if self.broker is not None else ""
        return f"{self.kind}@{_render_time(self.start_ms)}:{_render_time(self.duration_ms)}{tail}"


@dataclass(frozen=True, slots=True)
class BrokerDown(_BrokerWindow):
    """A broker refuses connections for ``duration_ms``; ``broker`` None picks the default."""

    kind: ClassVar[str] = "broker-down"


@dataclass(frozen=True, slots=True)
class RequestErrors:
    """The next ``count`` requests of ``api`` ("produce" or "fetch") fail with ``error``."""

    api: str
    start_ms: int
    error: str
    count: int = 1

    @property
    def kind(self) -> str:
        return f"{self.api}-errors"

    @property
    def api_key(self) -> ApiKey:
        return ApiKey.Produce if self.api == "produce" else ApiKey.Fetch

    @property
    def end_ms(self) -> int:
        return self.start_ms

    def __str__(self) -> str:
        return f"{self.kind}@{_render_time(self.start_ms)}:{self.error}×{self.count}"


@dataclass(frozen=True, slots=True)
class Latency(_Span):
    """Responses of ``broker`` (None: every broker) are delayed by ``rtt_ms`` for ``duration_ms``."""

    kind: ClassVar[str] = "latency"
    rtt_ms: int
    broker: int | None = None

    def __str__(self) -> str:
        tail = f":{self.broker}" if self.broker is not None else ""
        return (
            f"{self.kind}@{_render_time(self.start_ms)}:{_render_time(self.duration_ms)}:"
            f"{_render_time(self.rtt_ms)}{tail}"
        )


@dataclass(frozen=True, slots=True)
class LostAcks(_BrokerWindow):
    """Writes to ``broker`` (None: every broker) succeed but responses are held for ``duration_ms``."""

    kind: ClassVar[str] = "lost-acks"


@dataclass(frozen=True, slots=True)
class Disconnects:
    """The next ``count`` Produce requests make the broker drop the connection."""

    kind: ClassVar[str] = "disconnects"
    start_ms: int
    count: int

    @property
    def end_ms(self) -> int:
        return self.start_ms

    def __str__(self) -> str:
        return f"{self.kind}@{_render_time(self.start_ms)}:{self.count}"


@dataclass(frozen=True, slots=True)
class LeaderMoves(_Span):
    """Every watched partition changes leader ``moves`` times, evenly over ``duration_ms``."""

    kind: ClassVar[str] = "leader-moves"
    moves: int

    def __str__(self) -> str:
        return f"{self.kind}@{_render_time(self.start_ms)}:{_render_time(self.duration_ms)}:{self.moves}"


Fault = BrokerDown | RequestErrors | Latency | LostAcks | Disconnects | LeaderMoves

_KINDS: Final = (
    "broker-down",
    "produce-errors",
    "fetch-errors",
    "latency",
    "lost-acks",
    "disconnects",
    "leader-moves",
)


def _parse_fault(item: str) -> Fault:
    kind, at, rest = item.partition("@")
    kind = kind.strip().lower()
    if not at:
        raise _Bad("missing '@START' after the fault kind")
    if kind not in _KINDS:
        raise _Bad(f"unknown fault kind {kind!r}; known kinds: {', '.join(_KINDS)}")
    parts = rest.split(":")
    start = _parse_time(parts[0], "start")
    args = parts[1:]
    if kind == "broker-down":
        _arity(args, 1, 2, "broker-down@START:DURATION[:BROKER]")
        return BrokerDown(start, _parse_time(args[0], "duration"), _parse_broker(args[1]) if len(args) > 1 else None)
    if kind in ("produce-errors", "fetch-errors"):
        _arity(args, 1, 1, f"{kind}@START:ERROR[×N]")
        error, count = _parse_error(args[0])
        return RequestErrors(kind.split("-")[0], start, error, count)
    if kind == "latency":
        _arity(args, 2, 3, "latency@START:DURATION:RTT[:BROKER]")
        return Latency(
            start,
            _parse_time(args[0], "duration"),
            _parse_time(args[1], "rtt"),
            _parse_broker(args[2]) if len(args) > 2 else None,
        )
    if kind == "lost-acks":
        _arity(args, 1, 2, "lost-acks@START:DURATION[:BROKER]")
        return LostAcks(start, _parse_time(args[0], "duration"), _parse_broker(args[1]) if len(args) > 1 else None)
    if kind == "disconnects":
        _arity(args, 1, 1, "disconnects@START:N")
        return Disconnects(start, _parse_count(args[0], "count"))
    _arity(args, 2, 2, "leader-moves@START:DURATION:N")
    return LeaderMoves(start, _parse_time(args[0], "duration"), _parse_count(args[1], "moves"))


@dataclass(frozen=True, slots=True)
class FaultSchedule:
    """An ordered set of faults; ``str()`` is the canonical schedule text."""

    faults: tuple[Fault, ...] = ()

    @classmethod
    def parse(cls, text: str) -> FaultSchedule:
        """Parse schedule text; ValueError names the offending item and quotes the grammar."""
        if not isinstance(text, str):
            raise ValueError(f"A fault schedule is text, not {type(text).__name__}.\n{GRAMMAR}")
        if not text.strip():
            return cls(())
        faults: list[Fault] = []
        for position, item in enumerate(text.split(","), start=1):
            if not item.strip():
                raise ValueError(f"Empty fault #{position} in schedule {text!r} (stray comma?).\n{GRAMMAR}")
            try:
                faults.append(_parse_fault(item.strip()))
            except _Bad as e:
                raise ValueError(f"Bad fault #{position} {item.strip()!r} in schedule: {e}.\n{GRAMMAR}") from None
        return cls(tuple(faults))

    @property
    def duration(self) -> float:
        """Seconds from the start until the last fault ends (0 for an empty schedule)."""
        return max((f.end_ms for f in self.faults), default=0) / 1000

    def __str__(self) -> str:
        return ",".join(str(f) for f in self.faults)

    def __bool__(self) -> bool:
        return bool(self.faults)


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


class FaultTarget(Protocol):
    """What injection needs from a mock cluster (MockCluster implements it; tests fake it)."""

    def broker_down(self, broker_id: int) -> None: ...

    def broker_up(self, broker_id: int) -> None: ...

    def set_rtt(self, broker_id: int, ms: int) -> None: ...

    def push_request_errors(self, api_key: ApiKey | int, errors: Sequence[str | int]) -> None: ...

    def clear_request_errors(self, api_key: ApiKey | int) -> None: ...

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None: ...


Step = Callable[[FaultTarget], None]


@dataclass(frozen=True, slots=True)
class Action:
    """One change to the cluster at ``at_ms`` after the start.

    ``state`` names what the action changes (("down", 2), ("rtt", -1), ("errors", "Produce")).
    An action with ``reset`` turns that state on, and ``reset`` is what :meth:`FaultInjector.stop`
    runs if no later action turned it off; an action without ``reset`` turns it off.
    """

    at_ms: int
    description: str
    apply: Step = field(compare=False, repr=False)
    fault: int = 0
    state: tuple[str | int, ...] | None = None
    reset: Step | None = field(default=None, compare=False, repr=False)
    reset_description: str = ""
    # Ends sort before starts at the same instant, so back-to-back faults on one broker work.
    ends: bool = False

    @property
    def at_s(self) -> float:
        return self.at_ms / 1000


def _broker_label(broker: int) -> str:
    return "every broker" if broker == -1 else f"broker {broker}"


def _set_rtt(broker: int, ms: int) -> Step:
    return lambda t: t.set_rtt(broker, ms)


def _down(broker: int) -> Step:
    return lambda t: t.broker_down(broker)


def _up(broker: int) -> Step:
    return lambda t: t.broker_up(broker)


def _push(api: ApiKey, errors: list[str]) -> Step:
    return lambda t: t.push_request_errors(api, errors)


def _clear(api: ApiKey) -> Step:
    return lambda t: t.clear_request_errors(api)


def _move(assignments: list[tuple[str, int, int]]) -> Step:
    def apply(target: FaultTarget) -> None:
        for topic, partition, broker in assignments:
            target.set_partition_leader(topic, partition, broker)

    return apply


def default_broker(
    topics: Mapping[str, int], leaders: Mapping[tuple[str, int], int] | None, brokers: int
) -> int:
    """The leader of partition 0 of the first topic if known and valid, else broker 1."""
    first = next(iter(topics), None)
    if first is not None and leaders:
        leader = leaders.get((first, 0), -1)
        if 1 <= leader <= brokers:
            return leader
    return 1


def plan(
    schedule: FaultSchedule,
    topics: Mapping[str, int],
    brokers: int,
    leaders: Mapping[tuple[str, int], int] | None = None,
    *,
    lost_ack_rtt_ms: int = LOST_ACK_RTT_MS,
) -> list[Action]:
    """Turn ``schedule`` into time-ordered actions.

    ``topics`` maps each watched topic to its partition count (in watch order), ``brokers`` is
    the broker count (ids 1..brokers) and ``leaders`` the current leader of each (topic,
    partition), if known. ValueError if a fault names a broker that does not exist or moves
    leaders without watched topics.
    """
    if brokers < 1:
        raise ValueError(f"A cluster has at least one broker, not {brokers}.")
    actions: list[Action] = []

    def check_broker(index: int, fault: Fault, broker: int | None) -> None:
        if broker is not None and not 1 <= broker <= brokers:
            raise ValueError(
                f"Fault #{index + 1} {str(fault)!r} names broker {broker}, but the cluster has brokers 1..{brokers}."
            )

    for index, fault in enumerate(schedule.faults):
        if isinstance(fault, BrokerDown):
            check_broker(index, fault, fault.broker)
            b = fault.broker if fault.broker is not None else default_broker(topics, leaders, brokers)
            actions.append(
                Action(fault.start_ms, f"broker {b} down", _down(b), index, ("down", b), _up(b), f"broker {b} up")
            )
            actions.append(Action(fault.end_ms, f"broker {b} up", _up(b), index, ("down", b), ends=True))
        elif isinstance(fault, RequestErrors):
            api = fault.api_key
            actions.append(
                Action(
                    fault.start_ms,
                    f"next {fault.count} {api.name} request(s) fail with {fault.error}",
                    _push(api, [fault.error] * fault.count),
                    index,
                    ("errors", api.name),
                    _clear(api),
                    f"clear pending {api.name} errors",
                )
            )
        elif isinstance(fault, Disconnects):
            api = ApiKey.Produce
            actions.append(
                Action(
                    fault.start_ms,
                    f"next {fault.count} Produce request(s) drop the connection",
                    _push(api, ["_TRANSPORT"] * fault.count),
                    index,
                    ("errors", api.name),
                    _clear(api),
                    f"clear pending {api.name} errors",
                )
            )
        elif isinstance(fault, Latency | LostAcks):
            check_broker(index, fault, fault.broker)
            b = fault.broker if fault.broker is not None else -1
            if isinstance(fault, Latency):
                rtt, what = fault.rtt_ms, f"{_broker_label(b)} answers after {_render_time(fault.rtt_ms)}"
            else:
                # Hold responses for the whole fault: setting the RTT back to 0 releases them,
                # so anything shorter would let some acks through in the middle.
                rtt = max(lost_ack_rtt_ms, fault.duration_ms)
                what = f"{_broker_label(b)} holds its acks (RTT {_render_time(rtt)})"
            label = f"{_broker_label(b)} RTT back to 0"
            actions.append(Action(fault.start_ms, what, _set_rtt(b, rtt), index, ("rtt", b), _set_rtt(b, 0), label))
            actions.append(Action(fault.end_ms, label, _set_rtt(b, 0), index, ("rtt", b), ends=True))
        elif isinstance(fault, LeaderMoves):
            if not topics or not any(n > 0 for n in topics.values()):
                raise ValueError(f"Fault #{index + 1} {str(fault)!r} moves leaders, but no topic is watched.")
            for k in range(fault.moves):
                assignments: list[tuple[str, int, int]] = []
                for topic, count in topics.items():
                    for partition in range(count):
                        initial = (leaders or {}).get((topic, partition), partition % brokers + 1)
                        if not 1 <= initial <= brokers:
                            initial = partition % brokers + 1
                        assignments.append((topic, partition, (initial - 1 + k + 1) % brokers + 1))
                shown = " ".join(f"{t}[{p}]→{b}" for t, p, b in assignments[:6])
                more = f" (+{len(assignments) - 6} more)" if len(assignments) > 6 else ""
                actions.append(
                    Action(
                        fault.start_ms + (k * fault.duration_ms) // fault.moves,
                        f"leader move {k + 1}/{fault.moves}: {shown}{more}",
                        _move(assignments),
                        index,
                    )
                )
    # Stable: same-instant actions keep schedule order, with ends first.
    return sorted(actions, key=lambda a: (a.at_ms, not a.ends))


# --------------------------------------------------------------------------------------------
# Injection
# --------------------------------------------------------------------------------------------


class FaultableCluster(Protocol):
    """What the injector needs from a cluster (KafkaCluster implements it)."""

    @property
    def url(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def mock(self) -> FaultTarget | None: ...

    def partitions(self, topic: str) -> int: ...

    def leaders(self, topic: str) -> dict[int, int]: ...


class FaultInjector:
    """Runs a fault schedule against an embedded cluster on a daemon thread.

    ``start()`` takes the cluster's current topology (partition counts, leaders, broker count),
    plans, and applies each action at its offset from the start; ``stop()`` (idempotent,
    bounded) ends the run and undoes whatever is still active. ``log`` lists (seconds after the
    start, what was done) for everything actually applied, failures included.
    ``clock``/``sleep`` are injectable so the timing can be tested without waiting: ``sleep``
    gets the seconds to wait and returns early (True) if the injector is stopping.
    """

    def __init__(
        self,
        cluster: FaultableCluster,
        schedule: FaultSchedule | str,
        topics: Sequence[str],
        *,
        brokers: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], bool] | None = None,
        lost_ack_rtt_ms: int = LOST_ACK_RTT_MS,
        join_timeout: float = 5.0,
        arm: Callable[[], bool] | None = None,
        arm_timeout: float = 600.0,
    ) -> None:
        target = cluster.mock
        if target is None:
            raise FaultsUnsupported(
                f"Fault injection needs the embedded Kafka cluster, but {cluster.url} is a {cluster.kind} "
                "cluster, whose brokers the suite cannot take down or slow down. Run the faults against "
                "--kafka embedded:// or drop the fault schedule."
            )
        self.schedule = schedule if isinstance(schedule, FaultSchedule) else FaultSchedule.parse(schedule)
        self._cluster = cluster
        self._target: FaultTarget = target
        self.topics = tuple(topics)
        broker_count = brokers if brokers is not None else getattr(target, "brokers", None)
        if not isinstance(broker_count, int):
            raise ValueError("FaultInjector needs the broker count (brokers=...) for this cluster.")
        self.brokers = broker_count
        self._clock = clock
        self._stopping = threading.Event()
        self._sleep = sleep if sleep is not None else self._stopping.wait
        self._lost_ack_rtt_ms = lost_ack_rtt_ms
        self._join_timeout = join_timeout
        self._lock = threading.Lock()
        self._log: list[tuple[float, str]] = []
        self._active: dict[tuple[str | int, ...], Action] = {}
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._stopped = False
        self.plan: list[Action] = []
        self.errors: list[str] = []
        self._arm = arm
        self._arm_timeout = arm_timeout
        self.armed_after: float | None = None  # seconds from start() until the probe fired
        self._applied = 0  # actions of the plan applied so far, in order

    # -- running -----------------------------------------------------------------------------

    def start(self) -> Self:
        """Plan against the cluster's current topology and start applying. Returns self."""
        with self._lock:
            if self._thread is not None or self._stopped:
                raise RuntimeError("A FaultInjector runs once; create a new one to run the schedule again.")
        counts = {topic: self._cluster.partitions(topic) for topic in self.topics}
        leaders = {(t, p): b for t in self.topics for p, b in self._cluster.leaders(t).items()}
        self.plan = plan(self.schedule, counts, self.brokers, leaders, lost_ack_rtt_ms=self._lost_ack_rtt_ms)
        self._t0 = self._clock()
        self._thread = threading.Thread(target=self._run, name="fault-injector", daemon=True)
        self._thread.start()
        return self

    def _now(self) -> float:
        return self._clock() - self._t0

    def _wait_for_arm(self) -> bool:
        """With an ``arm`` probe: wait (bounded) until it fires, then restart the clock there.
        False if the injector is stopping first."""
        if self._arm is None:
            self.armed_after = 0.0
            return True
        started = self._clock()
        while not self._stopping.is_set():
            try:
                fired = self._arm()
            except Exception as e:  # noqa: BLE001 - a broken probe must not stop the schedule
                self.errors.append(f"arm probe failed ({type(e).__name__}: {e}); schedule started anyway")
                fired = True
            if fired or self._clock() - started > self._arm_timeout:
                with self._lock:
                    self._t0 = self._clock()
                    self.armed_after = round(self._t0 - started, 3)
                    if not fired:
                        self._log.append((0.0, f"nothing was produced within {self._arm_timeout:g} s; "
                                               "schedule started anyway"))
                return True
            self._sleep(0.02)
        return False

    def _run(self) -> None:
        if not self._wait_for_arm():
            return
        for action in self.plan:
            while not self._stopping.is_set():
                wait = action.at_s - self._now()
                if wait <= 0:
                    break
                # Short slices keep stop() prompt even with a sleep that ignores the event.
                if self._sleep(min(wait, 0.25)):
                    break
            if self._stopping.is_set():
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                self._apply(action, action.description)
                self._applied += 1

    def _apply(self, action: Action, text: str, step: Step | None = None) -> None:
        # Called with the lock held. A failing action (cluster closed under us) is logged and
        # the run goes on: later actions, and stop()'s undo, may still succeed.
        try:
            (step or action.apply)(self._target)
        except Exception as e:  # noqa: BLE001 - reported in the log, never fatal to the run
            message = f"{text}: FAILED ({type(e).__name__}: {e})"
            self.errors.append(message)
            self._log.append((round(self._now(), 3), message))
            return
        self._log.append((round(self._now(), 3), text))
        if step is None and action.state is not None:
            if action.reset is not None:
                self._active[action.state] = action
            else:
                self._active.pop(action.state, None)

    def wait(self, timeout: float) -> bool:
        """Wait (bounded) for every planned action to be applied; True if the run finished."""
        thread = self._thread
        if thread is None:
            return False
        thread.join(timeout)
        return not thread.is_alive()

    def stop(self) -> None:
        """Stop applying and undo what is still active (bounded; idempotent)."""
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            thread.join(self._join_timeout)
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for action in reversed(list(self._active.values())):
                assert action.reset is not None
                self._apply(action, f"(stop) {action.reset_description}", action.reset)
            self._active.clear()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def log(self) -> list[tuple[float, str]]:
        """(seconds after start, action) for everything applied so far, in order (a copy)."""
        with self._lock:
            return list(self._log)

    def pending(self) -> list[Action]:
        """Planned actions that were never applied (the run ended first)."""
        with self._lock:
            return self.plan[self._applied:]

    @property
    def active(self) -> list[str]:
        """Descriptions of the changes still in force (what stop() would undo)."""
        with self._lock:
            return [a.description for a in self._active.values()]

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"FaultInjector({str(self.schedule)!r}, topics={list(self.topics)!r})"
