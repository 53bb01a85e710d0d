"""Go's `encoding/json` output, byte for byte (TiCDC is written in Go).

`dumps` writes what `json.Marshal` writes for maps, slices, strings, numbers, bools and nil:
compact, `<` `>` `&` U+2028 U+2029 escaped as `\\u003c`…, `\\b` `\\f` `\\n` `\\r` `\\t` short
escapes (Go >= 1.22), other control characters as `\\u00xx`, floats in Go's shortest form.
Dict key order is kept as given: callers sort where Go would (Go sorts map keys; struct
fields keep declaration order). `bytes` become standard base64, as Go marshals `[]byte`.
"""

from __future__ import annotations

import base64
from typing import Any

from .types import quoted
from .values import render_json

_ESCAPES = {
    '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
}


def quote(s: str) -> str:
    return quoted(s, '"', _ESCAPES, "\\u{:04x}")


def dumps(v: Any) -> str:
    return render_json(v, quote=quote, item_sep=",", kv_sep=":", other=_bytes)


def _bytes(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return '"' + base64.b64encode(bytes(v)).decode("ascii") + '"'
    raise TypeError(f"no Go JSON form for {type(v).__name__}")
