"""TiCDC Simple's compiled fast path gives the verdicts of the checks (see test_fast_paths.py, whose
helpers these use; that file also runs every in-memory Simple mutant, on the mutant's own options,
and damaged / shuffled records).

Here: the reference's records under the option sets that change what the rules accept (compression,
bootstraps to partition 0 only or none at all, another time zone, handle-key-only and claim-check
large messages, a max-message-bytes some messages exceed), and Avro, where the fast path stays
off; the records with edited copies placed right after their original, so that each meets its
original's compiled kind (every per-record input the fast path reads, changed one at a time); and
a hypothesis property over generated workloads. Kinds compile after their first record.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import encode, protocol_shape
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fast_paths import _records, assert_parity, assert_reference_parity, check  # type: ignore[import-not-found]

from conformance.encoders.spi import Record
from conformance.protocols import get_protocol
from conformance.strategies import workloads

SIMPLE = "ticdc-simple"
OPTIONS: list[dict[str, str]] = [
    {}, {"large-message-handle-compression": "snappy"}, {"large-message-handle-compression": "lz4"},
    {"send-bootstrap-to-all-partition": "false"}, {"send-bootstrap-interval-in-sec": "0"},
    {"time-zone": "Asia/Shanghai"}, {"profile": "docs", "send-bootstrap-in-msg-count": "3"},
    {"large-message-handle-option": "handle-key-only", "max-message-bytes": "900"},
    {"large-message-handle-option": "claim-check", "max-message-bytes": "700", "claim-check-storage-uri": "file://TMP"},
    {"max-message-bytes": "700"},
]


def _options(options: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {k: v.replace("TMP", str(tmp_path)) for k, v in options.items()}


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_simple_fast_path_keeps_verdicts_under_each_option_set(options: dict[str, str], tmp_path: Path) -> None:
    options = _options(options, tmp_path)
    assert_reference_parity(SIMPLE, options)


def test_simple_fast_path_stays_off_with_avro() -> None:
    options = {"encoding-format": "avro"}
    records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, options)
    assert assert_parity(SIMPLE, options, registry, records) == 0


_VALUE_EDITS = ("1.0", "-0", "00", "1e3", "", "2024-02-30", "2024-02-29 24:00:00", "838:59:59.0000000", "[1.0]",
                "[1,2]", "[]", "18446744073709551616", "-129", "255", "0.1", "3.4028236e38", "null", "true", "{}",
                "AA==", "A", "127", "2155", "1900")


def _edits(text: str, rng: random.Random) -> list[str]:
    """Copies of a DML's text with one per-record input changed: the fixed fields (version,
    timestamps, ids, handleKeyOnly, claimCheckLocation, a field added), the rows (one value, their
    key order, not an object), and a verbatim replay."""
    obj = json.loads(text)
    if obj.get("type") not in ("INSERT", "UPDATE", "DELETE", "WATERMARK"):
        return []
    out = [text]  # a replay
    dump = lambda o: json.dumps(o, ensure_ascii=False, separators=(",", ":"))  # noqa: E731 - local shorthand

    bump = iter(range(1, 1 << 17))

    def edited(**changes: Any) -> str:
        # Another commitTs (the same physical time) unless the edit sets it: a copy equal to its
        # original in the fields a replay is told by would be judged a replay, off the fast path.
        o = dict(obj)
        if isinstance(o.get("commitTs"), int):
            o["commitTs"] += next(bump)
        for k, v in changes.items():
            if v is KeyError:
                o.pop(k, None)
            else:
                o[k] = v
        return dump(o)

    out.append(edited())  # a good copy (the test gives it a Kafka key too)
    if obj["type"] == "WATERMARK":
        for f in ("version", "buildTs", "commitTs"):
            out += [edited(**{f: -1}), edited(**{f: str(obj[f])}), edited(**{f: True}), edited(**{f: 0}),
                    edited(**{f: 2 ** 64}), edited(**{f: 1.5}), edited(**{f: None})]
        return [*out, edited(version=2), edited(buildTs=2 ** 62), edited(buildTs=obj["buildTs"] - 10 ** 9),
                edited(sql="x"), edited(database="d"), edited(commitTs=KeyError), edited() + " " * 2000]
    for f in ("version", "buildTs", "commitTs", "tableID", "schemaVersion"):
        v = obj.get(f)
        if isinstance(v, int):
            out += [edited(**{f: -1}), edited(**{f: str(v)}), edited(**{f: True}), edited(**{f: v + 1}),
                    edited(**{f: 2 ** 64})]
    # Where a field may be null, the null copy comes first: it compiles a kind the next copies meet.
    out += [edited(version=2), edited(buildTs=1), edited(buildTs=2 ** 62), edited(buildTs=obj.get("buildTs", 0) - 10 ** 9),
            edited(commitTs=(obj.get("buildTs", 0) + 10 ** 9) << 18), edited(handleKeyOnly=None),
            edited(handleKeyOnly=False), edited(handleKeyOnly=1), edited(claimCheckLocation=None),
            edited(claimCheckLocation="file:///x/y.json"), edited(sql="SELECT 1"), edited(checksum=None),
            edited(checksum=2 ** 64), edited(checksum=1.5), edited(checksum=json.loads("[" * 40 + "]" * 40)),
            edited(database=1), edited() + " " * 2000]
    for part in ("data", "old"):
        row = obj.get(part)
        if not isinstance(row, dict) or not row:
            continue
        out += [edited(**{part: None}), edited(**{part: list(row)}), edited(**{part: dict(reversed(row.items()))})]
        for name in rng.sample(sorted(row), min(3, len(row))):
            for v in rng.sample(_VALUE_EDITS, 6):
                out.append(edited(**{part: {**row, name: json.loads(v) if v in ("null", "true", "{}") else v}}))
            # Values the fast parse reads otherwise or that nest beyond what the decoder reads.
            for v in (2 ** 64, 1.5, -(2 ** 63) - 1, [[[]]], json.loads("[" * 40 + "]" * 40)):
                out.append(edited(**{part: {**row, name: v}}))
            if isinstance(row[name], str):
                out.append(edited(**{part: {**row, name: row[name] + "0"}}))
                out.append(edited(**{part: {**row, name: row[name][:-1]}}))
            if isinstance(row[name], dict):  # a TIMESTAMP
                out.append(edited(**{part: {**row, name: {**row[name], "location": "Asia/Tokyo"}}}))
                out.append(edited(**{part: {**row, name: {**row[name], "value": "1970-01-01 00:00:00"}}}))
    return out


@pytest.mark.parametrize(("options", "seed"), [({}, "edits"), ({}, "edits2"), ({}, "edits3"),
                                              ({"large-message-handle-option": "handle-key-only",
                                                "max-message-bytes": "900"}, "edits"),
                                              ({"max-message-bytes": "2000"}, "edits"),
                                              ({}, "edits-no-schemas")],
                         ids=["defaults", "defaults-2", "defaults-3", "handle-key-only", "max-message-bytes",
                              "no-schemas"])
def test_simple_fast_path_keeps_verdicts_over_edited_records(options: dict[str, str], seed: str) -> None:
    """Each edited copy follows its original, so it meets the original's compiled kind (no-schemas:
    the DDLs and BOOTSTRAPs left out, so that no DML's schema is known and no value rule runs)."""
    records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, options, seed=seed)
    if seed.endswith("no-schemas"):
        records = [r for r in records if r.value is not None
                   and json.loads(r.value).get("type") in ("INSERT", "UPDATE", "DELETE", "WATERMARK")]
    rng = random.Random(f"{seed}{options}")
    out: list[Any] = []
    for r in records:
        out.append(r)
        if r.value is None:
            continue
        texts = _edits(r.value.decode("utf-8"), rng)
        for text in texts:
            out.append(Record(r.topic, r.key, text.encode("utf-8"), r.partition, r.headers, r.timestamp, r.offset))
        if texts:  # a key, on an otherwise good copy (a replay of it: the copy itself is in `texts`)
            good = json.loads(texts[1])
            good["commitTs"] -= 1 << 17
            out.append(Record(r.topic, b"k", json.dumps(good).encode("utf-8"), r.partition, r.headers, r.timestamp,
                              r.offset))
    assert assert_parity(SIMPLE, options, registry, out) > 0


