"""`conformance check --kafka`: live topics, bounded reads, consumer-group resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import Producer

from conformance.cli.main import main
from conformance.encoders.spi import EncoderContext
from conformance.infra.kafka import open_kafka
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder
from conformance.strategies import DEFAULT_SHAPE, sample_workload


@pytest.fixture()
def live():  # type: ignore[no-untyped-def]
    with EmbeddedSchemaRegistry() as reg, open_kafka("embedded://?brokers=1&partitions=2") as k:
        client = RegistryClient(reg.url)
        topics: set[str] = set()
        p = Producer(k.client_config())
        for shard in range(4):
            enc = TiCDCAvroEncoder()
            enc.open(EncoderContext({"enable-tidb-extension": "true"}, client, partitions=2, topic_prefix="live-"))
            for ev in sample_workload("live", shard).events:
                for r in enc.encode(ev):
                    if r.topic not in topics:
                        k.create_topic(r.topic, 2)
                        topics.add(r.topic)
                    p.produce(r.topic, key=r.key, value=r.value, partition=r.partition)
        p.flush(10)
        yield k, reg, sorted(topics), p


def check(capsys, k, reg, topics, *extra):  # type: ignore[no-untyped-def]
    code = main(["check", "--kafka", f"kafka://{k.bootstrap.split(',')[0]}", "--topics", ",".join(topics),
                 "--registry", reg.url, "--option", "enable-tidb-extension=true", *extra])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("spark", [False, True], ids=["no-spark", "spark"])
def test_clean_live_topics_pass(live, capsys, spark: bool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    k, reg, topics, _ = live
    code, out = check(capsys, k, reg, topics, *([] if spark else ["--no-spark"]),
                      "--report-json", str(tmp_path / "r.json"))
    assert code == 0, out
    data = json.loads((tmp_path / "r.json").read_text())
    n = data["runs"][0]["records"]
    assert n > 50
    res = {r["check"]: r for r in data["results"]}
    assert res["ticdc-avro.framing.magic-byte"]["counts"]["passed"] == n
    assert res["delivery.no-loss"]["outcome"] == "skipped"


def test_a_bad_live_record_is_a_finding(live, capsys) -> None:  # type: ignore[no-untyped-def]
    k, reg, topics, p = live
    p.produce(topics[0], key=b"\x00\x00\x00\x00\x01", value=b"garbage", partition=0)
    p.flush(10)
    code, out = check(capsys, k, reg, topics, "--no-spark")
    assert code == 1 and "Traceback" not in out
    assert "ticdc-avro.framing.magic-byte" in out


def test_spark_and_in_process_checks_agree_on_every_count(live, capsys, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                           monkeypatch) -> None:
    """Spark packs small topics into one task; each topic-partition is still judged as its own
    log, exactly as the in-process check judges it: same counts, N/A reasons and findings. Both
    Spark routes: whole topics per task, delivery judged there (every topic fits in a pack), and
    topic-partitions per task with their identities grouped by topic in a second stage (a pack
    target every topic exceeds: the default for these few records)."""
    from confluent_kafka import Consumer, TopicPartition

    from conformance.harness import check as check_mod
    from conformance.harness import kafka_source

    k, reg, topics, p = live
    p.produce(topics[1], key=b"\x00\x00\x00\x00\x01", value=b"garbage", partition=1)
    c = Consumer({**k.client_config(), "group.id": "replay", "enable.partition.eof": False})
    c.assign([TopicPartition(topics[0], part, 0) for part in (0, 1)])
    replayed: list = []  # type: ignore[type-arg]
    for _ in range(20):
        replayed += [m for m in c.consume(3 - len(replayed), timeout=1) if m.error() is None]
        if len(replayed) >= 3:
            break
    c.close()
    assert len(replayed) == 3
    for m in replayed:  # an at-least-once replay: the delivery analysis sees copies
        p.produce(topics[0], key=m.key(), value=m.value(), partition=m.partition())
    p.flush(10)
    routes: list[str] = []
    for name in ("_per_topic", "_per_partition"):
        real = getattr(check_mod, name)
        monkeypatch.setattr(check_mod, name, lambda *a, _real=real, _name=name, **kw: (routes.append(_name),
                                                                                          _real(*a, **kw))[1])
    results = []
    for extra, pack in ((["--no-spark"], None), ([], 10 ** 9), ([], 1)):
        if pack is not None:
            monkeypatch.setattr(kafka_source, "default_pack", lambda ranges, cores, _pack=pack: _pack)
        code, out = check(capsys, k, reg, topics, *extra, "--report-json", str(tmp_path / "r.json"))
        assert code == 1, out
        data = json.loads((tmp_path / "r.json").read_text())
        results.append((sorted((r["check"], r["outcome"], json.dumps(r["counts"], sort_keys=True),
                                sorted(f["message"] for f in r.get("failures", [])))
                               for r in data["results"]), json.dumps(data["runs"][0].get("notes"))))
    assert results[0] == results[1] == results[2]
    assert routes == ["_per_topic", "_per_partition"]
    assert any(c == "ticdc-avro.framing.magic-byte" and o == "failed" for c, o, *_ in results[0][0])
    assert "3 duplicate copies" in results[0][1]


def test_group_resumes_where_the_last_check_ended(live, capsys) -> None:  # type: ignore[no-untyped-def]
    k, reg, topics, p = live
    code, out = check(capsys, k, reg, topics, "--no-spark", "--group", "gate")
    assert code == 0 and "checked 0 records" not in out
    code, out = check(capsys, k, reg, topics, "--no-spark", "--group", "gate")
    assert code == 0 and "checked 0 records" in out


def test_empty_topics_are_an_error_in_the_report_too(live, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Nothing to check is not a pass: the exit code says 2 and so does the report (it used to be
    written before the error was added, saying pass)."""
    k, reg, _, _ = live
    k.create_topic("live-empty", 2)
    code, out = check(capsys, k, reg, ["live-empty"], "--no-spark", "--report-json", str(tmp_path / "r.json"),
                      "--report-dir", str(tmp_path / "dir"))
    assert code == 2 and "hold no records" in out
    for path in (tmp_path / "r.json", tmp_path / "dir" / "report.json"):
        data = json.loads(path.read_text())
        assert data["verdict"] == "error" and any("hold no records" in e for e in data["errors"])


