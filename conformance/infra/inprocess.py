"""A registry client wired straight to an embedded registry's request handler.

Same answers, same errors, same compatibility rules as over HTTP, without a socket: unit
tests use it (they open no sockets), and so can in-process runs that need no network.
"""

from __future__ import annotations

import json
from typing import Any

from .registry import ACCEPT, CONTENT_TYPE, EmbeddedSchemaRegistry, RegistryClient


class InProcessRegistry(RegistryClient):
    def __init__(self, server: EmbeddedSchemaRegistry | None = None, *, compatibility: str = "BACKWARD") -> None:
        super().__init__("http://in-process.invalid")
        self.server = server if server is not None else EmbeddedSchemaRegistry(default_compatibility=compatibility)

    def __repr__(self) -> str:
        return "InProcessRegistry()"

    def _call(self, method: str, path: str, body: object | None = None) -> Any:
        payload = b"" if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": ACCEPT}
        if body is not None:
            headers["Content-Type"] = CONTENT_TYPE
        assert self.server is not None
        resp = self.server.handle(method, path, payload, headers)
        return self._decode(method, path, resp.status, resp.body)
