"""`conformance diff`: what two outputs wrote differently, grouped by kind.

Two dumps of records (`run --dump-records`, or captures of two versions of a tool on the same
SQL), or the outputs of two encoders on the same generated workloads, are compared topic by
topic, partition by partition, message by message in offset order, so that a format change that
breaks consumers shows even where both versions pass every check:

* `topic`: a topic only one side wrote; `count`: a partition with more messages on one side;
* `order`: the same messages in another order; `key`: a message key that differs (JSON keys leaf
  by leaf, at their path);
* JSON values, leaf by leaf (paths like `payload.after.price`, array items as `[]`):
  `field added` / `field dropped`, `type` (a JSON type changed: number to string…) and `value`
  (the same path holds another value: a rendering change);
* Confluent-framed Avro (magic byte 0, schema id) where a registry is given: `schema` (the
  writer schemas differ), then the decoded values leaf by leaf as JSON's are;
* `bytes`: values that are neither and differ.

Topics are compared by their logical name (a run's unit prefix, `<run id>c<combo>w<shard>-`,
removed). Paths that hold wall-clock time differ between any two runs and are ignored by
default (`*.ts_ms`, `*.ts_us`, `*.ts_ns`, `buildTs`); `--ignore PATTERN` adds patterns.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import fnmatch
import io
import json
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..encoders.spi import Record
from ..errors import UsageError
from .capture import BadLine, read_records
from .stages import UNIT_PREFIX

DEFAULT_IGNORES = ("*.ts_ms", "*.ts_us", "*.ts_ns", "ts_ms", "buildTs")
EXAMPLES = 3


@dataclass
class Group:
    """One kind of difference at one JSON path (or none), over every topic it occurs in."""

    kind: str
    path: str = ""
    count: int = 0
    topics: set[str] = field(default_factory=set)
    examples: list[dict[str, Any]] = field(default_factory=list)

    def add(self, topic: str, example: dict[str, Any]) -> None:
        self.count += 1
        self.topics.add(topic)
        if len(self.examples) < EXAMPLES:
            self.examples.append({"topic": topic, **example})

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "count": self.count, "topics": sorted(self.topics),
                "examples": self.examples}


def load(path: str | Path) -> dict[tuple[str, int], list[Record]]:
    """A dump's records by (logical topic, partition), in offset order; an unreadable line is a usage
    error (a diff of half a file would mislead)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--input {p}: no such file")
    records = []
    for n, item in read_records(p):
        if isinstance(item, BadLine):
            raise UsageError(f"--input {p}, line {n}: {item.problem}")
        records.append(item)
    return by_partition(records)


def by_partition(records: Sequence[Record]) -> dict[tuple[str, int], list[Record]]:
    """Records by (logical topic, partition), each partition in offset order."""
    out: dict[tuple[str, int], list[Record]] = defaultdict(list)
    for r in records:
        out[(UNIT_PREFIX.sub("", r.topic), r.partition or 0)].append(r)
    for part in out.values():
        part.sort(key=lambda r: r.offset if r.offset is not None else 0)
    return dict(out)


