"""The strict decoder: a Kafka record as a KafkaCDC message, or what is wrong with it.

Nothing here raises on bad input: a value that is not JSON, a JSON that is no KafkaCDC message,
a key that does not parse, fields of the wrong JSON type all become attributes the checks
report (`Message.error`, `key_error`, accessors that answer None for what is malformed).
A message is a schema event iff it has a `namespace` (the upstream test's rule, notes §2),
else a DML event iff it has an `event_type`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ...model.events import Gtid
from . import jsontext, spec


def is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def unsigned(v: Any, bits: int) -> int | None:
    return v if is_int(v) and 0 <= v < 1 << bits else None


@dataclass(frozen=True, slots=True)
class Column:
    """A column of a schema event, read leniently (the schema checks say what is malformed)."""

    name: str
    avro: str | None
    real_type: str | None
    unsigned: bool | None


@dataclass(slots=True)
class Message:
    key_text: str | None
    obj: dict[str, Any] | None
    error: str | None = None  # why the value is no JSON object
    text: str | None = None
    kind: str | None = None  # "schema", "dml" or None (neither)
    key: tuple[Gtid, int | None] | None = None
    key_error: str | None = None
    _columns: list[Column] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.obj is not None

    def get(self, name: str) -> Any:
        return self.obj.get(name) if self.obj is not None else None

    @property
    def table(self) -> tuple[str, str] | None:
        """(database, table) of a schema event or a DML event, when both are strings."""
        names = ("database", "table") if self.kind == "schema" else ("table_schema", "table_name")
        db, tbl = self.get(names[0]), self.get(names[1])
        return (db, tbl) if isinstance(db, str) and isinstance(tbl, str) else None

    @property
    def gtid(self) -> Gtid | None:
        """A schema event's `gtid`, a DML event's domain-server_id-sequence."""
        if self.kind == "schema":
            g = self.get("gtid")
            return Gtid.parse(g) if isinstance(g, str) else None
        d, s, q = unsigned(self.get("domain"), 32), unsigned(self.get("server_id"), 32), \
            unsigned(self.get("sequence"), 64)
        return Gtid(d, s, q) if d is not None and s is not None and q is not None else None

    @property
    def event_number(self) -> int | None:
        n = self.get("event_number")
        return n if is_int(n) and n >= 0 else None

    @property
    def event_type(self) -> str | None:
        t = self.get("event_type")
        return t if isinstance(t, str) else None

    @property
    def version(self) -> int | None:
        v = self.get("version")
        return v if is_int(v) else None

    @property
    def fields(self) -> list[Any] | None:
        f = self.get("fields")
        return f if isinstance(f, list) else None

    def columns(self) -> list[Column]:
        """A schema event's columns (what follows the six fixed fields): each object with a
        string name; its Avro type when `type` is ["null", X] with a string X."""
        if self._columns is None:
            out = []
            for f in (self.fields or [])[len(spec.FIXED_FIELDS):]:
                if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                    continue
                t = f.get("type")
                avro = t[1] if isinstance(t, list) and len(t) == 2 and t[0] == "null" and isinstance(t[1], str) \
                    else None
                rt = f.get("real_type")
                us = f.get("unsigned")
                out.append(Column(f["name"], avro, rt if isinstance(rt, str) else None,
                                  us if isinstance(us, bool) else None))
            self._columns = out
        return self._columns

    def column_names(self) -> list[str]:
        """A DML event's column keys (everything but the fixed fields)."""
        return [k for k in (self.obj or {}) if k not in spec.DML_FIXED]


# The checker decodes each message, and so does the delivery identifier right after it: the
# last few messages decoded are kept (callers only read a Message; its columns are worked out
# once, the same for every reader).
@functools.lru_cache(maxsize=32)
def decode(key: bytes | None, value: bytes | None) -> Message:
    """A message decoded (see `Message`)."""
    p = jsontext.read(value)
    key_text: str | None = None
    key_error: str | None = None
    parsed_key = None
    if key is None:
        key_error = "the key is null (every KafkaCDC message has a key)"
    else:
        try:
            key_text = key.decode("ascii")
        except UnicodeDecodeError:
            key_error = f"the key {key[:40]!r} is not ASCII"
        if key_text is not None:
            parsed_key = spec.parse_key(key_text)
            if parsed_key is None:
                key_error = f"the key {key_text[:60]!r} is neither `domain-server_id-sequence` nor `…:event_number`"
    m = Message(key_text, p.obj, p.error, p.text, key=parsed_key, key_error=key_error)
    if p.obj is not None:
        if "namespace" in p.obj:
            m.kind = "schema"
        elif "event_type" in p.obj:
            m.kind = "dml"
    return m
