"""Registry logic without sockets: redaction, schema identity, compatibility, the request
handler called directly (EmbeddedSchemaRegistry.handle), dump files and open_registry parsing."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.infra.registry import (
    COMPATIBILITY_LEVELS,
    DumpFormatError,
    DumpRegistry,
    EmbeddedSchemaRegistry,
    RegisteredSchema,
    RegistryClient,
    RegistryError,
    RegistryResponse,
    SchemaNotFound,
    SchemaTextError,
    SubjectNotFound,
    VersionNotFound,
    check_compatibility,
    normalize_compatibility,
    open_registry,
    parse_schema,
    schema_key,
)
from conformance.infra.urls import redact, redact_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ticdc" / "avro"


def record(*fields: dict[str, Any], name: str = "t", namespace: str = "default.db") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": list(fields)})


INT_TIDB = {"type": "int", "connect.parameters": {"tidb_type": "INT"}}
A = {"name": "a", "type": INT_TIDB}
NULLABLE_C = {"default": None, "name": "c", "type": ["null", INT_TIDB]}
REQUIRED_D = {"name": "d", "type": "int"}


# ---- redaction ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:pass@host:8081", "http://***@host:8081"),
        ("https://user:pass@host:8081/path?x=1", "https://***@host:8081/path?x=1"),
        ("http://user@host:8081", "http://***@host:8081"),
        ("http://us%40er:p%3Ass%2F@127.0.0.1:1", "http://***@127.0.0.1:1"),
        ("http://user:p@ss@host", "http://***@host"),  # unencoded '@' in the password
        ("http://user:pa/ss@host/x", "http://***@host/x"),  # unencoded '/' in the password
        ("http://:secret@host", "http://***@host"),
        ("http://host:8081", "http://host:8081"),
        ("http://host/search?mail=a@b.c", "http://host/search?mail=a@b.c"),  # '@' in the query stays
        ("http://host/#frag@x", "http://host/#frag@x"),
        ("not a url", "not a url"),
        ("user:pass@host", "user:pass@host"),  # no scheme: not a URL, unchanged as specified
        ("", ""),
        ("embedded://", "embedded://"),
    ],
)
def test_redact(url: str, expected: str) -> None:
    assert redact(url) == expected


def test_redact_never_leaves_the_password() -> None:
    for url in ["http://u:hunter2@h", "http://u:hunter2@h@x", "https://u%3Ax:hunter2@h:1/p"]:
        assert "hunter2" not in redact(url)


def test_redact_text_replaces_embedded_urls() -> None:
    text = "failed: http://u:hunter2@a:1 and https://v:s3cret@b/x, see http://c/d@e"
    out = redact_text(text)
    assert "hunter2" not in out and "s3cret" not in out
    assert out == "failed: http://***@a:1 and https://***@b/x, see http://c/d@e"


# ---- schema parsing and identity ------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("schema_value_*.compact.json")), ids=lambda p: p.name)
def test_ticdc_golden_schemas_parse(path: Path) -> None:
    parsed = parse_schema(path.read_text())
    assert parsed.avro.type == "record"
    assert parsed.key == schema_key(json.loads(path.read_text()))


def test_parse_accepts_what_confluent_accepts() -> None:
    # bytes default given as a JSON string (Confluent's Java parser accepts it; TiCDC sends such).
    parse_schema(record({"name": "b", "type": "bytes", "default": "Aqo="}, namespace="default.testdb"))
    # decimal logical type with connect.parameters on the type object
    dec = {
        "type": "bytes",
        "logicalType": "decimal",
        "precision": 10,
        "scale": 2,
        "connect.parameters": {"tidb_type": "DECIMAL"},
    }
    parse_schema(record({"name": "d", "type": dec}))
    # the project's typical nullable column
    parse_schema(record(NULLABLE_C))


def test_invalid_decimal_is_accepted_silently() -> None:
    bad = record(
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5}}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_schema(bad)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "not valid JSON"),
        ('{"type": "foo"}', "not valid Avro"),
        ('{"type": "record", "name": "1bad", "fields": []}', "not valid Avro"),
        ('{"type": "record", "name": "r", "fields": [1]}', "not valid Avro"),
        ("3", "not valid Avro"),
    ],
)
def test_parse_rejects_invalid(text: str, fragment: str) -> None:
    with pytest.raises(SchemaTextError) as info:
        parse_schema(text)
    assert fragment in info.value.reason


def test_schema_identity_ignores_whitespace_and_key_order_but_not_types() -> None:
    a = parse_schema('{"type":"record","name":"r","fields":[{"name":"x","type":"int"}]}')
    b = parse_schema('{ "fields" : [ { "type" : "int", "name" : "x" } ],\n "name":"r", "type":"record" }')
    assert a.key == b.key
    assert a.text != b.text
    # Python says True == 1; Avro identity must not.
    t = parse_schema(record({"name": "x", "type": "boolean", "default": True}))
    one = parse_schema(record({"name": "x", "type": "boolean", "default": 1}))
    assert t.key != one.key


# ---- compatibility logic ----------------------------------------------------------------------


def test_backward_accepts_nullable_field_with_null_default() -> None:
    result = check_compatibility(record(A, NULLABLE_C), [record(A)], "BACKWARD")
    assert result.compatible and result.messages == ()


def test_backward_rejects_field_without_default() -> None:
    result = check_compatibility(record(A, REQUIRED_D), [record(A)], "BACKWARD")
    assert not result.compatible
    assert result.messages[0].startswith("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'")
    assert "'d'" in result.messages[0] and "/fields/1" in result.messages[0]
    assert "{oldSchemaVersion: 1}" in result.messages
    assert "{compatibility: 'BACKWARD'}" in result.messages


def test_connect_parameters_and_decimal_attributes_do_not_matter() -> None:
    bigint = {"name": "a", "type": {"type": "int", "connect.parameters": {"tidb_type": "BIGINT"}}}
    assert check_compatibility(record(bigint), [record(A)], "FULL_TRANSITIVE").compatible
    d1 = {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}
    d2 = {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 4}}
    # avro (like Java's SchemaCompatibility) ignores logical types
    assert check_compatibility(record(d2), [record(d1)], "FULL").compatible


def test_type_change_and_promotion() -> None:
    as_long = record({"name": "a", "type": "long"})
    as_int = record({"name": "a", "type": "int"})
    assert check_compatibility(as_long, [as_int], "BACKWARD").compatible  # int promotes to long
    result = check_compatibility(as_int, [as_long], "BACKWARD")
    assert not result.compatible and "TYPE_MISMATCH" in result.messages[0]
    # nullable -> required: the reader cannot read a null
    assert not check_compatibility(
        record(A), [record({"name": "a", "type": ["null", INT_TIDB], "default": None})], "BACKWARD"
    ).compatible


def test_forward_and_full() -> None:
    base, added_required = record(A), record(A, REQUIRED_D)
    # FORWARD: the old schema reads data written with the new one; extra writer fields are skipped.
    assert check_compatibility(added_required, [base], "FORWARD").compatible
    # Removing a field the old reader needs (no default) breaks FORWARD but not BACKWARD.
    assert not check_compatibility(base, [added_required], "FORWARD").compatible
    assert check_compatibility(base, [added_required], "BACKWARD").compatible
    # FULL needs both directions
    assert not check_compatibility(added_required, [base], "FULL").compatible
    assert check_compatibility(record(A, NULLABLE_C), [base], "FULL").compatible


def test_transitive_levels_look_at_every_version() -> None:
    v1 = record(A)
    v2 = record(A, NULLABLE_C)  # adds c with a default
    v3 = record(A, {"name": "c", "type": ["null", INT_TIDB]})  # c without default: cannot read v1
    assert check_compatibility(v3, [v1, v2], "BACKWARD").compatible
    transitive = check_compatibility(v3, [v1, v2], "BACKWARD_TRANSITIVE")
    assert not transitive.compatible
    assert "{oldSchemaVersion: 1}" in transitive.messages
    assert check_compatibility(v3, [v1, v2], "FULL").compatible
    assert not check_compatibility(v3, [v1, v2], "FULL_TRANSITIVE").compatible
    # FORWARD_TRANSITIVE: v1' (needs d) cannot read v3' (dropped d), though v2' (d with default) can
    f1, f2, f3 = record(A, REQUIRED_D), record(A, {"name": "d", "type": "int", "default": 0}), record(A)
    assert check_compatibility(f3, [f1, f2], "FORWARD").compatible
    assert not check_compatibility(f3, [f1, f2], "FORWARD_TRANSITIVE").compatible


def test_none_accepts_anything() -> None:
    assert check_compatibility(json.dumps("string"), [record(A)], "none").compatible


def test_normalize_compatibility() -> None:
    assert normalize_compatibility("backward_transitive") == "BACKWARD_TRANSITIVE"
    assert set(COMPATIBILITY_LEVELS) == {normalize_compatibility(x.lower()) for x in COMPATIBILITY_LEVELS}
    with pytest.raises(ValueError, match="Valid values are none, backward"):
        normalize_compatibility("sideways")


# ---- the request handler, called directly -------------------------------------------------------


def call(reg: EmbeddedSchemaRegistry, method: str, path: str, body: object | None = None) -> RegistryResponse:
    raw = b"" if body is None else json.dumps(body).encode()
    return reg.handle(method, path, raw)


def test_handler_register_lookup_and_errors_without_sockets() -> None:
    reg = EmbeddedSchemaRegistry()
    r = call(reg, "GET", "/")
    assert (r.status, r.body) == (200, b"{}")
    assert dict(r.headers)["Content-Type"] == "application/vnd.schemaregistry.v1+json"
    assert call(reg, "POST", "/subjects/s%2Fx/versions", {"schema": record(A)}).json() == {"id": 1}
    assert call(reg, "GET", "/subjects").json() == ["s/x"]
    assert call(reg, "GET", "/subjects/s%2Fx/versions/latest").json() == {
        "subject": "s/x",
        "version": 1,
        "id": 1,
        "schema": record(A),
    }
    r = call(reg, "POST", "/subjects/s%2Fx/versions", {"schema": record(A, REQUIRED_D)})
    assert r.status == 409 and r.json()["error_code"] == 409
    assert r.json()["message"].startswith(
        'Schema being registered is incompatible with an earlier schema for subject "s/x", details: ['
    )
    r = reg.handle("POST", "/subjects/x/versions", b"{not json")
    assert r.status == 400 and r.json()["error_code"] == 400
    assert call(reg, "GET", "/nope").json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    assert call(reg, "PATCH", "/subjects").status == 405
    assert reg.registrations == [("s/x", record(A))]
    assert reg.internal_errors == []


def test_handler_basic_auth_without_sockets() -> None:
    import base64

    reg = EmbeddedSchemaRegistry(auth=("u", "p:w"))
    r = reg.handle("GET", "/")
    assert r.status == 401 and r.json() == {"error_code": 401, "message": "Unauthorized"}
    assert dict(r.headers)["WWW-Authenticate"] == 'Basic realm="SchemaRegistry"'
    wrong = "Basic " + base64.b64encode(b"u:nope").decode()
    assert reg.handle("GET", "/", headers={"Authorization": wrong}).status == 401
    assert reg.handle("GET", "/", headers={"authorization": "Basic !!!"}).status == 401
    good = "Basic " + base64.b64encode(b"u:p:w").decode()
    assert reg.handle("GET", "/", headers={"AUTHORIZATION": good}).status == 200
    assert "p:w" not in repr(reg)


def test_default_compatibility_is_validated() -> None:
    with pytest.raises(ValueError, match="Invalid compatibility level"):
        EmbeddedSchemaRegistry(default_compatibility="LOOSE")
    reg = EmbeddedSchemaRegistry(default_compatibility="none")
    assert call(reg, "GET", "/config").json() == {"compatibilityLevel": "NONE"}


def test_url_before_start_is_an_error() -> None:
    registry = EmbeddedSchemaRegistry()
    with pytest.raises(RuntimeError, match="call start"):
        _ = registry.url


# ---- dumps --------------------------------------------------------------------------------------


def populated() -> EmbeddedSchemaRegistry:
    reg = EmbeddedSchemaRegistry(default_compatibility="NONE")
    call(reg, "POST", "/subjects/b-value/versions", {"schema": record(A)})
    call(reg, "POST", "/subjects/b-value/versions", {"schema": record(A, NULLABLE_C)})
    call(reg, "POST", "/subjects/a-value/versions", {"schema": record(A)})
    call(reg, "POST", "/subjects/gone/versions", {"schema": json.dumps("string")})
    call(reg, "DELETE", "/subjects/gone")
    return reg


def test_dump_round_trip(tmp_path: Path) -> None:
    reg = populated()
    dump = reg.dump()
    assert [(e["subject"], e["version"], e["id"]) for e in dump["schemas"]] == [
        ("a-value", 1, 1),
        ("b-value", 1, 1),
        ("b-value", 2, 2),
    ]  # live versions only, sorted; the deleted subject is left out
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    dumped = DumpRegistry.from_file(path)
    assert dumped.to_dict() == dump
    assert dumped.schema_by_id(2) == record(A, NULLABLE_C)
    assert dumped.subjects_for_id(1) == [("a-value", 1), ("b-value", 1)]
    assert dumped.subjects() == ["a-value", "b-value"]
    assert dumped.versions("b-value") == [1, 2]
    assert dumped.version("b-value") == RegisteredSchema("b-value", 2, 2, record(A, NULLABLE_C))
    assert dumped.version("b-value", 1).id == 1
    assert dumped.server is None
    with pytest.raises(SchemaNotFound) as not_found:
        dumped.schema_by_id(99)
    assert not_found.value.error_code == 40403 and "dump.json" in str(not_found.value)
    with pytest.raises(SubjectNotFound):
        dumped.versions("zzz")
    with pytest.raises(VersionNotFound):
        dumped.version("b-value", 7)
    with pytest.raises(RegistryError, match="read-only"):
        dumped.register("a-value", record(A))


GOOD_ENTRY = {"subject": "s", "version": 1, "id": 1, "schema": '"string"'}


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{oops", "not valid JSON"),
        ("[]", 'must be a JSON object with a "schemas" list'),
        ('{"subjects": []}', 'must be a JSON object with a "schemas" list'),
        ('{"schemas": [3]}', 'entry 0 of "schemas" is a int'),
        (
            json.dumps({"schemas": [{k: v for k, v in GOOD_ENTRY.items() if k != "id"}]}),
            'entry 0 of "schemas" (subject \'s\') has no "id"',
        ),
        (json.dumps({"schemas": [GOOD_ENTRY, {**GOOD_ENTRY, "version": 2, "schema": None}]}), "entry 1"),
        (json.dumps({"schemas": [{**GOOD_ENTRY, "schema": {"type": "string"}}]}), "JSON *string*"),
        (json.dumps({"schemas": [{**GOOD_ENTRY, "schema": "{nope"}]}), '"schema" does not parse as JSON'),
        (json.dumps({"schemas": [{**GOOD_ENTRY, "version": "1"}]}), '"version" must be a positive integer'),
        (json.dumps({"schemas": [{**GOOD_ENTRY, "id": 0}]}), '"id" must be a positive integer'),
        (json.dumps({"schemas": [{**GOOD_ENTRY, "subject": ""}]}), '"subject" must be a non-empty string'),
        (
            json.dumps({"schemas": [GOOD_ENTRY, GOOD_ENTRY]}),
            "entries 0 and 1 both define subject 's' version 1",
        ),
        (
            json.dumps({"schemas": [GOOD_ENTRY, {**GOOD_ENTRY, "subject": "t", "schema": '"int"'}]}),
            "id 1 is registered with two different schemas (entries 0 and 1)",
        ),
    ],
)
def test_malformed_dumps(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DumpFormatError) as info:
        DumpRegistry.from_file(path)
    assert fragment in str(info.value)
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}: ")


def test_dump_same_id_same_schema_with_other_whitespace_is_fine() -> None:
    d = {"schemas": [GOOD_ENTRY, {**GOOD_ENTRY, "subject": "t", "schema": ' "string" '}]}
    assert DumpRegistry.from_dict(d).subjects_for_id(1) == [("s", 1), ("t", 1)]


def test_unreadable_dump(tmp_path: Path) -> None:
    with pytest.raises(DumpFormatError, match="cannot read the file"):
        DumpRegistry.from_file(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DumpFormatError, match="not UTF-8"):
        DumpRegistry.from_file(tmp_path / "bin.json")


# ---- open_registry argument handling (no server started) -------------------------------------


def test_open_registry_dump_file(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps(populated().dump()))
    with open_registry(str(path)) as registry:
        assert isinstance(registry, DumpRegistry)
        assert registry.server is None
        assert registry.schema_by_id(1) == record(A)



@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("ftp://host", "scheme is not supported"),
        ("/no/such/dump.json", "no such file"),
        ("user:hunter2@host:8081", "without its scheme"),
        ("embedded://?compat=NONE", "Unknown option"),
        ("embedded://?compatibility=SIDEWAYS", "not a compatibility level"),
    ],
)
def test_open_registry_rejects_unknown_forms(spec: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info, open_registry(spec):
        pass
    message = str(info.value)
    assert fragment in message
    assert "hunter2" not in message
    if "Unknown registry" in message:
        assert "embedded://" in message and "http(s)://" in message and "container://" in message


# ---- RegistryClient construction (no request sent) -------------------------------------------


def test_client_url_and_repr_are_redacted() -> None:
    client = RegistryClient("http://alice:s%40cret@127.0.0.1:8081/")
    assert client.url == "http://***@127.0.0.1:8081"
    assert repr(client) == "RegistryClient('http://***@127.0.0.1:8081')"
    assert "cret" not in repr(client) and client.server is None


@pytest.mark.parametrize(
    "url", ["http://u:hunter2@host:notaport", "ftp://u:hunter2@host", "http://u:hunter2@"]
)
def test_client_rejects_bad_urls_without_leaking(url: str) -> None:
    with pytest.raises(ValueError) as info:
        RegistryClient(url)
    assert "hunter2" not in str(info.value)
    assert "http(s)://" in str(info.value) or "http://" in str(info.value)


def test_negative_id_is_not_found_without_a_request() -> None:
    client = RegistryClient("http://127.0.0.1:9")  # nothing is sent for a negative id
    with pytest.raises(SchemaNotFound) as info:
        client.schema_by_id(-1)
    assert info.value.error_code == 40403


# ---- robustness: no input makes the handler fail ------------------------------------------------

# (method, path template) of every route, plus a few that match none; methods are also mixed up.
ROUTES = [
    ("GET", ""),
    ("GET", "subjects"),
    ("POST", "subjects/{s}"),
    ("DELETE", "subjects/{s}"),
    ("GET", "subjects/{s}/versions"),
    ("POST", "subjects/{s}/versions"),
    ("GET", "subjects/{s}/versions/{v}"),
    ("DELETE", "subjects/{s}/versions/{v}"),
    ("GET", "subjects/{s}/versions/{v}/schema"),
    ("GET", "subjects/{s}/versions/{v}/referencedby"),
    ("GET", "schemas/ids/{v}"),
    ("GET", "schemas/ids/{v}/versions"),
    ("GET", "schemas/ids/{v}/subjects"),
    ("GET", "schemas/types"),
    ("GET", "config"),
    ("PUT", "config"),
    ("DELETE", "config"),
    ("GET", "config/{s}"),
    ("PUT", "config/{s}"),
    ("DELETE", "config/{s}"),
    ("POST", "compatibility/subjects/{s}/versions"),
    ("POST", "compatibility/subjects/{s}/versions/{v}"),
    ("GET", "mode"),
    ("GET", "mode/{s}"),
    ("GET", "{s}/{v}"),
    ("POST", "subjects/{s}/{v}/versions"),
]
SUBJECTS = ["s", "b-value", "a-value", "gone", "s%2Fx", "%zz", "%C3%A9", ""]
VERSIONS = ["latest", "-1", "0", "1", "2", "3", "abc", "99999999999", "%", "+1", " 1"]
QUERIES = [
    "",
    "?deleted=true",
    "?permanent=true",
    "?verbose=true&defaultToGlobal=true",
    "?offset=x&limit=y",
    "?deleted_only=true&subjectPrefix=s",
    "?normalize=False",
    "?offset=1&limit=1",
]
requests = st.builds(
    lambda route, other, s, v, q: (other or route[0], "/" + route[1].format(s=s, v=v) + q),
    st.sampled_from(ROUTES),
    st.sampled_from([None, None, None, None, "GET", "POST", "PUT", "DELETE", "PATCH"]),
    st.sampled_from(SUBJECTS),
    st.sampled_from(VERSIONS),
    st.sampled_from(QUERIES),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
schema_texts = st.one_of(
    st.sampled_from([record(A), record(A, NULLABLE_C), record(A, REQUIRED_D), '"string"', "{", "[]", "null"]),
    json_values.map(json.dumps),
    st.text(max_size=20),
)
VALID = [record(A), record(A, NULLABLE_C), record(A, REQUIRED_D), record(A, name="u"), '"string"', '"int"']
bodies = st.one_of(
    st.sampled_from(VALID).map(lambda t: json.dumps({"schema": t}).encode()),
    st.sampled_from(["none", "FULL", "backward_transitive", "bogus"]).map(
        lambda level: json.dumps({"compatibility": level}).encode()
    ),
    st.just(b""),
    st.binary(max_size=20),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"schema": schema_texts},
        optional={
            "schemaType": st.sampled_from(["AVRO", "avro", "JSON", 3]),
            "references": json_values,
            "compatibility": st.sampled_from(["none", "FULL", "bogus", 1]),
        },
    ).map(lambda d: json.dumps(d).encode()),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests, body=bodies)
def test_handler_never_fails_on_bad_input(request: tuple[str, str], body: bytes) -> None:
    reg = FUZZ_REGISTRY
    response = reg.handle(*request, body)
    assert response.status != 500, response.body
    assert reg.internal_errors == []
    if response.status >= 400:
        answer = response.json()
        assert set(answer) == {"error_code", "message"}
        assert str(answer["error_code"]).startswith(str(response.status))


FUZZ_REGISTRY = populated()


def test_error_typed_records_are_compared_as_records() -> None:
    e1 = json.dumps({"type": "error", "name": "e", "fields": [{"name": "a", "type": "int"}]})
    e2 = json.dumps({"type": "error", "name": "e", "fields": [{"name": "a", "type": "int"}, NULLABLE_C]})
    # avro's checker alone raises "Unknown schema type: error" here
    assert check_compatibility(e2, [e1], "FULL").compatible
    assert not check_compatibility(
        json.dumps({"type": "error", "name": "e", "fields": [A, REQUIRED_D]}), [e1], "BACKWARD"
    ).compatible


def test_deeply_nested_input_is_rejected_cleanly() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    reg = EmbeddedSchemaRegistry()
    r = reg.handle("POST", "/subjects/x/versions", deep.encode())
    assert (r.status, r.json()["error_code"]) == (400, 400)
    r = reg.handle("POST", "/subjects/x/versions", json.dumps({"schema": deep}).encode())
    assert (r.status, r.json()["error_code"]) == (422, 42201)
    assert "nested too deeply" in r.json()["message"]
    assert reg.internal_errors == []


# ---- lookups by id: the holders index against a scan of every subject ---------------------------


def _scanned_refs(reg: EmbeddedSchemaRegistry, schema_id: int, include_deleted: bool) -> list[tuple[str, int]] | None:
    """What `/schemas/ids/{id}/versions` answered before the index: every subject scanned (None: 404)."""
    state = reg._subjects
    if schema_id not in reg._schemas or not any(v.schema_id == schema_id for vs in state.values() for v in vs):
        return None
    return [(s, v.version) for s in sorted(state) for v in state[s]
            if v.schema_id == schema_id and (include_deleted or not v.deleted)]


_OPS = st.lists(st.tuples(st.sampled_from(["register", "soft-version", "hard-version", "soft-subject",
                                           "hard-subject"]),
                          st.sampled_from(["s1", "s2", "s3"]), st.integers(0, 3)), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
def test_id_lookups_equal_a_scan_of_every_subject(ops: list[tuple[str, str, int]]) -> None:
    """Registrations and soft and permanent deletions of versions and subjects, in any order: the
    answers by id (versions, subjects, the schema text) are those a scan of every subject gives."""
    reg = EmbeddedSchemaRegistry(default_compatibility="NONE")
    schemas = [record(A), record(A, NULLABLE_C), record(REQUIRED_D), record(A, REQUIRED_D)]
    for op, subject, n in ops:
        if op == "register":
            call(reg, "POST", f"/subjects/{subject}/versions", {"schema": schemas[n]})
        elif op == "soft-version":
            call(reg, "DELETE", f"/subjects/{subject}/versions/{n + 1}")
        elif op == "hard-version":
            call(reg, "DELETE", f"/subjects/{subject}/versions/{n + 1}?permanent=true")
        elif op == "soft-subject":
            call(reg, "DELETE", f"/subjects/{subject}")
        else:
            call(reg, "DELETE", f"/subjects/{subject}?permanent=true")
        for schema_id in range(1, 6):
            for deleted in (False, True):
                want = _scanned_refs(reg, schema_id, deleted)
                query = "?deleted=true" if deleted else ""
                got = call(reg, "GET", f"/schemas/ids/{schema_id}/versions{query}")
                subjects = call(reg, "GET", f"/schemas/ids/{schema_id}/subjects{query}")
                text = call(reg, "GET", f"/schemas/ids/{schema_id}")
                if want is None:
                    assert (got.status, subjects.status, text.status) == (404, 404, 404)
                else:
                    assert got.json() == [{"subject": s, "version": v} for s, v in want]
                    assert subjects.json() == sorted({s for s, _ in want})
                    assert text.status == 200


def test_parses_are_kept_per_text_and_refusals_raised_afresh() -> None:
    """parse_schema keeps the latest texts' parses: the same object again, equal to a fresh parse;
    a text it refuses is refused every time (nothing kept for it)."""
    from conformance.infra.registry import compat

    text = record(A, NULLABLE_C, name="kept")
    first = parse_schema(text)
    assert parse_schema(text) is first
    fresh = compat._parse(text)
    assert (fresh.text, fresh.key, str(fresh.avro)) == (first.text, first.key, str(first.avro))
    assert parse_schema(record(A, name="kept2")).key != first.key
    for _ in range(2):
        with pytest.raises(SchemaTextError):
            parse_schema('{"type": "record", "name": "bad"}')
    assert compat._parse_kept.cache_info().maxsize == compat.PARSED_KEPT
