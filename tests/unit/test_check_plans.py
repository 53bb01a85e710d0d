"""Record plans (`protocols.base.CheckerBase`) change how often a check runs, never what it says.

A checker decides the cached and gated record checks once per kind of record and counts them
for the others. These tests hold that to the plain path, record by record, over the reference
and every in-memory mutant of each protocol with gated or cached checks, in both modes (a run's
encode stage, with the workload; a capture, without):

* every gate that says "not applicable" says exactly what the check itself answers;
* the tally with plans equals, count for count and finding for finding, the tally without.

And a finding that replays for many records must read the same in each (no object addresses).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from helpers import encode, protocol_shape

from conformance.checks import Scope
from conformance.checks.common import ENCODER_RESPONSIVE
from conformance.checks.registry import Location, NotApplicable
from conformance.checks.results import Tally
from conformance.encoders import EncoderKind, all_encoders
from conformance.harness.check import capture_tally
from conformance.infra.inprocess import InProcessRegistry
from conformance.protocols import all_checks, all_protocols, get_protocol
from conformance.protocols.base import CAPTURE
from conformance.strategies import sample_workload

PLANNED = [p.name for p in all_protocols()
           if any(c.gate is not None or c.cache_key is not None for c in all_checks(p.name) if c.scope is Scope.RECORD)]
# In memory: the reference and the mutants (not those that need a broker), no whole external tool.
ENCODERS = [(p, e.name, dict(e.needs_options)) for p in PLANNED for e in all_encoders(p)
            if e.kind is EncoderKind.REFERENCE or (e.kind is EncoderKind.MUTANT and not e.needs_broker)]
# Mutants that hang: a short guard, as the kill-list test gives them (the records before the hang count).
HANGS = {e.name for p in PLANNED for e in all_encoders(p) if e.catches == ENCODER_RESPONSIVE}
# Options under which more record checks and record shapes take part (control records, checksums).
EXTRA = {"ticdc-avro": [{"enable-tidb-extension": "true", "avro-enable-watermark": "true"},
                        {"enable-tidb-extension": "true", "integrity-check-level": "correctness"}],
         "ticdc-simple": [{"encoding-format": "avro"}],
         "debezium": [{"profile": "avro"}]}


def _records(protocol: str, encoder: str, options: dict[str, str]) -> tuple[list[Any], Any]:
    registry = InProcessRegistry()
    out: list[Any] = []
    for shard in range(2):
        w = sample_workload("plans", shard, protocol_shape(protocol))
        out += encode(encoder, options, w, protocol=protocol, registry=registry, topic_prefix=f"p{shard}-",
                      timeout=1.0 if encoder in HANGS else 10.0)
    return out, registry


def _capture(protocol: str, options: dict[str, str], registry: Any, records: list[Any], *, plans: bool,
             ) -> tuple[Tally, Any]:
    suite = get_protocol(protocol)
    tally = capture_tally(suite, "test")
    checker = suite.checker(suite.resolve_options(options), registry, tally, CAPTURE)
    if not plans:
        checker._plan_keys = ()  # type: ignore[attr-defined]
    for r in records:
        checker.check_record(r, Location(topic=r.topic, partition=r.partition, offset=r.offset))
    checker.finish()
    return tally, checker


def _as_json(tally: Tally) -> list[dict[str, Any]]:
    return [t.to_json() for t in tally]


@pytest.mark.parametrize(("protocol", "encoder", "needs"), ENCODERS, ids=[e for _p, e, _o in ENCODERS])
def test_plans_change_no_count_and_gates_answer_as_their_checks(protocol: str, encoder: str,
                                                                needs: dict[str, str]) -> None:
    suite = get_protocol(protocol)
    option_sets = [needs, *({**o, **needs} for o in EXTRA.get(protocol, []))]
    gated = 0
    for options in option_sets:
        try:
            resolved = suite.resolve_options(options)
        except Exception:  # noqa: BLE001 - a mutant's options that contradict an extra set
            continue
        records, registry = _records(protocol, encoder, options)
        planned, checker = _capture(protocol, options, registry, records, plans=True)
        plain, _ = _capture(protocol, options, registry, records, plans=False)
        assert _as_json(planned) == _as_json(plain)
        # Every gate against its check, on every record.
        probe = suite.checker(resolved, registry, capture_tally(suite, "test"), CAPTURE)
        for r in records:
            ev = probe.evidence(r, Location(topic=r.topic, partition=r.partition, offset=r.offset))  # type: ignore[attr-defined]
            for s in checker.record_specs:
                if s.gate is None:
                    continue
                na = s.gate(ev)
                if na is not None:
                    gated += 1
                    assert isinstance(na, NotApplicable)
                    assert s.run(ev) == [na], (s.id, r.topic, r.offset)
    if any(s.gate is not None for s in checker.record_specs):
        assert gated, "no gate said not-applicable: the test exercised nothing"


def test_a_run_with_plans_counts_what_one_without_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encode stage of a run (records checked against the workload) too."""
    from helpers import counts, run_encoder

    from conformance.protocols import base

    for protocol in PLANNED:
        for encoder in (get_protocol(protocol).reference().name, *[e.name for e in all_encoders(protocol)
                                                                   if e.kind is EncoderKind.MUTANT][:6]):
            with_plans = counts(run_encoder(encoder, workloads=6, seed=11, protocol=protocol))
            with monkeypatch.context() as m:
                m.setattr(base.CheckerBase, "_plan", _no_plan)
                without = counts(run_encoder(encoder, workloads=6, seed=11, protocol=protocol))
            assert with_plans == without, (protocol, encoder)


