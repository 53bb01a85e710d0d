"""Any CDC tool as an encoder under test: `--tool-cmd COMMAND` (black-box mode).

The tool is a program that reads the upstream's change log and produces to Kafka on its own: a
Debezium Server, a MaxScale with its KafkaCDC router, a TiCDC changefeed, an in-house service.
The suite knows nothing of it but a command line with placeholders, filled in per workload:

    {upstream}      the server as a URL with credentials (postgresql://u:p@host:port/db,
                    mariadb://u:p@host:port)
    {host} {port} {user} {password}
    {database}      the workload's database (PostgreSQL); the marker's (MariaDB)
    {kafka}         the run's Kafka bootstrap servers (host:port,...)
    {registry}      the run's Schema Registry URL ("" without one)
    {topic_prefix}  a prefix the tool must put before the name of every topic it writes, and
                    nowhere else (Kafka Connect: a RegexRouter transform): it keeps this
                    workload's topics apart from every other's; the suite strips it
    {option:NAME}   the run's value of the protocol option NAME (e.g. {option:topic.prefix})

The same values are in the tool's environment (CDC_UPSTREAM, CDC_HOST, CDC_PORT, CDC_USER,
CDC_PASSWORD, CDC_DATABASE, CDC_KAFKA, CDC_REGISTRY, CDC_TOPIC_PREFIX), so that secrets need
not be on a command line. The run's Kafka client properties (security settings included) are in
CDC_KAFKA_CONFIG and its protocol options in CDC_OPTIONS, both as JSON objects.

Per workload: the suite creates the workload's database (PostgreSQL) and two marker tables,
starts the tool, and touches the `ready` marker every half second until the tool's record for it
arrives in Kafka (the tool now captures: nothing the workload does is missed however long the
tool takes to start). It then applies the workload through the upstream (which captures the
source truth itself), writes the `done` marker last, and reads the tool's topics until that
marker's record arrives, then to the end of every partition. Everything under the prefix is
grouped per source transaction (the protocol's `tool_record`), the markers' left out, and runs
through the same pipeline as any encoder's records. The tool is stopped (SIGTERM, then SIGKILL)
and the database dropped.

What goes wrong is the tool's finding, with the tail of its output (credentials removed): an
exit before it caught up is `encoder.no-crash`; no marker within the bound (the run's
--encoder-timeout, plus a start allowance for the first one) is `encoder.responsive`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import InfrastructureError
from ..infra.urls import redact_text
from ..model.events import CaptureStart, Workload
from .spi import ConfigurationError, EncoderInfo, EncoderKind, Record
from .tool import ToolEnv, ToolFailed, ToolHung, ToolRecord, ToolRun, group_by_transaction

TOOL_PREFIX = "tool:"
MARKER = "cc_marker"
#: How long a tool may take to start capturing (a JVM, a connector's first connection) on top of
#: the run's --encoder-timeout.
START_ALLOWANCE_S = 90.0
TOUCH_EVERY_S = 0.5
STOP_GRACE_S = 10.0
_PLACEHOLDER = re.compile(r"\{(upstream|host|port|user|password|database|kafka|registry|topic_prefix|option:[^{}]+)\}")


@dataclass(frozen=True, slots=True)
class _Server:
    dialect: str
    host: str
    port: int
    user: str
    password: str

    def url(self, database: str) -> str:
        auth = quote(self.user, safe="") + (f":{quote(self.password, safe='')}" if self.password else "")
        scheme = "postgresql" if self.dialect == "postgresql" else "mariadb"
        return f"{scheme}://{auth}@{self.host}:{self.port}" + (f"/{database}" if self.dialect == "postgresql" else "")


def _server(upstream: Any) -> _Server:
    dialect = getattr(upstream, "dialect", None)
    if dialect == "postgresql":
        i = upstream.conninfo
        return _Server(dialect, str(i.get("host", "127.0.0.1")), int(i.get("port", 5432)),
                       str(i.get("user", "postgres")), str(i.get("password") or ""))
    if dialect == "mariadb":
        e = upstream.endpoint
        return _Server(dialect, e.host, e.port, e.user, e.password or "")
    raise InfrastructureError("--tool-cmd needs a database server upstream: --upstream embedded-postgres, "
                              "embedded-mariadb, or a postgresql:// / mariadb:// URL")


def expand(template: str, values: Mapping[str, str], options: Mapping[str, str]) -> str:
    """The command line with its placeholders filled in (values quoted for the shell); an
    unknown {option:NAME} is a configuration error."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("option:"):
            opt = name[len("option:"):]
            if opt not in options:
                raise ConfigurationError(f"--tool-cmd names {{option:{opt}}}, which is no option of this run; "
                                         f"known: {', '.join(sorted(options))}")
            return shlex.quote(options[opt])
        return shlex.quote(values[name])

    return _PLACEHOLDER.sub(one, template)


