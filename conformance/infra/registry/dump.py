"""Registry dump files: a read-only registry for offline checking of captured Kafka messages.

A dump is ``{"schemas": [{"subject", "version", "id", "schema"}]}`` as
:meth:`EmbeddedSchemaRegistry.dump` writes it; :class:`DumpRegistry` loads one, refuses a
malformed one with a :class:`~.errors.DumpFormatError` that names the entry and the fix, and
answers the same read API as :class:`~conformance.infra.registry.RegistryClient`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..closing import ClosesOnExit
from .compat import schema_key
from .errors import DumpFormatError, RegistryError, SchemaNotFound, SubjectNotFound, VersionNotFound
from .wire import RegisteredSchema

if TYPE_CHECKING:
    from .server import EmbeddedSchemaRegistry

_DUMP_HELP: Final = (
    'A registry dump is {"schemas": [{"subject": ..., "version": ..., "id": ..., '
    '"schema": "<schema JSON as a '
    'string>"}, ...]} as written by EmbeddedSchemaRegistry.dump().'
)


class DumpRegistry(ClosesOnExit):
    """A read-only registry loaded from a dump file (offline checking of captured messages)."""

    def __init__(self, entries: Sequence[RegisteredSchema], *, source: str = "<dict>") -> None:
        self.source = source
        #: Always ``None``: there is no server behind a dump.
        self.server: EmbeddedSchemaRegistry | None = None
        self._entries = tuple(sorted(entries, key=lambda e: (e.subject, e.version)))
        self._by_id: dict[int, str] = {}
        self._id_subjects: dict[int, list[tuple[str, int]]] = {}
        self._by_subject: dict[str, list[RegisteredSchema]] = {}
        for entry in self._entries:
            self._by_id.setdefault(entry.id, entry.schema)
            self._id_subjects.setdefault(entry.id, []).append((entry.subject, entry.version))
            self._by_subject.setdefault(entry.subject, []).append(entry)

    def __repr__(self) -> str:
        return f"DumpRegistry({self.source!r}, {len(self._entries)} versions)"

    @property
    def url(self) -> str:
        """Where the data came from (the dump's path), for messages."""
        return self.source

    @property
    def entries(self) -> tuple[RegisteredSchema, ...]:
        return self._entries

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> DumpRegistry:
        shown = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DumpFormatError(shown, "the file is not UTF-8 text. " + _DUMP_HELP) from None
        except OSError as exc:
            raise DumpFormatError(shown, f"cannot read the file ({exc.strerror or exc}).") from None
        try:
            data = json.loads(text)
        except RecursionError:
            raise DumpFormatError(shown, "the JSON is nested too deeply. " + _DUMP_HELP) from None
        except json.JSONDecodeError as exc:
            raise DumpFormatError(
                shown, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). " + _DUMP_HELP
            ) from None
        return cls.from_dict(data, source=shown)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<dict>") -> DumpRegistry:
        """Validate ``data`` (the parsed dump) and build the registry; raise :class:`DumpFormatError`."""
        if not isinstance(data, dict) or not isinstance(data.get("schemas"), list):
            found = type(data).__name__ if not isinstance(data, dict) else f"keys {sorted(data)}"
            raise DumpFormatError(
                source,
                f'the top level must be a JSON object with a "schemas" list (found {found}). ' + _DUMP_HELP,
            )
        entries: list[RegisteredSchema] = []
        where_version: dict[tuple[str, int], int] = {}
        where_id: dict[int, tuple[int, str]] = {}
        for index, raw in enumerate(data["schemas"]):
            label = f'entry {index} of "schemas"'
            if not isinstance(raw, dict):
                raise DumpFormatError(
                    source,
                    f"{label} is a {type(raw).__name__}, not an object with subject, version, id and schema.",
                )
            if isinstance(raw.get("subject"), str):
                label += f" (subject {raw['subject']!r})"
            for key in ("subject", "version", "id", "schema"):
                if key not in raw:
                    raise DumpFormatError(
                        source, f'{label} has no "{key}"; every entry needs subject, version, id and schema.'
                    )
            subject, version, schema_id, schema = raw["subject"], raw["version"], raw["id"], raw["schema"]
            if not isinstance(subject, str) or not subject:
                raise DumpFormatError(
                    source, f'{label}: "subject" must be a non-empty string, not {subject!r}.'
                )
            for key, value in (("version", version), ("id", schema_id)):
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise DumpFormatError(
                        source, f'{label}: "{key}" must be a positive integer, not {value!r}.'
                    )
            if not isinstance(schema, str):
                raise DumpFormatError(
                    source,
                    f'{label}: "schema" must be the schema as a JSON *string* (json.dumps of the schema), '
                    f"not a {type(schema).__name__}.",
                )
            try:
                key = schema_key(json.loads(schema))
            except RecursionError:
                raise DumpFormatError(source, f'{label}: "schema" is nested too deeply.') from None
            except json.JSONDecodeError as exc:
                raise DumpFormatError(
                    source,
                    f'{label}: "schema" does not parse as JSON ({exc.msg} at column {exc.colno}); '
                    "fix the text.",
                ) from None
            previous = where_version.get((subject, version))
            if previous is not None:
                raise DumpFormatError(
                    source,
                    f"entries {previous} and {index} both define subject {subject!r} "
                    f"version {version}; keep one.",
                )
            where_version[(subject, version)] = index
            seen = where_id.get(schema_id)
            if seen is not None and seen[1] != key:
                raise DumpFormatError(
                    source,
                    f"id {schema_id} is registered with two different schemas "
                    f"(entries {seen[0]} and {index}); "
                    "an id names exactly one schema: fix or drop one of them.",
                )
            where_id.setdefault(schema_id, (index, key))
            entries.append(RegisteredSchema(subject, version, schema_id, schema))
        return cls(entries, source=source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemas": [
                {"subject": e.subject, "version": e.version, "id": e.id, "schema": e.schema}
                for e in self._entries
            ]
        }

    # ---- read API (same as RegistryClient) -----------------------------------------------------

    def check_root(self) -> None:
        return None

    def close(self) -> None:
        return None

    def schema_by_id(self, schema_id: int) -> str:
        text = self._by_id.get(schema_id)
        if text is None:
            raise SchemaNotFound(
                f"Schema id {schema_id} is not in the registry dump {self.source}. The data was encoded "
                "against another registry, or the dump is incomplete; dump the registry the encoder used.",
                status=404,
                error_code=40403,
                message=f"Schema {schema_id} not found",
            )
        return text

    def subjects_for_id(self, schema_id: int, *, fresh: bool = False) -> list[tuple[str, int]]:
        self.schema_by_id(schema_id)
        return list(self._id_subjects.get(schema_id, ()))

    def _subject(self, subject: str) -> list[RegisteredSchema]:
        versions = self._by_subject.get(subject)
        if not versions:
            raise SubjectNotFound(
                f"Subject {subject!r} is not in the registry dump {self.source}; it has "
                f"{len(self._by_subject)} subjects. Check the subject naming, or dump the right registry.",
                status=404,
                error_code=40401,
                message=f"Subject '{subject}' not found.",
            )
        return versions

    def versions(self, subject: str) -> list[int]:
        return [e.version for e in self._subject(subject)]

    def version(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        entries = self._subject(subject)
        if version == "latest" or version == -1:
            return entries[-1]
        for entry in entries:
            if entry.version == version:
                return entry
        raise VersionNotFound(
            f"Subject {subject!r} has no version {version!r} in the registry dump {self.source} "
            f"(versions: {[e.version for e in entries]}).",
            status=404,
            error_code=40402,
            message=f"Version {version} not found.",
        )

    def subjects(self) -> list[str]:
        return sorted(self._by_subject)

    def register(self, subject: str, schema: str) -> int:
        raise RegistryError(
            f"The registry dump {self.source} is read-only: cannot register a schema under {subject!r}. "
            "Use --registry embedded:// or an http:// registry to run encoders."
        )
