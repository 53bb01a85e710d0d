"""TiCDC Simple: the reference passes every check, every mutant is caught, captures are judged
from the log alone, consumers can join anywhere, and bad input gives findings, not tracebacks."""

from __future__ import annotations

import base64
import io
import json
import os
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest
from golden import FIXTURES
from helpers import check_capture, encode, problems, run_encoder, shape_with
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import Outcome
from conformance.encoders import EncoderKind, Record, all_encoders
from conformance.model import Kind, SqlType
from conformance.model.events import Ddl, DdlKind, Transaction
from conformance.model.values import DateTime
from conformance.protocols import all_checks, get_protocol
from conformance.protocols.ticdc_simple import codec, spec
from conformance.protocols.ticdc_simple.decoder import decode
from conformance.strategies import sample_workload

P = "ticdc-simple"
PROTOCOL = get_protocol(P)
WORKLOADS = int(os.environ.get("CONFORMANCE_REFERENCE_WORKLOADS", "200"))
DOCS = FIXTURES / "ticdc" / "docs_examples"

# Workloads with ALTER (add / drop column), RENAME and TRUNCATE between their DML.
DDL_SHAPE = shape_with(ddl_rate=0.25, transactions=(4, 14), ddl_kinds=(
    DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN, DdlKind.TRUNCATE_TABLE, DdlKind.RENAME_TABLE))
# Commits seconds apart, so that periodic bootstraps happen inside one workload.
SLOW_SHAPE = replace(DDL_SHAPE, ms_per_step=(300, 2500))

# This protocol's own mutants (the delivery mutants are tested for every protocol alike).
MUTANTS = {e.name.rsplit("/", 1)[1]: e for e in all_encoders(P) if e.kind is EncoderKind.MUTANT and e.sink == "reference"}
IN_MEMORY = sorted(MUTANTS)


def _options(needs: dict[str, str], tmp_path: Path) -> dict[str, str]:
    if "claim-check-storage-uri" in needs:
        return {**needs, "claim-check-storage-uri": f"file://{tmp_path}/claims"}
    return needs


def test_docs_vs_code_disagreements_are_listed() -> None:
    """Notes §5 for Simple: each disagreement is a profile switch or a check citing both."""
    clauses = {c.id: c.docs_vs_code for c in all_checks(P) if c.docs_vs_code}
    assert {"ticdc-simple.value.timestamp", "ticdc-simple.value.bigint-unsigned", "ticdc-simple.value.bit",
            "ticdc-simple.bootstrap.disabled", "ticdc-simple.schema.default"} <= set(clauses)
    for text in clauses.values():
        assert "docs" in text and "code" in text or "tiflow" in text
    switches = {o.name for o in PROTOCOL.options if o.kind == "profile switch"}
    assert switches == {"bootstrap-disable-rule", "avro-bit-as-string"}


# -- the reference passes ----------------------------------------------------------------------------

def _ddl_kinds_between_dml(seed: str, shape: Any, n: int) -> Counter[str]:
    """Which DDL kinds the generated workloads have between two transactions."""
    seen: Counter[str] = Counter()
    for shard in range(n):
        events = sample_workload(seed, shard, shape).events
        for i, e in enumerate(events):
            if isinstance(e, Ddl) and any(isinstance(x, Transaction) for x in events[:i]) \
                    and any(isinstance(x, Transaction) for x in events[i + 1:]):
                seen[spec.ddl_type(e.kind)] += 1
    return seen


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_reference_passes_every_check(encoding: str) -> None:
    seed = f"reference-{encoding}"
    between = _ddl_kinds_between_dml(seed, DDL_SHAPE, WORKLOADS)
    assert {"ALTER", "RENAME", "TRUNCATE"} <= set(between), between
    tally = run_encoder("reference", {"encoding-format": encoding}, workloads=WORKLOADS, seed=seed,
                        shape=DDL_SHAPE, protocol=P)
    assert problems(tally) == {}
    passed = {t.id for t in tally if t.outcome is Outcome.PASSED}
    assert len(passed) >= 40, sorted(t.id for t in tally if t.outcome is not Outcome.PASSED)
    # Every value family was judged, in both encodings.
    assert {f"ticdc-simple.value.{f}" for f in spec.Family.ALL} <= passed


