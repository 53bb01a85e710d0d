"""What a plug-in distribution's entry point looks like for an encoder in another language:

    [project.entry-points."conformance.encoders"]
    node-simple = "encoders.example_plugin:encoders"
"""

from __future__ import annotations

from pathlib import Path

from conformance.encoders import EncoderInfo
from conformance.encoders.subprocess import command_encoder

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-ticdc-simple"


def encoders() -> list[EncoderInfo]:
    return [command_encoder(["node", str(EXAMPLE / "src" / "main.js")], protocol="ticdc-simple",
                            name="ticdc-simple/external/node-example",
                            description="TiCDC Simple (JSON) in Node.js, through the subprocess protocol")]