@pytest.mark.parametrize("options", [{}, {"send-bootstrap-to-all-partition": "false"}], ids=["defaults", "p0"])
def test_simple_fast_path_keeps_verdicts_over_resent_watermarks(options: dict[str, str]) -> None:
    """WATERMARKs re-sent after a restart, after later ones (duplicates, not regressions), and one
    whose commitTs is new but lower (a regression): they meet the WATERMARK kinds."""
    records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, options, seed="watermarks")
    marks = [r for r in records if r.value is not None and json.loads(r.value).get("type") == "WATERMARK"]
    assert len(marks) > 4
    assert assert_parity(SIMPLE, options, registry, records + marks[:4]) > 0
    lower = json.loads(marks[0].value)
    lower["commitTs"] -= 1
    late = Record(marks[0].topic, None, json.dumps(lower, separators=(",", ":")).encode("utf-8"), marks[0].partition)
    assert assert_parity(SIMPLE, options, registry, records + marks[:4] + [late]) > 0


def _reannounced(records: list[Any], other_partition: bool) -> list[Any]:
    """The records with, after the second DML of each table version that has two, a copy of the
    DDL or BOOTSTRAP that announced it, changed, and then a copy of that DML (a new commitTs).
    In the DML's partition: the string and binary columns announced as INT (the copy's values break the
    rule, read with the new schema); in another partition (bootstraps go to every partition, so
    the DML's partition still resolves to its own schema): no indexes, so that the topic-wide
    announced schema has no handle key (the copy's identity has no match)."""
    out: list[Any] = []
    schemas: dict[tuple[str, int, str, str, int], Any] = {}
    dmls: dict[tuple[str, int, str, str, int], int] = {}
    parts: dict[str, set[int]] = {r.topic: set() for r in records}
    for r in records:
        parts[r.topic].add(r.partition or 0)
    for r in records:
        out.append(r)
        if r.value is None:
            continue
        obj = json.loads(r.value)
        ts = obj.get("tableSchema")
        if isinstance(ts, dict):
            schemas[(r.topic, r.partition or 0, ts["schema"], ts["table"], ts["version"])] = obj
            continue
        if obj.get("type") not in ("INSERT", "UPDATE", "DELETE"):
            continue
        key = (r.topic, r.partition or 0, obj["database"], obj["table"], obj["schemaVersion"])
        dmls[key] = dmls.get(key, 0) + 1
        if dmls[key] != 2 or key not in schemas:
            continue
        again = json.loads(json.dumps(schemas[key]))
        if other_partition:
            again["tableSchema"]["indexes"] = []
            part = min((p for p in parts[r.topic] if p != key[1]), default=key[1] + 1)
        else:
            for c in again["tableSchema"]["columns"]:
                if any(t in str(c["dataType"].get("mysqlType")) for t in ("char", "text", "blob", "binary")):
                    c["dataType"] = {"mysqlType": "int"}
            part = key[1]
        out.append(Record(r.topic, None, json.dumps(again).encode("utf-8"), part, r.headers, r.timestamp, r.offset))
        obj["commitTs"] += 1
        out.append(Record(r.topic, r.key, json.dumps(obj).encode("utf-8"), r.partition, r.headers, r.timestamp,
                          r.offset))
    return out


@pytest.mark.parametrize("other_partition", [False, True], ids=["same-partition", "other-partition"])
def test_simple_fast_path_keeps_verdicts_over_reannounced_schemas(other_partition: bool) -> None:
    """A table version's schema announced again, changed, between its DMLs: the DMLs after it are
    judged, and identified, by the new one (the fast path looks its kind's schema, and its
    handle key, up again after any schema was recorded)."""
    records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, {})
    edited = _reannounced(records, other_partition)
    assert len(edited) > len(records) + 4
    fast_tally, fast_entries, accepted = check(SIMPLE, {}, registry, edited, fast=True)
    slow_tally, slow_entries, _ = check(SIMPLE, {}, registry, edited, fast=False)
    assert accepted > 0
    assert fast_entries == slow_entries
    assert fast_tally == slow_tally
    if other_partition:  # the copies meet a schema without a handle key: no match
        assert sum(e[4] is None for es in slow_entries.values() for e in es) > 4
    else:  # the copies break the INT rule
        assert any(t["check"] == "ticdc-simple.value.int" and t["counts"]["failed"] for t in slow_tally)


@settings(max_examples=20, deadline=None)
@given(workloads(protocol_shape(SIMPLE)),
       st.sampled_from([{}, {"send-bootstrap-to-all-partition": "false"}, {"time-zone": "Asia/Shanghai"}]))
def test_simple_fast_path_keeps_verdicts_over_generated_workloads(w: Any, options: dict[str, str]) -> None:
    records = encode(get_protocol(SIMPLE).reference().name, options, w, protocol=SIMPLE, topic_prefix="h-")
    assert_parity(SIMPLE, options, None, records)


# -- the fast path's value test -----------------------------------------------------------------------------

_DATA_TYPES = [{"mysqlType": t, **extra} for t, extra in [
    ("tinyint", {}), ("tinyint", {"unsigned": True}), ("int", {}), ("bigint", {}), ("bigint", {"unsigned": True}),
    ("mediumint", {"unsigned": True}), ("varchar", {}), ("float", {}), ("double", {}), ("decimal", {"length": 5, "decimal": 2}),
    ("year", {}), ("bit", {"length": 3}), ("date", {}), ("datetime", {"decimal": 3}), ("time", {}),
    ("timestamp", {}), ("vector", {"length": 2}), ("json", {}), ("enum", {"elements": ["a", "b"]}),
    ("binary", {"length": 2}), ("binary", {}), ("varbinary", {"length": 2}), ("blob", {}), ("binary", {"length": "2"}),
    ("set", {"elements": ["a", "b"]}), ("decimal", {}),
]]