def _json(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return _NOT_JSON


_NOT_JSON = object()


def leaves(doc: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every leaf; an array's items under `path[]` (their values listed together)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(doc, list) and doc and all(isinstance(x, (dict, list)) for x in doc):
        for x in doc:
            yield from leaves(x, f"{path}[]")
    else:
        yield path, doc


class AvroReader:
    """Confluent-framed Avro read through a registry: (the value as JSON-like data, its writer
    schema's text), or None for what is not framed Avro the registry can read."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.schemas: dict[int, tuple[Any, str] | None] = {}

    def __call__(self, raw: bytes | None) -> tuple[Any, str] | None:
        import fastavro

        if raw is None or len(raw) < 5 or raw[0] != 0:
            return None
        sid = int.from_bytes(raw[1:5], "big")
        if sid not in self.schemas:
            try:
                text = self.registry.schema_by_id(sid)
                self.schemas[sid] = (fastavro.parse_schema(json.loads(text)), text)
            except Exception:  # noqa: BLE001 - an unknown id or a schema fastavro refuses: not readable
                self.schemas[sid] = None
        known = self.schemas[sid]
        if known is None:
            return None
        try:
            datum = fastavro.schemaless_reader(io.BytesIO(raw[5:]), known[0])
        except Exception:  # noqa: BLE001 - a body its schema does not read: compared as bytes
            return None
        return _plain(datum), known[1]


def _plain(v: Any) -> Any:
    """Avro data as JSON-like values (bytes as base64, decimals and times as text)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, (decimal.Decimal, uuid.UUID)):
        return str(v)
    if isinstance(v, (datetime.date, datetime.time, datetime.datetime)):
        return v.isoformat()
    return v


Reader = Callable[[bytes | None], "tuple[Any, str] | None"]


def _type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _brief(v: Any) -> Any:
    text = json.dumps(v, ensure_ascii=False, default=str)
    return v if len(text) <= 120 else text[:120] + "…"


def diff(a: dict[tuple[str, int], list[Record]], b: dict[tuple[str, int], list[Record]], *,
         ignore: Sequence[str] = DEFAULT_IGNORES, avro: tuple[Reader, Reader] | None = None) -> list[Group]:
    """The groups of differences; `avro`: how each side's framed Avro is read (its registry)."""
    groups: dict[tuple[str, str], Group] = {}

    def group(kind: str, path: str = "") -> Group:
        return groups.setdefault((kind, path), Group(kind, path))

    topics_a, topics_b = {t for t, _ in a}, {t for t, _ in b}
    for t in sorted(topics_a ^ topics_b):
        group("topic").add(t, {"only in": "A" if t in topics_a else "B"})
    for (t, p) in sorted(set(a) | set(b)):
        if t not in topics_a & topics_b:
            continue
        ra, rb = a.get((t, p), []), b.get((t, p), [])
        if len(ra) != len(rb):
            group("count").add(t, {"partition": p, "A": len(ra), "B": len(rb)})
        pairs = list(zip(ra, rb, strict=False))
        if len(ra) == len(rb) and [(x.key, x.value) for x in ra] != [(x.key, x.value) for x in rb] \
                and sorted((x.key or b"", x.value or b"") for x in ra) == sorted((x.key or b"", x.value or b"")
                                                                                   for x in rb):
            group("order").add(t, {"partition": p})
            continue
        for x, y in pairs:
            where = {"partition": p, "offset A": x.offset, "offset B": y.offset}
            # Under two registries the same bytes may mean two things (one schema id, two schemas).
            if x.key != y.key or (avro is not None and avro[0] is not avro[1]):
                ka, kb = (avro[0](x.key), avro[1](y.key)) if avro is not None else (None, None)
                if ka is not None and kb is not None:
                    if ka[1] != kb[1]:
                        _schemas(group, t, where, "key", ka[1], kb[1])
                    if ka[0] != kb[0]:
                        group("key").add(t, {**where, "A": _brief(ka[0]), "B": _brief(kb[0])})
                elif x.key != y.key:
                    _keys(group, t, where, x.key, y.key)
            _values(group, t, where, x.value, y.value, ignore, avro)
    order = ["topic", "count", "order", "key", "schema", "field added", "field dropped", "type", "value", "bytes"]
    return sorted(groups.values(), key=lambda g: (order.index(g.kind), g.path))


def _keys(group: Any, topic: str, where: dict[str, Any], ka: bytes | None, kb: bytes | None) -> None:
    """Two keys: JSON objects leaf by leaf (`key` at `schema.name`…), anything else as a whole."""
    da, db = _json(ka), _json(kb)
    if isinstance(da, dict) and isinstance(db, dict):
        la, lb = _collect(da), _collect(db)
        for path in sorted(la.keys() | lb.keys()):
            if la.get(path) != lb.get(path):
                group("key", path).add(topic, {**where, "A": _brief(la.get(path)), "B": _brief(lb.get(path))})
        return
    group("key").add(topic, {**where, "A": _brief(_text(ka)), "B": _brief(_text(kb))})


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "replace")


def _values(group: Any, topic: str, where: dict[str, Any], va: bytes | None, vb: bytes | None,
            ignore: Sequence[str], avro: tuple[Reader, Reader] | None = None) -> None:
    if va == vb and (avro is None or avro[0] is avro[1] or va is None):
        return  # two null values (deletes, tombstones) are the same under any registries
    da, db = _json(va), _json(vb)
    if (da is _NOT_JSON or db is _NOT_JSON) and avro is not None:
        xa, xb = avro[0](va), avro[1](vb)
        if xa is not None and xb is not None:
            (da, sa), (db, sb) = xa, xb
            if sa != sb:
                _schemas(group, topic, where, "value", sa, sb)
    if da is _NOT_JSON or db is _NOT_JSON or va is None or vb is None:
        group("bytes").add(topic, {**where, "A": _brief(_text(va)), "B": _brief(_text(vb))})
        return
    la, lb = _collect(da), _collect(db)
    for path in sorted(la.keys() | lb.keys()):
        if any(fnmatch.fnmatchcase(path, pat) for pat in ignore):
            continue
        if path not in lb:
            group("field dropped", path).add(topic, {**where, "A": _brief(la[path][0])})
        elif path not in la:
            group("field added", path).add(topic, {**where, "B": _brief(lb[path][0])})
        elif la[path] != lb[path]:
            ta, tb = {_type(v) for v in la[path]}, {_type(v) for v in lb[path]}
            kind = "type" if ta != tb and "null" not in ta | tb else "value"
            group(kind, path).add(topic, {**where, "A": _brief(la[path][0] if len(la[path]) == 1 else la[path]),
                                          "B": _brief(lb[path][0] if len(lb[path]) == 1 else lb[path])})


def _schemas(group: Any, topic: str, where: dict[str, Any], part: str, sa: str, sb: str) -> None:
    """Two writer schemas, compared leaf by leaf (`schema` at `key.fields[].name`…)."""
    la, lb = _collect(json.loads(sa)), _collect(json.loads(sb))
    for path in sorted(la.keys() | lb.keys()):
        if la.get(path) != lb.get(path):
            group("schema", f"{part}.{path}").add(topic, {**where, "A": _brief(la.get(path)),
                                                            "B": _brief(lb.get(path))})


def _collect(doc: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    for path, v in leaves(doc):
        out[path].append(v)
    return dict(out)


def render_text(groups: list[Group]) -> list[str]:
    """One line per group and its first example (the terminal's and the Markdown's rows)."""
    out = []
    for g in groups:
        ex = g.examples[0] if g.examples else {}
        shown = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in ex.items())
        out.append(f"{g.kind}{' ' + g.path if g.path else ''}: {g.count} in {len(g.topics)} topic(s); first: {shown}")
    return out
