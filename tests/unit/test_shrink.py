"""Failures shrink to small, consistent workloads that still fail the same check."""

from __future__ import annotations

import json

from helpers import shape_with

from conformance.encoders import find_encoder
from conformance.harness.run import failing_checks
from conformance.harness.shrink import shrink
from conformance.infra.inprocess import InProcessRegistry
from conformance.model.dialects import workload_sql
from conformance.model.serde import workload_from_json, workload_to_json
from conformance.protocols import get_protocol
from conformance.strategies import sample_workload

P = get_protocol("ticdc-avro")


def _shrink_for(mutant: str, check: str, shape_kw: dict, options: dict | None = None):  # type: ignore[no-untyped-def]
    enc = find_encoder(f"mutant/{mutant}", "ticdc-avro")
    opts = P.resolve_options(options or {})
    reg = InProcessRegistry()
    shape = shape_with(**shape_kw)
    n = [0]

    def fails(w):  # type: ignore[no-untyped-def]
        n[0] += 1
        return check in failing_checks(P, enc, opts, reg, w)

    for shard in range(40):
        w = sample_workload("shrink", shard, shape)
        if fails(w):
            return w, shrink(w, fails), fails
    raise AssertionError("mutant never failed")


def test_shrinks_a_type_failure_to_one_insert() -> None:
    big, small, fails = _shrink_for("enum-as-index", "ticdc-avro.type.enum", {"transactions": (8, 12)})
    assert fails(small)
    assert small.size < big.size
    assert sum(len(t.changes) for t in small.transactions()) == 1
    # only the columns that matter remain: the ENUM column and indexed ones (dropping those
    # would change the table's keys)
    t = next(iter(small.transactions())).changes[0].table
    indexed = {c for ix in t.indexes for c in ix.columns}
    assert all(c.type.kind.value == "ENUM" or c.name in indexed for c in t.columns)


def test_shrinks_a_delete_failure_and_keeps_the_history_consistent() -> None:
    big, small, fails = _shrink_for("delete-with-value", "ticdc-avro.delete.tombstone", {"transactions": (8, 12)})
    changes = list(small.row_changes())
    assert changes[0].op.value == "insert" and len(changes) <= 3
    # the last change deletes a row: a DELETE, or a key-changing UPDATE (sent as DELETE + INSERT)
    assert changes[-1].op.value == "delete" or changes[-1].changes_unique_key()
    # the shrunk workload replays: it survives serialisation and renders as SQL
    again = workload_from_json(json.loads(json.dumps(workload_to_json(small))))
    assert fails(again)
    sql = workload_sql(small)
    assert ("DELETE FROM" in sql or "UPDATE" in sql) and "CREATE TABLE" in sql


def test_shrunk_workloads_keep_the_create_table_of_every_row() -> None:
    """Dropping an ADD COLUMN must not orphan the rows that used its table version (which then
    looked like a table of their own, and its CREATE TABLE was dropped as unused)."""
    from conformance.harness.shrink import undeclared_tables
    from conformance.model.events import DdlKind

    shape = {"transactions": (8, 12), "ddl_rate": 0.5, "ddl_kinds": (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN)}
    for mutant, check in (("delete-with-value", "ticdc-avro.delete.tombstone"),
                          ("defaults-dropped", "ticdc-avro.schema.default"),
                          ("time-hours-mod-24", "ticdc-avro.type.time")):
        big, small, fails = _shrink_for(mutant, check, shape)
        assert not undeclared_tables(big)
        assert undeclared_tables(small) == [], (mutant, workload_sql(small))
        assert fails(small) and "CREATE TABLE" in workload_sql(small)
