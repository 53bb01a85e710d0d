"""The embedded Schema Registry over real sockets (127.0.0.1, port 0): the standard Confluent
client against it unchanged, the exact REST answers, RegistryClient, open_registry and serve()."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from conformance.infra.registry import (
    DumpRegistry,
    EmbeddedSchemaRegistry,
    IncompatibleSchema,
    InvalidSchema,
    RegisteredSchema,
    RegistryClient,
    RegistryError,
    RegistryUnavailable,
    SchemaNotFound,
    SubjectNotFound,
    Unauthorized,
    VersionNotFound,
    open_registry,
    serve,
)

pytestmark = pytest.mark.timeout(60)

CT = "application/vnd.schemaregistry.v1+json"
INT_TIDB = {"type": "int", "connect.parameters": {"tidb_type": "INT"}}


def record(*fields: dict[str, Any], name: str = "t") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "default.db", "fields": list(fields)})


A = {"name": "a", "type": INT_TIDB}
NULLABLE_C = {"default": None, "name": "c", "type": ["null", INT_TIDB]}
REQUIRED_D = {"name": "d", "type": "int"}
V1 = record(A)
V2 = record(A, NULLABLE_C)
V_BAD = record(A, REQUIRED_D)


@pytest.fixture
def registry() -> Iterator[EmbeddedSchemaRegistry]:
    with EmbeddedSchemaRegistry() as reg:
        yield reg
    assert reg.internal_errors == []


class Raw:
    """Plain http.client requests, to see exact statuses, headers and bodies."""

    def __init__(self, url: str, auth: tuple[str, str] | None = None) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.auth = auth

    def __call__(
        self, method: str, path: str, body: object | None = None, raw: bytes | None = None
    ) -> tuple[int, http.client.HTTPResponse, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        headers = {"Content-Type": CT}
        if self.auth:
            headers["Authorization"] = "Basic " + base64.b64encode(":".join(self.auth).encode()).decode()
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        try:
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        try:
            parsed: Any = json.loads(data)
        except ValueError:
            parsed = data
        return resp.status, resp, parsed


# ---- the standard Confluent client, unchanged ---------------------------------------------------


def test_confluent_client_against_embedded_registry(registry: EmbeddedSchemaRegistry) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    sid = client.register_schema("db.t-value", Schema(V1, "AVRO"))
    assert sid == 1
    assert client.get_schema(sid).schema_str == V1
    assert client.get_schema(sid).schema_type == "AVRO"
    assert client.register_schema("db.t-value", Schema(V2, "AVRO")) == 2
    latest = client.get_latest_version("db.t-value")
    assert (latest.subject, latest.version, latest.schema_id, latest.schema.schema_str) == (
        "db.t-value",
        2,
        2,
        V2,
    )
    assert client.get_versions("db.t-value") == [1, 2]
    first = client.get_version("db.t-value", 1)
    assert (first.version, first.schema_id, first.schema.schema_str) == (1, 1, V1)
    looked = client.lookup_schema("db.t-value", Schema(V1, "AVRO"))
    assert (looked.subject, looked.version, looked.schema_id) == ("db.t-value", 1, 1)
    assert client.get_subjects() == ["db.t-value"]
    assert client.get_schema_types() == ["AVRO"]
    assert [(v.subject, v.version) for v in client.get_schema_versions(2)] == [("db.t-value", 2)]
    assert client.get_subjects_by_schema_id(1) == ["db.t-value"]

    assert client.get_compatibility() == "BACKWARD"
    # confluent-kafka annotates set_compatibility as -> str but returns the JSON answer
    answer: object = client.set_compatibility(level="full")
    assert answer == {"compatibility": "FULL"}
    assert client.get_compatibility() == "FULL"
    answer = cast(object, client.set_compatibility("db.t-value", "NONE"))
    assert answer == {"compatibility": "NONE"}
    assert client.get_compatibility("db.t-value") == "NONE"
    with pytest.raises(SchemaRegistryError) as no_config:
        client.get_compatibility("other")
    assert (no_config.value.http_status_code, no_config.value.error_code) == (404, 40408)

    client.set_compatibility("db.t-value", "BACKWARD")
    assert client.test_compatibility(
        "db.t-value", Schema(record(A, NULLABLE_C, {**NULLABLE_C, "name": "e"}), "AVRO")
    )
    assert not client.test_compatibility("db.t-value", Schema(V_BAD, "AVRO"))
    assert client.test_compatibility_all_versions("db.t-value", Schema(V2, "AVRO"))
    with pytest.raises(SchemaRegistryError) as incompatible:
        client.register_schema("db.t-value", Schema(V_BAD, "AVRO"))
    assert (incompatible.value.http_status_code, incompatible.value.error_code) == (409, 409)

    assert client.get_global_mode() == "READWRITE"
    assert client.delete_version("db.t-value", 2) == 2
    assert client.get_versions("db.t-value") == [1]
    assert client.delete_subject("db.t-value") == [1]
    assert client.get_subjects() == []
    assert client.delete_subject("db.t-value", permanent=True) == [1, 2]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_versions("db.t-value")
    assert (gone.value.http_status_code, gone.value.error_code) == (404, 40401)
    with pytest.raises(SchemaRegistryError) as no_schema:
        SchemaRegistryClient({"url": registry.url}).get_schema(1)  # a fresh client: no id cache
    assert (no_schema.value.http_status_code, no_schema.value.error_code) == (404, 40403)


def test_confluent_client_with_basic_auth() -> None:
    with EmbeddedSchemaRegistry(auth=("u", "p")) as reg:
        good = SchemaRegistryClient({"url": reg.url, "basic.auth.user.info": "u:p"})
        assert good.register_schema("s", Schema(V1, "AVRO")) == 1
        assert good.get_schema(1).schema_str == V1
        bad = SchemaRegistryClient({"url": reg.url, "basic.auth.user.info": "u:wrong"})
        with pytest.raises(SchemaRegistryError) as info:
            bad.get_subjects()
        assert (info.value.http_status_code, info.value.error_code) == (401, 401)
        status, resp, body = Raw(reg.url)("GET", "/")
        assert status == 401 and body == {"error_code": 401, "message": "Unauthorized"}
        assert resp.getheader("WWW-Authenticate") == 'Basic realm="SchemaRegistry"'
        assert Raw(reg.url, ("u", "p"))("GET", "/")[2] == {}


# ---- exact REST answers ---------------------------------------------------------------------------


def test_root_and_content_type(registry: EmbeddedSchemaRegistry) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(registry.url.rsplit(":", 1)[1]), timeout=5)
    conn.request("GET", "/")
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (200, b"{}")  # TiCDC compares the body with "{}"
    assert resp.getheader("Content-Type") == CT
    conn.close()


def invalid_version(v: str) -> dict[str, Any]:
    return {
        "error_code": 42202,
        "message": f"The specified version '{v}' is not a valid version id. "
        'Allowed values are between [1, 2^31-1] and the string "latest"',
    }


def test_error_answers(registry: EmbeddedSchemaRegistry) -> None:
    raw = Raw(registry.url)
    assert raw("POST", "/subjects/s/versions", {"schema": V1})[2] == {"id": 1}
    cases: list[tuple[str, str, object | None, int, dict[str, Any]]] = [
        ("GET", "/schemas/ids/99", None, 404, {"error_code": 40403, "message": "Schema 99 not found"}),
        ("GET", "/schemas/ids/-1", None, 404, {"error_code": 40403, "message": "Schema -1 not found"}),
        (
            "GET",
            "/schemas/ids/99/versions",
            None,
            404,
            {"error_code": 40403, "message": "Schema 99 not found"},
        ),
        (
            "GET",
            "/subjects/nope/versions",
            None,
            404,
            {"error_code": 40401, "message": "Subject 'nope' not found."},
        ),
        (
            "GET",
            "/subjects/nope/versions/1",
            None,
            404,
            {"error_code": 40401, "message": "Subject 'nope' not found."},
        ),
        (
            "GET",
            "/subjects/s/versions/7",
            None,
            404,
            {"error_code": 40402, "message": "Version 7 not found."},
        ),
        ("GET", "/subjects/s/versions/abc", None, 422, invalid_version("abc")),
        ("GET", "/subjects/s/versions/0", None, 422, invalid_version("0")),
        ("GET", "/subjects/s/versions/-2", None, 422, invalid_version("-2")),
        ("GET", "/subjects/s/versions/2147483648", None, 422, invalid_version("2147483648")),
        (
            "POST",
            "/subjects/nope",
            {"schema": V1},
            404,
            {"error_code": 40401, "message": "Subject 'nope' not found."},
        ),
        ("POST", "/subjects/s", {"schema": V2}, 404, {"error_code": 40403, "message": "Schema not found"}),
        (
            "GET",
            "/config/s",
            None,
            404,
            {
                "error_code": 40408,
                "message": "Subject 's' does not have subject-level compatibility configured",
            },
        ),
        ("DELETE", "/config/s", None, 404, {"error_code": 40401, "message": "Subject 's' not found."}),
        (
            "PUT",
            "/config",
            {"compatibility": "SIDEWAYS"},
            422,
            {
                "error_code": 42203,
                "message": "Invalid compatibility level. Valid values are none, backward, forward, full, "
                "backward_transitive, forward_transitive, and full_transitive",
            },
        ),
        (
            "DELETE",
            "/subjects/s?permanent=true",
            None,
            404,
            {
                "error_code": 40405,
                "message": "Subject 's' was not deleted first before being permanently deleted",
            },
        ),
        (
            "DELETE",
            "/subjects/s/versions/1?permanent=true",
            None,
            404,
            {
                "error_code": 40407,
                "message": "Subject 's' Version 1 was not deleted first before being permanently deleted",
            },
        ),
        (
            "DELETE",
            "/subjects/nope",
            None,
            404,
            {"error_code": 40401, "message": "Subject 'nope' not found."},
        ),
        (
            "POST",
            "/compatibility/subjects/nope/versions/latest",
            {"schema": V1},
            404,
            {"error_code": 40401, "message": "Subject 'nope' not found."},
        ),
        (
            "POST",
            "/compatibility/subjects/s/versions/3",
            {"schema": V1},
            404,
            {"error_code": 40402, "message": "Version 3 not found."},
        ),
        ("GET", "/no/such/route", None, 404, {"error_code": 404, "message": "HTTP 404 Not Found"}),
        ("GET", "/schemas/ids/abc", None, 404, {"error_code": 404, "message": "HTTP 404 Not Found"}),
        ("PUT", "/subjects", None, 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}),
    ]
    for method, path, body, status, expected in cases:
        got_status, resp, got = raw(method, path, body)
        assert (method, path, got_status, got) == (method, path, status, expected)
        assert resp.getheader("Content-Type") == CT


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"schema": "{not json"}, "Invalid schema"),
        ({"schema": '{"type": "foo"}'}, "Invalid schema"),
        ({"schema": V1, "schemaType": "PROTOBUF"}, "supports only AVRO"),
        ({"schema": V1, "schemaType": "JSON"}, "supports only AVRO"),
        (
            {"schema": V1, "references": [{"name": "x", "subject": "y", "version": 1}]},
            "references are not supported",
        ),
        ({"schema": {"type": "string"}}, "as a JSON string"),
        ({}, "as a JSON string"),
        ([1], "expected a JSON object"),
    ],
)
def test_register_rejects_invalid_schemas(
    registry: EmbeddedSchemaRegistry, body: object, fragment: str
) -> None:
    for path in ("/subjects/s/versions", "/compatibility/subjects/s/versions"):
        status, _, answer = Raw(registry.url)("POST", path, body)
        assert status == 422 and answer["error_code"] == 42201
        assert fragment in answer["message"]
    assert registry.registrations == []


def test_malformed_json_body_is_400(registry: EmbeddedSchemaRegistry) -> None:
    status, _, answer = Raw(registry.url)("POST", "/subjects/s/versions", raw=b'{"schema": ')
    assert status == 400 and answer["error_code"] == 400
    assert "Unparseable request body" in answer["message"]


def test_soft_and_permanent_deletes(registry: EmbeddedSchemaRegistry) -> None:
    raw = Raw(registry.url)
    raw("PUT", "/config", {"compatibility": "NONE"})
    raw("POST", "/subjects/s/versions", {"schema": V1})
    raw("POST", "/subjects/s/versions", {"schema": V_BAD})
    assert raw("DELETE", "/subjects/s/versions/latest")[2] == 2
    assert raw("GET", "/subjects/s/versions")[2] == [1]
    assert raw("GET", "/subjects/s/versions?deleted=true")[2] == [1, 2]
    assert raw("GET", "/subjects/s/versions/2")[2]["error_code"] == 40402
    assert raw("GET", "/subjects/s/versions/2?deleted=true")[2]["id"] == 2
    assert raw("GET", "/schemas/ids/2")[2] == {"schema": V_BAD}  # soft-deleted ids still resolve
    assert raw("GET", "/schemas/ids/2/versions")[2] == []
    assert raw("GET", "/schemas/ids/2/versions?deleted=true")[2] == [{"subject": "s", "version": 2}]
    assert raw("DELETE", "/subjects/s/versions/2")[2] == {
        "error_code": 40406,
        "message": "Subject 's' Version 2 was soft deleted.Set permanent=true to delete permanently",
    }
    assert raw("DELETE", "/subjects/s/versions/2?permanent=true")[2] == 2
    assert raw("GET", "/schemas/ids/2")[0] == 404
    # Deleted versions take no part in compatibility: re-registering V_BAD under BACKWARD against V1 fails.
    raw("PUT", "/config/s", {"compatibility": "backward"})
    assert raw("POST", "/subjects/s/versions", {"schema": V_BAD})[0] == 409
    assert raw("DELETE", "/subjects/s")[2] == [1]
    assert raw("GET", "/subjects")[2] == []
    assert raw("GET", "/subjects?deleted=true")[2] == ["s"]
    assert raw("DELETE", "/subjects/s")[2] == {
        "error_code": 40404,
        "message": "Subject 's' was soft deleted.Set permanent=true to delete permanently",
    }
    assert raw("POST", "/subjects/s", {"schema": V1})[2]["error_code"] == 40401
    assert raw("POST", "/subjects/s?deleted=true", {"schema": V1})[2]["version"] == 1
    assert raw("DELETE", "/subjects/s?permanent=true")[2] == [1]
    assert raw("GET", "/subjects?deleted=true")[2] == []
    # ids are never reused for another schema; the same schema keeps its id
    assert raw("POST", "/subjects/s/versions", {"schema": V2})[2] == {"id": 3}
    assert raw("POST", "/subjects/s/versions", {"schema": V1})[2] == {"id": 1}


def test_config_endpoints(registry: EmbeddedSchemaRegistry) -> None:
    raw = Raw(registry.url)
    assert raw("GET", "/config")[2] == {"compatibilityLevel": "BACKWARD"}
    assert raw("PUT", "/config", {"compatibility": "forward_transitive"})[2] == {
        "compatibility": "FORWARD_TRANSITIVE"
    }
    assert raw("GET", "/config/x?defaultToGlobal=true")[2] == {"compatibilityLevel": "FORWARD_TRANSITIVE"}
    assert raw("PUT", "/config/x", {"compatibility": "NONE"})[2] == {"compatibility": "NONE"}
    assert raw("GET", "/config/x")[2] == {"compatibilityLevel": "NONE"}
    assert raw("DELETE", "/config/x")[2] == {"compatibilityLevel": "NONE"}
    assert raw("GET", "/config/x")[2]["error_code"] == 40408
    assert raw("GET", "/mode")[2] == {"mode": "READWRITE"}


def test_versions_schema_and_encoded_subjects(registry: EmbeddedSchemaRegistry) -> None:
    raw = Raw(registry.url)
    subject = "default.db.t-é value/x"
    quoted = "default.db.t-%C3%A9%20value%2Fx"
    indented = json.dumps(json.loads(V1), indent=2)
    assert raw("POST", f"/subjects/{quoted}/versions", {"schema": indented})[2] == {"id": 1}
    status, _, body = raw("GET", f"/subjects/{quoted}/versions/-1/schema")
    assert status == 200 and body == json.loads(indented)
    assert raw("GET", f"/subjects/{quoted}/versions/1")[2]["schema"] == indented  # first text, verbatim
    assert raw("GET", "/subjects")[2] == [subject]
    assert raw("GET", "/schemas/ids/1?subject=whatever")[2] == {"schema": indented}
    assert raw("GET", "/schemas/ids/1/subjects")[2] == [subject]
    assert raw("GET", f"/subjects/{quoted}/versions/1/referencedby")[2] == []
    assert raw("GET", "/schemas/types")[2] == ["AVRO"]


# ---- registration semantics ------------------------------------------------------------------------


def test_identity_and_global_ids(registry: EmbeddedSchemaRegistry) -> None:
    client = RegistryClient(registry.url)
    assert client.register("a", V1) == 1
    assert client.register("a", V1) == 1
    assert client.versions("a") == [1]
    assert client.register("b", V1) == 1  # same schema, other subject: same id
    spaced = json.dumps(json.loads(V1), indent=4, sort_keys=True)
    assert client.register("a", spaced) == 1  # whitespace/key order do not matter
    assert client.versions("a") == [1]
    assert client.register("c", spaced) == 1
    assert client.schema_by_id(1) == V1  # the first registration's exact text
    assert sorted(client.subjects_for_id(1)) == [("a", 1), ("b", 1), ("c", 1)]
    assert client.register("a", V2) == 2
    assert registry.registrations == [
        ("a", V1),
        ("a", V1),
        ("b", V1),
        ("a", spaced),
        ("c", spaced),
        ("a", V2),
    ]


def test_the_id_cache_keeps_the_latest_ids_only(registry: EmbeddedSchemaRegistry,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker's client lives as long as the worker: its cache must not grow with the run.
    monkeypatch.setattr(RegistryClient, "CACHED_IDS", 3)
    client = RegistryClient(registry.url)
    texts = {client.register(f"s{i}", record(A, name=f"t{i}")): record(A, name=f"t{i}") for i in range(6)}
    for _round in range(2):
        for schema_id, text in texts.items():
            assert client.schema_by_id(schema_id) == text
            assert client.subjects_for_id(schema_id) == [(f"s{schema_id - 1}", 1)]
            assert len(client._schemas) <= 3 and len(client._id_subjects) <= 3
    assert list(client._schemas) == list(texts)[-3:]  # the latest answers are the ones kept


def test_compatibility_levels_over_http(registry: EmbeddedSchemaRegistry) -> None:
    client = RegistryClient(registry.url)
    client.register("s", V1)
    with pytest.raises(IncompatibleSchema) as info:
        client.register("s", V_BAD)
    assert info.value.status == 409 and info.value.error_code == 409
    assert info.value.message.startswith(
        'Schema being registered is incompatible with an earlier schema for subject "s", details: ['
    )
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in info.value.message
    assert client.register("s", V2) == 2  # nullable field with default null: BACKWARD-compatible

    # NONE accepts anything, even a different type
    assert client.set_compatibility("NONE", "n") == "NONE"
    client.register("n", V1)
    client.register("n", json.dumps("string"))
    assert client.versions("n") == [1, 2]

    # FORWARD: adding a required field is fine, removing one is not
    client.set_compatibility("FORWARD", "f")
    client.register("f", V1)
    client.register("f", V_BAD)
    with pytest.raises(IncompatibleSchema):
        client.register("f", V2)  # drops d, which the latest (reader) needs
    assert client.register("f", V1) == 1  # already a live version: its id, no check, no new version
    assert client.versions("f") == [1, 2]
    # FULL: both directions
    client.set_compatibility("FULL", "full")
    client.register("full", V1)
    with pytest.raises(IncompatibleSchema):
        client.register("full", V_BAD)
    client.register("full", V2)

    # transitive: v3 is compatible with v2 but not with v1
    v3 = record(A, {"name": "c", "type": ["null", INT_TIDB]})
    for level, ok in (
        ("BACKWARD", True),
        ("BACKWARD_TRANSITIVE", False),
        ("FULL", True),
        ("FULL_TRANSITIVE", False),
    ):
        subject = f"tr-{level}"
        client.set_compatibility(level, subject)
        client.register(subject, V1)
        client.register(subject, V2)
        if ok:
            client.register(subject, v3)
            assert client.versions(subject) == [1, 2, 3]
        else:
            with pytest.raises(IncompatibleSchema):
                client.register(subject, v3)
            assert client.versions(subject) == [1, 2]
    assert client.get_compatibility("tr-FULL") == "FULL"
    assert client.get_compatibility("unset") == "BACKWARD"


def test_compatibility_endpoint_verbose(registry: EmbeddedSchemaRegistry) -> None:
    raw = Raw(registry.url)
    raw("POST", "/subjects/s/versions", {"schema": V1})
    raw("POST", "/subjects/s/versions", {"schema": V2})
    v3 = record(A, {"name": "c", "type": ["null", INT_TIDB]})
    # against one version: only that version counts
    assert raw("POST", "/compatibility/subjects/s/versions/latest", {"schema": v3})[2] == {
        "is_compatible": True
    }
    status, _, verbose = raw("POST", "/compatibility/subjects/s/versions/1?verbose=true", {"schema": v3})
    assert status == 200 and verbose["is_compatible"] is False
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m for m in verbose["messages"])
    assert "{oldSchemaVersion: 1}" in verbose["messages"]
    ok = raw("POST", "/compatibility/subjects/s/versions/latest?verbose=true", {"schema": v3})[2]
    assert ok == {"is_compatible": True, "messages": []}
    # all versions, per the level
    raw("PUT", "/config/s", {"compatibility": "BACKWARD_TRANSITIVE"})
    assert raw("POST", "/compatibility/subjects/s/versions", {"schema": v3})[2] == {"is_compatible": False}
    assert raw("POST", "/compatibility/subjects/new/versions", {"schema": v3})[2] == {"is_compatible": True}


def test_concurrent_registrations_are_consistent(registry: EmbeddedSchemaRegistry) -> None:
    schemas = [record(A, *[{**NULLABLE_C, "name": f"c{i}"} for i in range(n)]) for n in range(6)]
    client = RegistryClient(registry.url)
    results: dict[tuple[int, int, int], int] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(worker: int) -> None:
        try:
            barrier.wait()
            own = RegistryClient(registry.url) if worker % 2 else client  # shared and private clients
            for round_ in range(5):
                for index, text in enumerate(schemas):
                    sid = own.register(f"subject-{(worker + round_) % 3}", text)
                    results[(worker, round_, index)] = sid
                    assert own.schema_by_id(sid) == text
                    assert own.version(f"subject-{(worker + round_) % 3}").id >= 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    ids_per_schema = {
        index: {sid for (_, _, i), sid in results.items() if i == index} for index in range(len(schemas))
    }
    assert all(len(ids) == 1 for ids in ids_per_schema.values()), ids_per_schema
    assert sorted(next(iter(ids)) for ids in ids_per_schema.values()) == list(range(1, 7))
    for subject in ("subject-0", "subject-1", "subject-2"):
        assert client.versions(subject) == [1, 2, 3, 4, 5, 6]  # identical schemas never add versions
    assert len(registry.registrations) == 8 * 5 * len(schemas)


# ---- RegistryClient -------------------------------------------------------------------------------


def test_client_api_and_errors(registry: EmbeddedSchemaRegistry) -> None:
    client = RegistryClient(registry.url)
    client.check_root()
    assert client.register("x", V1) == 1
    assert client.version("x") == RegisteredSchema("x", 1, 1, V1)
    assert client.version("x", 1) == RegisteredSchema("x", 1, 1, V1)
    assert client.subjects() == ["x"]
    assert client.subjects_for_id(1) == [("x", 1)]
    with pytest.raises(SchemaNotFound) as nf:
        client.schema_by_id(42)
    assert (nf.value.status, nf.value.error_code, nf.value.message) == (404, 40403, "Schema 42 not found")
    with pytest.raises(SubjectNotFound):
        client.versions("nope")
    with pytest.raises(VersionNotFound):
        client.version("x", 9)
    with pytest.raises(InvalidSchema) as invalid:
        client.register("x", "{nope")
    assert "Invalid schema" in invalid.value.message and "valid Avro" in str(invalid.value)
    with pytest.raises(RegistryError) as bad_level:
        client.set_compatibility("sideways")
    assert bad_level.value.error_code == 42203
    with pytest.raises(ValueError):
        client.version("x", "first")


def test_client_sends_exactly_what_ticdc_sends() -> None:
    seen: list[tuple[str, str, dict[str, str], bytes]] = []

    class Capture(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.command, self.path, dict(self.headers.items()), body))
            answer = b'{"id": 7}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        client = RegistryClient(f"http://us%3Aer:p%40ss@127.0.0.1:{server.server_address[1]}")
        assert client.register("db/t-value", V1) == 7
    finally:
        server.shutdown()
        server.server_close()
    method, path, headers, body = seen[0]
    assert (method, path) == ("POST", "/subjects/db%2Ft-value/versions")
    assert body == json.dumps({"schema": V1}).encode()
    assert headers["Content-Type"] == CT
    assert headers["Accept"] == (
        "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
    )
    assert base64.b64decode(headers["Authorization"].removeprefix("Basic ")) == b"us:er:p@ss"


def test_client_with_credentials_in_url() -> None:
    with EmbeddedSchemaRegistry(auth=("al:ice", "p@ss/w:rd")) as reg:
        port = reg.url.rsplit(":", 1)[1]
        good = RegistryClient(f"http://al%3Aice:p%40ss%2Fw%3Ard@127.0.0.1:{port}")
        good.check_root()
        assert good.register("s", V1) == 1
        bad = RegistryClient(f"http://al%3Aice:hunter2@127.0.0.1:{port}")
        with pytest.raises(Unauthorized) as info:
            bad.subjects()
        assert info.value.status == 401
        assert "hunter2" not in str(info.value) and "hunter2" not in repr(bad)
        assert "http://***@127.0.0.1" in str(info.value) and "user:password@" in str(info.value)


def test_client_against_stopped_server_is_unavailable() -> None:
    reg = EmbeddedSchemaRegistry().start()
    url = reg.url
    client = RegistryClient(url.replace("http://", "http://alice:hunter2@"))
    with pytest.raises(SubjectNotFound):
        client.versions("x")  # warm a kept-alive connection
    reg.stop()
    reg.stop()  # idempotent
    with pytest.raises(RegistryUnavailable) as info:
        client.versions("x")
    message = str(info.value)
    assert message == (
        f"Schema Registry at {url.replace('http://', 'http://***@')} is unreachable (connection refused). "
        "Start it, or pass the right --registry URL."
    )
    assert "hunter2" not in message and "alice" not in message
    assert "hunter2" not in repr(client) and "hunter2" not in repr(info.value)
    # the registry comes back on the same URL with its state; the client reconnects
    reg.start()
    try:
        assert reg.url == url
        assert client.register("x", V1) == 1
    finally:
        reg.stop()


def test_client_unreachable_and_not_a_registry() -> None:
    class Html(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html>hello</html>" if self.path == "/" else b'{"a": 1}'
            self.send_response(502 if self.path.startswith("/x") else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        client = RegistryClient(f"http://127.0.0.1:{server.server_address[1]}")
        with pytest.raises(RegistryUnavailable, match="not JSON"):
            client.check_root()
        # answers JSON, but not {}: TiCDC would refuse it
        with pytest.raises(RegistryError, match="instead of"):
            RegistryClient(f"http://127.0.0.1:{server.server_address[1]}/json").check_root()
        # an error status without a Schema Registry error body
        with pytest.raises(RegistryUnavailable, match="HTTP 502"):
            RegistryClient(f"http://127.0.0.1:{server.server_address[1]}/x").check_root()
    finally:
        server.shutdown()
        server.server_close()


def test_client_timeout_is_unavailable() -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the TCP connection but never answers
    try:
        client = RegistryClient(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.3)
        with pytest.raises(RegistryUnavailable, match=r"no answer within 0.3 s"):
            client.check_root()
    finally:
        listener.close()


def test_chunked_request_body(registry: EmbeddedSchemaRegistry) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(registry.url.rsplit(":", 1)[1]), timeout=5)
    payload = json.dumps({"schema": V1}).encode()
    conn.request(
        "POST",
        "/subjects/s/versions",
        body=iter([payload[:10], payload[10:]]),
        headers={"Content-Type": CT},
        encode_chunked=True,
    )
    resp = conn.getresponse()
    assert (resp.status, json.loads(resp.read())) == (200, {"id": 1})
    conn.close()


def test_server_is_silent(capfd: pytest.CaptureFixture[str]) -> None:
    with EmbeddedSchemaRegistry() as reg:
        raw = Raw(reg.url)
        raw("GET", "/")
        raw("GET", "/nope")
        raw("POST", "/subjects/s/versions", raw=b"{")
        raw(
            "POST",
            "/subjects/s/versions",
            {
                "schema": json.dumps(
                    {
                        "type": "record",
                        "name": "r",
                        "fields": [
                            {
                                "name": "d",
                                "type": {
                                    "type": "bytes",
                                    "logicalType": "decimal",
                                    "precision": 2,
                                    "scale": 5,
                                },
                            }
                        ],
                    }
                )
            },
        )
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_big_ticdc_schema_round_trips(registry: EmbeddedSchemaRegistry) -> None:
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "ticdc" / "avro"
    client = RegistryClient(registry.url)
    texts = [p.read_text() for p in sorted(fixtures.glob("schema_value_*v8x.compact.json"))]
    client.set_compatibility("NONE")
    ids = [client.register("default.testdb.avroencode-value", t) for t in texts]
    assert [client.schema_by_id(i) for i in ids] == texts
    assert registry.registrations == [("default.testdb.avroencode-value", t) for t in texts]


# ---- open_registry and serve ------------------------------------------------------------------------


def test_open_registry_embedded_and_http(tmp_path: Any) -> None:
    with open_registry("embedded://?compatibility=NONE") as registry:
        assert registry.server is not None and registry.server.running
        assert registry.register("s", V1) == 1
        assert registry.register("s", json.dumps("string")) == 2  # NONE
        dump_path = tmp_path / "dump.json"
        dump_path.write_text(json.dumps(registry.server.dump()))
        url = registry.server.url
        with open_registry(url) as remote:
            assert isinstance(remote, RegistryClient) and remote.server is None
            assert remote.schema_by_id(2) == json.dumps("string")
    assert not registry.server.running
    with open_registry(str(dump_path)) as dumped:
        assert isinstance(dumped, DumpRegistry)
        assert dumped.versions("s") == [1, 2]
    with open_registry("embedded://") as default:
        assert default.server is not None
        default.register("s", V1)
        with pytest.raises(IncompatibleSchema):
            default.register("s", V_BAD)  # BACKWARD by default


def test_open_registry_unreachable_http() -> None:
    reg = EmbeddedSchemaRegistry().start()
    url = reg.url
    reg.stop()
    with (
        pytest.raises(RegistryUnavailable) as info,
        open_registry(url.replace("http://", "http://u:hunter2@")),
    ):
        pass
    assert "hunter2" not in str(info.value) and "connection refused" in str(info.value)


def test_serve_runs_until_sigterm() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("serve() handles SIGTERM only in the main thread")
    seen: dict[str, Any] = {}

    def ready(url: str) -> None:
        seen["url"] = url

        def poke() -> None:
            try:
                client = RegistryClient(url.replace("http://", "http://u:p@"))
                client.check_root()
                seen["registered"] = client.register("s", V1)
                seen["level"] = client.get_compatibility()
            finally:
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=poke, daemon=True).start()

    before = signal.getsignal(signal.SIGTERM)
    start = time.monotonic()
    serve("127.0.0.1", 0, ("u", "p"), "full", ready)
    assert time.monotonic() - start < 10
    assert seen["registered"] == 1 and seen["level"] == "FULL"
    assert "p@" not in seen["url"] and seen["url"].startswith("http://127.0.0.1:")
    assert signal.getsignal(signal.SIGTERM) == before
    with pytest.raises(RegistryUnavailable):
        RegistryClient(seen["url"]).check_root()


def test_container_registry_without_docker_is_a_clear_error() -> None:
    import time

    import pytest
    from helpers import docker_problem  # the probe the containers suite uses

    from conformance.infra.registry import RegistryUnavailable, open_registry

    if docker_problem() is None:
        pytest.skip("a Docker engine answers here: tests/containers exercise container:// for real")
    t0 = time.monotonic()
    with pytest.raises(RegistryUnavailable, match="Docker") as exc, open_registry("container://"):
        pass
    assert time.monotonic() - t0 < 10 and "embedded://" in str(exc.value)


def _exchange(registry: EmbeddedSchemaRegistry, request: bytes, answers: int = 1) -> list[bytes]:
    """`request` as sent on one connection; the server's answers as they come (status line and
    header fields, then body, each answer whole)."""
    port = int(registry.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        got = b""
        out = []
        while len(out) < answers:
            head, sep, rest = got.partition(b"\r\n\r\n")
            if sep:
                length = int(re.search(rb"(?im)^content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                if len(rest) >= length:
                    out.append(head + sep + rest[:length])
                    got = rest[length:]
                    continue
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return out


def test_http_framing(registry: EmbeddedSchemaRegistry) -> None:
    """Request lines and header fields as HTTP/1.x has them: names in any case, folded lines,
    keep-alive (two requests on one connection), 100-continue, a line that is no field passed over
    (as http.server did), and the refusals."""
    body = json.dumps({"schema": V1}).encode()
    two = (b"POST /subjects/s/versions HTTP/1.1\r\nhost: x\r\nCONTENT-LENGTH: " + str(len(body)).encode()
           + b"\r\nX-Folded: a\r\n  b\r\n\r\n" + body + b"GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n")
    first, second = _exchange(registry, two, answers=2)
    assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b'{"id": 1}')
    assert b"\r\nServer: cdc-conformance-schema-registry/1 " in first and b"\r\nDate: " in first
    assert b"\r\nContent-Type: " + CT.encode() + b"\r\n" in first
    assert second.startswith(b"HTTP/1.1 200 OK\r\n") and second.endswith(b'["s"]')

    expect = (b"POST /subjects/t/versions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\n\r\n" + body)
    port = int(registry.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(expect[: -len(body)])
        assert s.recv(1024).startswith(b"HTTP/1.1 100 Continue\r\n")
        s.sendall(body)
        assert s.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")

    # HTTP/1.0 without keep-alive: one answer, then the connection closes.
    port = int(registry.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"{}")

    for request, status in [(b"GET / x HTTP/1.1\r\n\r\n", 400), (b"GET / HTTP/2.0\r\n\r\n", 505),
                            (b"GET / HTTP/1.1\r\nno colon\r\nHost: x\r\n\r\n", 200),
                            (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", 431)]:
        (answer,) = _exchange(registry, request)
        assert answer.startswith(b"HTTP/1.1 %d " % status), (request[:40], answer[:60])
    assert registry.internal_errors == []


_CANNED = [
    # Content-Length, field names in any case, a folded field
    b"HTTP/1.1 200 OK\r\ncontent-TYPE: application/json\r\nX-Folded: a\r\n b\r\nCONTENT-LENGTH: 6\r\n\r\n[1, 2]",
    # chunked
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[1, 2\r\n3\r\n, 3\r\n1\r\n]\r\n0\r\n\r\n",
    # a 100 Continue first
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n[4]",
    # an error answer
    b'HTTP/1.1 404 Not Found\r\nContent-Length: 53\r\n\r\n{"error_code": 40401, "message": "Subject not found"}',
    # HTTP/1.0: the body ends with the connection
    b"HTTP/1.0 200 OK\r\n\r\n[5]",
    # HTTP/1.0 keeping the connection
    b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\n[6]",
    # HTTP/1.1 closing it
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\n[7]",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"NOT HTTP\r\n\r\n",
]


def _canned_server(answers: list[bytes]) -> tuple[str, list[int], threading.Thread]:
    """A server answering each request with the next of `answers` (closing the connection where
    the answer ends with it); the list counts the connections it accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        pending = list(answers)
        with listener:
            while pending:
                conn, _ = listener.accept()
                accepted.append(1)
                with conn:
                    got = b""
                    while pending:
                        while b"\r\n\r\n" not in got:
                            chunk = conn.recv(65536)
                            if not chunk:
                                break
                            got += chunk
                        if b"\r\n\r\n" not in got:
                            break
                        head, _, got = got.partition(b"\r\n\r\n")
                        m = re.search(rb"(?i)content-length: *(\d+)", head)
                        need = int(m.group(1)) if m else 0
                        while len(got) < need:
                            got += conn.recv(65536)
                        got = got[need:]
                        answer = pending.pop(0)
                        conn.sendall(answer)
                        last = answer.split(b"\r\n\r\n")[-2] if answer.count(b"\r\n\r\n") > 1 else answer
                        if last.startswith((b"HTTP/1.0 200 OK\r\n\r\n", b"NOT")) or b"Connection: close" in last:
                            break  # the answer ends with the connection

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", accepted, thread


