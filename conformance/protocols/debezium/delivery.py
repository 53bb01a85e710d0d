"""Debezium for the delivery analysis.

An *entity* is a row: (topic, key payload). Its versions are the change events of that key in
commit order (a key-changing update is a delete of the old key and a create of the new one); a
*match* tells versions apart by op and row image (`after`, or `before`'s key columns for a
delete). Tombstones and transaction boundaries are control messages for this analysis (the
tombstone check judges tombstones). Debezium carries no commit ts of the workload's clock.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ...checks.delivery import Version
from ...model.events import Transaction, Workload
from .decoder import decode
from .encoder import DebeziumEncoder
from .spec import DbzOptions, json_value, key_columns, topic_name

Identified = tuple[bytes | None, bytes | None, int | None] | None


def digest(obj: Any) -> bytes:
    return hashlib.blake2b(json.dumps(obj, sort_keys=True, default=str).encode("utf-8"), digest_size=12).digest()


def expected_versions(workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Iterator[Version]:
    o = DbzOptions.from_options(options)
    plan = DebeziumEncoder()
    plan.o = o
    seq: dict[bytes, int] = {}
    for e in workload.events:
        if not isinstance(e, Transaction):
            continue
        for ch in e.changes:
            t = ch.table
            cols = key_columns(t)
            if not cols:
                continue  # a keyless table's events have no entity to follow
            topic = topic_name(o, t.database, t.name, topic_prefix)
            for op, before, after in plan.events_of(ch):
                image = after if after is not None else before
                assert image is not None
                key = {c.name: json_value(c, image[c.name], o) for c in cols}
                entity = digest(["e", topic, key])
                n = seq.get(entity, 0)
                seq[entity] = n + 1
                row = {c.name: json_value(c, after[c.name], o) for c in t.columns} if after is not None else None
                yield Version(entity, n, digest(["v", op, row]), None, topic)


def identifier(options: Mapping[str, str]) -> Callable[[str, bytes | None, bytes | None], Identified]:
    o = DbzOptions.from_options(options)

    def identify(topic: str, key: bytes | None, value: bytes | None) -> Identified:
        if value is None or topic.endswith(o.transaction_topic):
            return None  # a tombstone or a transaction boundary
        m = decode(key, value, key_schemas=o.key_schemas, value_schemas=o.value_schemas)
        if not m.key.ok or not m.value.ok or m.envelope is None or not isinstance(m.key.payload, dict):
            return (None, None, None) if key is not None else None
        entity = digest(["e", topic, m.key.payload])
        after = m.envelope.get("after")
        return entity, digest(["v", m.op, after if isinstance(after, dict) else None]), None

    return identify
