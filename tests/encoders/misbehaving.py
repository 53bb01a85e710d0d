"""A subprocess encoder that breaks the protocol in one chosen way (tests of the adapter).

    python misbehaving.py MODE [--once MARKER]

It answers the handshake and `open` properly (unless MODE breaks them), then misbehaves on
the second `encode`. With `--once MARKER` it misbehaves only in the first process (the
marker file records that it did); later processes run the suite's reference TiCDC Simple
encoder through `conformance.encoders.serve`, so a test can see the next shard pass.
Standard library only until it hands over, so that it starts fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MODES = ("wrong-version", "not-json", "wrong-id", "oversized", "noise", "exit", "hang", "hang-with-child",
         "error-reply", "bad-base64", "bad-record", "exit-at-start", "other-protocol", "options-error",
         "infrastructure-error", "non-object", "close-hang")


def reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handshake(rid: int, version: int = 1, protocol: str = "ticdc-simple") -> None:
    reply({"id": rid, "version": version, "implementation": {"name": "misbehaving", "version": "0.0.1",
                                                              "language": "python"},
           "protocol": protocol, "capabilities": {"options": {}, "registers_schemas": False, "needs_ticks": False}})


def misbehave(mode: str, rid: int) -> None:
    if mode == "not-json":
        sys.stdout.write('{"id": ' + str(rid) + ', "records": [\n')
    elif mode == "non-object":
        sys.stdout.write("[1, 2, 3]\n")
    elif mode == "wrong-id":
        reply({"id": rid + 1, "records": []})
    elif mode == "oversized":
        sys.stdout.write(json.dumps({"id": rid, "records": [], "pad": "x" * (2 << 20)}) + "\n")
    elif mode == "noise":
        sys.stdout.write("loading model weights... done\n")
        reply({"id": rid, "records": []})
    elif mode == "exit":
        sys.stderr.write("panic: index out of range [3] with length 3\n")
        sys.stderr.flush()
        os._exit(3)
    elif mode in ("hang", "hang-with-child"):
        if mode == "hang-with-child":
            # A grandchild in the same process group, which must die with its parent.
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            sys.stderr.write(f"child {child.pid}\n")
        sys.stderr.write("waiting for a lock that never comes\n")
        sys.stderr.flush()
        time.sleep(600)
    elif mode == "error-reply":
        reply({"id": rid, "error": {"kind": "encoder", "message": "unsupported column type GEOMETRY",
                                    "detail": "at encode (encoder.go:42)"}})
    elif mode == "infrastructure-error":
        reply({"id": rid, "error": {"kind": "infrastructure", "message": "schema registry at http://x unreachable"}})
    elif mode == "bad-base64":
        reply({"id": rid, "records": [{"topic": "t", "partition": 0, "key": None, "value": "not base64!"}]})
    elif mode == "bad-record":
        reply({"id": rid, "records": [{"topic": "", "key": None}]})
    else:
        reply({"id": rid, "records": []})  # this mode misbehaves elsewhere
    sys.stdout.flush()


def main() -> int:
    mode = sys.argv[1]
    assert mode in MODES, mode
    if "--once" in sys.argv:
        marker = sys.argv[sys.argv.index("--once") + 1]
        if os.path.exists(marker):
            os.execv(sys.executable, [sys.executable, "-m", "conformance.encoders.serve",
                                      "--encoder", "ticdc-simple/reference"])
        open(marker, "w").close()
    if mode == "exit-at-start":
        sys.stderr.write("cannot load libencoder.so\n")
        return 5
    encodes = 0
    for line in sys.stdin:
        req = json.loads(line)
        rid, cmd = req["id"], req["cmd"]
        if cmd == "start":
            if mode == "wrong-version":
                handshake(rid, version=2)
            elif mode == "other-protocol":
                handshake(rid, protocol="ticdc-avro")
            else:
                handshake(rid)
        elif cmd == "open":
            if mode == "options-error":
                reply({"id": rid, "error": {"kind": "options", "message": "max-message-bytes must be positive"}})
            else:
                reply({"id": rid, "ok": True})
        elif cmd == "encode":
            encodes += 1
            if encodes == 2:
                misbehave(mode, rid)
            else:
                reply({"id": rid, "records": []})
        elif cmd == "close":
            if mode == "close-hang":
                time.sleep(600)
            reply({"id": rid, "ok": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
