"""Reading captured records (`records.jsonl`, format v1) without trusting them.

One JSON object per line: `topic` (string), `partition` and `offset` (integers), `key` and
`value` (standard base64 strings, or null), optional `timestamp` (integer ms) and `headers`
(`[[name, base64-or-null], …]`). Every line that breaks the format becomes a finding of
`capture.record-format` saying which line and what is wrong; the other lines are checked.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..encoders.spi import Record


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    problem: str
    excerpt: str


def _b64(v: Any, what: str) -> bytes | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError(f"{what} must be a base64 string or null, not {type(v).__name__}")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"{what} is not valid base64 ({e})") from None


def parse_line(text: str) -> Record:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"a line must be a JSON object, not {type(obj).__name__}")
    topic = obj.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError("`topic` is missing or not a non-empty string")
    for k in ("partition", "offset"):
        if not isinstance(obj.get(k), int) or isinstance(obj.get(k), bool) or obj[k] < 0:
            raise ValueError(f"`{k}` is missing or not a non-negative integer")
    for k in ("key", "value"):
        if k not in obj:
            raise ValueError(f"`{k}` is missing (use null for a null {k})")
    key = _b64(obj["key"], "`key`")
    value = _b64(obj["value"], "`value`")
    ts = obj.get("timestamp")
    if ts is not None and (not isinstance(ts, int) or isinstance(ts, bool)):
        raise ValueError("`timestamp` must be an integer (ms) or absent")
    headers: list[tuple[str, bytes | None]] = []
    raw_headers = obj.get("headers") or []
    if not isinstance(raw_headers, list):
        raise ValueError("`headers` must be a list of [name, base64] pairs")
    for h in raw_headers:
        if not (isinstance(h, list) and len(h) == 2 and isinstance(h[0], str)):
            raise ValueError("each header must be [name, base64-or-null]")
        headers.append((h[0], _b64(h[1], f"header {h[0]!r}")))
    return Record(topic=topic, key=key, value=value, partition=obj["partition"], headers=tuple(headers),
                  timestamp=ts, offset=obj["offset"])


def read_records(path: Path) -> Iterator[tuple[int, Record | BadLine]]:
    """(line number, record or what is wrong with the line). Blank lines are skipped."""
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield n, BadLine(n, f"not UTF-8 ({e.reason} at byte {e.start})", raw[:80].decode("latin-1"))
                continue
            if not text.strip():
                continue
            try:
                yield n, parse_line(text)
            except ValueError as e:
                yield n, BadLine(n, str(e), text.strip()[:120])


def count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)