def _no_plan(self: Any, key: Any, evidence: Any) -> None:
    for s in self.record_specs:
        self.tally.evaluate(s, evidence)


def test_a_truncated_body_reads_the_same_in_every_record() -> None:
    """fastavro names the stream object (`<_io.BytesIO object at 0x…>`) when a double is cut
    short: the finding must not carry the address, or one defect becomes a finding per record."""
    import json

    from conformance.checks.registry import Location
    from conformance.encoders.spi import Record

    schema = {"type": "record", "name": "t", "namespace": "default.db",
              "fields": [{"name": "d", "type": {"type": "double", "connect.parameters": {"tidb_type": "DOUBLE"}}}]}

    class OneSchema:
        def schema_by_id(self, i: int) -> str:
            if i != 1:
                raise KeyError(i)
            return json.dumps(schema)

        def subjects_for_id(self, i: int) -> list[tuple[str, int]]:
            return [("t-value", 1), ("t-key", 1)]

    suite = get_protocol("ticdc-avro")
    tally = capture_tally(suite, "test")
    checker = suite.checker(suite.resolve_options({}), OneSchema(), tally, CAPTURE)
    truncated = b"\x00\x00\x00\x00\x01" + b"\x00\x00\x00"  # 3 of a double's 8 bytes
    for offset in range(4):
        checker.check_record(Record("t", truncated, truncated + bytes([offset]), 0, (), None, offset),
                             Location(topic="t", partition=0, offset=offset))
    checker.finish()
    body = tally.checks["ticdc-avro.framing.body"]
    assert body.failed == 4
    messages = {f.message for f in body.failures.values()}
    assert all(" at 0x" not in m for m in messages), messages
    assert any("does not decode" in m for m in messages), messages


def test_avro_schema_checks_plan_by_what_they_read() -> None:
    """Debezium's Avro schema checks are decided once per plan key (`avro_parts_key`: each Avro
    part's schema id, whether it resolved, whether it decoded; and, for the subject, the topic):
    a record that does not decode under an id others decode under, and one moved to another topic
    under the same ids, are counted as the plain path judges them."""
    from conformance.encoders.spi import Record

    options = {"profile": "avro"}
    records, registry = _records("debezium", "debezium/reference", options)
    rows = [r for r in records if r.value is not None and r.key is not None and r.value[:1] == b"\0"]
    assert len(rows) > 3
    bad = [Record(topic=r.topic, partition=r.partition, offset=(r.offset or 0) + 10_000, key=r.key,
                  value=r.value + b"\0", headers=r.headers, timestamp=r.timestamp) for r in rows[1:3]]
    bad.append(Record(topic=rows[3].topic, partition=rows[3].partition, offset=(rows[3].offset or 0) + 20_000,
                      key=(rows[3].key or b"") + b"\0", value=rows[3].value + b"\0", headers=rows[3].headers,
                      timestamp=rows[3].timestamp))  # no part decodes: nothing for the schema checks to judge
    moved = [Record(topic=r.topic + "-moved", partition=r.partition, offset=r.offset, key=r.key, value=r.value,
                    headers=r.headers, timestamp=r.timestamp) for r in rows[:2]]
    mixed = records + bad + moved
    planned, _ = _capture("debezium", options, registry, mixed, plans=True)
    # The plain path without the keys at all: every check run on every record (no plan, no memo).
    suite = get_protocol("debezium")
    plain = capture_tally(suite, "test")
    checker = suite.checker(suite.resolve_options(options), registry, plain, CAPTURE)
    checker._plan_keys = ()  # type: ignore[attr-defined]
    checker.record_specs = [dataclasses.replace(s, cache_key=None) for s in checker.record_specs]  # type: ignore[attr-defined]
    for r in mixed:
        checker.check_record(r, Location(topic=r.topic, partition=r.partition, offset=r.offset))
    checker.finish()
    assert _as_json(planned) == _as_json(plain)
    subject = next(t for t in planned if t.id == "debezium.avro.subject")
    assert subject.failed == len(moved)  # each moved record's schema is under its first topic's subject
