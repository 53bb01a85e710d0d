"""Schema Registry support: an embedded Confluent-compatible server, a client, and dump files.

Four pieces, all speaking the Confluent Schema Registry REST protocol (v1):

* :class:`EmbeddedSchemaRegistry` (:mod:`.server`) -- an in-memory registry served on 127.0.0.1
  that TiCDC and the Confluent clients talk to unchanged, recording the exact schema text every
  encoder registered.
* :class:`RegistryClient` (:mod:`.client`) -- a small, thread-safe client for any
  Confluent-compatible registry.
* :class:`DumpRegistry` (:mod:`.dump`) -- a read-only registry loaded from a dump file, for
  offline checking of captured Kafka messages.
* :func:`open_registry` (:mod:`.providers`) -- turns a ``--registry`` argument into one of the above.

Beside them: :mod:`.compat` (schema identity and compatibility, decided by Apache ``avro``),
:mod:`.errors` (what a registry refused) and :mod:`.wire` (the protocol's media types and
:class:`RegisteredSchema`). Import from this package; the modules are its layout, not its API.
"""

from __future__ import annotations

from .client import RegistryClient
from .compat import (
    COMPATIBILITY_LEVELS,
    CompatibilityResult,
    ParsedSchema,
    check_compatibility,
    normalize_compatibility,
    parse_schema,
    schema_key,
)
from .dump import DumpRegistry
from .errors import (
    DumpFormatError,
    IncompatibleSchema,
    InvalidSchema,
    RegistryError,
    RegistryUnavailable,
    SchemaNotFound,
    SchemaTextError,
    SubjectNotFound,
    Unauthorized,
    VersionNotFound,
)
from .providers import Registry, open_registry, serve
from .server import EmbeddedSchemaRegistry, RegistryResponse
from .wire import ACCEPT, CONTENT_TYPE, RegisteredSchema

__all__ = [
    "ACCEPT",
    "COMPATIBILITY_LEVELS",
    "CONTENT_TYPE",
    "CompatibilityResult",
    "DumpFormatError",
    "DumpRegistry",
    "EmbeddedSchemaRegistry",
    "IncompatibleSchema",
    "InvalidSchema",
    "ParsedSchema",
    "RegisteredSchema",
    "Registry",
    "RegistryClient",
    "RegistryError",
    "RegistryResponse",
    "RegistryUnavailable",
    "SchemaNotFound",
    "SchemaTextError",
    "SubjectNotFound",
    "Unauthorized",
    "VersionNotFound",
    "check_compatibility",
    "normalize_compatibility",
    "open_registry",
    "parse_schema",
    "schema_key",
    "serve",
]
