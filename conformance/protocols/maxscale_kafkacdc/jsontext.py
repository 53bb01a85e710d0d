"""JSON as MaxScale writes it (jansson, `JSON_COMPACT`) and as the suite reads it (strictly).

Writing: objects keep insertion order, no whitespace, strings escaped as jansson's `dump_string`
does (`"` `\\` `\\b\\f\\n\\r\\t`, other control characters as `\\u00XX` with upper-case hex,
`/` and non-ASCII left as they are), numbers given as `spec.Raw` written as they are.

Reading: the value must be UTF-8 and one JSON object with nothing around it (whitespace aside);
`NaN`/`Infinity`, which JSON has not, and duplicate keys, which a jansson object cannot have,
are refused; numbers with a fraction or exponent are kept as `Decimal` (their digits matter:
DECIMAL values), integers as `int`. Nothing here raises on bad input: `read` says what is wrong.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass
from typing import Any

import msgspec

from ...model.values import render_json
from ..kit import DuplicateKey, loads_strict
from .spec import Raw

# jansson's dump_string as a translation table: control characters as \u00XX, then the short escapes.
_ESCAPES = {**{c: f"\\u{c:04X}" for c in range(0x20)},
            **{ord(ch): e for ch, e in {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                                        "\t": "\\t"}.items()}}


def quote(s: str) -> str:
    return '"' + s.translate(_ESCAPES) + '"'


def _raw(x: Any) -> str:
    if isinstance(x, Raw):
        return x.text
    raise TypeError(f"no JSON for {x!r}")


def dumps(x: Any) -> str:
    """Compact JSON: jansson's quoting, no whitespace, keys in insertion order, `Raw` as is."""
    return render_json(x, quote=quote, item_sep=",", kv_sep=":", other=_raw)


def encode(x: Any) -> bytes:
    return dumps(x).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Parsed:
    obj: dict[str, Any] | None
    error: str | None = None
    text: str | None = None


def read(raw: bytes | None) -> Parsed:
    """One JSON object, or why not."""
    if raw is None:
        return Parsed(None, "the value is null (a tombstone): every KafkaCDC message is a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return Parsed(None, f"not UTF-8 ({e.reason} at byte {e.start})")
    try:
        obj = loads_strict(text, parse_float=decimal.Decimal)
    except DuplicateKey as e:
        return Parsed(None, f"duplicate key {e.key!r} in an object", text)
    except (ValueError, RecursionError) as e:
        return Parsed(None, f"not JSON ({e})", text)
    if not isinstance(obj, dict):
        return Parsed(None, f"a JSON {type(obj).__name__}, not an object", text)
    return Parsed(obj, None, text)


# The fast parse (`parse_compact`): msgspec's JSON decoder, exact decimals by its float hook (the
# text of every number with a fraction or exponent, as `parse_float` gets it). It reads what the
# standard library reads alike (keys in order, strings, integers of any size up to the stdlib's
# digit limit, `Decimal`s from the same text) and refuses some of what it reads (lone surrogates;
# `parse_compact` then asks the strict parse); it keeps the last of a key given twice, which the
# count of key tokens below catches. Held to the strict parse by tests/unit/test_fast_paths_maxscale.py.
_decode = msgspec.json.Decoder(float_hook=decimal.Decimal).decode
_Refused = msgspec.MsgspecError


def parse_object(text: str) -> Any:
    """`text` parsed exactly as `read` parses it (the same value; raises where `read` refuses
    it), most often without the duplicate-key hook's cost (`parse_compact`)."""
    obj = parse_compact(text)
    return loads_strict(text, parse_float=decimal.Decimal) if obj is None else obj


def parse_compact(text: str) -> Any:
    """`parse_object` of a text with no tab, CR or LF; None for any other text (and for a text
    whose value is null). The fast path reads only such texts: in a text the strict parse reads,
    a tab, CR or LF is whitespace outside every string (JSON strings hold no raw control
    character), which compact JSON has not, so the checks judge those texts.

    In a text with no `" :"` and no tab, CR or LF, no whitespace stands between a key and its
    colon: every key token's closing quote is followed by a colon, so the text holds at least as
    many `":` as key tokens (more where a string holds `\\":` or begins with a colon). Its parse
    is one object of `len(obj)` distinct keys, each from at least one key token; so where the
    text holds exactly `len(obj)` `":`, it has exactly `len(obj)` key tokens: no key twice, and
    no key in a nested object (nowhere the strict parse could find a key twice). Every other text
    (whitespace before a colon, more `":`, a text the fast decoder refuses, a value that is no
    object) goes through the strict parse."""
    if "\t" in text or "\n" in text or "\r" in text:
        return None
    if " :" in text:
        return loads_strict(text, parse_float=decimal.Decimal)
    try:
        obj = _decode(text)
    except _Refused:
        return loads_strict(text, parse_float=decimal.Decimal)  # raises, as `read` does, or reads it
    if obj.__class__ is not dict or text.count('":') != len(obj):
        return loads_strict(text, parse_float=decimal.Decimal)
    return obj


def plain_spacing(text: str) -> bool:
    """Whether `text` holds no tab, CR or LF (`parse_compact` reads it)."""
    return "\t" not in text and "\n" not in text and "\r" not in text


# A run of string tokens and characters that are neither a quote nor JSON whitespace: where
# it stops, the text has whitespace outside a string, or a string that never ends.
_COMPACT_RUN = re.compile(r'(?:"[^"\\]*(?:\\.[^"\\]*)*"|[^" \t\r\n]+)*', re.DOTALL)


def whitespace_outside_strings(text: str) -> int | None:
    """The index of the first whitespace character outside a string token, or None (also when
    a string is left open: everything after its quote is in it)."""
    i = _COMPACT_RUN.match(text).end()  # type: ignore[union-attr]  # matches the empty string
    return i if i < len(text) and text[i] != '"' else None