EXTRA = [
    {"large-message-handle-compression": "snappy"},
    {"large-message-handle-compression": "lz4", "encoding-format": "avro"},
    {"send-bootstrap-to-all-partition": "false"},
    {"send-bootstrap-in-msg-count": "3", "send-bootstrap-interval-in-sec": "4"},
    {"send-bootstrap-in-msg-count": "3", "encoding-format": "avro", "send-bootstrap-to-all-partition": "false"},
    {"send-bootstrap-interval-in-sec": "0"},
    {"send-bootstrap-in-msg-count": "-1", "profile": "docs"},
    {"profile": "ticdc-next", "encoding-format": "avro"},
    {"time-zone": "Asia/Shanghai"},
    # 900: a handle-key-only UPDATE of a key column named with 64 CJK characters (192 bytes, in
    # data and old) and 64-character database/table names is over 600 bytes itself.
    {"large-message-handle-option": "handle-key-only", "max-message-bytes": "900"},
    {"large-message-handle-option": "claim-check", "max-message-bytes": "300", "encoding-format": "avro",
     "large-message-handle-compression": "snappy", "claim-check-storage-uri": "file://TMP"},
    {"large-message-handle-option": "claim-check", "max-message-bytes": "300", "claim-check-raw-value": "true",
     "encoding-format": "avro", "large-message-handle-compression": "snappy", "claim-check-storage-uri": "file://TMP"},
]