def _outcomes(client: RegistryClient) -> list[object]:
    out: list[object] = []
    for _ in _CANNED:
        try:
            out.append(client.versions("s"))
        except Exception as e:  # noqa: BLE001 - whatever it is, both readings must give the same
            out.append((type(e).__name__, str(e).split(" (")[0].replace(client.url, "URL")))
    return out


def test_the_clients_response_reading_is_http_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client reads status lines and header fields itself: the same answers, errors and
    connection reuse as http.client's own reading, over every framing a registry may use."""
    from conformance.infra.registry import client as client_mod

    url, accepted, thread = _canned_server(_CANNED)
    ours = _outcomes(RegistryClient(url, timeout=5))
    thread.join(5)
    monkeypatch.setattr(client_mod, "_Response", http.client.HTTPResponse)
    url2, accepted2, thread2 = _canned_server(_CANNED)
    theirs = _outcomes(RegistryClient(url2, timeout=5))
    thread2.join(5)
    assert ours == theirs
    assert ours[:3] == [[1, 2], [1, 2, 3], [4]] and ours[4:7] == [[5], [6], [7]]
    assert ours[3] == ("SubjectNotFound", "Schema Registry at URL refused GET /subjects/s/versions: Subject not found")
    assert len(accepted) == len(accepted2) == 3  # closed after the HTTP/1.0 answer, the close and the bad line