_DECIMAL = st.one_of(st.from_regex(r"-?[0-9]{1,9}(\.[0-9]{1,9})?", fullmatch=True),
                   st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.45f}".rstrip("0").rstrip(".")),
                   st.floats(allow_nan=False, allow_infinity=False).map(repr))


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.from_regex(r"-?[0-9]{1,21}", fullmatch=True), st.text(max_size=12), _DECIMAL,
                 st.lists(_DECIMAL, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
                 st.binary(max_size=4).map(lambda b: base64.b64encode(b).decode()),
                 st.from_regex(r"[A-Za-z0-9+/=]{0,9}", fullmatch=True),
                 st.sampled_from([*_VALUE_EDITS, "٣", "-٣", "²", "-²", "1²", "１", "-", "--1", "+1", " 1", "1 ", "-0", "007", "16777217", "9007199254740993", "0.30000000000000004", "1e-45"]), st.integers(), st.none(),
                 st.fixed_dictionaries({"location": st.just("UTC"), "value": st.just("2024-01-01 00:00:00")})),
       st.sampled_from(_DATA_TYPES))
def test_simple_value_test_is_the_rule(v: Any, dt: dict[str, Any]) -> None:
    """Twice (the second answer from the memo): what the rule says, for every value."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, schema_family, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    fam = schema_family(dt)
    assert fam is not None
    o = SimpleOptions()
    ok = value_ok(fam, dt, o)
    want = format_problem(fam, dt, v, o, False) is None
    # As the generated code tests it (its first test inline, then the call), before the memo knows
    # the value and after.
    inlined = _inlined(value_ok(fam, dt, o))
    assert inlined(v) == want and inlined(v) == want, (fam, dt, v)
    assert ok(v) == want and ok(v) == want, (fam, dt, v)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(alphabet="ABCDab019+/=-_ \n\x00é", max_size=14),
                 st.binary(max_size=7).map(lambda b: base64.b64encode(b).decode()),
                 st.tuples(st.binary(max_size=7), st.sampled_from(["=", "==", "A", "\n", " ", "é", "-"]), st.integers(0, 12))
                 .map(lambda t: (e := base64.b64encode(t[0]).decode())[:t[2]] + t[1] + e[t[2]:])),
       st.sampled_from([{"mysqlType": "binary", "length": 2}, {"mysqlType": "binary"}, {"mysqlType": "varbinary"},
                        {"mysqlType": "blob"}, {"mysqlType": "binary", "length": 0}, {"mysqlType": "binary", "length": 5}]))
def test_simple_binary_test_is_the_rule(v: str, dt: dict[str, Any]) -> None:
    """The binary value test (binascii's strict decode, directly) says what the rule says
    (`base64.b64decode(validate=True)`): base64 texts, padding anywhere, other characters."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o = SimpleOptions()
    want = format_problem("binary", dt, v, o, False) is None
    assert value_ok("binary", dt, o)(v) == want and _inlined(value_ok("binary", dt, o))(v) == want, (v, dt)


_JSON_DOCS = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8", max_codepoint=0x1F600), max_size=6),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(alphabet="ab\u00e9\U0001F600\n\"", max_size=3), kids,
                                                          max_size=3), max_leaves=8)


@settings(max_examples=800, deadline=None)
@given(_JSON_DOCS, st.sampled_from(["tidb", "compact", "unsorted", "ascii", "spaced", "deep", "dup"]))
def test_simple_json_test_is_the_rule(doc: Any, form: str) -> None:
    """The JSON value test (`quick_json` first) says what the rule says of documents printed as
    TiDB prints them and otherwise (other spacing, key order, escaping; nested past TiDB's limit; a
    key twice), floats and integers beyond 64 bits among them; TiDB's own text of a document
    without floats is taken by `quick_json` alone."""
    import orjson

    from conformance.model.values import Json, json_quote
    from conformance.protocols.ticdc_simple.checks.values import (
        _TIDB_JSON,
        TIDB_MAX_JSON_DEPTH,
        _has_float,
        format_problem,
        quick_json,
        value_ok,
    )
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    dt, o = {"mysqlType": "json"}, SimpleOptions()
    text = Json(doc).text()
    v = {"tidb": text, "compact": json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False),
         "unsorted": json.dumps(doc, separators=(", ", ": "), ensure_ascii=False), "ascii": json.dumps(doc),
         "spaced": text.replace(", ", ",  "), "deep": "[" * TIDB_MAX_JSON_DEPTH + text + "]" * TIDB_MAX_JSON_DEPTH,
         "dup": text[:-1] + ', "a": 1}' if text.startswith("{") and text != "{}" else text}[form]
    want = format_problem("json", dt, v, o, False) is None
    assert value_ok("json", dt, o)(v) == want and _inlined(value_ok("json", dt, o))(v) == want, (v, form)
    assert not quick_json(v) or want, v
    if isinstance(doc, str):
        assert _TIDB_JSON(doc) == json_quote(doc)
    # A document without floats (a float's text may read back as an integer: -0.0 prints "-0") and
    # without integers beyond 64 bits (orjson reads those as floats).
    if form == "tidb" and not _has_float(doc) and not _has_float(orjson.loads(text)):
        assert quick_json(v), v


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai"])
@pytest.mark.parametrize("dt", [{"mysqlType": "timestamp"}, {"mysqlType": "timestamp", "decimal": 3},
                                {"mysqlType": "timestamp", "decimal": "x"}])
def test_simple_timestamp_objects_are_remembered_by_both_strings(zone: str, dt: dict[str, Any]) -> None:
    """One TIMESTAMP test asked about many objects in turn (each answer the memo keeps is for its
    location and value both): what the rule says of each, in any order, asked again."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o = SimpleOptions(time_zone=zone)
    texts = ["2024-01-01 00:00:00", "2024-01-01 00:00:00.123", "2038-01-19 03:14:08", "1970-01-01 00:00:00",
             "2037-12-31 23:59:59", "bad", ""]
    objects: list[Any] = [{"location": loc, "value": t} for loc in ["UTC", "Asia/Shanghai", "", "Etc/UTC", "Mars/Base"]
                          for t in texts]
    objects += [{"value": t, "location": "UTC"} for t in texts]
    objects += [{"location": "UTC", "value": "2024-01-01 00:00:00", "x": 1}, {"location": "UTC"},
                {"location": "UTC", "valu": "2024-01-01 00:00:00"}, {"location": 1, "value": "2024-01-01 00:00:00"},
                {"location": "UTC", "value": None}, "2024-01-01 00:00:00", None, 0]
    for seed in range(3):
        test = value_ok("timestamp", dt, o)
        order = objects * 2
        random.Random(seed).shuffle(order)
        for v in order:
            assert test(v) == (format_problem("timestamp", dt, v, o, False) is None), (v, dt, zone)


def test_simple_int_texts_at_their_edges() -> None:
    """The integer value tests say what the rule says of every integer type's bounds (±1, with
    a sign, leading zeros, 18 to 21 digits) and of texts that are nearly integers (other signs,
    spaces, non-ASCII digits)."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, schema_family, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o = SimpleOptions()
    odd = ["", "-", "--1", "+1", "+0", " 1", "1 ", "1_0", "0x1", "1.0", "1e3", "٣", "-٣", "²", "-²", "1²", "１", "-0",
           "007", "-007", "0" * 25 + "1", "9" * 18, "-" + "9" * 18, "9" * 19, "-" + "9" * 19, "1" + "0" * 20]
    for t in ["tinyint", "smallint", "mediumint", "int", "bigint"]:
        for unsigned in (False, True):
            dt = {"mysqlType": t, "unsigned": unsigned}
            fam = schema_family(dt)
            assert fam is not None
            bits = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[t]
            lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
            texts = odd + [str(n) for b in (lo, hi) for n in (b - 1, b, b + 1)]
            texts += ["-" + str(n).lstrip("-").zfill(w) for n in (lo, hi) for w in (19, 20, 21, 22)]
            texts += [str(n).zfill(w) for n in (0, 1, hi) for w in (19, 20, 21, 22)]
            ok, inlined = value_ok(fam, dt, o), _inlined(value_ok(fam, dt, o))
            for v in texts:
                want = format_problem(fam, dt, v, o, False) is None
                assert ok(v) == want and ok(v) == want and inlined(v) == want and inlined(v) == want, (dt, v)


