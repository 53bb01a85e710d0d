"""MaxScale KafkaCDC through every runner (memory, in-process Kafka, Spark) and `conformance check`,
from a real MariaDB binlog as MaxScale reads it, and across restarts over the embedded Kafka:
duplicates pass, a lost transaction tail fails with `lost`."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers import protocol_shape

from conformance.checks import Outcome
from conformance.cli.main import main
from conformance.encoders import find_encoder
from conformance.harness.runners import KafkaRunner
from conformance.harness.stages import RunSpec
from conformance.infra.faults import FAULT_RUN_CLIENT_CONFIG
from conformance.infra.kafka import open_kafka
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.protocols import get_protocol
from conformance.reporting.model import Section

P = "maxscale-kafkacdc"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


def outcomes(path: Path) -> dict[tuple[int, str], tuple[str, dict[str, int]]]:
    data = json.loads((path / "report.json").read_text(encoding="utf-8"))
    return {(r["run"], r["check"]): (r["outcome"], r["counts"]) for r in data["results"]}


def test_every_runner_and_check_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["run", "--protocol", P, "--examples", "6", "--seed", "11"]
    modes = {"memory": ["--kafka", "none"], "kafka": ["--no-spark"], "spark": []}
    results = {}
    for mode, extra in modes.items():
        code, out = run_cli(capsys, *common, *extra, "--dump-records", str(tmp_path / f"{mode}.jsonl"),
                            "--report-dir", str(tmp_path / mode))
        assert code == 0, (mode, out)
        results[mode] = {k: v[0] for k, v in outcomes(tmp_path / mode).items()}
    assert results["memory"] == results["kafka"] == results["spark"]
    first = results["memory"]
    assert first[(0, f"{P}.stream.update-pairs")] == "passed"
    assert first[(0, "delivery.no-loss")] == "passed"
    assert first[(1, f"{P}.schema.disabled")] == "passed"  # the matrix: send_schema=false
    # `check` of each dump's first combination (send_schema=true): record and stream checks, the
    # log-only delivery checks; what needs the workload skipped.
    for mode in modes:
        lines = (tmp_path / f"{mode}.jsonl").read_text(encoding="utf-8").splitlines()
        first_combo = [ln for ln in lines if re.match(r"[a-z0-9]*c0w", json.loads(ln)["topic"])]
        assert first_combo and len(first_combo) < len(lines)
        (tmp_path / f"{mode}-c0.jsonl").write_text("\n".join(first_combo) + "\n", encoding="utf-8")
        code, out = run_cli(capsys, "check", "--protocol", P, "--input", str(tmp_path / f"{mode}-c0.jsonl"),
                            "--report-dir", str(tmp_path / f"check-{mode}"))
        assert code == 0, (mode, out)
        checked = outcomes(tmp_path / f"check-{mode}")
        for cid in ("message.json", "schema.avro-type", "dml.columns", "value.json-type", "stream.schema-before-dml",
                    "stream.update-pairs", "stream.event-numbers"):
            assert checked[(0, f"{P}.{cid}")][0] == "passed", cid
        assert checked[(0, "delivery.per-key-order")][0] == "passed"
        assert checked[(0, f"{P}.event.rows")][0] == "skipped"  # needs the workload


def test_a_value_quirk_fails_in_every_mode_and_is_reproduced(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--protocol", P, "--encoder", "mutant/enum-set-hex", "--examples", "8",
                        "--seed", "3", "--no-matrix", "--no-spark", "--report-dir", str(tmp_path))
    assert code == 1, out
    data = json.loads((tmp_path / "report.json").read_text())
    failed = {r["check"] for r in data["results"] if r["outcome"] == "failed"}
    assert f"{P}.value.enum-set" in failed
    (rp,) = [r for r in data["runs"][0]["reproductions"] if r["check"] == f"{P}.value.enum-set"]
    assert rp["command"].startswith("conformance reproduce ")


def test_a_real_binlog_gives_the_same_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--upstream embedded-mariadb`: each workload applied to MariaDB, the encoder fed what its
    binlog gives back (with the server's GTIDs), as MaxScale reads it: the same verdicts and counts
    as from the generated events (the source.* checks, judged only with a server, aside)."""
    pytest.importorskip("pymysqlreplication", reason="the upstream extra is not installed")
    from conformance.upstream import UpstreamUnavailable, open_upstream

    try:
        with open_upstream("embedded-mariadb"):
            pass
    except UpstreamUnavailable as e:
        pytest.skip(str(e))
    common = ["run", "--protocol", P, "--examples", "25", "--seed", "binlog", "--kafka", "none"]
    code, out = run_cli(capsys, *common, "--report-dir", str(tmp_path / "generated"))
    assert code == 0, out
    code, out = run_cli(capsys, *common, "--upstream", "embedded-mariadb", "--report-dir", str(tmp_path / "binlog"))
    assert code == 0, out
    gen, real = outcomes(tmp_path / "generated"), outcomes(tmp_path / "binlog")
    strip = {k: v for k, v in gen.items() if not k[1].startswith("source.")}
    assert strip == {k: v for k, v in real.items() if not k[1].startswith("source.")}
    assert real[(0, "source.log-images")][0] == "passed"
    assert real[(0, f"{P}.event.rows")][1]["passed"] > 100


