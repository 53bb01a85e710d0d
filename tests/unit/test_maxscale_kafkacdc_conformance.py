"""MaxScale KafkaCDC: the reference passes every check under every option combination of the
default matrix over CONFORMANCE_REFERENCE_WORKLOADS generated MariaDB workloads (ALTER between
DML, filtered tables, MariaDB's own types and spellings), and under the other profiles and
options; every mutant is caught by the check it names (tests/unit/test_mutants.py)."""

from __future__ import annotations

import os

import pytest
from helpers import check_capture, encode, problems, protocol_shape, run_encoder, shape_with

from conformance.checks import Outcome
from conformance.model.events import Ddl, DdlKind, Transaction
from conformance.model.types import Kind
from conformance.protocols import get_protocol
from conformance.strategies import sample_workload

P = "maxscale-kafkacdc"
PROTOCOL = get_protocol(P)
WORKLOADS = int(os.environ.get("CONFORMANCE_REFERENCE_WORKLOADS", "200"))
MATRIX = PROTOCOL.matrix({})
# ALTERs between DML, in tables that match/exclude keep and leave out.
DDL = {"ddl_rate": 0.4, "ddl_kinds": (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN, DdlKind.TRUNCATE_TABLE,
                                      DdlKind.RENAME_TABLE)}
FILTER = {"match": "t", "exclude": "users|[.]t$"}
EXTRA = [
    FILTER,
    {**FILTER, "send_schema": "false"},
    {"profile": "maxscale-24.02"},
    {"profile": "maxscale-24.02", **FILTER},
    {"profile": "docs"},
    {"time-zone": "Asia/Kolkata"},
    {"read_gtid_from_kafka": "false", "topic": "cdc.events"},
]


def test_the_matrix_is_send_schema() -> None:
    assert [c["send_schema"] for c in MATRIX] == ["true", "false"]


@pytest.mark.parametrize("options", MATRIX, ids=[f"send_schema={c['send_schema']}" for c in MATRIX])
def test_reference_passes_every_check(options: dict[str, str]) -> None:
    tally = run_encoder("reference", options, workloads=WORKLOADS, seed="reference", protocol=P,
                        shape=shape_with(**DDL))
    assert problems(tally) == {}
    passed = {t.id for t in tally if t.outcome is Outcome.PASSED}
    # The run exercised the checks, not only skipped them (without schema events, the schema checks
    # have nothing to judge and schema.disabled judges every message).
    schema = options["send_schema"] == "true"
    assert len(passed) >= (40 if schema else 34), sorted(t.id for t in tally if t.outcome is not Outcome.PASSED)
    assert (f"{P}.schema.disabled" in passed) is not schema


@pytest.mark.parametrize("options", EXTRA, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_reference_passes_with_other_options(options: dict[str, str]) -> None:
    # Filtered tables at the full count too (the acceptance bar names them); the rest at a fifth.
    n = WORKLOADS if options.get("match") and "profile" not in options else max(40, WORKLOADS // 5)
    tally = run_encoder("reference", options, workloads=n, seed="extra", protocol=P, shape=shape_with(**DDL))
    assert problems(tally) == {}
    if "match" in options:
        assert tally.checks[f"{P}.event.filter"].passed > 50
        assert tally.checks[f"{P}.event.numbering"].passed > 20


def test_the_workloads_cover_what_the_issue_asks() -> None:
    """ALTER between DML, MariaDB's own types and spellings, GTIDs on every event, filtered tables."""
    shape = protocol_shape(P, shape_with(**DDL))
    alters = kinds = spelled = 0
    filtered = set()
    from conformance.protocols.maxscale_kafkacdc.spec import CdcOptions, table_id

    o = CdcOptions.from_options(FILTER)
    for shard in range(40):
        w = sample_workload("reference", shard, shape)
        events = w.events
        for i, e in enumerate(events):
            if isinstance(e, (Ddl, Transaction)):
                assert e.position is not None
            if isinstance(e, Ddl) and e.kind in (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN) and \
                    any(isinstance(x, Transaction) for x in events[:i]) and \
                    any(isinstance(x, Transaction) for x in events[i:]):
                alters += 1
            if isinstance(e, Ddl) and e.table is not None:
                kinds += sum(c.type.kind in (Kind.INET4, Kind.INET6, Kind.UUID) for c in e.table.columns)
                spelled += sum(c.type.spelling is not None for c in e.table.columns)
                if not o.passes(table_id(e.table.database, e.table.name)):
                    filtered.add(e.table.name)
    assert alters > 20 and kinds > 5 and spelled > 10 and filtered


def test_captured_output_passes_check() -> None:
    """What the reference wrote, checked as `conformance check` checks a captured topic."""
    shape = protocol_shape(P, shape_with(**DDL))
    for options in ({}, {"profile": "maxscale-24.02"}, FILTER):
        for shard in range(15):
            recs = encode("reference", options, sample_workload("capture", shard, shape), protocol=P)
            tally = check_capture(recs, options, protocol=P)
            assert problems(tally) == {}, (options, shard)
            for cid in ("schema.avro-type", "dml.columns", "value.json-type", "stream.update-pairs"):
                assert tally.checks[f"{P}.{cid}"].outcome in (Outcome.PASSED, Outcome.NOT_APPLICABLE), cid


def test_an_unsigned_value_written_negative_fails_check_alone() -> None:
    """Issue 29: a BIGINT UNSIGNED value written as -2 although the schema event says unsigned —
    `conformance check` on the capture, no workload; MaxScale 24.02's wrap (the option) accepts it."""
    import json

    from conformance.encoders.spi import Record

    shape = protocol_shape(P, shape_with(kinds=(Kind.BIGINT,), edge_rate=0.7, ddl_rate=0.0))
    for shard in range(40):
        w = sample_workload("unsigned", shard, shape)
        recs = encode("reference", {}, w, protocol=P)
        for i, r in enumerate(recs):
            doc = json.loads(r.value) if r.value else {}
            if doc.get("event_type") != "insert":
                continue
            schema = next(json.loads(x.value) for x in recs[:i] if x.value and b'"fields"' in x.value
                          and json.loads(x.value).get("table") == doc.get("table_name"))
            cols = [f["name"] for f in schema["fields"] if f.get("unsigned") is True and f.get("real_type") in
                    ("BIGINT", "bigint")]
            if not cols:
                continue
            doc[cols[0]] = -2
            edited = [*recs[:i], Record(r.topic, r.key, json.dumps(doc).encode(), r.partition, r.headers,
                                        r.timestamp, r.offset), *recs[i + 1:]]
            assert problems(check_capture(recs, {}, protocol=P)) == {}
            tally = check_capture(edited, {}, protocol=P)
            assert tally.checks[f"{P}.value.integer-range"].outcome is Outcome.FAILED, problems(tally)
            wrapped = check_capture(edited, {"bigint-unsigned": "wrap"}, protocol=P)
            assert wrapped.checks[f"{P}.value.integer-range"].outcome is Outcome.PASSED
            return
    pytest.fail("no BIGINT UNSIGNED insert in 40 workloads")