def _number_edges(dt: dict[str, Any]) -> list[str]:
    texts = ["", "-", ".", "-.", "1.", ".5", "-.5", "1..2", "1.2.3", "--1", "+1", " 1", "1 ", "1_0", "0x1", "1e3",
             "٣", "-٣", "²", "１", "1.٣", "٣.1", "1.²", "0", "-0", "00", "-0.0", "0.0", "-00.00", "0" * 25 + "1",
             "1" * 19, "1" * 20, "1" * 21, "0" * 21, str((1 << 64) - 1), str(1 << 64), str((1 << 64) + 1)]
    width, scale = dt.get("length"), dt.get("decimal")
    for n in range(0, 70):
        texts.append(str(n))
    if isinstance(width, int):
        for b in (width, min(width, 64)):
            texts += [str((1 << b) + d) for d in (-1, 0, 1) if (1 << b) + d >= 0]
        for digits in range(max(0, width - 2), width + 3):
            for frac in range(0, 5):
                for lead in ("", "0", "-", "-0"):
                    whole = max(1, digits - frac)
                    texts.append(lead + "9" * whole + ("." + "9" * frac if frac else ""))
                    texts.append(lead + "1" + "0" * (whole - 1) + ("." + "0" * frac if frac else ""))
    if isinstance(scale, int):
        texts += [f"1.{'5' * k}" for k in range(0, 8)] + [f"-0.{'0' * k}" for k in range(0, 8)]
    return texts


@pytest.mark.parametrize("dt", [{"mysqlType": "decimal", "length": 5, "decimal": 2}, {"mysqlType": "decimal", "length": 3},
                                {"mysqlType": "decimal", "length": 40, "decimal": 1}, {"mysqlType": "decimal"},
                                {"mysqlType": "decimal", "length": "5", "decimal": "2"},
                                {"mysqlType": "decimal", "length": 0, "decimal": 0}, {"mysqlType": "decimal", "decimal": -1},
                                {"mysqlType": "bit", "length": 1}, {"mysqlType": "bit", "length": 17},
                                {"mysqlType": "bit", "length": 64}, {"mysqlType": "bit", "length": 65}, {"mysqlType": "bit"},
                                {"mysqlType": "bit", "length": "8"}, {"mysqlType": "enum", "elements": ["a", "b", "c"]},
                                {"mysqlType": "enum"}, {"mysqlType": "enum", "elements": "x"},
                                {"mysqlType": "enum", "elements": [1]}, {"mysqlType": "set", "elements": ["a", "b"]},
                                {"mysqlType": "set", "elements": ["x"] * 64}, {"mysqlType": "set", "elements": ["x"] * 70},
                                {"mysqlType": "set"}, {"mysqlType": "set", "elements": None}])
def test_simple_number_texts_at_their_edges(dt: dict[str, Any]) -> None:
    """The DECIMAL, BIT, ENUM and SET value tests (`quick_number` first) say what the rule says
    of texts at every bound (precision and scale, width, element count, 64 bits, 20 digits), with
    signs, leading zeros, stray dots and non-ASCII digits, under well-formed and malformed
    dataTypes."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, schema_family, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    fam = schema_family(dt)
    assert fam is not None
    o = SimpleOptions()
    ok, inlined = value_ok(fam, dt, o), _inlined(value_ok(fam, dt, o))
    for v in _number_edges({**dt, "length": 5} if not isinstance(dt.get("length"), int) else dt):
        want = format_problem(fam, dt, v, o, False) is None
        assert ok(v) == want and ok(v) == want and inlined(v) == want and inlined(v) == want, (dt, v)


@pytest.mark.parametrize("dt", [{"mysqlType": "int"}, {"mysqlType": "bigint", "unsigned": True},
                                {"mysqlType": "decimal", "length": 5, "decimal": 1}, {"mysqlType": "decimal"},
                                {"mysqlType": "bit", "length": 8}, {"mysqlType": "enum", "elements": ["a", "b", "c"]},
                                {"mysqlType": "set", "elements": ["a", "b"]}, {"mysqlType": "year"},
                                {"mysqlType": "float"}, {"mysqlType": "double"}])
def test_simple_number_rules_take_ascii_digits_only(dt: dict[str, Any]) -> None:
    """TiCDC writes numbers with ASCII digits: the rules refuse other decimal digits (Python's
    `\\d`, `int` and `float` take them), and the value tests say so too."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, schema_family, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o = SimpleOptions()
    fam = schema_family(dt)
    assert fam is not None
    for v in ["٣", "١", "-٣", "１", "2０", "1.٥", "٢٠٢٤", "১"]:
        assert format_problem(fam, dt, v, o, False) is not None, (dt, v)
        assert not value_ok(fam, dt, o)(v) and not _inlined(value_ok(fam, dt, o))(v), (dt, v)
    assert any(format_problem(fam, dt, v, o, False) is None for v in ["1", "1.0", "2024"]), dt


def _inlined(test: Any) -> Any:
    """The value test as `compile_kind` writes it into a kind's function."""
    from conformance.checks.compiled import Source
    from conformance.protocols.ticdc_simple.fastpath import _column_test

    src = Source("t", ("v",))
    src.line(_column_test(src, "v", test)[0])
    src.line("return True")
    fn = src.build()
    return lambda v: v is not None and fn(v) is True


def test_simple_unruled_columns_take_strings_only() -> None:
    """A column no value rule reads is tested as a string (or null, which the generated code
    passes before any test): nothing else, whatever its memo holds."""
    from conformance.protocols.ticdc_simple.fastpath import _STRING

    inlined = _inlined(_STRING)
    for v in ["", "x", "1", "\x00", "[1]", "٣"]:
        assert inlined(v) and inlined(v), v
    others: list[Any] = [0, 1, -1, 1.5, True, False, [], ["x"], {}, {"location": "UTC", "value": "x"}, b"x", ("x",)]
    for x in others:
        assert not inlined(x) and not _STRING(x), x