# -- restarts over the embedded Kafka ----------------------------------------------------------------------

RUNS = [0]


def _run(encoder: str, faults: str | None, options: dict[str, str], shape: Any, *, shards: int = 1) -> Section:
    RUNS[0] += 1
    p = get_protocol(P)
    with EmbeddedSchemaRegistry() as reg, open_kafka("embedded://?brokers=3&partitions=3") as k:
        config = {**k.client_config(), **(FAULT_RUN_CLIENT_CONFIG if faults else {})}
        spec = RunSpec(P, encoder, f"restart-{RUNS[0]}", shape, (tuple(sorted(p.resolve_options(options).items())),),
                       partitions=3, run_id=f"ms{RUNS[0]}", kafka_config=tuple(config.items()), registry_url=reg.url,
                       flush_timeout=30.0, event_interval_s=0.004 if faults else 0.0)
        (section,) = KafkaRunner(k, RegistryClient(reg.url), faults=faults).run(spec, range(shards))
    return section


def _failed(section: Section) -> dict[str, list[str]]:
    return {t.id: [f.message for f in t.failures.values()][:3] for t in section.tally
            if t.outcome is Outcome.FAILED and t.level.value != "INFO"}


SHAPE = replace(protocol_shape(P), tables=(1, 2), transactions=(40, 40), changes_per_transaction=(3, 8),
                ddl_rate=0.05, max_rows_per_table=6)
FAIL_AFTER = 20  # messages of the first pass delivered before the failure


@pytest.fixture()
def failing_deliveries(monkeypatch: pytest.MonkeyPatch) -> None:
    """After FAIL_AFTER messages of the first pass, the first message that is not the first of its
    event fails, and so does every message after it in that pass (as librdkafka's gapless guarantee
    stops the producer): the messages before it are really in the log, the transaction it belongs
    to only partly. Deterministic, unlike a timed fault."""
    from conformance.encoders import sink as sink_mod

    real_send = sink_mod.Producing.send
    state: dict[int, list[int]] = {}  # per unit: [messages sent, event of the last one, failing]

    def send(self, event, record, partition):  # type: ignore[no-untyped-def]
        st = state.setdefault(id(self.result), [0, -1, 0])
        st[0] += 1
        if self.attempt == 0 and (st[2] or (st[0] > FAIL_AFTER and event == st[1])):
            if not st[2]:
                self.producer.flush(10)  # what was sent before the failure is in the log
            st[2] = 1
            self.result.ledger.append(sink_mod.SentMessage(
                event, record.topic, partition, record.key, record.value,
                sink_mod.fingerprint(record.topic, record.key, record.value), error="injected", attempt=self.attempt))
            self.result.delivery_errors += 1
            self.failed_events.add(event)
            return
        st[1] = event
        real_send(self, event, record, partition)

    monkeypatch.setattr(sink_mod.Producing, "send", send)
    monkeypatch.setattr(sink_mod.ReferenceSink, "restart_backoff_s", 0.0)


def _partly_delivered(section: Section) -> None:
    assert any("restarted from its checkpoint 1 time" in n for n in section.notes), section.notes


def test_a_restart_resumes_after_the_last_key_in_kafka(failing_deliveries: None) -> None:
    """read_gtid_from_kafka: the restarted encoder skips what partition 0 already holds, up to the
    last key and its event number: nothing lost, nothing twice, no pair split."""
    section = _run("reference", None, {}, SHAPE)
    _partly_delivered(section)
    assert _failed(section) == {}
    (delivery,) = [n for n in section.notes if n.startswith("delivery: ")]
    assert " 0 duplicate cop" in delivery, delivery
    for cid in ("delivery.no-loss", f"{P}.stream.update-pairs", f"{P}.stream.event-numbers"):
        assert section.tally.checks[cid].passed > 0, cid