class CommandToolAdapter:
    """The tool adapter (`encoders.tool.ToolAdapter`) for a command line."""

    def __init__(self, template: str, protocol: str) -> None:
        self.template = template
        self.protocol = protocol
        self.started = False
        self.proc: subprocess.Popen[bytes] | None = None
        self.secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def start(self, upstream: Any, options: Mapping[str, str]) -> None:
        if self.started:
            return
        from ..protocols import get_protocol

        if not get_protocol(self.protocol).places_tool_records:
            raise ConfigurationError(f"protocol {self.protocol} cannot place a tool's records in their source "
                                     "transactions (no tool_record): --tool-cmd is not available for it")
        upstream.start()
        _server(upstream)
        self.started = True

    def stop(self) -> None:
        self._kill()

    # -- one workload ---------------------------------------------------------------------------

    def run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float,
            env: ToolEnv) -> ToolRun:
        with self._lock:  # one tool process at a time per adapter
            return self._run(upstream, workload, options, timeout, env)

    def _run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float,
             env: ToolEnv) -> ToolRun:
        from ..protocols import get_protocol

        suite = get_protocol(self.protocol)
        if not env.kafka.get("bootstrap.servers"):
            raise ConfigurationError("a tool writes to Kafka itself: run it with a Kafka (the default embedded one, "
                                     "--kafka embedded, or kafka://host:port), not the in-memory log")
        server = _server(upstream)
        tag = uuid.uuid4().hex[:10]
        # The unit's own prefix with a `t` before it: apart from the run's replayed topics, and in
        # the run-prefix form (`…c<combo>w<shard>-`) a later `check` of these topics recognises.
        prefix = f"t{env.topic_prefix}" if env.topic_prefix else f"t{tag}c0w0-"
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        pg = server.dialect == "postgresql"
        database = upstream.take_database() if pg else f"{MARKER}_{tag}"
        schema = MARKER if pg else database
        admin = upstream.connect(database) if pg else upstream.endpoint.connect()
        execute = _executor(admin, pg)
        log = tempfile.NamedTemporaryFile(prefix="cdc-conformance-tool-", suffix=".log", delete=False)  # noqa: SIM115
        log_path = Path(log.name)
        self.secrets = tuple(s for s in (server.password, *(v for k, v in env.kafka.items() if "password" in k
                                                              or "secret" in k)) if s)
        reader: _Reader | None = None
        try:
            execute(f"CREATE SCHEMA {schema}" if pg else f"CREATE DATABASE `{database}`")
            execute(f"CREATE TABLE {schema}.ready (id integer PRIMARY KEY, n integer NOT NULL)")
            execute(f"CREATE TABLE {schema}.done (id integer PRIMARY KEY)")
            execute(f"INSERT INTO {schema}.ready VALUES (1, 0)")
            values = {"upstream": server.url(database), "host": server.host, "port": str(server.port),
                      "user": server.user, "password": server.password, "database": database,
                      "kafka": env.kafka["bootstrap.servers"], "registry": env.registry_url or "",
                      "topic_prefix": prefix}
            argv = shlex.split(expand(self.template, values, options))
            tool_env = {**os.environ, **{f"CDC_{k.upper()}": v for k, v in values.items()},
                        "CDC_KAFKA_CONFIG": json.dumps(dict(env.kafka)), "CDC_OPTIONS": json.dumps(dict(options))}
            reader = _Reader(env.kafka, prefix)
            is_marker = functools.partial(_is_marker, schema)

            def wait_for(table: str, bound: float, touch: bool) -> ToolFailed | ToolHung | None:
                deadline = time.monotonic() + bound
                next_touch = 0.0
                while True:
                    if touch and time.monotonic() >= next_touch:
                        execute(f"UPDATE {schema}.ready SET n = n + 1 WHERE id = 1")
                        next_touch = time.monotonic() + TOUCH_EVERY_S
                    for r in reader.poll(0.2):
                        place = suite.tool_record(r, options, env.registry)
                        if place is not None and place.table == (schema, table):
                            return None
                    assert self.proc is not None
                    code = self.proc.poll()
                    if code is not None:
                        return ToolFailed(f"the tool exited with status {code} before it delivered the {table} "
                                          f"marker ({len(reader.records)} records read)", self.log_tail(log_path))
                    if time.monotonic() > deadline:
                        return ToolHung(f"the tool did not deliver the {table} marker within {bound:g} s "
                                        f"({len(reader.records)} records read)", self.log_tail(log_path))

            def outcome(captured: Any, problem: ToolFailed | ToolHung | None) -> ToolRun:
                # Grouped with their partitions (each one's log order), replayed without them: the
                # run's topics have the run's partition count, and the sink places each record by
                # its key as the protocol's producer would.
                read = reader.records if reader is not None else []
                batches = group_by_transaction(
                    captured, read, lambda r: suite.tool_record(r, options, env.registry) or ToolRecord(), is_marker)
                batches = [[Record(r.topic[len(prefix):], r.key, r.value, None, r.headers) for r in b]
                           for b in batches]
                return ToolRun(captured, batches, problem, seconds)

            problem: ToolFailed | ToolHung | None = None

            def start() -> None:
                nonlocal problem
                try:
                    self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                                 stderr=subprocess.STDOUT, env=tool_env, start_new_session=True)
                except OSError as e:
                    raise ConfigurationError(f"--tool-cmd could not start {argv[0]!r}: {e.strerror}") from None
                problem = wait_for("ready", timeout + START_ALLOWANCE_S, touch=True)
                seconds["tool start"] = time.perf_counter() - t0
                if problem is not None:
                    raise _NotReady

            # The tool starts where the workload says (its CaptureStart: on a database with rows,
            # which it may read first), else before the first event.
            later = any(isinstance(e, CaptureStart) for e in workload.events)
            try:
                if not later:
                    start()
                t1 = time.perf_counter()
                if pg:
                    captured = upstream.run_workload(workload, database=database, foreign_schemas=(schema,),
                                                     on_capture_start=start if later else None)
                else:
                    captured = upstream.run_workload(workload, on_capture_start=start if later else None)
            except _NotReady:
                # The tool never got ready: only its finding (no source truth to judge).
                from ..upstream.base import Captured

                return ToolRun(Captured(workload, workload, None), [[] for _ in workload.events], problem, seconds)
            execute(f"INSERT INTO {schema}.done VALUES (1)")
            seconds["apply"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            problem = wait_for("done", timeout, touch=False)
            seconds["catch up"] = time.perf_counter() - t2
            if problem is None:
                reader.drain(timeout)
            seconds["drain"] = time.perf_counter() - t2 - seconds["catch up"]
            return outcome(captured, problem)
        finally:
            self._kill()
            if reader is not None:
                reader.close()
            log.close()
            with contextlib.suppress(Exception):
                log_path.unlink()
            _drop(upstream, admin, database, pg)

    # -- the process ----------------------------------------------------------------------------

    def _kill(self) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)

    def log_tail(self, path: Path, lines: int = 25) -> str:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        out = "\n".join(text[-lines:])
        for s in self.secrets:
            out = out.replace(s, "***")
        return redact_text(out)