def test_simple_value_tests_are_shared_by_data_type_and_options() -> None:
    """`_value_ok` gives the test of one (family, dataType text, options) to every column that
    asks, by the dataType object or by an equal one, and another test where any of the three
    differs."""
    from conformance.protocols.ticdc_simple import fastpath
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o, o2 = SimpleOptions(), SimpleOptions(time_zone="Asia/Shanghai")
    dt = {"mysqlType": "int", "unsigned": True}
    t = fastpath._value_ok("int", dt, o)
    assert fastpath._value_ok("int", dt, o) is t
    assert fastpath._value_ok("int", {"unsigned": True, "mysqlType": "int"}, o) is t
    for other in [("int", {"mysqlType": "int"}, o), ("bigint-unsigned", dt, o), ("int", dt, o2),
                  ("int", {"mysqlType": "tinyint", "unsigned": True}, o)]:
        assert fastpath._value_ok("int", dt, o) is t  # the last asked of `dt`, each time
        assert fastpath._value_ok(*other) is not t, other
    assert t("4294967295") and not t("4294967296") and not t("-1")
    small = fastpath._value_ok("int", {"mysqlType": "tinyint"}, o)
    assert small("127") and not small("128") and fastpath._value_ok("int", dt, o) is t


def test_simple_column_tests_are_one_text_for_every_test() -> None:
    """`_column_test` writes the same line for any value test (kinds of one layout share their
    compiled code), each column's test, memo and miss answer bound to names of its own."""
    from conformance.checks.compiled import Source
    from conformance.protocols.ticdc_simple.checks.values import value_ok
    from conformance.protocols.ticdc_simple.fastpath import _STRING, _column_test
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o = SimpleOptions()
    tests = [_STRING, value_ok("int", {"mysqlType": "int"}, o), value_ok("text", {"mysqlType": "varchar"}, o),
             value_ok("timestamp", {"mysqlType": "timestamp"}, o)]
    lines, sources = [], []
    for t in tests:
        src = Source("accept", ("obj",))
        lines.append((_column_test(src, "_v1", t)[0], _column_test(src, "_v2", t)[0]))
        sources.append(src)
    assert len(set(lines)) == 1
    for t, src in zip(tests, sources, strict=True):
        bound = [x for x in src.consts.values() if x is t]
        known = t.known  # type: ignore[attr-defined]
        assert len(bound) == 2 and sum(x is known for x in src.consts.values()) == 2, src.consts


# -- the fast path's delivery identity ----------------------------------------------------------------------

_KEY_VALUES = st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", "a\udfff", "\ud83d\ude00", "\x00", "'\""]), st.none(), st.integers(), st.booleans(),
                        st.floats(allow_nan=False), st.fixed_dictionaries({"location": st.text(max_size=3),
                                                                           "value": st.text(max_size=4)}),
                        st.dictionaries(st.text(max_size=3), st.one_of(st.text(max_size=3), st.none(), st.integers(),
                                                                       st.lists(st.none(), max_size=1)), max_size=3))


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _KEY_VALUES, min_size=1, max_size=4), st.data(),
       st.integers(min_value=0, max_value=2 ** 64 - 1), st.sampled_from(["INSERT", "UPDATE", "DELETE"]))
def test_simple_fast_match_is_the_identifiers(row: dict[str, Any], data: Any, commit_ts: int, typ: str) -> None:
    """`delivery.matcher` (the fast path's match) is the digest `identifier` takes of a handle key
    (`match_digest`), for any names of the row (in any order, repeated) and any JSON values (text
    of any characters, lone surrogates too, null, objects of those (a TIMESTAMP's) written
    directly; the others through `_canonical` itself)."""
    from conformance.protocols.ticdc_simple.delivery import _canonical, match_digest, matcher

    names = data.draw(st.lists(st.sampled_from(sorted(row)), min_size=1, max_size=5))
    want = match_digest(commit_ts, typ, _canonical({n: row[n] for n in names}))
    match = matcher(names, typ)
    assert match(row, commit_ts) == want
    # The same match again, after a row of strings and before: whatever the first row held (a
    # matcher that met a value not a string writes the next rows its other way).
    strings = {n: f"s{i}" for i, n in enumerate(row)}
    assert match(strings, commit_ts) == match_digest(commit_ts, typ, _canonical({n: strings[n] for n in names}))
    assert match(row, commit_ts) == want


def test_simple_match_tells_its_parts_apart() -> None:
    """`match_digest` differs wherever one of its parts does: the commit ts as an integer or as
    anything else of the same text, the type, the canonical text (a NUL or a part's text moved
    across a boundary), a lone surrogate and its escape."""
    from conformance.protocols.ticdc_simple.delivery import match_digest

    cases = [(1, "INSERT", "{}"), ("1", "INSERT", "{}"), (True, "INSERT", "{}"), (1.0, "INSERT", "{}"),
             (1, "UPDATE", "{}"), (1, None, "{}"), (1, "INSERT", '{"a": "1"}'), (1, "INSERT\x00", "{}"),
             (1, "INSERT", "\x00{}"), (11, "INSERT", "{}"), (1, "1INSERT", "{}"), (1, "INSERT", "\ud800"),
             (1, "INSERT", "\\ud800"), (1, "INSERT", "\u00e9"), (1, "INSERT", "\\u00e9"), (2 ** 64, "DELETE", "{}")]
    digests = [match_digest(*c) for c in cases]
    assert len(set(digests)) == len(cases)
    assert match_digest(1, "INSERT", "{}") == match_digest(1, "INSERT", "{}")


def test_simple_short_match_is_its_text_and_never_a_digest() -> None:
    """A match text of at most SHORT_MATCH bytes is the match itself, but one of DIGEST_SIZE
    bytes and any longer one are digested (DIGEST_SIZE bytes): no text kept as itself has a
    digest's length, so none is mistaken for another's digest."""
    from conformance.protocols.kit import DIGEST_SIZE
    from conformance.protocols.ticdc_simple.delivery import SHORT_MATCH, match_digest, short_match

    for n in range(SHORT_MATCH + 3):
        data = b"x" * n
        got = short_match(data)
        if n <= SHORT_MATCH and n != DIGEST_SIZE:
            assert got == data
        else:
            assert len(got) == DIGEST_SIZE and got != data
    short = match_digest(1, "INSERT", '{"id": "1"}')
    assert short == b"i1\x00'INSERT'\x00{\"id\": \"1\"}"
    assert len(match_digest(1, "INSERT", '{"id": "' + "x" * SHORT_MATCH + '"}')) == DIGEST_SIZE


# -- the quick temporal texts --------------------------------------------------------------------------------

