"""A ctypes binding to librdkafka's mock cluster: real Kafka brokers on 127.0.0.1, in-process.

librdkafka ships a mock Kafka cluster (``rdkafka_mock.h``) that speaks the Kafka wire protocol
on 127.0.0.1 ports. The confluent-kafka wheel bundles librdkafka with those symbols exported,
so this module loads that very library with :mod:`ctypes` and drives the mock cluster's C API:
any Kafka client, in this process or another, connects to :attr:`MockCluster.bootstraps` like
it would to a real cluster, and tests inject faults (brokers down, round-trip delays, request
errors, leader changes) through :class:`MockCluster`'s methods.

Why ctypes and not ``test.mock.num.brokers``: that client property replaces a client's own
bootstrap servers with a private mock cluster, so only that one client could reach it and no
fault could be injected. ``rd_kafka_mock_cluster_new`` gives a cluster that every client can
share and that we can control.

Known limits of the mock cluster (measured by this project, librdkafka 2.x):

* **Retention.** Each mock partition keeps only its newest ~5 MiB: librdkafka hard-codes
  ``max_size = 5 MiB`` and ``max_cnt = 100000`` message *sets* (batches) per partition, and
  drops the oldest message sets beyond that on every append. The low watermark then moves up
  (``KafkaCluster.watermarks`` shows low > 0), exactly as after log retention on a real broker.
  Runs that must read everything back keep each partition under 5 MiB.
* **No de-duplication of retries** unless the producer is *transactional*: the mock only checks
  producer ids and sequence numbers when a ``transactional.id`` is present, so a batch that an
  idempotent (non-transactional) producer retries after a lost ack is appended twice.
* **Idempotent producers can be told "delivered" for messages that never reach the log** when
  partition leadership moves repeatedly, and also after injected retriable Produce errors when
  batches are small: with ``NOT_LEADER_FOR_PARTITION×5`` pushed while a producer sent one
  message every 20 ms, the first message after the push was reported delivered but was not in
  the log (3 runs of 3; a non-idempotent producer lost nothing, nor did a burst of 1000
  messages). The mock does not enforce sequence numbers for non-transactional producers, so it
  accepts the next batch across the gap, and librdkafka concludes from that ack that the
  failed batch was persisted. Treat such losses under faults as mock artifacts.
* **read_committed is not emulated**: consumers see aborted transactional records.
* The CreateTopics admin API is not implemented (AdminClient.create_topics times out waiting
  for a controller); create topics with :meth:`MockCluster.create_topic`. Topics that clients
  auto-create get the mock's default of 4 partitions.
* Injected request errors (:meth:`MockCluster.push_request_errors`) are answered *before* the
  request is processed, so a Produce error never leaves a written record behind; to get
  "written but the ack was lost", delay responses beyond the client's request timeout
  (:meth:`MockCluster.set_rtt`) or push ``_TRANSPORT`` (a disconnect).
* Commands (broker down/up, RTT, leader moves, topic creation) are posted to the cluster's
  thread and the caller waits for it. librdkafka's queue wake-up has a race that leaves some
  commands waiting for that thread's 1 s poll timeout (measured: roughly one leader move in
  ten took 1001 ms while clients were connected); :class:`MockCluster` wakes the thread with a
  TCP connect to a live broker when a command is not served within 10 ms, so commands take
  milliseconds (worst seen: ~20 ms).
* The whole cluster is served by one librdkafka thread; broker round-trip delays
  (:meth:`MockCluster.set_rtt`) hold each response back until ``send time + rtt``; setting the
  delay back to 0 releases every held response at once.

Broker ids are ``1..brokers``. Error codes are Kafka/librdkafka codes, named as
``confluent_kafka.KafkaError`` names them (``NOT_LEADER_FOR_PARTITION``, ``_TRANSPORT``...);
:func:`error_code` accepts those names case-insensitively, with or without the leading
underscore of librdkafka's local errors.
"""

from __future__ import annotations

import ctypes
import socket
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum
from functools import cache
from pathlib import Path
from typing import Any, Final

from ..errors import InfrastructureError
from .closing import ClosesOnExit