@pytest.mark.parametrize("options", EXTRA, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_reference_passes_with_other_options(options: dict[str, str], tmp_path: Path) -> None:
    options = {k: v.replace("TMP", str(tmp_path)) for k, v in options.items()}
    tally = run_encoder("reference", options, workloads=max(30, WORKLOADS // 5), seed="extra", shape=SLOW_SHAPE,
                        protocol=P)
    assert problems(tally) == {}
    o = spec.SimpleOptions.from_options(PROTOCOL.resolve_options(options))
    if o.large_message != "none":
        cid = f"ticdc-simple.large-message.{o.large_message}"
        assert tally.checks[cid].passed >= 5
    if not o.bootstraps_enabled:
        assert tally.checks["ticdc-simple.bootstrap.disabled"].passed > 0


# Checks that need the source to decide (values compared with the source, not only a format):
# in a capture their mutants slip through, by design, and the check says what it could not judge.
# (A normalised DECIMAL breaks the announced scale, an ENUM name is no index, a long or string
# is not the UnsignedBigint branch: those are caught from the log alone.)
NEEDS_WORKLOAD = {"watermark-ts-minus-one", "update-not-split", "columns-ordinal-order", "blob-mysql-type-text",
                  "no-synthetic-primary", "bit-default-string", "crash-on-delete", "hang-on-ddl", "text-as-base64",
                  "bootstrap-stale-schema",
                  # A tableSchema does not say which columns are virtual (notes §2.2): a virtual column
                  # in data, one left out of the schema, or a handle key over it looks consistent.
                  "virtual-column-in-data", "schema-without-virtual", "handle-key-on-virtual-index",
                  # A VECTOR's flen is the schema's own claim: only the source table knows it is -1.
                  "vector-length-omitted",
                  # The zero date is a date a server stores: only the source knows it was 2021-02-31.
                  "zero-in-date-as-zero-date"}


@pytest.mark.parametrize("name", sorted(set(IN_MEMORY) - NEEDS_WORKLOAD))
def test_mutant_is_caught_in_a_capture_too(name: str, tmp_path: Path) -> None:
    """`conformance check` on a mutant's log (no workload) fails the same check."""
    info = MUTANTS[name]
    options = PROTOCOL.resolve_options(_options(dict(info.needs_options), tmp_path))
    shape = shape_with(**dict(info.shape))
    for shard in range(60):
        records = encode(info.name, options, sample_workload(f"capture-{name}", shard, shape), protocol=P)
        tally = check_capture(records, options, protocol=P, partitions=3)
        if tally.checks[info.catches].outcome is Outcome.FAILED:
            return
    pytest.fail(f"{name} not caught by {info.catches} in a capture")


def test_reference_log_passes_as_a_capture() -> None:
    for encoding in ("json", "avro"):
        options = PROTOCOL.resolve_options({"encoding-format": encoding, "send-bootstrap-in-msg-count": "4"})
        for shard in range(40):
            records = encode("reference", options, sample_workload("capture", shard, SLOW_SHAPE), protocol=P)
            tally = check_capture(records, options, protocol=P, partitions=3)
            assert problems(tally) == {}, (encoding, shard)


# -- the consumer's rule, as a property ------------------------------------------------------------

INTERVAL_S = 4
JOIN_OPTIONS = {"send-bootstrap-interval-in-sec": str(INTERVAL_S), "send-bootstrap-in-msg-count": "10000"}


def _undecodable_late(records: list[Record], start: int, o: spec.SimpleOptions) -> list[tuple[int, int]]:
    """An independent consumer of one partition that joins at offset `start`: the DMLs it cannot
    decode more than one bootstrap interval (+ TiCDC's 5 s check period) after joining."""
    known: set[tuple[Any, Any, Any]] = set()
    joined_at: int | None = None
    late = []
    for r in records[start:]:
        m = decode(r.value, o.compression, o.avro)
        assert m.ok, m.error
        bt = m.get("buildTs")
        joined_at = bt if joined_at is None else joined_at
        if m.kind in ("DDL", "BOOTSTRAP"):
            ts = m.get("tableSchema")
            ts = ts[1] if isinstance(ts, tuple) else ts
            if ts:
                known.add((ts.get("schema", ts.get("database")), ts["table"], ts["version"]))
        elif m.kind == "DML" and (m.get("database"), m.get("table"), m.get("schemaVersion")) not in known:
            if bt - joined_at > (INTERVAL_S + 5) * 1000:
                late.append((r.offset or 0, bt - joined_at))
    return late


@settings(max_examples=60)
@given(shard=st.integers(0, 10_000), where=st.floats(0, 1), partition=st.integers(0, 2),
       encoding=st.sampled_from(["json", "avro"]))
def test_a_consumer_can_join_at_any_offset(shard: int, where: float, partition: int, encoding: str) -> None:
    options = PROTOCOL.resolve_options({**JOIN_OPTIONS, "encoding-format": encoding})
    o = spec.SimpleOptions.from_options(options)
    records = encode("reference", options, sample_workload("join", shard, SLOW_SHAPE), protocol=P)
    mine = [r for r in records if r.partition == partition]
    if not mine:
        return
    start = int(where * (len(mine) - 1))
    assert _undecodable_late(mine, start, o) == []
    # The checker agrees: the log read from `start` on is a capture that passes.
    cut = [r for r in records if r.partition != partition] + mine[start:]
    tally = check_capture(cut, options, protocol=P, partitions=3)
    assert problems(tally) == {}


def test_the_property_fails_without_periodic_bootstraps() -> None:
    """The oracle above can fail: a mutant that never repeats bootstraps is found by it."""
    options = PROTOCOL.resolve_options(JOIN_OPTIONS)
    o = spec.SimpleOptions.from_options(options)
    rng = random.Random(5)
    for shard in range(40):
        records = encode("mutant/bootstrap-count-ignored", {**options, "send-bootstrap-interval-in-sec": "100000"},
                         sample_workload("join-mutant", shard, SLOW_SHAPE), protocol=P)
        for p in range(3):
            mine = [r for r in records if r.partition == p]
            if len(mine) > 4 and _undecodable_late(mine, rng.randrange(1, len(mine) // 2), o):
                return
    pytest.fail("no late undecodable DML found for a mutant without periodic bootstraps")


# -- docs examples, Avro payloads, bad input -----------------------------------------------------------

def _capture_line(value: bytes | None, offset: int, partition: int = 0, topic: str = "tidb_simple") -> str:
    return json.dumps({"topic": topic, "partition": partition, "offset": offset, "key": None,
                       "value": base64.b64encode(value).decode() if value is not None else None})


def test_docs_examples_are_accepted_by_check(tmp_path: Path) -> None:
    from conformance.cli.main import main

    examples = [json.loads((DOCS / f"simple_{n}.json").read_text()) for n in
                ("insert", "update", "delete", "watermark", "bootstrap")]
    examples.sort(key=lambda m: m["buildTs"])
    capture = tmp_path / "docs.jsonl"
    # Snippets of a stream that had been running: a consumer that joined at offset 1000.
    capture.write_text("\n".join(_capture_line(json.dumps(m).encode(), 1000 + i) for i, m in enumerate(examples))
                       + "\n")
    report = tmp_path / "report.json"
    rc = main(["check", "--protocol", P, "--input", str(capture), "--report-json", str(report)])
    data = json.loads(report.read_text())
    failed = [c for c in data["results"] if c["outcome"] in ("failed", "errored")]
    assert rc == 0 and failed == []
    outcomes = {c["check"]: c["outcome"] for c in data["results"]}
    assert outcomes["ticdc-simple.message.fields"] == "passed"
    assert outcomes["ticdc-simple.schema.table-schema"] == "passed"


def test_docs_dml_examples_decode_with_the_bootstrap_schema() -> None:
    """With the docs' BOOTSTRAP (its table renamed back), the docs' DMLs resolve and their values
    pass the format checks."""
    boot = json.loads((DOCS / "simple_bootstrap.json").read_text())
    boot["tableSchema"]["table"] = "user"
    msgs = [boot] + [json.loads((DOCS / f"simple_{n}.json").read_text()) for n in ("insert", "update", "delete")]
    records = [Record("tidb_simple", None, json.dumps(m).encode(), 0, offset=i) for i, m in enumerate(msgs)]
    tally = check_capture(records, protocol=P)
    assert problems(tally) == {}
    for fam in ("int", "float", "text"):
        assert tally.checks[f"ticdc-simple.value.{fam}"].passed == 3


def test_avro_payloads_decode_with_fastavro_and_message_json() -> None:
    schema = fastavro.parse_schema(json.loads((FIXTURES / "ticdc" / "simple" / "message.json").read_text()))
    options = PROTOCOL.resolve_options({"encoding-format": "avro"})
    kinds: Counter[str] = Counter()
    for shard in range(20):
        for r in encode("reference", options, sample_workload("avro", shard, DDL_SHAPE), protocol=P):
            assert r.value is not None and r.value[0] == 0x16
            buf = io.BytesIO(r.value)
            name, datum = fastavro.schemaless_reader(buf, schema, None, return_record_name=True)
            assert name == "com.pingcap.simple.avro.Message" and buf.tell() == len(r.value)
            kinds[datum["type"]] += 1
    assert set(kinds) == {"WATERMARK", "BOOTSTRAP", "DDL", "DML"}


def _valid_dml(**over: Any) -> dict[str, Any]:
    m = json.loads((DOCS / "simple_insert.json").read_text())
    m.update(over)
    return m


BAD = {
    "invalid-json": (b'{"version": 1, "type": ', {}, "ticdc-simple.message.decodes"),
    "json-array": (b"[1, 2]", {}, "ticdc-simple.message.decodes"),
    "not-utf8": (b'{"x": "\xff\xfe"}', {}, "ticdc-simple.message.decodes"),
    "wrong-compression": (json.dumps(_valid_dml()).encode(), {"large-message-handle-compression": "snappy"},
                          "ticdc-simple.message.decodes"),
    "avro-without-union-index": (b"\x06\x02\x04\x00", {"encoding-format": "avro"}, "ticdc-simple.message.decodes"),
    "garbage-avro": (b"\x16\xff\xff\xff\xff\xff\xff", {"encoding-format": "avro"}, "ticdc-simple.message.decodes"),
    "unknown-type": (json.dumps(_valid_dml(type="UPSERT")).encode(), {}, "ticdc-simple.message.type"),
    "null-value": (None, {}, "ticdc-simple.message.decodes"),
    "string-commit-ts": (json.dumps(_valid_dml(commitTs="447984084414103554")).encode(), {},
                         "ticdc-simple.message.fields"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_a_finding_not_a_traceback(name: str) -> None:
    value, options, check_id = BAD[name]
    records = [Record("tidb_simple", None, value, 0, offset=7)]
    tally = check_capture(records, options, protocol=P)
    assert tally.checks[check_id].outcome is Outcome.FAILED
    assert [t.id for t in tally if t.errored] == []
    f = next(iter(tally.checks[check_id].failures.values()))
    assert f.location.offset == 7 and f.location.partition == 0


def test_truncated_avro_is_a_finding() -> None:
    options = PROTOCOL.resolve_options({"encoding-format": "avro"})
    records = encode("reference", options, sample_workload("trunc", 0, DDL_SHAPE), protocol=P)
    cut = [replace(r, value=r.value[: len(r.value) // 2]) for r in records if r.value]
    tally = check_capture(cut, options, protocol=P)
    assert tally.checks["ticdc-simple.message.decodes"].failed == len(cut)
    assert [t.id for t in tally if t.errored] == []


def test_dml_before_any_schema_names_table_partition_and_offset() -> None:
    records = [Record("tidb_simple", None, json.dumps(_valid_dml(commitTs=447984084414103554 + i)).encode(), 2,
                      offset=i) for i in range(2)]
    tally = check_capture(records, protocol=P)
    t = tally.checks["ticdc-simple.consumer.schema-known"]
    assert t.outcome is Outcome.FAILED
    f = next(iter(t.failures.values()))
    assert (f.location.topic, f.location.partition, f.location.offset, f.location.table) == \
        ("tidb_simple", 2, 0, "simple.user")
    assert "1 more" in f.message
    assert [x.id for x in tally if x.errored] == []


def test_bad_capture_through_the_cli(tmp_path: Path) -> None:
    from conformance.cli.main import main

    capture = tmp_path / "bad.jsonl"
    lines = [_capture_line(v, i) for i, (v, _, _) in enumerate(x for n, x in sorted(BAD.items()) if not x[1])]
    capture.write_text("\n".join(lines + ["not json at all"]) + "\n")
    report = tmp_path / "r.json"
    rc = main(["check", "--protocol", P, "--input", str(capture), "--report-json", str(report)])
    data = json.loads(report.read_text())
    outcomes = {c["check"]: c["outcome"] for c in data["results"]}
    assert rc == 1
    assert outcomes["ticdc-simple.message.decodes"] == "failed"
    assert outcomes["capture.record-format"] == "failed"
    assert "errored" not in outcomes.values()


# -- value rendering (notes §2.2 table) ------------------------------------------------------------

@pytest.mark.parametrize(("t", "v", "want_json", "want_avro"), [
    (SqlType(Kind.TINYINT), -128, "-128", ("long", -128)),
    (SqlType(Kind.BIGINT, unsigned=True), 18446744073709551615, "18446744073709551615",
     ("com.pingcap.simple.avro.UnsignedBigint", {"value": -1})),
    (SqlType(Kind.FLOAT), 3.140000104904175, "3.14", ("float", 3.140000104904175)),
    (SqlType(Kind.FLOAT), 1e20, "100000000000000000000", ("float", 1e20)),
    (SqlType(Kind.BIT, length=7), 0b1000001, "65", ("long", 65)),
    (SqlType(Kind.BIT, length=64), (1 << 64) - 1, "18446744073709551615", ("long", -1)),
    (SqlType(Kind.ENUM, elements=("a", "b", "c")), "b", "2", ("long", 2)),
    (SqlType(Kind.SET, elements=("a", "b", "c")), ("a", "c"), "5", ("long", 5)),
    (SqlType(Kind.VARBINARY, length=8), b"\x00\xff", "AP8=", ("bytes", b"\x00\xff")),
    (SqlType(Kind.TIMESTAMP, fsp=3), DateTime(2024, 2, 26, 4, 1, 2, 123000), {"location": "UTC",
     "value": "2024-02-26 04:01:02.123"}, ("com.pingcap.simple.avro.Timestamp",
                                           {"location": "UTC", "value": "2024-02-26 04:01:02.123"})),
    (SqlType(Kind.YEAR), 2024, "2024", ("long", 2024)),
    (SqlType(Kind.BIGINT), None, None, None),
])
def test_values_render_as_the_notes_say(t: SqlType, v: Any, want_json: Any, want_avro: Any) -> None:
    o = spec.SimpleOptions()
    assert spec.json_value(t, v, o) == want_json
    assert spec.avro_value(t, v, o) == want_avro


def test_timestamp_is_rendered_in_the_server_time_zone() -> None:
    o = spec.SimpleOptions(time_zone="Asia/Shanghai")
    got = spec.json_value(SqlType(Kind.TIMESTAMP), DateTime(2024, 1, 1, 0, 0, 0), o)
    assert got == {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00"}


@pytest.mark.parametrize("method", ["snappy", "lz4"])
def test_compression_round_trips_and_is_the_standard_format(method: str) -> None:
    import cramjam

    data = json.dumps(_valid_dml()).encode()
    packed = codec.compress(data, method)
    assert codec.decompress(packed, method) == data
    if method == "lz4":
        assert packed[:4] == b"\x04\x22\x4d\x18"  # the LZ4 frame magic number
        assert bytes(cramjam.lz4.decompress(packed)) == data
    else:
        assert bytes(cramjam.snappy.decompress_raw(packed)) == data


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_delivery_identity_agrees_with_the_workload(encoding: str) -> None:
    """What the delivery analysis expects from the workload and what it reads from the reference's
    messages are the same versions (otherwise Kafka runs would report loss and strays)."""
    from conformance.protocols.ticdc_simple import delivery

    options = PROTOCOL.resolve_options({"encoding-format": encoding})
    for shard in range(120):
        w = sample_workload("identity", shard, DDL_SHAPE)
        records = encode("reference", options, w, protocol=P)
        if not records:
            continue
        prefix = records[0].topic.removesuffix(options["topic"])
        expected = sorted((v.entity, v.match) for v in delivery.expected_versions(w, options, prefix))
        identify = delivery.identifier(options)
        seen = [x for r in sorted(records, key=lambda r: (r.partition, r.offset))
                if (x := identify(r.topic, r.value)) is not None]
        assert sorted((e, m) for e, m, _ in seen) == expected, shard


@pytest.mark.parametrize(("value", "problem"), [
    ("123.45", None), ("-0.50", None), ("0001.00", None),
    ("1234.56", "more than the column's 5 digits of precision"),
    ("-99999.9", "more than the column's 5 digits of precision"),
])
def test_capture_decimal_precision(value: str, problem: str | None) -> None:
    """In a capture (no workload), a DECIMAL(5,2) value with more digits than the column's
    precision is a finding; leading zeros do not count."""
    from conformance.protocols.ticdc_simple import spec as simple_spec
    from conformance.protocols.ticdc_simple.checks.values import format_problem
    from conformance.protocols.ticdc_simple.spec import Family

    o = simple_spec.SimpleOptions.from_options(PROTOCOL.resolve_options({}))
    assert format_problem(Family.DECIMAL, {"length": 5, "decimal": 2}, value, o, False) == problem