def test_usage_errors(live, capsys) -> None:  # type: ignore[no-untyped-def]
    k, reg, topics, _ = live
    code, out = check(capsys, k, reg, ["no-such-topic"], "--no-spark")
    assert code == 2 and "no such topic" in out
    code = main(["check", "--kafka", "kafka://127.0.0.1:1", "--registry", reg.url])
    out = capsys.readouterr()
    assert code == 2


def _simple_stream(options: dict[str, str], partitions: int, transactions: int = 40) -> list:  # type: ignore[type-arg]
    """One history of the TiCDC Simple reference (separate workloads would each start their own
    commit-ts timeline)."""
    from conformance.encoders.spi import ManualClock
    from conformance.protocols.ticdc_simple.encoder import TiCDCSimpleEncoder

    clock = ManualClock()
    enc = TiCDCSimpleEncoder()
    enc.open(EncoderContext(options, None, clock=clock, partitions=partitions))
    shape = replace(DEFAULT_SHAPE, transactions=(transactions, transactions), tables=(3, 3))
    return [r for ev in sample_workload("live-simple", 0, shape).events
            for r in enc.encode(ev) + enc.tick(clock.follow(ev))]


@pytest.mark.parametrize("spark", [False, True], ids=["no-spark", "spark"])
def test_simple_live_topic_is_checked_per_topic(capsys, spark: bool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Simple's stream rules span partitions (DDLs and bootstraps reach all of them; with
    bootstraps to partition 0 only, other partitions resolve schemas from partition 0): the
    check reads a topic's partitions together. No registry is needed."""
    options = {"send-bootstrap-to-all-partition": "false", "send-bootstrap-in-msg-count": "5"}
    with open_kafka("embedded://?brokers=1&partitions=3") as k:
        k.create_topic("tidb_simple", 3)
        p = Producer(k.client_config())
        for r in _simple_stream(options, 3):
            p.produce(r.topic, key=r.key, value=r.value, partition=r.partition)
        p.flush(10)
        code = main(["check", "--protocol", "ticdc-simple", "--kafka", f"kafka://{k.bootstrap.split(',')[0]}",
                     "--topics", "tidb_simple", *[f"--option={k_}={v}" for k_, v in options.items()],
                     *([] if spark else ["--no-spark"]), "--report-json", str(tmp_path / "r.json")])
        out, err = capsys.readouterr()
    assert code == 0, out + err
    data = json.loads((tmp_path / "r.json").read_text())
    res = {r["check"]: r for r in data["results"]}
    assert res["ticdc-simple.consumer.schema-known"]["outcome"] == "passed"
    assert res["ticdc-simple.bootstrap.partitions"]["outcome"] == "passed"
    assert res["ticdc-simple.order.ddl-barrier"]["outcome"] == "passed"


