"""Avro schema identity and compatibility, as the embedded registry decides them.

Apache ``avro`` decides schema validity (``avro.schema.parse``) and compatibility
(``avro.compatibility.ReaderWriterCompatibilityChecker``). Findings about that library that
shaped this module (see :func:`parse_schema` and :func:`check_compatibility`):

* ``avro.schema.parse`` does not validate field defaults at all (an ``int`` field with
  default ``"x"`` parses). It is therefore *more* lenient than Confluent's Java parser, and
  accepts everything TiCDC registers, including ``bytes`` fields whose default is a JSON
  string such as ``"Aqo="`` and dotted namespaces such as ``default.testdb``. No workaround
  is needed; we do not add a stricter check, because a registry that refuses what Confluent
  accepts would fail encoders for the wrong reason.
* An invalid ``decimal`` (scale > precision) is ignored with an ``IgnoredLogicalType``
  *warning*, as Java ignores it silently; we silence that warning so the server stays quiet.
* The checker ignores logical types and custom attributes such as ``connect.parameters``
  (as Java's ``SchemaCompatibility`` does), so a change of ``tidb_type`` alone is compatible.
* ``SchemaCompatibilityResult.messages`` and ``.locations`` are *sets*, merged across all
  incompatibilities, so with several problems a message cannot be paired with its location;
  and for union branches the location is reported as ``/``. Our details list is therefore
  precise for one incompatibility and a sorted summary for several.
* The checker raises ``AvroRuntimeException("Unknown schema type: error")`` when both sides
  are ``"type": "error"`` records (valid Avro, records everywhere else); such schemas are
  compared through a twin parsed with ``error`` read as ``record``.
* ``avro`` validates full names against an ASCII pattern, namespaces included; Java's Avro
  (1.11, in Confluent's registry 7.x) validates only a named type's own name, with
  ``Character.isLetter`` / ``isLetterOrDigit`` (Unicode letters pass, UTF-16 surrogates do not),
  and never a namespace: Debezium's ``cdc.db1.9lives.Value`` is valid there, ``名前`` too. So
  names are parsed unvalidated and named types' own names are checked by Java's rule (checked
  against Java's parser). Field names are not validated (``"a-b"`` parses; Java refuses it):
  leniency never rejects a schema Confluent accepts. Enum ``symbols`` as a string is accepted.
* Deeply nested JSON makes ``json``/``avro`` raise ``RecursionError``; it is answered as a
  bad request like any other invalid input.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import avro.compatibility
import avro.errors
import avro.schema

from ...model.avro_names import java_valid_name
from .errors import SchemaTextError

COMPATIBILITY_LEVELS: Final[tuple[str, ...]] = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
INVALID_COMPATIBILITY_MESSAGE: Final = (
    "Invalid compatibility level. Valid values are none, backward, forward, full, "
    "backward_transitive, forward_transitive, and full_transitive"
)


@dataclass(frozen=True, slots=True)
class ParsedSchema:
    """A schema text that ``avro.schema.parse`` accepted.

    ``key`` is the identity of the schema: its JSON re-serialised with sorted keys and no
    whitespace. Two texts are "the same schema" when their keys are equal, i.e. when their
    JSON parses are equal. (Plain ``json.loads(a) == json.loads(b)`` is not used because
    Python considers ``true == 1`` and ``1 == 1.0``, which would merge distinct defaults.)
    """

    text: str
    key: str
    avro: avro.schema.Schema


@dataclass(frozen=True, slots=True)
class CompatibilityResult:
    """Outcome of a compatibility check; ``messages`` follow Confluent's verbose format."""

    compatible: bool
    messages: tuple[str, ...] = ()



# catch_warnings() swaps process-global state, so parses that silence warnings take turns.
_PARSE_LOCK = threading.Lock()


