"""`conformance check --kafka URL --topics T --workload FILE` (issue 29): a deployment's live topic
judged against the exported workload it was made from, without a dump in between."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from conformance.cli.main import main
from conformance.infra.kafka import open_kafka

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from test_field_workload import PROTOCOL, export_text, records_of  # noqa: E402

from conformance.harness.export import read  # noqa: E402


@pytest.mark.parametrize(("encoder", "verdict"), [("reference", 0), ("mutant/bit-zero", 1)])
def test_a_live_topic_is_judged_against_its_workload(encoder: str, verdict: int, capsys, tmp_path: Path
                                                     ) -> None:  # type: ignore[no-untyped-def]
    text = export_text(encoder, examples=3)
    (tmp_path / "w.sql").write_text(text, encoding="utf-8")
    export = read(text)
    records = records_of(encoder, export, deployed=True)
    with open_kafka("embedded://?brokers=1&partitions=1") as k:
        topics = sorted({r.topic for r in records})
        for t in topics:
            k.create_topic(t, 1)
        p = Producer(k.client_config())
        for r in records:
            p.produce(r.topic, key=r.key, value=r.value, partition=0)
        p.flush(10)
        code = main(["check", "--protocol", PROTOCOL, "--kafka", f"kafka://{k.bootstrap.split(',')[0]}", "--topics",
                     ",".join(topics), "--no-spark", "--workload", str(tmp_path / "w.sql"), "--report-json",
                     str(tmp_path / "r.json")])
    out = capsys.readouterr()
    assert code == verdict, out.out + out.err
    data = json.loads((tmp_path / "r.json").read_text())
    assert [r["encoder"] for r in data["runs"]][-1].endswith("+ workload:w.sql")
    if verdict:
        results = [r for r in data["results"] if r["check"] == "maxscale-kafkacdc.value.bit"]
        assert any(r["outcome"] == "failed" for r in results)
