"""Each protocol's coverage doc says which of its rules a capture alone can judge and which need
the source (issue 29): the table between the markers is this module's rendering of the check
declarations, so that it cannot drift. Regenerate: `python tests/unit/test_capture_tables.py`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import Scope
from conformance.protocols import all_checks

ROOT = Path(__file__).resolve().parents[2]
DOCS = {"debezium": "coverage-debezium.md", "maxscale-kafkacdc": "coverage-maxscale.md",
        "ticdc-avro": "coverage-ticdc.md", "ticdc-simple": "coverage-ticdc.md"}
BEGIN, END = "<!-- capture-table {} begin -->", "<!-- capture-table {} end -->"

WHY = {
    Scope.EVENT: "pairs the messages with the source events that made them",
    Scope.RECORD: "compares a value or schema with what the source stored",
    Scope.STREAM: "compares the stream with the source's changes",
    Scope.SOURCE: "judges what the database server did with the workload's SQL",
    Scope.RUN: "judges the encoder process (crashes, hangs): there is none in a capture",
}


# Checks whose reason is their own (by id suffix).
OWN = {"registry.rejection": "judges what the encoder did when the registry refused a schema the run registered",
       "registry.verdict": "judges the registry's answers to the schemas the run registered",
       "infra.broker-acks": "judges the broker's acknowledgements to the producer: a capture has none"}


def _why(c: Any) -> str:
    own = next((v for k, v in OWN.items() if c.id.endswith(k)), None)
    if own is not None:
        return own
    return WHY[Scope.RECORD] if c.scope is Scope.RECORD else WHY.get(c.scope, "needs the source")


def render(protocol: str) -> str:
    rows = ["| check | level | scope | a capture alone | why not |", "|---|---|---|---|---|"]
    for c in sorted(all_checks(protocol), key=lambda c: c.id):
        alone = not c.needs_source and c.scope not in (Scope.EVENT, Scope.SOURCE, Scope.RUN)
        why = "" if alone else _why(c)
        rows.append(f"| `{c.id}` | {c.level.value} | {c.scope.value} | {'yes' if alone else 'no'} | {why} |")
    return "\n".join(rows)


def section(protocol: str) -> str:
    return f"{BEGIN.format(protocol)}\n{render(protocol)}\n{END.format(protocol)}"


@pytest.mark.parametrize("protocol", sorted(DOCS))
def test_the_coverage_doc_says_what_a_capture_alone_judges(protocol: str) -> None:
    text = (ROOT / "docs" / DOCS[protocol]).read_text(encoding="utf-8")
    assert section(protocol) in text, f"docs/{DOCS[protocol]}: regenerate with python tests/unit/test_capture_tables.py"


def write() -> None:
    for protocol, doc in DOCS.items():
        path = ROOT / "docs" / doc
        text = path.read_text(encoding="utf-8")
        start, end = BEGIN.format(protocol), END.format(protocol)
        if start in text:
            text = text[:text.index(start)] + section(protocol) + text[text.index(end) + len(end):]
        else:
            text += (f"\n## What a capture alone can judge: {protocol} (issue 29)\n\n`conformance check` on a "
                     "captured or live topic, without the workload, runs every rule whose inputs are all in the "
                     "log (the message, the schema it declares or references, earlier messages of its stream); "
                     "the others are skipped, saying they need the workload. Generated from the check "
                     f"declarations (tests/unit/test_capture_tables.py).\n\n{section(protocol)}\n")
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    write()