def schema_key(obj: object) -> str:
    """Identity key of a parsed schema JSON value (see :class:`ParsedSchema`)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


#: Schema texts whose parse is kept (`parse_schema`): a unit's schemas are parsed again and again
#: within moments (the prediction, the watched registration, the registry, the read-back), never
#: across many units, so a few hundred suffice and bound a long-lived worker's memory.
PARSED_KEPT = 256


def parse_schema(text: str) -> ParsedSchema:
    """Parse ``text`` as an Avro schema with ``avro.schema.parse``; raise :class:`SchemaTextError`.

    The invalid-decimal warning (``IgnoredLogicalType``) is silenced: Java ignores such logical
    types silently and the server must not write to stderr.

    The parse is a function of the text alone and its result is immutable, so the latest
    `PARSED_KEPT` texts' parses are kept and handed out again (a refusal is not kept: it is
    raised afresh).
    """
    return _parse_kept(text)


@functools.lru_cache(maxsize=PARSED_KEPT)
def _parse_kept(text: str) -> ParsedSchema:
    return _parse(text)


def _parse(text: str) -> ParsedSchema:
    try:
        obj = json.loads(text)
        key = schema_key(obj)
    except json.JSONDecodeError as exc:
        raise SchemaTextError(
            f"the schema is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise SchemaTextError("the schema is nested too deeply to be processed") from None
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
        try:
            parsed = avro.schema.parse(text, validate_names=False)
            _java_names(obj)
        # avro raises many exception types, and TypeError/KeyError on oddly shaped JSON.
        except Exception as exc:  # noqa: BLE001
            reason = str(exc) or type(exc).__name__
            raise SchemaTextError(f"the schema is not valid Avro ({reason})") from None
        if _has_error_type(obj):
            # The checker raises "Unknown schema type: error" for two "error" types, which are
            # records for every other purpose (Java treats them so): keep a record twin to compare.
            with contextlib.suppress(Exception):
                parsed = avro.schema.parse(json.dumps(_errors_as_records(obj)))
    return ParsedSchema(text=text, key=key, avro=parsed)


def _java_names(obj: object) -> None:
    """Raise for a record, enum or fixed whose own name Java's parser refuses (namespaces and
    field names are not judged)."""
    if isinstance(obj, list):
        for v in obj:
            _java_names(v)
    elif isinstance(obj, dict):
        if obj.get("type") in ("record", "error", "enum", "fixed") and isinstance(obj.get("name"), str):
            short = obj["name"].rsplit(".", 1)[-1]
            if not java_valid_name(short):
                raise SchemaTextError(f"{short!r} is not a valid Avro name (Illegal character in: {short})")
        for k, v in obj.items():
            if k in ("type", "fields", "items", "values") or isinstance(v, (dict, list)):
                _java_names(v)


def _has_error_type(obj: object) -> bool:
    if isinstance(obj, dict):
        return obj.get("type") == "error" or any(_has_error_type(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_error_type(v) for v in obj)
    return False


def _errors_as_records(obj: object) -> object:
    if isinstance(obj, dict):
        return {
            k: ("record" if k == "type" and v == "error" else _errors_as_records(v)) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_errors_as_records(v) for v in obj]
    return obj


def normalize_compatibility(level: str) -> str:
    """Upper-case and validate a compatibility level; raise ``ValueError`` with the valid values."""
    upper = level.strip().upper() if isinstance(level, str) else ""
    if upper not in COMPATIBILITY_LEVELS:
        raise ValueError(INVALID_COMPATIBILITY_MESSAGE)
    return upper


_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "READER_FIELD_MISSING_DEFAULT_VALUE": (
        "The field '{info}' at path '{loc}' in the {reader} has no default value "
        "and is missing in the {writer}"
    ),
    "TYPE_MISMATCH": "The type (path '{loc}') of a field in the {reader} does not match with the {writer}",
    "NAME_MISMATCH": "The name of the schema has changed (path '{loc}')",
    "MISSING_ENUM_SYMBOLS": "The {reader} is missing enum symbols '{info}' at path '{loc}' in the {writer}",
    "MISSING_UNION_BRANCH": (
        "The {reader} is missing a type inside a union field at path '{loc}' in the {writer}"
    ),
    "FIXED_SIZE_MISMATCH": (
        "The size of FIXED type field at path '{loc}' in the {reader} does not match with the {writer}"
    ),
}


def _quote(text: str) -> str:
    # Confluent writes details as pseudo-JSON with single quotes; keep it readable and unambiguous.
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _pair_messages(reader: avro.schema.Schema, writer: avro.schema.Schema, reader_is_new: bool) -> list[str]:
    """Confluent-style detail entries for reader/writer, empty when the reader can read the writer."""
    # A fresh checker per pair: it memoizes by object identity and is not meant to be shared.
    checker = avro.compatibility.ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    try:
        result = checker.get_compatibility(reader=reader, writer=writer)
    except (avro.errors.AvroException, RecursionError) as exc:
        # The checker gives up on some exotic shapes; refusing is the conservative answer.
        return [
            f"{{errorType:'UNCHECKABLE', description:'avro cannot compare these schemas: {_quote(str(exc))}'}}"
        ]
    if result.compatibility is not avro.compatibility.SchemaCompatibilityType.incompatible:
        return []
    new_old = {"reader": "new schema", "writer": "old schema"}
    roles = new_old if reader_is_new else {"reader": new_old["writer"], "writer": new_old["reader"]}
    kinds = [i.name.upper() for i in result.incompatibilities]
    infos = sorted(result.messages)
    locs = sorted(result.locations)
    entries: list[str] = []
    if len(kinds) == 1:
        # One problem: message and location belong to it (the sets hold one element each).
        info, loc = (infos[0] if infos else ""), (locs[0] if locs else "/")
        desc = _DESCRIPTIONS.get(kinds[0], "{info}").format(info=info, loc=loc, **roles)
        entries.append(
            f"{{errorType:'{kinds[0]}', description:'{_quote(desc)}', additionalInfo:'{_quote(info)}'}}"
        )
    else:
        # avro merges messages/locations into sets, so they cannot be paired with each kind.
        loc_text = ", ".join(locs)
        info_text = "; ".join(infos)
        for kind in sorted(set(kinds)):
            desc = _DESCRIPTIONS.get(kind, "{info}").format(info=info_text, loc=loc_text, **roles)
            entries.append(
                f"{{errorType:'{kind}', description:'{_quote(desc)}', additionalInfo:'{_quote(info_text)}'}}"
            )
    return entries


def _level_directions(level: str) -> tuple[bool, bool, bool]:
    """(backward, forward, transitive) for a normalized level."""
    return (
        level.startswith(("BACKWARD", "FULL")),
        level.startswith(("FORWARD", "FULL")),
        level.endswith("_TRANSITIVE"),
    )


def check_parsed(
    candidate: ParsedSchema,
    previous: Sequence[tuple[int, ParsedSchema]],
    level: str,
    *,
    against_all: bool | None = None,
) -> CompatibilityResult:
    """Check ``candidate`` against ``previous`` (oldest first, live versions only) per ``level``.

    Non-transitive levels look at the latest version only; transitive ones at all, newest
    first, stopping at the first incompatible version as Confluent does. ``against_all``
    overrides the transitivity (the compatibility endpoint for one version passes a single
    version and ``True``). ``level`` must be normalized: this is :func:`check_compatibility`
    for schemas already parsed, as the embedded registry holds them.
    """
    backward, forward, transitive = _level_directions(level)
    if level == "NONE" or not previous:
        return CompatibilityResult(True)
    if against_all is not None:
        transitive = against_all
    targets = list(reversed(previous)) if transitive else [previous[-1]]
    for version, old in targets:
        messages: list[str] = []
        if backward:
            messages += _pair_messages(candidate.avro, old.avro, reader_is_new=True)
        if forward:
            messages += _pair_messages(old.avro, candidate.avro, reader_is_new=False)
        if messages:
            messages += [
                f"{{oldSchemaVersion: {version}}}",
                f"{{oldSchema: '{_quote(old.text)}'}}",
                f"{{compatibility: '{level}'}}",
            ]
            return CompatibilityResult(False, tuple(messages))
    return CompatibilityResult(True)


def check_compatibility(candidate: str, previous: Sequence[str], level: str) -> CompatibilityResult:
    """Is schema text ``candidate`` acceptable as the next version after ``previous`` (oldest first)?

    The same decision the embedded registry makes before adding a version. ``level`` is one of
    :data:`COMPATIBILITY_LEVELS` (any case). Raises :class:`SchemaTextError` for invalid schemas
    and ``ValueError`` for an unknown level.
    """
    norm = normalize_compatibility(level)
    parsed = [(i + 1, parse_schema(text)) for i, text in enumerate(previous)]
    return check_parsed(parse_schema(candidate), parsed, norm)