_DIGITS = st.sampled_from(["0", "1", "2", "3", "5", "8", "9"])
_TEMPORAL = st.one_of(
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?)?", fullmatch=True),
    st.from_regex(r"(19[0-9]{2}|20[0-9]{2}|2[1-9][0-9]{2}|0000)-(0[0-9]|1[0-3])-([0-3][0-9]) ([0-2][0-9]):[0-6][0-9]:[0-6][0-9]"
                  r"(\.[0-9]{1,7})?", fullmatch=True),
    st.from_regex(r"-?[0-9]{2,3}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?", fullmatch=True),
    st.from_regex(r"(8[0-4][0-9]|0[0-9]|2[0-4]):[0-6][0-9]:[0-6][0-9](\.[0-9]{1,7})?", fullmatch=True),
    st.from_regex(r"[0-9]{1,5}", fullmatch=True),
    st.sampled_from(["1970-01-01 00:00:00", "1971-01-01 00:00:00", "2037-12-31 23:59:59.999999",
                     "2038-01-19 03:14:07", "2038-01-19 03:14:08", "0000-00-00 00:00:00", "2024-02-29 00:00:00",
                     "2023-02-29 00:00:00", "2024-04-31 00:00:00", "838:59:59", "838:59:59.000001", "837:59:59.999999",
                     "-838:59:59", "-00:00:00", "1900", "1901", "2155", "2156", "0", "0000", "٢٠٢٤", "2024-01-01\n"]),
)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_TEMPORAL, st.fixed_dictionaries({"location": st.sampled_from(["UTC", "Asia/Shanghai", "Etc/UTC", ""]),
                                                    "value": _TEMPORAL}),
                 st.fixed_dictionaries({"location": st.just("UTC"), "value": _TEMPORAL, "x": st.none()})),
       st.sampled_from(["date", "datetime", "time", "timestamp", "year"]),
       st.one_of(st.none(), st.integers(min_value=-1, max_value=7), st.just("3"), st.just(True)),
       st.sampled_from(["UTC", "Asia/Shanghai"]))
def test_simple_quick_temporal_texts_are_the_rule(v: Any, mysql_type: str, fsp: Any, zone: str) -> None:
    """Every value `value_ok` takes on a quick text is one the rule accepts (and the memo agrees),
    whatever the column's fsp (absent, malformed, beyond 6) and the time zone option."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, schema_family, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    dt: dict[str, Any] = {"mysqlType": mysql_type, **({"decimal": fsp} if fsp is not None else {})}
    fam = schema_family(dt)
    assert fam is not None
    o = SimpleOptions.from_options({"time-zone": zone})
    ok = value_ok(fam, dt, o)
    want = format_problem(fam, dt, v, o, False) is None
    inlined = _inlined(value_ok(fam, dt, o))
    assert inlined(v) == want and inlined(v) == want, (fam, dt, v)
    assert ok(v) == want and ok(v) == want, (fam, dt, v)


def _edge_texts() -> dict[str, list[str]]:
    years = ["0000", "1900", "1901", "1969", "1970", "1971", "2037", "2038", "2155", "2156", "9999"]
    days = [f"{y}-{m}-{d}" for y in years for m in ("00", "01", "02", "04", "12", "13")
            for d in ("00", "01", "28", "29", "30", "31", "32")]
    fractions = ("", ".1", ".123", ".123456", ".1234567")
    clocks = [c + f for c in ("00:00:00", "23:59:59", "24:00:00", "23:60:00", "23:59:60") for f in fractions]
    times = [f"{s}{h}:{m}:{sec}{f}" for s in ("", "-") for h in ("00", "23", "99", "100", "837", "838", "839", "999")
             for m in ("00", "59", "60") for sec in ("59", "60") for f in fractions]
    return {"date": days + [d + " " + c for d in days[::5] for c in clocks[::3]],
            "datetime": [d + " " + c for d in days for c in clocks[::2]] + days[::7],
            "time": times + ["1:00:00", "00:00", "00:00:00 ", "-00:00:00", "-000:00:00", "-00:00:00.0", "-00:00:00.000000",
                             "-00:00:01", "-000:00:01.5", "-01:00:00", "-001:00:00", "-800:00:00", "-837:59:59.999999"],
            "year": [str(n) for n in range(0, 2200)] + ["0000", "00", "01901", "1901 ", "٢٠٢٤"]}


@pytest.mark.parametrize("mysql_type", ["date", "datetime", "time", "timestamp", "year"])
def test_simple_quick_temporal_texts_are_the_rule_at_their_edges(mysql_type: str) -> None:
    """Every year, month, day, clock part and fraction length at the edge of a quick text, in every
    combination, under every fsp (absent, malformed, 0, 3, 6, beyond 6) and two time zone options:
    `value_ok` says what the rule says (TIMESTAMP: the text under several locations)."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, schema_family, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    edges = _edge_texts()
    texts = edges["datetime"] if mysql_type == "timestamp" else edges[mysql_type]
    for fsp in (None, -1, "3", 0, 1, 3, 6, 7):
        dt: dict[str, Any] = {"mysqlType": mysql_type, **({"decimal": fsp} if fsp is not None else {})}
        fam = schema_family(dt)
        assert fam is not None
        for zone in ("UTC", "Asia/Shanghai"):
            o = SimpleOptions.from_options({"time-zone": zone})
            ok = value_ok(fam, dt, o)
            values: list[Any] = list(texts) if mysql_type != "timestamp" else [
                {"location": loc, "value": t} for t in texts for loc in (zone, "Etc/UTC", "")]
            for v in values:
                assert ok(v) == (format_problem(fam, dt, v, o, False) is None), (fam, dt, zone, v)


# -- the fast parse -----------------------------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | st.text(max_size=6)
                     | st.floats(), lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=12)
_NOISE = st.sampled_from(list('{}[]",:0123456789-+.eE \\/untrfalsNI\t\n\x00\x7f') + ["\\u", "\\ud800", "\\udc00", "é", "😀",
                                                                                    "\ufeff", "1e400", "-0", "00"])


@settings(max_examples=2000, deadline=None)
@given(_JSON, st.booleans(), st.lists(st.tuples(st.integers(min_value=0, max_value=200), _NOISE, st.integers(0, 2)),
                                       max_size=3), st.sampled_from(["none", "snappy"]),
       st.lists(st.integers(0, 255), max_size=2))
def test_simple_fast_parse_is_the_decoders(v: Any, ascii_: bool, edits: list[Any], compression: str,
                                           raw_bytes: list[int]) -> None:
    """Where the fast parse gives a message with no float in it (the generated functions accept no
    other), it is the one `decoder.decode` gives: same keys in the same order, same values of the
    same types; and it gives none where the decoder refuses the bytes. The decoder (which reads
    with orjson where that is the same) gives what the standard library alone gives, or its error."""
    from conformance.protocols.ticdc_simple import codec, fastpath
    from conformance.protocols.ticdc_simple.decoder import _decode

    text = json.dumps({"type": "INSERT", "v": v}, ensure_ascii=ascii_, allow_nan=True)
    for at, noise, how in edits:  # insert, replace or delete at a place
        i = at % (len(text) + 1)
        text = text[:i] + noise + text[i + (how == 1):] if how < 2 else text[:i] + text[i + 1:]
    data = text.encode("utf-8", "surrogatepass")
    for b in raw_bytes:
        data = data[: len(data) // 2] + bytes([b]) + data[len(data) // 2:]
    value = codec.compress(data, compression)
    got = fastpath.parse(value, compression)
    want = _decode(value, compression, False)

    def floats(x: Any) -> bool:
        return isinstance(x, float) or (isinstance(x, list) and any(map(floats, x))) or \
            (isinstance(x, dict) and any(map(floats, x.values())))

    # The decoder reads what the standard library alone reads (its orjson read stands for it only
    # where it is the same: held to it here).
    try:
        strict: Any = codec.decode_json_strict(data)
    except codec.CodecError as e:
        strict = e
    if isinstance(strict, codec.CodecError):
        assert not want.ok and want.error == str(strict), (data, want.error)
    else:
        assert want.ok and repr(want.fields) == repr(strict), data
    if got is None or floats(got) or codec.json_depth(got, codec.MAX_JSON_DEPTH) > codec.MAX_JSON_DEPTH:
        return  # what the generated functions never accept (parity tests: a value nested 40 deep)
    assert want.ok, (data, got)
    assert repr(got) == repr(want.fields)


# -- quick float texts: FLOAT (float32 up to 9 digits), DOUBLE (any digits repr writes positionally), VECTOR --------

def _float_texts(x: float) -> list[str]:
    """Texts about x: its shortest float64 and float32 'f' texts, other roundings, and each
    with its last digit moved or one digit more."""
    from conformance.model.values import go_format_float, to_float32

    out = [repr(x), f"{x:.17g}", f"{x:.9g}", f"{x:.7g}", f"{x:f}"]
    if x == x and abs(x) != float("inf"):
        out += [go_format_float(x, 64, "f")]
        x32 = to_float32(x)
        if abs(x32) != float("inf"):
            out += [go_format_float(x32, 32, "f")]
    for t in list(out):
        if t[-1:].isdigit():
            out += [t[:-1] + str((int(t[-1]) + 1) % 10), t[:-1] + str((int(t[-1]) + 9) % 10), t + "1", t + "0"]
    return out


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.floats(), st.floats(width=32), st.floats(min_value=-1e17, max_value=1e17),
                 st.integers(min_value=-(10 ** 17), max_value=10 ** 17).map(float),
                 st.floats(min_value=1e-5, max_value=1e-3)))
