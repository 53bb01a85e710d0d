"""The registry's verdict per schema change, as the run's report says it (`harness/evolution.py`)."""

from __future__ import annotations

import json

import pytest

from conformance.harness.evolution import change_label, classify, evolution
from conformance.infra.registry import open_registry

V1 = {"type": "record", "name": "Value", "namespace": "cdc.s.t",
      "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"], "default": None}]}


def schema(**changes: object) -> str:
    return json.dumps({**V1, **changes})


def test_changes_are_classified_per_record() -> None:
    added = schema(fields=[*V1["fields"], {"name": "c", "type": ["null", "long"], "default": None}])
    assert classify(json.dumps(V1), added) == [("field added", None)]
    removed = schema(fields=V1["fields"][:1])
    assert classify(json.dumps(V1), removed) == [("field removed", None)]
    widened = schema(fields=[{"name": "a", "type": "long"}, V1["fields"][1]])
    assert classify(json.dumps(V1), widened) == [("type changed", "int → long")]
    assert classify(json.dumps(V1), schema(doc="x")) == [("attributes changed", None)]


def test_each_registration_is_named_by_the_ddl_that_makes_it() -> None:
    """The compatibility table's rows (issue 15): one kind of change per registration."""
    a, b = V1["fields"]
    old = json.dumps(V1)

    def label(*fields: object) -> str:
        return change_label(old, schema(fields=list(fields)))

    assert label(a, b, {"name": "c", "type": ["null", "long"], "default": None}) == "column added (nullable)"
    assert label(a, b, {"name": "c", "type": "long", "default": 0}) == "column added (NOT NULL, with default)"
    assert label(a, b, {"name": "c", "type": "long"}) == "column added (NOT NULL, no default)"
    assert label(a) == "column dropped"
    assert label(a, {**b, "name": "b2"}) == "column renamed"
    assert label({"name": "a", "type": "long"}, b) == "type widened"
    assert label(a, {"name": "b", "type": ["null", "long"], "default": None}) == "type changed"
    assert change_label(schema(fields=[{"name": "a", "type": "double"}]),
                        schema(fields=[{"name": "a", "type": "float"}])) == "type narrowed"
    assert label({"name": "a", "type": ["null", "int"], "default": None}, b) == "column made nullable"
    assert label(a, {"name": "b", "type": "string"}) == "column made NOT NULL"
    assert label({"name": "a", "type": "int", "default": 7}, b) == "default changed"
    assert label(a, b) == "attributes changed"
    # A name an earlier version had with another type, re-added after the drop:
    assert change_label(schema(fields=[a]), schema(fields=[a, {"name": "b", "type": ["null", "long"], "default": None}]),
                        [old]) == "dropped name re-added (another type)"
    assert label({"name": "a", "type": "long"}, {"name": "c", "type": "string"}) == "several changes at once"


def test_the_note_counts_accepted_changes_and_names_the_level() -> None:
    with open_registry("embedded://") as reg:
        reg.register("r1c0w0-cdc.s.t-value", json.dumps(V1))
        reg.register("r1c0w0-cdc.s.t-value", schema(fields=[*V1["fields"], {"name": "c", "type": ["null", "long"],
                                                                             "default": None}]))
        reg.register("r1c1w0-cdc.s.t-value", json.dumps(V1))  # another combination
        ev = evolution(reg, "r1c0w")
        assert (ev.subjects, ev.versions, dict(ev.changes)) == (1, 1, {"field added": 1})
        note = ev.note()
        assert note is not None and "BACKWARD" in note and "1 schema change(s)" in note and "field added 1" in note
        assert evolution(reg, "r1c1w").note() is None  # one version: no change


def test_a_change_the_level_forbids_is_the_registrys_divergence() -> None:
    required = schema(fields=[*V1["fields"], {"name": "c", "type": "long"}])  # no default: BACKWARD forbids
    with open_registry("embedded://") as reg:
        reg.register("r2c0w0-cdc.s.t-value", json.dumps(V1))
        reg.set_compatibility("NONE", "r2c0w0-cdc.s.t-value")
        reg.register("r2c0w0-cdc.s.t-value", required)
        reg.set_compatibility("BACKWARD", "r2c0w0-cdc.s.t-value")  # as if the registry had ignored its level
        note = evolution(reg, "r2c0w").note()
        assert note is not None and "the registry's divergence" in note and "r2c0w0-cdc.s.t-value v2" in note


def test_the_driver_reads_the_embedded_registry_without_sockets(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """After a run the driver reads its embedded registry through the server's handler: the same
    notes and answers (errors included) as over HTTP, and no request over a socket."""
    from conformance.infra.registry import RegistryClient, SubjectNotFound, VersionNotFound

    required = schema(fields=[*V1["fields"], {"name": "c", "type": "long"}])
    with open_registry("embedded://") as reg:
        reg.register("r3c0w0-cdc.s.t-value", json.dumps(V1))
        reg.register("r3c0w0-cdc.s.t-value", schema(fields=[*V1["fields"], {"name": "c", "type": ["null", "long"],
                                                                             "default": None}]))
        reg.register("r3c0w1-cdc.s.t-value", json.dumps(V1))
        reg.set_compatibility("NONE", "r3c0w1-cdc.s.t-value")
        reg.register("r3c0w1-cdc.s.t-value", required)
        reg.set_compatibility("BACKWARD", "r3c0w1-cdc.s.t-value")
        inner = reg.in_process()
        assert inner is not reg and inner.server is reg.server

        def no_socket(*a: object, **k: object) -> None:
            raise AssertionError("a request over a socket")

        over_http = evolution(reg, "r3c0w")
        monkeypatch.setattr(RegistryClient, "_acquire", no_socket)
        assert evolution(inner, "r3c0w") == over_http
        assert over_http.note() is not None and "divergence" in str(over_http.note())
        assert inner.subjects() == sorted({"r3c0w0-cdc.s.t-value", "r3c0w1-cdc.s.t-value"})
        assert inner.version("r3c0w1-cdc.s.t-value", 2).schema == required
        assert inner.get_compatibility("r3c0w1-cdc.s.t-value") == "BACKWARD"
        with pytest.raises(SubjectNotFound, match="refused GET /subjects/nope/versions"):
            inner.versions("nope")
        with pytest.raises(VersionNotFound):
            inner.version("r3c0w0-cdc.s.t-value", 9)
        monkeypatch.undo()
        with pytest.raises(SubjectNotFound, match="refused GET /subjects/nope/versions"):
            reg.versions("nope")
    other = RegistryClient("http://127.0.0.1:1")
    assert other.in_process() is other  # not an embedded registry of this process: itself
