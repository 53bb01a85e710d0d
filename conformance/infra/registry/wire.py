"""What every piece of the registry shares of the Confluent Schema Registry REST protocol (v1).

The media types both ends send, and one subject version as the protocol describes it; the
server, the client and the dump all speak in these terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Content type of every answer, as Confluent sends it.
CONTENT_TYPE: Final = "application/vnd.schemaregistry.v1+json"
#: The Accept header TiCDC (and the Confluent clients) send.
ACCEPT: Final = (
    "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
)


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """One version of a subject: what ``GET /subjects/{s}/versions/{v}`` returns."""

    subject: str
    version: int
    id: int
    schema: str