def test_simple_quick_float_texts_are_the_rule(x: float) -> None:
    """Each text near a float (its shortest texts, and each off by one digit): FLOAT, DOUBLE and a
    VECTOR(1)'s value test says what the rule says."""
    from conformance.protocols.ticdc_simple.checks.values import format_problem, value_ok
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    o = SimpleOptions()
    for fam, dt in (("float", {"mysqlType": "float"}), ("double", {"mysqlType": "double"}),
                    ("vector", {"mysqlType": "vector", "length": 1})):
        ok = value_ok(fam, dt, o)
        inlined = _inlined(value_ok(fam, dt, o))
        for t in _float_texts(x):
            v = "[" + t + "]" if fam == "vector" else t
            want = format_problem(fam, dt, v, o, False) is None
            assert inlined(v) == want and inlined(v) == want and ok(v) == want, (fam, v)


def test_simple_quick_float_texts_take_the_shortest_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick tests answer for nearly every float's own shortest text, without the rule: FLOAT
    and VECTOR elements up to 9 digits, DOUBLE in 1e-4..1e16 at any length."""
    from conformance.model.values import go_format_float, to_float32
    from conformance.protocols.ticdc_simple.checks import values
    from conformance.protocols.ticdc_simple.spec import SimpleOptions

    rng = random.Random(32)
    o = SimpleOptions()
    ok32 = values.value_ok("float", {"mysqlType": "float"}, o)
    ok64 = values.value_ok("double", {"mysqlType": "double"}, o)
    okv = values.value_ok("vector", {"mysqlType": "vector", "length": 3}, o)
    ran: list[str] = []
    rule = values.format_problem
    def counted(*a: Any) -> str | None:
        ran.append(a[2])
        return rule(*a)

    monkeypatch.setattr(values, "format_problem", counted)
    for _ in range(3000):
        x = rng.choice([-1, 1]) * rng.uniform(1, 10) * 10.0 ** rng.randint(-4, 15)
        assert ok64(go_format_float(x, 64, "f")), x
    assert ran == []  # every DOUBLE text of 1e-4..1e16
    for _ in range(3000):
        x32 = to_float32(rng.uniform(-1, 1) * 10 ** rng.randint(-3, 20))
        assert ok32(go_format_float(x32, 32, "f")), x32
        assert okv("[" + ",".join(go_format_float(to_float32(rng.gauss(0, 1)), 32, "f") for _ in range(3)) + "]")
    assert len(ran) < 60, ran  # nearly every float32 text (a few of 8 or 9 digits go to the rule)


# -- the replay digest: `repr` equality, without `repr` -------------------------------------------------------------

_ATOMS = st.sampled_from([1, True, 1.0, 0, False, 0.0, -0.0, float("nan"), float("inf"), "1", "True", "", None, "r",
                          2 ** 70, (1,), b"1", ("long", 1), ["1"], [1], []])
_VALUES = st.recursive(_ATOMS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "r", "location", "value"]), inner, max_size=3)), max_leaves=8)


@settings(max_examples=1500, deadline=None)
@given(_VALUES, _VALUES, st.data())
def test_simple_replay_digest_is_repr_equality(a: Any, b: Any, data: Any) -> None:
    """`frozen` is equal exactly where `repr` is (so the digest is the one `repr` gave, but for
    hash collisions), and the fast path's digest is `replay_digest`."""
    from conformance.protocols.ticdc_simple.checker import frozen, replay_digest

    if data.draw(st.booleans()):  # often a near copy of a: a dict reordered, or the same
        b = dict(reversed(list(a.items()))) if isinstance(a, dict) and data.draw(st.booleans()) else a
    assert (frozen(a) == frozen(b)) == (repr(a) == repr(b)), (a, b)
    assert (replay_digest(1, "INSERT", "d", "t", a, None) == replay_digest(1, "INSERT", "d", "t", b, None)) \
        == (repr(a) == repr(b))
    assert replay_digest(7, "UPDATE", "d", "t", {"c": "x"}, a) \
        == hash((7, "UPDATE", "d", "t", frozen({"c": "x"}), frozen(a)))
    if isinstance(a, dict):  # the fast path's digest of a row object (`frozen_object`, with the kind's keys)
        from conformance.protocols.ticdc_simple.checker import frozen_object

        assert frozen_object(a, tuple(a)) == frozen(a), a


_LOOKALIKES = [1, True, 1.0, "1", [1], (1,), ("r", "1"), 0, False, 0.0, -0.0, None, "None", float("nan"), {}, (), []]


def test_simple_replay_digest_tells_lookalikes_apart() -> None:
    """Values equal in Python but not in their text (1, True, 1.0; 0.0 and -0.0), alone and in an
    object, top-level and nested: `frozen` equal only where `repr` is."""
    from conformance.protocols.ticdc_simple.checker import frozen

    forms = [*_LOOKALIKES, *({"a": v} for v in _LOOKALIKES), *({"a": {"b": v}, "c": "x"} for v in _LOOKALIKES),
             *({"a": "x", "b": v} for v in _LOOKALIKES)]
    for a in forms:
        for b in forms:
            assert (frozen(a) == frozen(b)) == (repr(a) == repr(b)), (a, b)
    # Values whose hashes are equal (0 and "", -1 and -2): the digests, which are hashes, differ.
    from conformance.protocols.ticdc_simple.checker import replay_digest

    for x, y in [(0, ""), (-1, -2), ({"a": 0}, {"a": ""}), ({"a": -1}, {"a": -2}), ({"a": {"b": 0}}, {"a": {"b": ""}})]:
        assert replay_digest(1, "INSERT", "d", "t", x, None) != replay_digest(1, "INSERT", "d", "t", y, None), (x, y)
        assert replay_digest(1, "UPDATE", "d", "t", {"k": "v"}, x) != replay_digest(1, "UPDATE", "d", "t", {"k": "v"}, y)


