"""Any in-process encoder as a subprocess encoder: the server end of protocol version 1.

    python -m conformance.encoders.serve --encoder ticdc-simple/reference

reads requests from stdin and writes replies to stdout, one JSON line each, until stdin ends.
It proves the protocol with the suite's own encoders (the same verdicts through a pipe as in
process), and it is a template for a Python encoder that wants to run out of process.

Requests are validated against `schemas/v1/request.json` (the harness' side of the contract);
a request that breaks it is answered with an `error` reply when it has an id, and ends the
server (exit status 2) when it has none. Anything the wrapped encoder prints goes to stderr:
stdout carries replies only.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import Any, BinaryIO

from .. import __version__
from ..errors import InfrastructureError
from ..model.serde import EventReader
from . import wire
from .spi import ConfigurationError, Encoder, EncoderContext, EncoderInfo, ManualClock
from .wire import Capabilities, Handshake, Implementation, MessageInvalid


class Server:
    """One encoder behind the protocol. `make` builds a fresh encoder for every `open`."""

    def __init__(self, info: EncoderInfo, capabilities: Capabilities, out: BinaryIO) -> None:
        self.info = info
        self.capabilities = capabilities
        self.out = out
        self.encoder: Encoder | None = None
        self.clock = ManualClock()
        self.reader = EventReader()

    def reply(self, message: dict[str, Any]) -> None:
        self.out.write(wire.dumps(message))
        self.out.flush()

    def handle(self, line: bytes) -> bool:
        """Answer one request line; False once the server must stop."""
        try:
            req = wire.loads(line)
        except (ValueError, RecursionError):
            print(f"serve: a request that is not JSON: {line[:200]!r}", file=sys.stderr)
            return False
        rid = req.get("id") if isinstance(req, dict) else None
        try:
            wire.validate("request", req)
        except MessageInvalid as e:
            print(f"serve: a request that breaks schemas/v1/request.json: {e}", file=sys.stderr)
            if isinstance(rid, int) and rid >= 1:
                self.reply(wire.error_reply(rid, "encoder", f"invalid request: {e}"))
                return True
            return False
        cmd, rid = req["cmd"], req["id"]
        try:
            self.reply(getattr(self, f"do_{cmd}")(req))
        except ConfigurationError as e:
            self.reply(wire.error_reply(rid, "options" if cmd == "open" else "encoder", str(e)))
        except InfrastructureError as e:
            self.reply(wire.error_reply(rid, "infrastructure", str(e)))
        except Exception as e:  # noqa: BLE001 - the encoder's failure is its reply, not our crash
            self.reply(wire.error_reply(rid, "encoder", f"{type(e).__name__}: {e}", traceback.format_exc(limit=8)))
        return True

    def do_start(self, req: dict[str, Any]) -> dict[str, Any]:
        impl = Implementation(self.info.name, __version__, "python", homepage=None)
        return Handshake(wire.PROTOCOL_VERSION, impl, self.info.protocol, self.capabilities).to_json(req["id"])

    def do_open(self, req: dict[str, Any]) -> dict[str, Any]:
        registry = None
        if req["registry_url"] is not None:
            from ..infra.registry import RegistryClient

            registry = RegistryClient(req["registry_url"])
        self.clock = ManualClock(req["now"])
        self.reader = EventReader()
        ctx = EncoderContext(options=req["options"], registry=registry, clock=self.clock,
                             partitions=req["partitions"], topic_prefix=req["topic_prefix"],
                             time_zone=req["time_zone"], registry_url=req["registry_url"])
        self.encoder = self.info.factory()
        self.encoder.open(ctx)
        return wire.ok_reply(req["id"])

    def _open_encoder(self) -> Encoder:
        if self.encoder is None:
            raise RuntimeError("no open before this request")
        return self.encoder

    def do_encode(self, req: dict[str, Any]) -> dict[str, Any]:
        enc = self._open_encoder()
        event = self.reader.read(req["event"], req["tables"])
        self.clock.now = req["now"]
        records = list(enc.encode(event))
        if req.get("tick"):
            records += enc.tick(req["now"]) or []
        return wire.records_reply(req["id"], records)

    def do_tick(self, req: dict[str, Any]) -> dict[str, Any]:
        enc = self._open_encoder()
        self.clock.now = req["now"]
        return wire.records_reply(req["id"], enc.tick(req["now"]) or [])

    def do_close(self, req: dict[str, Any]) -> dict[str, Any]:
        enc, self.encoder = self.encoder, None
        if enc is not None:
            enc.close()
        return wire.ok_reply(req["id"])


def capabilities_of(info: EncoderInfo) -> Capabilities:
    """An in-process encoder of a protocol supports that protocol's options; it may need ticks."""
    from ..protocols import get_protocol

    suite = get_protocol(info.protocol)
    # It registers schemas when some option of its protocol makes records registry-framed.
    registers = suite.capabilities.needs_registry or any(
        suite.needs_registry({o.name: c}) for o in suite.options for c in (o.choices or ()))
    return Capabilities(options={o.name: o.choices for o in suite.options}, registers_schemas=registers,
                        needs_ticks=True)


def _find(name: str, protocol: str) -> EncoderInfo:
    """The protocol's own encoders first (the process starts faster without every other
    protocol and the entry-point scan), then every installed one."""
    from ..protocols import get_protocol
    from . import find_encoder

    for e in get_protocol(protocol).encoders():
        if e.name in (name, f"{protocol}/{name}"):
            return e
    return find_encoder(name, protocol)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.encoders.serve",
                                 description="Serve an in-process encoder through the subprocess encoder protocol "
                                             f"(version {wire.PROTOCOL_VERSION}) on stdin/stdout.")
    ap.add_argument("--encoder", required=True, help="encoder name, e.g. ticdc-simple/reference")
    ap.add_argument("--protocol", help="its protocol (default: the name's first part)")
    args = ap.parse_args(argv)
    protocol = args.protocol or args.encoder.split("/", 1)[0]
    try:
        info = _find(args.encoder, protocol)
    except LookupError as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    # Replies go to the real stdout; whatever the encoder prints goes to stderr.
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    server = Server(info, capabilities_of(info), out)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        if not server.handle(line):
            return 2
    if server.encoder is not None:
        server.encoder.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
