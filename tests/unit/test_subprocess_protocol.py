"""The subprocess encoder protocol's messages: published schemas, the event form, the server end."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema_rs
import pytest
from helpers import shape_with

from conformance.encoders import Record, wire
from conformance.encoders.wire import Capabilities, Handshake, Implementation, MessageInvalid
from conformance.model.events import DdlKind
from conformance.model.serde import EventReader, EventWriter
from conformance.protocols import get_protocol
from conformance.strategies import sample_workload

DDL_SHAPE = shape_with(ddl_rate=0.3, transactions=(4, 12), ddl_kinds=(
    DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN, DdlKind.TRUNCATE_TABLE, DdlKind.RENAME_TABLE))


def test_every_message_has_a_published_schema_that_is_valid_json_schema() -> None:
    names = wire.schema_names()
    for cmd in wire.COMMANDS:
        assert f"{cmd}.request" in names and f"{cmd}.reply" in names
    assert {"error.reply", "record", "event", "common", "request"} <= set(names)
    for n in names:
        doc = wire.schema(n)
        jsonschema_rs.meta.validate(doc)
        assert doc["$id"] == wire.SCHEMA_BASE + n
        wire.validator(n)  # every reference resolves (offline)


def test_the_requests_the_suite_builds_follow_their_schemas() -> None:
    reqs = [wire.start_request(1),
            wire.open_request(2, now=1.5, protocol="ticdc-simple", options={"a": "b"}, partitions=3,
                              topic_prefix="p-", time_zone="UTC", registry_url=None),
            wire.tick_request(4, now=2.0), wire.close_request(5)]
    for r in reqs:
        wire.validate(f"{r['cmd']}.request", r)
        wire.validate("request", r)
    with pytest.raises(MessageInvalid, match="partitions"):
        wire.validate("open.request", {**reqs[1], "partitions": 0})
    with pytest.raises(MessageInvalid):
        wire.validate("request", {"cmd": "explode", "id": 1})


def test_events_travel_one_at_a_time_and_read_back_identical() -> None:
    """The event form is the workload file's entries: what the writer sends (with each table
    version once) validates against the schema and reads back as the same events."""
    sent = 0
    for shard in range(40):
        w = sample_workload("events", shard, DDL_SHAPE)
        writer, reader = EventWriter(), EventReader()
        seen: set[str] = set()
        for i, e in enumerate(w.events):
            ev, tables = writer.write(e)
            req = wire.encode_request(i + 3, now=1.0, event=ev, tables=tables)
            wire.validate("encode.request", req)
            refs = [t["ref"] for t in tables]
            assert not seen & set(refs), "a table version is sent once"
            seen |= set(refs)
            back = json.loads(wire.dumps(req))
            assert reader.read(back["event"], back["tables"]) == e
            sent += 1
    assert sent > 300


def test_a_reference_to_a_table_never_sent_is_an_error() -> None:
    from conformance.model.serde import WorkloadFormatError

    with pytest.raises(WorkloadFormatError, match="unknown table reference"):
        EventReader().read({"ddl": {"kind": "drop_table", "commit_ts": 1, "sql": "DROP TABLE t", "table": None,
                                    "pre_table": "7@1:t"}})


def test_decimals_are_written_in_plain_notation() -> None:
    from decimal import Decimal

    from conformance.model.serde import value_from_json, value_to_json
    from conformance.model.types import Kind, SqlType

    t = SqlType(Kind.DECIMAL, precision=30, scale=10)
    for text in ("0.0000000001", "-0.0000000000", "12345678901234567890.1234567890"):
        v = Decimal(text)
        assert value_to_json(t, v) == text
        assert value_from_json(t, value_to_json(t, v)).as_tuple() == v.as_tuple()


def test_records_and_replies_round_trip() -> None:
    recs = [Record("t", None, b"\x00\xff", 2), Record("t", b"k", None, None, (("h", b"v"), ("h", None)), 1234)]
    reply = wire.records_reply(7, recs)
    wire.validate("encode.reply", reply)
    assert [wire.record_from_json(r) for r in reply["records"]] == recs
    with pytest.raises(MessageInvalid, match="base64"):
        wire.record_from_json({"topic": "t", "key": None, "value": "a!b="})
    wire.validate("error.reply", wire.error_reply(3, "encoder", "boom", "trace"))
    with pytest.raises(MessageInvalid):
        wire.validate("error.reply", wire.error_reply(3, "panic", "boom"))
    with pytest.raises(MessageInvalid, match="partiton"):
        wire.validate("encode.reply", {"id": 1, "records": [{"topic": "t", "key": None, "value": None, "partiton": 1}]})


def test_handshake_and_capabilities() -> None:
    caps = Capabilities({"encoding-format": ("json",), "topic": None}, registers_schemas=False, needs_ticks=True)
    hs = Handshake(1, Implementation("x", "1.0", "go"), "ticdc-simple", caps)
    msg = hs.to_json(1)
    wire.validate("start.reply", msg)
    assert Handshake.from_json(msg) == hs
    defaults = {o.name: o.default for o in get_protocol("ticdc-simple").options}
    assert caps.unsupported({"encoding-format": "json", "topic": "anything", "max-message-bytes": "10485760"},
                            defaults) == []
    bad = caps.unsupported({"encoding-format": "avro", "max-message-bytes": "5", "profile": "docs"}, defaults)
    assert bad == ["encoding-format=avro (supported: json)",
                   "max-message-bytes=5 (only the default, '10485760', is supported)"]
    with pytest.raises(MessageInvalid, match="needs_ticks"):
        wire.validate("start.reply", {**msg, "capabilities": {"options": {}, "registers_schemas": False}})


def serve(lines: list[str], encoder: str = "ticdc-simple/reference") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "conformance.encoders.serve", "--encoder", encoder],
                          input="".join(line + "\n" for line in lines).encode(), capture_output=True, timeout=60)


def test_serve_speaks_the_protocol_and_reports_failures_as_error_replies() -> None:
    w = sample_workload(3, 0)
    writer = EventWriter()
    ev, tables = writer.write(w.events[0])
    lines = [json.dumps(wire.start_request(1)),
             json.dumps(wire.open_request(2, now=1e9, protocol="ticdc-simple", options={"encoding-format": "json"},
                                          partitions=3, topic_prefix="p-", time_zone="UTC", registry_url=None)),
             json.dumps(wire.encode_request(3, now=1e9, event=ev, tables=tables)),
             json.dumps(wire.encode_request(4, now=1e9, event={"ddl": {"kind": "drop_table", "commit_ts": 5,
                                                                       "sql": "x", "table": None,
                                                                       "pre_table": "9@9:nowhere"}}, tables=[])),
             json.dumps({"cmd": "tick", "id": 5}),  # no `now`: breaks the request schema
             json.dumps(wire.close_request(6))]
    done = serve(lines)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(x) for x in done.stdout.decode().splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5, 6]
    wire.validate("start.reply", replies[0])
    assert replies[0]["protocol"] == "ticdc-simple" and replies[0]["implementation"]["name"] == "ticdc-simple/reference"
    wire.validate("open.reply", replies[1])
    wire.validate("encode.reply", replies[2])
    assert replies[3]["error"]["kind"] == "encoder" and "unknown table reference" in replies[3]["error"]["message"]
    assert replies[4]["error"]["kind"] == "encoder" and "invalid request" in replies[4]["error"]["message"]
    wire.validate("close.reply", replies[5])


def test_serve_refuses_bad_options_as_an_options_error_and_stops_on_garbage() -> None:
    done = serve([json.dumps(wire.start_request(1)),
                  json.dumps(wire.open_request(2, now=1.0, protocol="ticdc-simple",
                                               options={"time-zone": "Mars/Olympus"}, partitions=1, topic_prefix="",
                                               time_zone="UTC", registry_url=None))])
    replies = [json.loads(x) for x in done.stdout.decode().splitlines()]
    assert replies[1]["error"]["kind"] == "options" and "Mars/Olympus" in replies[1]["error"]["message"]
    done = serve(["this is not json"])
    assert done.returncode == 2 and b"not JSON" in done.stderr and done.stdout == b""
    done = serve([], encoder="ticdc-simple/nonexistent")
    assert done.returncode == 2 and b"no encoder named" in done.stderr