def test_simple_plain_kinds_take_only_strings_and_nulls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind marked `plain` (its replay digest takes an object row's keys and values as they are) accepts
    row values that are strings or null only; the reference has kinds of both sorts."""
    from conformance.protocols.ticdc_simple import checker as simple_checker

    seen = {True: 0, False: 0}
    original = simple_checker.SimpleChecker.check_fast

    def check_fast(self: Any, record: Any) -> bool:
        took = original(self, record)
        if took and self._accepted[1] is not None:
            kind, obj = self._accepted[1], self._accepted[2]
            seen[kind.plain] += 1
            for part in ("data", "old"):
                row = obj.get(part)
                if kind.plain and isinstance(row, dict):
                    assert all(v is None or v.__class__ is str for v in row.values()), row
        return took

    monkeypatch.setattr(simple_checker.SimpleChecker, "check_fast", check_fast)
    for seed in ("fast", "options"):
        records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, {}, seed=seed)
        assert_parity(SIMPLE, {}, registry, records)
    assert seen[True] and seen[False], seen


def test_simple_check_fast_finds_the_kinds_kind_of_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """`check_fast` keys a message as `fastpath.kind_of` does (inline there): on the reference's
    records, every message whose kind was compiled before it is taken (none of them is a replay,
    every one passes its checks), and under the kind `kind_of` names."""
    import orjson

    from conformance.protocols.ticdc_simple import checker as simple_checker
    from conformance.protocols.ticdc_simple import fastpath

    counts = {"taken": 0, "known": 0}
    original = simple_checker.SimpleChecker.check_fast

    def check_fast(self: Any, record: Any) -> bool:
        lg = self.logs.logs.get((record.topic, record.partition or 0))
        obj = orjson.loads(record.value) if record.value is not None else None
        k = fastpath.kind_of(obj) if isinstance(obj, dict) else None
        known = lg is not None and k is not None and lg.kinds.get(k) is not None \
            and lg.kinds[k].accept is not None
        took = bool(original(self, record))
        counts["known"] += known
        counts["taken"] += took
        assert took == known, (k, record.offset)
        if took:
            assert k is not None and lg is not None
            assert self._accepted[1] is (None if k[0] == "WATERMARK" else lg.kinds[k])
        return took

    monkeypatch.setattr(simple_checker.SimpleChecker, "check_fast", check_fast)
    for seed in ("fast", "options"):
        records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, {}, seed=seed)
        assert_parity(SIMPLE, {}, registry, records)
    assert counts["taken"] > 100, counts


@pytest.mark.parametrize("avro", [False, True])
def test_simple_schema_shape_tests_every_field_of_its_tables(avro: bool) -> None:
    """`_shape_problems` tests a column's fields and its dataType's by exact class first (then by
    the rules): a column whose one field of `_COLUMN_FIELDS` or `_DT_FIELDS` has another class (a
    subclass's value too: True for an int) is still reported, for every field the tables name, so
    that the first test never passes a field the rules would refuse."""
    from conformance.protocols.ticdc_simple.checks.schema import _COLUMN_FIELDS, _DT_FIELDS, _shape_problems

    good_dt = {"mysqlType": "int", "charset": "binary", "collate": "binary"}
    good = {"name": "c", "dataType": good_dt, "nullable": False, "default": None}
    ts = {"schema": "d", "database": "d", "table": "t", "tableID": 1, "version": 1, "columns": [good], "indexes": []}
    raw = set(ts)
    assert list(_shape_problems(ts, avro, raw)) == []
    wrong = {str: 1, dict: [], bool: 0, int: True}
    for f, typ in _COLUMN_FIELDS.items():
        bad = {**ts, "columns": [{**good, f: wrong[typ]}]}
        assert any(p[1] == f"column field {f} is not {'an object' if typ is dict else 'a string' if typ is str else 'a boolean'}"
                   for p in _shape_problems(bad, avro, raw)), f
    for f, typ in _DT_FIELDS.items():
        bad = {**ts, "columns": [{**good, "dataType": {**good_dt, f: wrong[typ]}}]}
        assert any(p[1] == f"dataType.{f} is not a string" for p in _shape_problems(bad, avro, raw)), f


def test_simple_log_entry_indexes_are_the_entry_fields() -> None:
    """The stream checks read a log entry (a plain tuple) by the indexes checker.py names: each is
    its field's place in `Entry`."""
    from conformance.protocols.ticdc_simple import checker as simple_checker

    for i, name in enumerate(simple_checker.Entry._fields):
        assert getattr(simple_checker, name.upper()) == i, name
    assert len(simple_checker.Entry._fields) == 10


def _bound(fn: Any) -> dict[str, Any]:
    """The constants a kind's function reads (`Source.build` binds them as the defaults of the
    parameters after the function's own)."""
    code = fn.__code__
    return dict(zip(code.co_varnames[code.co_argcount - len(fn.__defaults__):code.co_argcount], fn.__defaults__,
                    strict=True))


def test_simple_kinds_of_one_layout_bind_their_own_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind whose layout an earlier kind wrote (`fastpath._LAYOUTS`) gets the function a kind
    compiled alone gets: the same text, every constant the same (its columns' names and value
    tests, memos and miss answers in their own places); the reference's records share layouts."""
    from conformance.protocols.ticdc_simple import fastpath

    original = fastpath.compile_kind
    shared = {"hits": 0, "kinds": 0}
    first: dict[str, dict[str, Any]] = {}  # a layout's text -> its first kind's constants

    def compile_kind(kind: Any, ev: Any, specs: Any, kind_key: Any) -> None:
        original(kind, ev, specs, kind_key)
        if kind.accept is None or len(kind_key) == 2:
            return
        alone = fastpath.FastKind(kind.schema)
        saved = dict(fastpath._LAYOUTS)
        fastpath._LAYOUTS.clear()
        try:
            original(alone, ev, specs, kind_key)
        finally:
            fastpath._LAYOUTS.clear()
            fastpath._LAYOUTS.update(saved)
        assert alone.accept is not None
        assert kind.accept.__source__ == alone.accept.__source__  # type: ignore[attr-defined]
        got, want = _bound(kind.accept), _bound(alone.accept)
        assert got.keys() == want.keys() and got
        for name in got:
            assert got[name] is want[name] or (got[name].__class__ is str and got[name] == want[name]), name
        shared["kinds"] += 1
        # A kind of a layout met before whose column names and tests are not all the first's.
        earlier = first.setdefault(kind.accept.__source__, got)
        shared["hits"] += earlier is not got and any(earlier[n] is not got[n] for n in got if n.startswith("_ok"))

    monkeypatch.setattr(fastpath, "compile_kind", compile_kind)
    for seed in ("fast", "options", "edits", "watermarks"):
        records, registry = _records(SIMPLE, get_protocol(SIMPLE).reference().name, {}, seed=seed)
        assert_parity(SIMPLE, {}, registry, records)
    assert shared["hits"] > 5 and shared["kinds"] > shared["hits"], shared
