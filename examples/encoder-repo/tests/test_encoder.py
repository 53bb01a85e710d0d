"""The repository's own tests run next to the conformance suite's."""

from __future__ import annotations

from pathlib import Path

from conformance.encoders.subprocess import SubprocessSpec, probe

MAIN = Path(__file__).resolve().parents[2] / "node-ticdc-simple" / "src" / "main.js"


def test_the_encoder_says_who_it_is() -> None:
    hs = probe(SubprocessSpec.from_command(["node", str(MAIN)]))
    assert hs.protocol == "ticdc-simple"
    assert hs.implementation.name == "node-ticdc-simple"
