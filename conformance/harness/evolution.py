"""What the registry did with the schema changes of a run: its verdict per change.

An encoder that writes Avro registers a new version of a subject when a table changes (a column
added, dropped or retyped). After a run, every subject of one option combination that has more
than one version is read back from the registry; each change between consecutive versions is
classified from the two schemas (per record: fields added, removed, retyped) and judged again at
the subject's compatibility level with the registry's own rules (`infra/registry/compat.py`).
Every version in the registry was accepted by it; a change that the rules say the level forbids
is reported as the registry's divergence (not the encoder's). Refused registrations never reach
the registry: they are the encoder's `encoder.no-crash` finding, with the registry's answer.

The summary is a note of the run's report section, e.g. `registry (BACKWARD): 14 schema changes
accepted: field added 6, field removed 5, type changed 3 (int → long 3)`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..infra.registry.compat import check_compatibility


@dataclass(slots=True)
class Evolution:
    changes: Counter[str] = field(default_factory=Counter)
    retypes: Counter[str] = field(default_factory=Counter)
    levels: set[str] = field(default_factory=set)
    subjects: int = 0
    versions: int = 0
    divergent: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.versions

    def note(self) -> str | None:
        if not self.versions:
            return None
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.changes.items(), key=lambda kv: (-kv[1], kv[0])))
        retypes = ", ".join(f"{k} {n}" for k, n in sorted(self.retypes.items(), key=lambda kv: (-kv[1], kv[0])))
        text = (f"registry ({'/'.join(sorted(self.levels))}): {self.versions} schema change(s) of {self.subjects} "
                f"subject(s) accepted" + (f": {kinds}" if kinds else "") + (f" ({retypes})" if retypes else ""))
        if self.divergent:
            text += (f"; {len(self.divergent)} accepted although the level forbids them (the registry's divergence, "
                     f"not the encoder's): {'; '.join(self.divergent[:3])}")
        return text


def evolution(registry: Any, prefix: str) -> Evolution:
    """The schema changes of every subject that starts with `prefix`."""
    out = Evolution()
    if registry is None or not hasattr(registry, "subjects"):
        return out
    try:
        subjects = [s for s in registry.subjects() if s.startswith(prefix)]
    except Exception:  # noqa: BLE001 - a registry that cannot list: nothing to say
        return out
    for subject in sorted(subjects):
        try:
            versions = registry.versions(subject)
            if len(versions) < 2:
                continue
            texts = [registry.version(subject, v).schema for v in versions]
            level = registry.get_compatibility(subject)
        except Exception:  # noqa: BLE001
            continue
        out.subjects += 1
        out.levels.add(str(level).upper())
        for i in range(1, len(texts)):
            out.versions += 1
            for kind, detail in classify(texts[i - 1], texts[i]):
                out.changes[kind] += 1
                if detail:
                    out.retypes[detail] += 1
            try:
                verdict = check_compatibility(texts[i], texts[:i], str(level))
            except Exception:  # noqa: BLE001 - a schema the rules cannot read: no verdict
                continue
            if not verdict.compatible:
                out.divergent.append(f"{subject} v{versions[i]}")
    return out


def classify(old: str, new: str) -> list[tuple[str, str | None]]:
    """The changes from one schema to the next, per record they define: ("field added", None),
    ("field removed", None), ("type changed", "int → long"), ("record added", None), or
    ("attributes changed", None)."""
    a, b = _records(json.loads(old)), _records(json.loads(new))
    out: list[tuple[str, str | None]] = []
    for name in sorted(set(a) & set(b)):
        fa = {f: d.get("type") for f, d in a[name].items()}
        fb = {f: d.get("type") for f, d in b[name].items()}
        out += [("field added", None)] * len([f for f in fb if f not in fa])
        out += [("field removed", None)] * len([f for f in fa if f not in fb])
        for f in fa:
            if f in fb and _brief(fa[f]) != _brief(fb[f]):
                out.append(("type changed", f"{_brief(fa[f])} → {_brief(fb[f])}"))
    out += [("record added", None)] * len(set(b) - set(a))
    if not out:
        # The same fields with the same types: a type's attributes changed (a decimal's
        # precision, a connect.parameters entry, a default).
        out.append(("attributes changed", None))
    return out


#: Avro's promotions (a reader of the right type reads a writer of the left one).
_PROMOTIONS = frozenset({("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
                         ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")})


def change_label(old: str, new: str, earlier: Sequence[str] = ()) -> str:
    """What one registration changed, named as the DDL that makes it ("column added (NOT NULL, no
    default)", "type narrowed", …): the one kind of change, or "several changes at once".
    `earlier` are the versions before `old`: a field added under a name an earlier version had
    with another type is "dropped name re-added (another type)"."""
    a, b = _records(json.loads(old)), _records(json.loads(new))
    gone = [_records(json.loads(t)) for t in earlier]
    labels: list[str] = []
    for name in sorted(set(a) & set(b)):
        fa, fb = a[name], b[name]
        removed = [fa[f] for f in fa if f not in fb]
        added = [fb[f] for f in fb if f not in fa]
        if len(removed) == 1 and len(added) == 1 and _brief(removed[0].get("type")) == _brief(added[0].get("type")):
            labels.append("column renamed")
        else:
            labels += ["column dropped"] * len(removed)
            labels += [_added(f, [g[name].get(str(f.get("name"))) for g in gone if name in g]) for f in added]
        for f in fa:
            if f in fb:
                labels += _changed(fa[f], fb[f])
    labels += ["table added"] * len(set(b) - set(a))
    kinds = sorted(set(labels))
    if not kinds:
        return "attributes changed"
    return kinds[0] if len(kinds) == 1 else "several changes at once"


def _added(f: dict[str, Any], before: Sequence[dict[str, Any] | None] = ()) -> str:
    t = _brief(f.get("type")).rstrip("?")
    if any(g is not None and _brief(g.get("type")).rstrip("?") != t for g in before):
        return "dropped name re-added (another type)"
    if _brief(f.get("type")).endswith("?"):
        return "column added (nullable)"
    return "column added (NOT NULL, with default)" if "default" in f else "column added (NOT NULL, no default)"


def _changed(fa: dict[str, Any], fb: dict[str, Any]) -> list[str]:
    ta, tb = _brief(fa.get("type")), _brief(fb.get("type"))
    if ta != tb:
        ba, bb = ta.rstrip("?"), tb.rstrip("?")
        if ba == bb:
            return ["column made nullable" if tb.endswith("?") else "column made NOT NULL"]
        if (ba, bb) in _PROMOTIONS:
            return ["type widened"]
        if (bb, ba) in _PROMOTIONS:
            return ["type narrowed"]
        return ["type changed"]
    if fa.get("default", _NO) != fb.get("default", _NO):
        return ["default changed"]
    # A record defined inline in a field is compared as a record of its own (Debezium's Envelope
    # holds its Value record in "before"): here only the field's own attributes count.
    return ["attributes changed"] if _shallow(fa) != _shallow(fb) else []


_NO = object()


def _shallow(node: Any) -> Any:
    if isinstance(node, list):
        return [_shallow(v) for v in node]
    if isinstance(node, dict):
        if node.get("type") in ("record", "error") and "fields" in node:
            return node.get("name")
        return {k: _shallow(v) for k, v in node.items()}
    return node


def _records(schema: Any, space: str | None = None, out: dict[str, dict[str, dict[str, Any]]] | None = None
             ) -> dict[str, dict[str, dict[str, Any]]]:
    out = {} if out is None else out
    if isinstance(schema, list):
        for s in schema:
            _records(s, space, out)
    elif isinstance(schema, dict):
        if schema.get("type") == "record" and isinstance(schema.get("name"), str):
            ns = schema.get("namespace", space)
            name = schema["name"] if "." in schema["name"] or not ns else f"{ns}.{schema['name']}"
            inner = name.rsplit(".", 1)[0] if "." in name else None
            fields = {str(f.get("name")): f for f in schema.get("fields") or [] if isinstance(f, dict)}
            out[name] = fields
            for f in fields.values():
                _records(f.get("type"), inner, out)
        elif schema.get("type") == "array":
            _records(schema.get("items"), space, out)
        elif schema.get("type") == "map":
            _records(schema.get("values"), space, out)
    return out


def _brief(t: Any) -> str:
    """A field type in a few characters: its Avro type, nullable with `?`."""
    if isinstance(t, list):
        inner = [x for x in t if x != "null"]
        return (_brief(inner[0]) if len(inner) == 1 else "union") + ("?" if "null" in t else "")
    if isinstance(t, dict):
        if t.get("type") in ("record", "enum", "fixed"):
            return str(t.get("name"))
        return str(t.get("logicalType") or t.get("type"))
    return str(t)