def _failing_report(capsys, tmp_path: Path, args: list[str]) -> tuple:  # type: ignore[no-untyped-def,type-arg]
    """`conformance check ARGS`, which must fail: its record count, every check's outcome, counts
    and failure messages, and the run's notes, from its JSON report."""
    code = main(["check", *args, "--report-json", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    data = json.loads((tmp_path / "r.json").read_text())
    return (data["runs"][0]["records"],
            sorted((r["check"], r["outcome"], json.dumps(r["counts"], sort_keys=True),
                    sorted(f["message"] for f in r.get("failures", []))) for r in data["results"]),
            json.dumps(data["runs"][0].get("notes")))


def test_simple_spark_and_in_process_checks_agree_on_every_count(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A protocol checked per topic: Spark packs whole topics into tasks, each reading its topics
    and judging their delivery itself; the in-process check packs them too. Both give the same
    counts, findings and delivery notes (a garbage message in one topic, an at-least-once replay
    in another), with a topic per Spark task (these topics are above the default pack size) and
    with every topic in one task."""
    from conformance.harness import kafka_source

    stream = _simple_stream({}, 2, transactions=15)
    topics = ["simple-a", "simple-b", "simple-c"]
    with open_kafka("embedded://?brokers=1&partitions=2") as k:
        p = Producer(k.client_config())
        for topic in topics:
            k.create_topic(topic, 2)
            for r in stream:
                p.produce(topic, key=r.key, value=r.value, partition=r.partition)
        p.produce("simple-b", value=b"{not json", partition=1)
        rows = [r for r in stream if r.partition == 0 and b'"database"' in (r.value or b"")]
        for r in rows[:3]:  # row changes replayed: the delivery analysis sees copies
            p.produce("simple-c", key=r.key, value=r.value, partition=0)
        p.flush(10)
        results = []
        for extra, one_pack in ((["--no-spark"], False), ([], False), ([], True)):
            if one_pack:
                monkeypatch.setattr(kafka_source, "default_pack", lambda ranges, cores: 10 ** 9)
            results.append(_failing_report(capsys, tmp_path, ["--protocol", "ticdc-simple", "--kafka",
                                                              f"kafka://{k.bootstrap.split(',')[0]}",
                                                              "--topics", ",".join(topics), *extra]))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == 3 * len(stream) + 4
    assert any(c == "ticdc-simple.message.decodes" and o == "failed" for c, o, *_ in results[0][1]), results[0][1]
    assert "3 duplicate copies" in results[0][2]


@pytest.mark.parametrize("spark", [False, True], ids=["no-spark", "spark"])
def test_live_check_reports_progress_in_records(live, spark: bool) -> None:  # type: ignore[no-untyped-def]
    """The CLI's progress bar: the records checked so far, never going back, ending at the count."""
    from conformance.harness.check import LiveSpec, check_live_local, check_live_spark
    from conformance.harness.kafka_source import plan_ranges

    k, reg, topics, _ = live
    config = k.client_config()
    ranges = plan_ranges(config["bootstrap.servers"], topics,
                         {key: v for key, v in config.items() if key != "bootstrap.servers"})
    spec = LiveSpec("ticdc-avro", (("enable-tidb-extension", "true"),), reg.url)
    seen: list[int] = []
    if spark:
        _, n, _ = check_live_spark(spec, config, ranges, "local[2]", progress=seen.append)
    else:
        _, n, _ = check_live_local(spec, config, ranges, progress=seen.append)
    assert n == sum(r.count for r in ranges) > 50
    assert seen and seen[-1] == n
    assert seen == sorted(seen)


def test_debezium_avro_spark_and_in_process_checks_agree_on_every_count(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Debezium with the Avro converter, read live (the fast path's kinds by registry id, in
    Spark's executors too, each with its own registry client): Spark and the in-process check give
    the same counts, findings and delivery notes, with a body that does not decode in one topic and
    replayed messages in another."""
    from conformance.harness.run import workload_shape
    from conformance.protocols import get_protocol

    suite = get_protocol("debezium")
    options = dict(suite.resolve_options({"profile": "avro"}))
    with EmbeddedSchemaRegistry() as reg, open_kafka("embedded://?brokers=1&partitions=1") as k:
        client = RegistryClient(reg.url)
        p = Producer(k.client_config())
        topics: dict[str, list] = {}  # type: ignore[type-arg]
        enc = suite.reference().factory()
        enc.open(EncoderContext(options, client, topic_prefix="fc0w0-"))
        for ev in sample_workload("live-dbz", 0, workload_shape(suite, DEFAULT_SHAPE)).events:
            for r in enc.encode(ev):
                if r.topic not in topics:
                    k.create_topic(r.topic, 1)
                    topics[r.topic] = []
                topics[r.topic].append(r)
                p.produce(r.topic, key=r.key, value=r.value, partition=0)
        enc.close()
        names = sorted(topics)
        assert len(names) >= 2
        first = next(r for r in topics[names[0]] if r.value is not None)
        p.produce(names[0], key=first.key, value=first.value[:5] + b"\xff\xff\xff", partition=0)  # no datum
        for r in [r for r in topics[names[1]] if r.value is not None][:2]:
            p.produce(names[1], key=r.key, value=r.value, partition=0)  # replayed
        p.flush(10)
        results = []
        for extra in (["--no-spark"], []):
            results.append(_failing_report(capsys, tmp_path, ["--protocol", "debezium", "--kafka",
                                                              f"kafka://{k.bootstrap.split(',')[0]}",
                                                              "--topics", ",".join(names), "--registry", reg.url,
                                                              "--option", "profile=avro", *extra]))
    assert results[0] == results[1]
    assert results[0][0] == sum(len(rs) for rs in topics.values()) + 3
    failed = {c for c, o, *_ in results[0][1] if o == "failed"}
    assert failed == {"debezium.avro.framing"}, results[0][1]
    # Debezium's messages carry no commit ts: the replays are not counted as duplicates (the same
    # content can be a new version); the body that does not decode names no row.
    assert "1 message(s) name no row" in results[0][2] and "carry no commit ts" in results[0][2]
