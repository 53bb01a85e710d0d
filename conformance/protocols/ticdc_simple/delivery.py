"""TiCDC Simple for the delivery analysis.

Simple dispatches by table and promises commit order per partition, so an *entity* is a
table (topic, database, table) and its versions are its row messages in commit order. A
*match* is (commitTs, type): rows of one transaction look alike and are told apart by order,
which also keeps handle-key-only messages (that carry no full row) identifiable. DDL,
BOOTSTRAP and WATERMARK messages are control messages: not part of the row accounting
(the stream checks judge them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

from ...checks.delivery import Version
from ...model.events import Op, Transaction, Workload
from .decoder import decode
from .spec import SimpleOptions

DIGEST = 12
_TYPE = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}


def digest(obj: Any) -> bytes:
    return hashlib.blake2b(repr(obj).encode("utf-8"), digest_size=DIGEST).digest()


def topic_of(options: Mapping[str, str], topic_prefix: str) -> str:
    return topic_prefix + SimpleOptions.from_options(options).topic


def expected_versions(workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Iterator[Version]:
    topic = topic_of(options, topic_prefix)
    seq: dict[bytes, int] = {}
    for e in workload.events:
        if not isinstance(e, Transaction):
            continue
        for ch in e.changes:
            ops = [Op.DELETE, Op.INSERT] if ch.op is Op.UPDATE and ch.changes_unique_key() else [ch.op]
            entity = digest(("t", topic, ch.table.database, ch.table.name))
            for op in ops:
                n = seq.get(entity, 0)
                seq[entity] = n + 1
                yield Version(entity, n, digest(("v", e.commit_ts, _TYPE[op])), e.commit_ts, topic)


def identify(topic: str, value: bytes | None, options: Mapping[str, str]
             ) -> tuple[bytes | None, bytes | None, int | None] | None:
    """(entity, match, commit ts) of a row message; None for a control message; None parts
    where it cannot be decoded (then the delivery analysis counts it as unexpected)."""
    o = SimpleOptions.from_options(options)
    m = decode(value, o.compression, o.avro)
    if not m.ok:
        return None, None, None
    if m.kind != "DML":
        return None
    ts = m.get("commitTs")
    entity = digest(("t", topic, m.get("database"), m.get("table")))
    return entity, digest(("v", ts, m.type)), ts if isinstance(ts, int) else None