def test_a_restart_with_duplicates_passes(failing_deliveries: None) -> None:
    """read_gtid_from_kafka=false: the restarted encoder sends the transaction it was in again,
    whole: the rows already delivered come twice (at-least-once allows it; consumers de-duplicate on
    the key), none is lost, an UPDATE's images stay together in the de-duplicated stream."""
    section = _run("reference", None, {"read_gtid_from_kafka": "false"}, SHAPE)
    _partly_delivered(section)
    assert _failed(section) == {}
    (delivery,) = [n for n in section.notes if n.startswith("delivery: ")]
    assert re.search(r" [1-9]\d* duplicate cop", delivery), delivery
    assert section.tally.checks["delivery.no-loss"].passed > 0
    assert section.tally.checks[f"{P}.stream.update-pairs"].passed > 0


def test_resuming_at_the_next_gtid_loses_the_tail_of_a_transaction(failing_deliveries: None) -> None:
    """MaxScale's own recovery (notes §6.3): it resumes at the GTID after the last key in Kafka, and
    the rest of the partly delivered transaction never reaches the log."""
    info = find_encoder("mutant/resume-at-next-gtid", P)
    assert info.faults and info.catches == "delivery.no-loss" and info.needs_broker
    section = _run(info.name, None, {}, SHAPE)
    _partly_delivered(section)
    t = section.tally.checks["delivery.no-loss"]
    assert t.outcome is Outcome.FAILED, _failed(section)
    assert next(iter(t.failures.values())).message.startswith("lost:")


@pytest.mark.parametrize("spark", [False, True], ids=["no-spark", "spark"])
def test_check_live_topics(spark: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`conformance check --kafka` on live topics the reference wrote (one per workload), and a
    bad record among them is a finding, not a traceback."""
    from confluent_kafka import Producer

    from conformance.encoders.spi import EncoderContext
    from conformance.protocols.maxscale_kafkacdc.encoder import MaxScaleKafkaCDCEncoder
    from conformance.strategies import sample_workload

    with open_kafka("embedded://?brokers=1&partitions=1") as k:
        producer = Producer(k.client_config())
        topics = []
        for shard in range(3):
            enc = MaxScaleKafkaCDCEncoder()
            enc.open(EncoderContext(get_protocol(P).resolve_options({}), topic_prefix=f"live{shard}-"))
            topics.append(f"live{shard}-kafkacdc")
            k.create_topic(topics[-1], 1)
            for ev in sample_workload("live", shard, protocol_shape(P)).events:
                for r in enc.encode(ev):
                    producer.produce(r.topic, key=r.key, value=r.value, partition=0)
        producer.flush(10)
        args = ["check", "--protocol", P, "--kafka", f"kafka://{k.bootstrap.split(',')[0]}", "--topics",
                ",".join(topics), "--report-dir", str(tmp_path / "ok"), *([] if spark else ["--no-spark"])]
        code, out = run_cli(capsys, *args)
        assert code == 0, out
        checked = outcomes(tmp_path / "ok")
        assert checked[(0, f"{P}.stream.update-pairs")][0] == "passed"
        assert checked[(0, f"{P}.dml.columns")][1]["passed"] > 30
        producer.produce(topics[0], key=b"0-1-999:1", value=b'{"event_type": "upsert"}', partition=0)
        producer.flush(10)
        args[args.index("--report-dir") + 1] = str(tmp_path / "bad")
        code, out = run_cli(capsys, *args)
        assert code == 1 and "Traceback" not in out
        assert outcomes(tmp_path / "bad")[(0, f"{P}.message.kind")][0] == "failed"


def test_maxscales_own_test_from_a_real_binlog(mariadb_upstream: Any) -> None:
    """test_kafkacdc phase 1's statements run on MariaDB; what its binlog gives back (the server's
    GTIDs) makes the same seven messages, each sequence in the range the statements took."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from helpers import encode
    from test_maxscale_kafkacdc_vectors import phase1

    from conformance.model.events import Ddl, DdlKind, Transaction, Workload

    w = phase1()
    create_db = Ddl(DdlKind.CREATE_DATABASE, w.events[0].commit_ts - 1, "", database="test")  # MaxScale's test has one
    captured = mariadb_upstream.run_workload(Workload((create_db, *w.events), w.seed))
    assert captured.truth is not None and captured.truth.complete
    positions = [e.position for e in captured.events[1:] if isinstance(e, (Ddl, Transaction)) and e.position]
    seqs = [int(p.split("-")[2]) for p in positions]
    recs = encode("reference", {}, captured.workload, protocol=P, topic_prefix="")
    msgs = [json.loads(r.value or b"") for r in recs]
    assert [m.get("event_type", "schema") for m in msgs] == [
        "schema", "insert", "insert", "insert", "update_before", "update_after", "delete"]
    got = [int(m["gtid"].split("-")[2]) if "namespace" in m else m["sequence"] for m in msgs]
    assert all(min(seqs) <= s <= max(seqs) for s in got)
    assert msgs[0]["gtid"] == positions[0] and recs[0].key == positions[0].encode()
