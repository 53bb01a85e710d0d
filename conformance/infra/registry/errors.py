"""The registry's errors: what a Schema Registry refused, and what was wrong with a schema or a dump.

:class:`RegistryError` and its subclasses are infrastructure errors (the CLI maps them to exit 2
with their message); each subclass stands for one Confluent error code. The two
``ValueError`` subclasses are bad input: a schema text (:class:`SchemaTextError`, answered as
42201) and a registry dump file (:class:`DumpFormatError`).
"""

from __future__ import annotations

from ...errors import InfrastructureError


class RegistryError(InfrastructureError):
    """A Schema Registry refused a request, or could not be used.

    ``str(exc)`` is a full sentence (what happened, why, what to do). ``message`` is the
    registry's own ``message`` field when the error came from a registry answer (otherwise the
    same sentence), ``status`` the HTTP status and ``error_code`` Confluent's error code.
    Every URL in them is redacted.
    """

    def __init__(
        self,
        text: str,
        *,
        status: int | None = None,
        error_code: int | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(text)
        self.status = status
        self.error_code = error_code
        self.message = text if message is None else message


class SchemaNotFound(RegistryError):
    """40403: no schema with that id (or the schema is not registered under the subject)."""


class SubjectNotFound(RegistryError):
    """40401: the subject does not exist (or has no live version)."""


class VersionNotFound(RegistryError):
    """40402: the subject has no such version."""


class IncompatibleSchema(RegistryError):
    """409: the schema breaks the subject's compatibility level."""


class InvalidSchema(RegistryError):
    """42201: the registry does not accept the schema text."""


class Unauthorized(RegistryError):
    """401: missing or wrong credentials."""


class RegistryUnavailable(RegistryError):
    """The registry cannot be reached, or what answered is not a Schema Registry."""


class DumpFormatError(ValueError):
    """A registry dump file is malformed; the message says which entry and what to fix."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class SchemaTextError(ValueError):
    """A schema text is not valid Avro; ``reason`` says why (used for 42201 answers)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

