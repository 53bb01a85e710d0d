"""A whole tool's records, read back from Kafka, placed per event of the workload: grouping by
source transaction, neighbours for records without one, the markers left out, nothing dropped;
and the command line's placeholders."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.encoders.spi import ConfigurationError, Record
from conformance.encoders.tool import event_transactions, group_by_transaction
from conformance.encoders.tool_cmd import expand
from conformance.model.events import Watermark
from conformance.model.truth import AppliedEvent, LoggedEvent, SourceTruth
from conformance.protocols import get_protocol

DBZ = get_protocol("debezium")
MXS = get_protocol("maxscale-kafkacdc")


def place_dbz(r: Record) -> Any:
    return DBZ.tool_record(r, {})


def place_mxs(r: Record) -> Any:
    return MXS.tool_record(r, {})


def captured(txids: list[int | None], positions: list[str]) -> Any:
    """A captured workload of len(txids) transactions (a watermark after the first)."""
    applied = tuple(AppliedEvent(i, None, (), True, positions[i], (), txids[i]) for i in range(len(txids)))  # type: ignore[arg-type]
    logged = tuple(LoggedEvent(positions[i], i) for i in range(len(txids)))
    truth = SourceTruth("test", "postgresql", (), applied, logged)
    events = [object(), Watermark(0), *[object() for _ in txids[1:]]]
    return SimpleNamespace(truth=truth, workload=SimpleNamespace(events=events))


def dbz(topic: str, tx: int | None, lsn: int = 0, table: str = "t", schema: str = "public", *,
        status: str | None = None, partition: int = 0) -> Record:
    if status is not None:
        value: dict[str, Any] = {"status": status, "id": f"{tx}:{lsn}"}
    elif tx is None:
        return Record(topic, b'{"id": 1}', None, partition)
    else:
        value = {"op": "c", "source": {"schema": schema, "table": table, "txId": tx, "lsn": lsn}}
    return Record(topic, b'{"id": 1}', json.dumps({"schema": {}, "payload": value}).encode(), partition)


def test_event_transactions_name_each_event_by_xid_or_position() -> None:
    c = captured([7, None, 9], ["0/1", "0-1-5", "0/3"])
    assert event_transactions(c) == [7, None, "0-1-5", 9]


def test_debezium_records_go_to_their_transaction_in_lsn_order_with_begin_end_and_tombstones() -> None:
    c = captured([7, 8], ["0/1", "0/2"])
    records = [
        dbz("p.public.b", 8, 30, "b"),
        dbz("p.public.a", 7, 20, "a"), dbz("p.public.a", None),  # a delete's tombstone: with the delete
        dbz("p.public.a", 8, 25, "a"),
        dbz("p.transaction", 7, 1, status="BEGIN"), dbz("p.transaction", 7, 1, status="END"),
        dbz("p.public.a", 7, 10, "a", partition=1),
        dbz("p.cc_marker.done", 99, 5, "done", "cc_marker"), dbz("p.transaction", 99, status="BEGIN"),
    ]
    out = group_by_transaction(c, records, place_dbz, lambda t: t[0] == "cc_marker")
    assert len(out) == 3 and out[1] == []
    first = [(r.topic, json.loads(r.value)["payload"].get("source", {}).get("lsn") if r.value else "tomb")
             for r in out[0]]
    assert first == [("p.transaction", None), ("p.public.a", 10), ("p.public.a", 20), ("p.public.a", "tomb"),
                     ("p.transaction", None)]
    assert [json.loads(r.value)["payload"]["source"]["lsn"] for r in out[2]] == [25, 30]


def test_records_no_transaction_claims_are_kept_in_the_last_batch() -> None:
    c = captured([7, 8], ["0/1", "0/2"])
    records = [dbz("p.public.a", 7, 1), dbz("p.public.a", 555, 2)]
    out = group_by_transaction(c, records, place_dbz, lambda t: False)
    assert [len(b) for b in out] == [2, 0, 0]  # the stray is judged (as unexpected), not dropped


def mxs(gtid: str, n: int, table: str = "t", *, schema_record: bool = False) -> Record:
    d, s, q = gtid.split("-")
    if schema_record:
        value = {"namespace": "MaxScaleChangeDataSchema.avro", "type": "record", "name": "ChangeRecord",
                 "database": "db", "table": table, "gtid": gtid, "fields": []}
        return Record("cdc", f"{gtid}".encode(), json.dumps(value).encode(), 0)
    value = {"domain": int(d), "server_id": int(s), "sequence": int(q), "event_number": n, "timestamp": 1,
             "event_type": "insert", "table_schema": "db", "table_name": table}
    return Record("cdc", f"{gtid}:{n}".encode(), json.dumps(value).encode(), 0)


def test_maxscale_records_group_by_gtid_and_a_schema_record_goes_with_the_event_after_it() -> None:
    c = captured([None, None], ["0-1-5", "0-1-6"])
    records = [mxs("0-1-5", 1, schema_record=True), mxs("0-1-5", 1), mxs("0-1-5", 2),
               mxs("0-1-6", 1, "u", schema_record=True), mxs("0-1-6", 1, "u")]
    out = group_by_transaction(c, records, place_mxs, lambda t: False)
    assert [len(b) for b in out] == [3, 0, 2]
    assert b'"namespace"' in (out[0][0].value or b"") and b'"namespace"' in (out[2][0].value or b"")


def test_placeholders_are_filled_in_and_quoted_for_the_shell() -> None:
    values = {"upstream": "postgresql://u:p w@h:1/d", "host": "h", "port": "1", "user": "u", "password": "p w",
              "database": "d", "kafka": "127.0.0.1:9092", "registry": "", "topic_prefix": "cc-tool-x-"}
    got = expand("tool --db {upstream} --k {kafka} --p {topic_prefix}{option:topic.prefix} {unknown} {password}",
                 values, {"topic.prefix": "dbserver1"})
    assert got == "tool --db 'postgresql://u:p w@h:1/d' --k 127.0.0.1:9092 --p cc-tool-x-dbserver1 {unknown} 'p w'"
    with pytest.raises(ConfigurationError, match="no option"):
        expand("tool {option:nope}", values, {})


def test_a_primary_key_update_keeps_its_delete_before_its_create_across_partitions() -> None:
    c = captured([7], ["0/1"])

    def ev(op: str, partition: int) -> Record:
        value = {"op": op, "source": {"schema": "public", "table": "a", "txId": 7, "lsn": 40}}
        return Record("p.public.a", b"{}", json.dumps(value).encode(), partition)

    records = [ev("c", 0), ev("d", 1), Record("p.public.a", b"{}", None, 1)]
    out = group_by_transaction(c, records, place_dbz, lambda t: False)
    assert [json.loads(r.value)["op"] if r.value else "tombstone" for r in out[0]] == ["d", "tombstone", "c"]


def _message_record(prefix: str, lsn: int, txid: int | None) -> Record:
    value = {"op": "m", "ts_ms": 1, "transaction": None, "message": {"prefix": prefix, "content": "AA=="},
             "source": {"schema": "", "table": "", "txId": txid, "lsn": lsn}}
    return Record("dbz.message", json.dumps({"prefix": prefix}).encode(), json.dumps(value).encode(), 0)


def test_non_transactional_messages_go_in_lsn_order_to_the_transactions_that_emitted_them() -> None:
    """They name no transaction: each goes with the next event that emitted one, in the order the
    connector decoded them; an event before the connector's start never saw one (the real engine's
    vendor run lost a message to an event before its CaptureStart)."""
    from conformance.model.events import CaptureStart, LogicalMessage, Transaction, Workload
    from conformance.model.truth import SourceTruth
    from conformance.upstream.base import Captured

    suite = get_protocol("debezium")
    non_tx = Transaction(1, (), messages=(LogicalMessage("p", b"\x00", False),))
    w = Workload((non_tx, CaptureStart(2), non_tx, Transaction(3, ()), non_tx))
    truth = SourceTruth("pg", "postgresql", (), (), ())
    late, early = _message_record("p", 200, None), _message_record("p", 100, None)
    batches = group_by_transaction(Captured(w, w, truth), [late, early],
                                   lambda r: suite.tool_record(r, {"topic.prefix": "dbz"}), lambda t: False)
    assert batches == [[], [], [early], [], [late]]


def test_a_marker_row_the_snapshot_read_leaves_only_itself_out() -> None:
    """Under load a marker row can commit before the connector's snapshot begins: the snapshot reads
    it (op r, in the snapshot's transaction) and its transaction is remembered as a marker's. The
    snapshot's other rows are still the workload's (they were all dropped once: seed sweep29-connect,
    shard 11, on a loaded machine)."""
    from conformance.encoders.tool import CAPTURE_START
    from conformance.model.events import CaptureStart

    def read(table: str, schema: str = "s") -> Record:
        value = {"op": "r", "source": {"schema": schema, "table": table, "txId": 5, "lsn": 40, "snapshot": "true"}}
        return Record(f"p.{schema}.{table}", b'{"id": 1}', json.dumps({"schema": {}, "payload": value}).encode(), 0)

    c = captured([7], ["0/1"])
    c.workload.events = [CaptureStart(0, ()), *c.workload.events[:1]]
    c.truth = SourceTruth("test", "postgresql", (), (AppliedEvent(1, None, (), True, "0/1", (), 7),),  # type: ignore[arg-type]
                          (LoggedEvent("0/1", 1),))
    records = [read("a"), read("tick", "cc_marker"), read("b"), dbz("p.s.a", 7, 50, "a", "s")]
    for remembered in ((), (CAPTURE_START,)):
        out = group_by_transaction(c, records, place_dbz, lambda t: t[0] == "cc_marker", marker_txs=remembered)
        assert [r.topic for r in out[0]] == ["p.s.a", "p.s.b"], remembered
        assert [r.topic for r in out[1]] == ["p.s.a"]