__all__ = [
    "ApiKey",
    "MockCluster",
    "MockClusterError",
    "MockClusterUnavailable",
    "error_code",
    "error_name",
    "error_names",
    "find_librdkafka",
]


class MockClusterUnavailable(InfrastructureError):
    """librdkafka (or its mock cluster API) cannot be loaded in this environment."""


class MockClusterError(RuntimeError):
    """A mock cluster operation was refused by librdkafka."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class ApiKey(IntEnum):
    """Kafka protocol request types (ApiKey), for request error injection."""

    Produce = 0
    Fetch = 1
    ListOffsets = 2
    Metadata = 3
    OffsetCommit = 8
    OffsetFetch = 9
    FindCoordinator = 10
    JoinGroup = 11
    Heartbeat = 12
    LeaveGroup = 13
    SyncGroup = 14
    DescribeGroups = 15
    ListGroups = 16
    SaslHandshake = 17
    ApiVersions = 18
    CreateTopics = 19
    DeleteTopics = 20
    DeleteRecords = 21
    InitProducerId = 22
    OffsetForLeaderEpoch = 23
    AddPartitionsToTxn = 24
    AddOffsetsToTxn = 25
    EndTxn = 26
    TxnOffsetCommit = 28
    SaslAuthenticate = 36


# --------------------------------------------------------------------------------------------
# Error codes
# --------------------------------------------------------------------------------------------


@cache
def _error_table() -> tuple[dict[str, int], dict[int, str]]:
    # confluent_kafka.KafkaError carries every librdkafka error code as an int class attribute
    # (broker errors as NAME, local errors as _NAME); the names never collide once the
    # underscore is stripped, so a lookup without it is unambiguous.
    from confluent_kafka import KafkaError

    by_name: dict[str, int] = {}
    by_code: dict[int, str] = {}
    for name in dir(KafkaError):
        if name.startswith("__") or not name.lstrip("_").isupper():
            continue
        value = getattr(KafkaError, name)
        if isinstance(value, int) and not isinstance(value, bool):
            by_name[name.lstrip("_").upper()] = value
            by_code.setdefault(value, name)
    return by_name, by_code


def error_names() -> list[str]:
    """Every known error name, as confluent_kafka.KafkaError spells it, sorted."""
    return sorted(_error_table()[1].values())


def error_code(error: str | int) -> int:
    """The numeric code for an error name (``not_leader_for_partition``, ``_TRANSPORT``, ``TRANSPORT``).

    Integers are returned unchanged once known to librdkafka. Unknown names raise ValueError
    with suggestions.
    """
    by_name, by_code = _error_table()
    if isinstance(error, int) and not isinstance(error, bool):
        if error not in by_code:
            raise ValueError(f"Unknown Kafka error code {error}: not a librdkafka error code.")
        return error
    key = str(error).strip().lstrip("_").upper()
    if key in by_name:
        return by_name[key]
    import difflib

    close = difflib.get_close_matches(key, list(by_name), n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(by_code[by_name[c]] for c in close)}?" if close else ""
    raise ValueError(
        f"Unknown Kafka error name {str(error)!r}.{hint} Use a confluent_kafka.KafkaError name such as "
        "NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS or _TRANSPORT "
        "(case does not matter, the leading underscore is optional)."
    )


def error_name(code: int) -> str:
    """The confluent_kafka.KafkaError name for ``code`` (``ERR_<code>`` if unknown)."""
    return _error_table()[1].get(code, f"ERR_{code}")


# --------------------------------------------------------------------------------------------
# Loading librdkafka
# --------------------------------------------------------------------------------------------


def find_librdkafka() -> Path:
    """Locate the librdkafka shared library bundled in the confluent-kafka wheel.

    Wheels built with auditwheel/delocate put it in ``confluent_kafka.libs`` (Linux) or
    ``confluent_kafka/.dylibs`` (macOS) next to the package. Loading that exact file matters:
    the Python client already loaded it, so the mock cluster and the clients share one copy.
    """
    try:
        import confluent_kafka
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise MockClusterUnavailable(
            f"confluent-kafka is not installed ({e}); the embedded Kafka cluster needs its bundled "
            "librdkafka. Install it with: pip install 'confluent-kafka>=2.5'."
        ) from e
    package = Path(confluent_kafka.__file__).resolve().parent
    candidates = [
        package.parent / "confluent_kafka.libs",
        package / ".dylibs",
        package.parent / "confluent_kafka.dylibs",
    ]
    patterns = ("librdkafka*.dylib",) if sys.platform == "darwin" else ("librdkafka*.so*",)
    if sys.platform == "win32":  # pragma: no cover - not a supported platform, but say why
        patterns = ("librdkafka*.dll",)
    for directory in candidates:
        if directory.is_dir():
            for pattern in patterns:
                found = sorted(p for p in directory.glob(pattern) if p.is_file())
                if found:
                    return found[0]
    raise MockClusterUnavailable(
        f"No librdkafka shared library ({', '.join(patterns)}) next to confluent_kafka at {package}: "
        f"looked in {', '.join(str(c) for c in candidates)}. The embedded Kafka cluster needs the "
        "librdkafka bundled in the confluent-kafka binary wheel; reinstall it from a wheel "
        "(pip install --force-reinstall --only-binary=:all: confluent-kafka), or use "
        "kafka://host:port or container:// instead."
    )


_VP = ctypes.c_void_p
_STR = ctypes.c_char_p
_I16 = ctypes.c_int16
_I32 = ctypes.c_int32
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_SIZE = ctypes.c_size_t

# name: (restype, argtypes). Pointers to librdkafka structs are plain void pointers; enums
# (rd_kafka_resp_err_t, rd_kafka_type_t, rd_kafka_conf_res_t) are C ints.
_REQUIRED: Final[dict[str, tuple[Any, list[Any]]]] = {
    "rd_kafka_conf_new": (_VP, []),
    "rd_kafka_conf_set": (_INT, [_VP, _STR, _STR, _STR, _SIZE]),
    "rd_kafka_conf_destroy": (None, [_VP]),
    "rd_kafka_new": (_VP, [_INT, _VP, _STR, _SIZE]),
    "rd_kafka_destroy": (None, [_VP]),
    "rd_kafka_err2str": (_STR, [_INT]),
    "rd_kafka_mock_cluster_new": (_VP, [_VP, _INT]),
    "rd_kafka_mock_cluster_destroy": (None, [_VP]),
    "rd_kafka_mock_cluster_bootstraps": (_STR, [_VP]),
    "rd_kafka_mock_topic_create": (_INT, [_VP, _STR, _INT, _INT]),
    "rd_kafka_mock_broker_set_down": (_INT, [_VP, _I32]),
    "rd_kafka_mock_broker_set_up": (_INT, [_VP, _I32]),
    "rd_kafka_mock_broker_set_rtt": (_INT, [_VP, _I32, _INT]),
    "rd_kafka_mock_push_request_errors_array": (None, [_VP, _I16, _SIZE, ctypes.POINTER(_INT)]),
    "rd_kafka_mock_partition_set_leader": (_INT, [_VP, _STR, _I32, _I32]),
}
_OPTIONAL: Final[dict[str, tuple[Any, list[Any]]]] = {
    "rd_kafka_mock_clear_request_errors": (None, [_VP, _I16]),
    # Variadic: only the fixed arguments are declared; the (err, rtt_ms) pairs follow as C ints.
    # Declaring the fixed part lets ctypes use the variadic calling convention where it
    # differs (Apple arm64).
    "rd_kafka_mock_broker_push_request_error_rtts": (_INT, [_VP, _I32, _I16, _SIZE]),
    "rd_kafka_mock_broker_error_stack_cnt": (_INT, [_VP, _I32, _I16, ctypes.POINTER(_SIZE)]),
    "rd_kafka_mock_partition_delete_records": (_INT, [_VP, _STR, _I32, _I64]),
    "rd_kafka_mock_topic_set_error": (None, [_VP, _STR, _INT]),
}

_RD_KAFKA_PRODUCER: Final = 0
_RD_KAFKA_CONF_OK: Final = 0


class _Lib:
    """The loaded library with every function used here declared (restype and argtypes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.cdll = ctypes.CDLL(str(path))
        except OSError as e:
            raise MockClusterUnavailable(f"Cannot load librdkafka from {path}: {e}.") from e
        missing = []
        for name, (restype, argtypes) in _REQUIRED.items():
            if not hasattr(self.cdll, name):
                missing.append(name)
                continue
            fn = getattr(self.cdll, name)
            fn.restype, fn.argtypes = restype, argtypes
        if missing:
            raise MockClusterUnavailable(
                f"The librdkafka at {path} lacks the mock cluster API ({', '.join(missing)}); "
                "it was built without it or is too old. Use confluent-kafka >= 2.5 from a binary wheel."
            )
        self.optional: set[str] = set()
        for name, (restype, argtypes) in _OPTIONAL.items():
            if hasattr(self.cdll, name):
                fn = getattr(self.cdll, name)
                fn.restype, fn.argtypes = restype, argtypes
                self.optional.add(name)

    def fn(self, name: str) -> Any:
        return getattr(self.cdll, name)

    def err2str(self, code: int) -> str:
        raw = self.fn("rd_kafka_err2str")(code)
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(code)


_LIB: _Lib | None = None
_LIB_LOCK = threading.Lock()


def _lib() -> _Lib:
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            _LIB = _Lib(find_librdkafka())
        return _LIB


def _destroy(lib: _Lib, rk: int, mcluster: int, lock: threading.RLock) -> None:
    # Runs at most once (weakref.finalize), from close(), garbage collection or interpreter
    # exit. The lock keeps a daemon thread (a fault injector) from being inside a mock call
    # while the cluster is freed; mock calls finish within about a second, so the wait is
    # bounded. The mock cluster must go first: it belongs to (and logs through) the rd_kafka_t.
    acquired = lock.acquire(timeout=5.0)
    try:
        lib.fn("rd_kafka_mock_cluster_destroy")(mcluster)
        lib.fn("rd_kafka_destroy")(rk)
    finally:
        if acquired:
            lock.release()


# --------------------------------------------------------------------------------------------
# MockCluster
# --------------------------------------------------------------------------------------------


class MockCluster(ClosesOnExit):
    """A librdkafka mock cluster with ``brokers`` brokers listening on 127.0.0.1.

    Usable as a context manager; :meth:`close` is idempotent and also runs at interpreter exit.
    Every method is thread-safe: librdkafka serialises them onto the cluster's own thread.
    """

    def __init__(self, brokers: int = 3) -> None:
        if not isinstance(brokers, int) or isinstance(brokers, bool) or not 1 <= brokers <= 64:
            raise ValueError(f"A mock cluster needs 1 to 64 brokers, not {brokers!r}.")
        lib = _lib()
        self._lib = lib
        self.brokers = brokers
        errstr = ctypes.create_string_buffer(512)
        conf = lib.fn("rd_kafka_conf_new")()
        if not conf:
            raise MockClusterError("rd_kafka_conf_new returned NULL (out of memory?).")
        # The rd_kafka_t only hosts the mock cluster; keep it quiet: without a bootstrap list
        # it would otherwise log about having no brokers, and the mock logs every disconnect.
        for key, value in (("log_level", "0"), ("client.id", "conformance-mock-cluster")):
            res = lib.fn("rd_kafka_conf_set")(conf, key.encode(), value.encode(), errstr, len(errstr))
            if res != _RD_KAFKA_CONF_OK:
                lib.fn("rd_kafka_conf_destroy")(conf)
                raise MockClusterError(f"Setting {key}={value} failed: {errstr.value.decode(errors='replace')}")
        rk = lib.fn("rd_kafka_new")(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not rk:
            # On failure the configuration is still ours to free.
            lib.fn("rd_kafka_conf_destroy")(conf)
            raise MockClusterError(f"Cannot create the librdkafka handle: {errstr.value.decode(errors='replace')}")
        mcluster = lib.fn("rd_kafka_mock_cluster_new")(rk, brokers)
        if not mcluster:
            lib.fn("rd_kafka_destroy")(rk)
            raise MockClusterError(
                f"librdkafka could not start a {brokers}-broker mock cluster (no free 127.0.0.1 ports?)."
            )
        self._rk: int = rk
        self._mcluster: int = mcluster
        raw = lib.fn("rd_kafka_mock_cluster_bootstraps")(mcluster)
        self.bootstraps: str = raw.decode("ascii") if isinstance(raw, bytes) else ""
        # Held around every call into the cluster and around close(), so a call can never use
        # the freed handle of a cluster that another thread just closed.
        self._lock = threading.RLock()
        # Brokers set down (their listeners refuse connections), for the waker in _call.
        self._down: set[int] = set()
        self._finalizer = weakref.finalize(self, _destroy, lib, rk, mcluster, self._lock)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every broker and free the cluster. Idempotent."""
        with self._lock:
            self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.bootstraps
        return f"MockCluster(brokers={self.brokers}, {state})"

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    # -- internals ---------------------------------------------------------------------------

    def _call(self, fn: Callable[..., Any], *args: Any) -> int:
        """Call a mock API function with the cluster handle first; returns its int result (or 0).

        Most mock commands are posted to the cluster's thread, and the caller blocks until that
        thread has run them. librdkafka sends at most one wake-up per "non-polling period" of
        that queue, and a race leaves some commands waiting for the thread's next timeout: up to
        1 s (measured: about one leader move in ten took 1001 ms). While a call takes longer
        than a few milliseconds, a helper opens and closes a TCP connection to a broker that is
        up; the accept wakes the thread, which then serves the command.
        """
        done = threading.Event()
        waker = threading.Thread(target=self._wake_while, args=(done,), name="mock-cluster-waker", daemon=True)
        with self._lock:
            if not self._finalizer.alive:
                raise MockClusterError("The mock cluster is closed; open a new one.")
            waker.start()
            try:
                result = fn(self._mcluster, *args)
            finally:
                done.set()
        waker.join(1.0)
        return int(result) if isinstance(result, int) else 0

    def _wake_while(self, done: threading.Event) -> None:
        # First wait: calls that are served promptly (almost all) never open a connection.
        while not done.wait(0.01):
            for broker_id, address in enumerate(self.bootstraps.split(","), start=1):
                if broker_id in self._down or done.is_set():
                    continue
                host, _, port = address.rpartition(":")
                try:
                    with socket.create_connection((host, int(port)), timeout=0.2):
                        pass
                    break
                except OSError:
                    continue
            done.wait(0.04)

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise MockClusterError(f"{what} failed: {error_name(code)} ({self._lib.err2str(code)}).", code)

    def _broker(self, broker_id: int, *, allow_all: bool = False) -> int:
        if allow_all and broker_id == -1:
            return -1
        if not isinstance(broker_id, int) or isinstance(broker_id, bool) or not 1 <= broker_id <= self.brokers:
            every = " (or -1 for every broker)" if allow_all else ""
            raise ValueError(f"No broker {broker_id!r} in this mock cluster: broker ids are 1..{self.brokers}{every}.")
        return broker_id

    def _require(self, name: str) -> Callable[..., Any]:
        if name not in self._lib.optional:
            raise MockClusterUnavailable(f"The librdkafka at {self._lib.path} has no {name}; upgrade confluent-kafka.")
        fn: Callable[..., Any] = self._lib.fn(name)
        return fn

    # -- topics ------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication: int = 1) -> None:
        """Create ``name`` with ``partitions`` partitions; raises MockClusterError if it exists."""
        if not name or len(name) > 249:
            raise ValueError(f"Invalid topic name {name!r}: 1 to 249 characters.")
        if partitions < 1 or replication < 1:
            raise ValueError(f"Topic {name!r} needs at least one partition and one replica.")
        code = self._call(self._lib.fn("rd_kafka_mock_topic_create"), name.encode(), partitions, replication)
        self._check(code, f"Creating topic {name!r}")

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Make ``broker_id`` the leader (bumps the leader epoch); -1 leaves the partition leaderless."""
        broker = self._broker(broker_id, allow_all=True)
        code = self._call(self._lib.fn("rd_kafka_mock_partition_set_leader"), topic.encode(), partition, broker)
        self._check(code, f"Moving the leader of {topic} [{partition}] to broker {broker_id}")

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Drop records before ``before_offset`` (moves the low watermark), like DeleteRecords."""
        fn = self._require("rd_kafka_mock_partition_delete_records")
        code = self._call(fn, topic.encode(), partition, before_offset)
        self._check(code, f"Deleting records of {topic} [{partition}] before offset {before_offset}")

    def set_topic_error(self, topic: str, error: str | int) -> None:
        """Answer Metadata (and AddPartitionsToTxn) for ``topic`` with ``error`` (0 clears it)."""
        fn = self._require("rd_kafka_mock_topic_set_error")
        self._call(fn, topic.encode(), 0 if error in (0, "NO_ERROR") else error_code(error))

    # -- brokers -----------------------------------------------------------------------------

    def broker_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones; leadership does not move."""
        code = self._call(self._lib.fn("rd_kafka_mock_broker_set_down"), self._broker(broker_id, allow_all=True))
        self._check(code, f"Taking broker {broker_id} down")
        self._down.update(self.broker_ids if broker_id == -1 else [broker_id])

    def broker_up(self, broker_id: int) -> None:
        """Accept connections on the broker again."""
        code = self._call(self._lib.fn("rd_kafka_mock_broker_set_up"), self._broker(broker_id, allow_all=True))
        self._check(code, f"Bringing broker {broker_id} up")
        self._down.difference_update(self.broker_ids if broker_id == -1 else [broker_id])

    def set_rtt(self, broker_id: int, ms: int) -> None:
        """Delay every response of ``broker_id`` (-1: all brokers) by ``ms`` milliseconds; 0 clears."""
        if ms < 0:
            raise ValueError(f"A round-trip time cannot be negative ({ms} ms).")
        code = self._call(self._lib.fn("rd_kafka_mock_broker_set_rtt"), self._broker(broker_id, allow_all=True), ms)
        self._check(code, f"Setting the RTT of broker {broker_id} to {ms} ms")

    # -- request errors ----------------------------------------------------------------------

    def push_request_errors(self, api_key: ApiKey | int, errors: Sequence[str | int]) -> None:
        """Fail the next ``len(errors)`` requests of type ``api_key`` (any broker) with these errors, in order.

        ``_TRANSPORT`` makes the broker drop the connection instead of answering.
        """
        codes = [error_code(e) for e in errors]
        if not codes:
            return
        array = (_INT * len(codes))(*codes)
        self._call(self._lib.fn("rd_kafka_mock_push_request_errors_array"), int(api_key), len(codes), array)

    def broker_push_request_error_rtts(
        self, broker_id: int, api_key: ApiKey | int, errors: Iterable[tuple[str | int, int]]
    ) -> None:
        """Answer the next requests of ``api_key`` on one broker with (error, delay in ms) pairs.

        An error of 0 (``NO_ERROR``) with a delay holds back one successful response, which is
        the precise way to lose one ack. Broker stacks take precedence over cluster stacks.
        """
        fn = self._require("rd_kafka_mock_broker_push_request_error_rtts")
        pairs = [(0 if e in (0, "NO_ERROR") else error_code(e), int(rtt)) for e, rtt in errors]
        if not pairs:
            return
        if any(rtt < 0 for _, rtt in pairs):
            raise ValueError("Response delays cannot be negative.")
        varargs = [_INT(v) for pair in pairs for v in pair]
        code = self._call(fn, self._broker(broker_id), int(api_key), len(pairs), *varargs)
        self._check(code, f"Pushing {len(pairs)} error(s) on broker {broker_id}")

    def broker_error_stack_count(self, broker_id: int, api_key: ApiKey | int) -> int:
        """How many errors pushed with :meth:`broker_push_request_error_rtts` are still pending."""
        fn = self._require("rd_kafka_mock_broker_error_stack_cnt")
        count = _SIZE(0)
        code = self._call(fn, self._broker(broker_id), int(api_key), ctypes.byref(count))
        self._check(code, f"Reading the error stack of broker {broker_id}")
        return int(count.value)

    def clear_request_errors(self, api_key: ApiKey | int) -> None:
        """Drop the pending cluster-level errors for ``api_key`` (broker-level stacks stay)."""
        fn = self._require("rd_kafka_mock_clear_request_errors")
        self._call(fn, int(api_key))