class _NotReady(Exception):
    """The tool did not deliver its ready marker (the problem says why)."""


def _is_marker(schema: str, table: tuple[str, str]) -> bool:
    return table[0] == schema


def _executor(conn: Any, pg: bool) -> Any:
    if pg:
        return conn.execute

    def run(sql: str) -> None:
        with conn.cursor() as cur:
            cur.execute(sql)

    return run


def _drop(upstream: Any, admin: Any, database: str, pg: bool) -> None:
    """The workload's database goes, with any replication slot the tool left on it."""
    with contextlib.suppress(Exception):
        if pg:
            admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                          "WHERE database = current_database() AND NOT active")
        else:
            with admin.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
    with contextlib.suppress(Exception):
        admin.close()
    if pg:
        with contextlib.suppress(Exception):
            drop = upstream.connect()
            drop.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            drop.close()


class _Reader:
    """Reads every partition of every topic under `prefix` from its start, in log order per
    partition, picking up topics as the tool creates them."""

    def __init__(self, kafka: Mapping[str, str], prefix: str) -> None:
        from confluent_kafka import Consumer

        self.prefix = prefix
        self.kafka = dict(kafka)
        self.consumer = Consumer({**kafka, "group.id": f"cc-tool-reader-{uuid.uuid4().hex}",
                                  "enable.auto.commit": False, "log_level": 0})
        self.assigned: set[tuple[str, int]] = set()
        self.records: list[Record] = []
        self.next_listing = 0.0

    def _refresh(self, force: bool = False) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        if not force and time.monotonic() < self.next_listing:
            return
        self.next_listing = time.monotonic() + 1.0
        try:
            md = self.consumer.list_topics(timeout=5)
        except Exception:  # noqa: BLE001 - a slow listing: next time
            return
        new = [TopicPartition(t, p, OFFSET_BEGINNING) for t, tm in md.topics.items() if t.startswith(self.prefix)
               for p in tm.partitions if (t, p) not in self.assigned]
        if new:
            self.consumer.incremental_assign(new)
            self.assigned.update((tp.topic, tp.partition) for tp in new)

    def poll(self, timeout: float) -> list[Record]:
        self._refresh()
        if not self.assigned:
            time.sleep(timeout)
            return []
        out = []
        for m in self.consumer.consume(1000, timeout):
            if m.error() is not None:
                continue  # end of partition and the like: the reader keeps going
            topic = m.topic()
            assert topic is not None
            raw = m.headers() or []
            headers = tuple((str(k), v.encode() if isinstance(v, str) else v)
                            for k, v in (raw.items() if isinstance(raw, dict) else raw))
            r = Record(topic, m.key(), m.value(), m.partition(), headers=headers, timestamp=m.timestamp()[1],
                       offset=m.offset())
            out.append(r)
        self.records.extend(out)
        return out

    def drain(self, timeout: float) -> None:
        """Read on to the end of every partition as it is now (what the tool wrote before the
        marker, on other partitions)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

        self._refresh(force=True)
        deadline = time.monotonic() + timeout
        ends: dict[tuple[str, int], int] = {}
        if self.assigned:
            # One request for every partition's end (a watermark query per partition costs
            # half a second each against the embedded cluster).
            admin = AdminClient({**self.kafka, "log_level": 0})
            futures = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest()  # type: ignore[no-untyped-call]
                                          for t, p in self.assigned},
                                         request_timeout=max(1.0, timeout))
            for tp, f in futures.items():
                with contextlib.suppress(Exception):
                    ends[(tp.topic, tp.partition)] = f.result().offset
        seen: dict[tuple[str, int], int] = {}
        for r in self.records:
            key = (r.topic, r.partition or 0)
            seen[key] = max(seen.get(key, -1), r.offset if r.offset is not None else -1)
        while time.monotonic() < deadline and any(seen.get(k, -1) + 1 < end for k, end in ends.items()):
            for r in self.poll(0.2):
                key = (r.topic, r.partition or 0)
                seen[key] = max(seen.get(key, -1), r.offset if r.offset is not None else -1)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.consumer.close()


def tool_encoder(command: str, *, protocol: str) -> EncoderInfo:
    """An EncoderInfo that runs `command` as a whole CDC tool (what `--tool-cmd` gives)."""
    from ..protocols import get_protocol

    suite = get_protocol(protocol)
    if not command.strip():
        raise ConfigurationError("the tool command is empty")
    if not suite.places_tool_records:
        raise ConfigurationError(f"protocol {protocol} cannot place a tool's records in their source transactions "
                                 "(it has no tool_record): --tool-cmd is not available for it")
    ref = suite.reference()
    shown = redact_text(command)
    return EncoderInfo(name=TOOL_PREFIX + command, protocol=protocol, kind=EncoderKind.EXTERNAL, factory=ref.factory,
                       description=f"a whole CDC tool, run per workload: {shown}", bounds_own_calls=True,
                       tool=functools.partial(CommandToolAdapter, command, protocol))
