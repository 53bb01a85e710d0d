"""Delivery without the workload: captured topics (`check --input`) and live topics (`check
--kafka`) are judged on what the log alone can tell (commit-ts order per partition, per-key
order, one partition per key); loss and strays stay skipped, saying why. Reference captures
pass; captures corrupted the way a broken sink would write them fail with the anomaly it makes.
And, with the workload, rows that retention removed make `delivery.no-loss` not-applicable for
their topic, with the count, never a guessed pass."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from conformance.checks import Outcome
from conformance.cli.main import main
from conformance.encoders.spi import EncoderContext
from conformance.infra.kafka import open_kafka
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient, open_registry
from conformance.protocols import get_protocol
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder
from conformance.strategies import DEFAULT_SHAPE, sample_workload

EXT = ["--option", "enable-tidb-extension=true"]
LOG_ONLY = ("delivery.commit-ts-order", "delivery.per-key-order", "delivery.one-partition-per-key")
NEEDS_SOURCE = ("delivery.no-loss", "delivery.no-strays", "infra.broker-acks")
# Small tables, so that keys (and, for Simple, tables) get several versions in one partition.
SHAPE_ARGS = ["--examples", "6", "--no-matrix", "--no-spark", "--kafka", "none"]


# -- captures ---------------------------------------------------------------------------------------

class Capture:
    """A reference run's records.jsonl and registry dump, and the protocol's view of them."""

    def __init__(self, protocol: str, options: list[str], records: Path) -> None:
        self.protocol = protocol
        self.options = options
        self.records = records
        self.registry = records.with_name(records.stem + ".registry.json")

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.records.read_text().splitlines() if line.strip()]

    def identities(self, lines: list[dict[str, Any]]) -> list[tuple[Any, Any, int | None] | None]:
        """(entity, match, commit ts) of every line, as the protocol identifies it (in file order)."""
        suite = get_protocol(self.protocol)
        opts = suite.resolve_options(dict(o.split("=", 1) for o in self.options[1::2]))
        with open_registry(str(self.registry)) if suite.capabilities.needs_registry else _no_registry() as reg:
            identify = suite.identifier(opts, reg)
            return [identify(r["topic"], _b64(r["key"]), _b64(r["value"])) for r in lines]

    def write(self, lines: list[dict[str, Any]], path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        return path


class _no_registry:  # noqa: N801 - a null context manager with a name that reads well above
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _b64(v: str | None) -> bytes | None:
    return None if v is None else base64.b64decode(v)


def _capture(tmp_path_factory: pytest.TempPathFactory, protocol: str, options: list[str], seed: str) -> Capture:
    d = tmp_path_factory.mktemp(f"capture-{protocol}")
    rec = d / "records.jsonl"
    code = main(["run", "--protocol", protocol, "--seed", seed, *SHAPE_ARGS, *options, "--report-dir", str(d / "rep"),
                 "--dump-records", str(rec)])
    assert code == 0
    return Capture(protocol, options, rec)


@pytest.fixture(scope="module")
def avro(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return _capture(tmp_path_factory, "ticdc-avro", EXT, "11")


@pytest.fixture(scope="module")
def simple(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return _capture(tmp_path_factory, "ticdc-simple", [], "11")


@pytest.fixture(scope="module")
def avro_no_ts(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return _capture(tmp_path_factory, "ticdc-avro", ["--option", "enable-tidb-extension=false"], "11")


def check(capsys: pytest.CaptureFixture[str], cap: Capture, records: Path, tmp_path: Path
          ) -> tuple[int, dict[str, dict[str, Any]], list[str], str]:
    report = tmp_path / "check.json"
    registry = ["--registry", str(cap.registry)] if cap.protocol == "ticdc-avro" else []
    code = main(["check", "--protocol", cap.protocol, "--input", str(records), *registry, *cap.options,
                 "--report-json", str(report)])
    out, err = capsys.readouterr()
    data = json.loads(report.read_text())
    return code, {r["check"]: r for r in data["results"]}, data["runs"][0]["notes"], out + err


def timed_partition(cap: Capture, lines: list[dict[str, Any]]) -> tuple[str, int]:
    """The (topic, partition) with the most row messages of an entity that has several commit
    ts there: reversing it must put some entity back in commit ts."""
    per: dict[tuple[str, int], dict[Any, set[int]]] = defaultdict(lambda: defaultdict(set))
    for r, ident in zip(lines, cap.identities(lines), strict=True):
        if ident is not None and ident[2] is not None:
            per[(r["topic"], r["partition"])][ident[0]].add(ident[2])
    best = max(per, key=lambda tp: max(len(ts) for ts in per[tp].values()))
    assert max(len(ts) for ts in per[best].values()) >= 2, "the capture has no entity with two versions"
    return best


def reverse_partition(lines: list[dict[str, Any]], tp: tuple[str, int]) -> list[dict[str, Any]]:
    """The partition's records in reverse order, under the same offsets (what a sink that sends
    a batch backwards writes)."""
    at = [i for i, r in enumerate(lines) if (r["topic"], r["partition"]) == tp]
    out = list(lines)
    for i, j in zip(at, reversed(at), strict=True):
        out[i] = {**lines[j], "offset": lines[i]["offset"]}
    return out


def move_later_message(cap: Capture, lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """An entity's last row message moved to another partition of its topic (what a sink that
    scatters a key's updates writes); returns the lines and the topic."""
    idents = cap.identities(lines)
    by_entity: dict[tuple[str, Any], list[int]] = defaultdict(list)
    for i, (r, ident) in enumerate(zip(lines, idents, strict=True)):
        if ident is not None and ident[0] is not None:
            by_entity[(r["topic"], ident[0])].append(i)
    (topic, _), at = max(by_entity.items(), key=lambda kv: len(kv[1]))
    assert len(at) >= 2
    moved = lines[at[-1]]
    other = (moved["partition"] + 1) % 3
    end = max((r["offset"] for r in lines if (r["topic"], r["partition"]) == (topic, other)), default=-1)
    out = [r for i, r in enumerate(lines) if i != at[-1]]
    out.append({**moved, "partition": other, "offset": end + 1})
    return out, topic


def replay_tail(cap: Capture, lines: list[dict[str, Any]], n: int) -> tuple[list[dict[str, Any]], int]:
    """The last `n` row messages (with a commit ts) of the partition with the most of them,
    written again after it (a sink resuming from its checkpoint): duplicates, which
    at-least-once allows. Returns the lines and how many were replayed."""
    timed: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r, ident in zip(lines, cap.identities(lines), strict=True):
        if ident is not None and ident[2] is not None:
            timed[(r["topic"], r["partition"])].append(r)
    tp = max(timed, key=lambda k: len(timed[k]))
    rows = timed[tp][-n:]
    end = max(r["offset"] for r in lines if (r["topic"], r["partition"]) == tp)
    return lines + [{**r, "offset": end + 1 + i} for i, r in enumerate(rows)], len(rows)


def outcome(res: dict[str, dict[str, Any]], cid: str) -> str:
    return str(res[cid]["outcome"])


# -- reference captures pass -----------------------------------------------------------------------

@pytest.mark.parametrize("which", ["avro", "simple"])
def test_reference_capture_passes_the_log_only_checks(which: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cap: Capture = request.getfixturevalue(which)
    code, res, notes, out = check(capsys, cap, cap.records, tmp_path)
    assert code == 0, out
    for cid in LOG_ONLY:
        assert outcome(res, cid) == "passed", (cid, res[cid])
        assert res[cid]["counts"]["passed"] >= 1
    for cid in NEEDS_SOURCE:  # said, never guessed
        assert outcome(res, cid) == "skipped" and "workload" in res[cid]["skipped"]
    assert any("delivery from the log alone" in n and "0 duplicate copies" in n for n in notes), notes


# -- corrupted captures fail ------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["avro", "simple"])
def test_a_reversed_partition_fails_commit_ts_and_per_key_order(which: str, request: pytest.FixtureRequest,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cap: Capture = request.getfixturevalue(which)
    lines = cap.lines()
    tp = timed_partition(cap, lines)
    bad = cap.write(reverse_partition(lines, tp), tmp_path / "reversed.jsonl")
    code, res, _, out = check(capsys, cap, bad, tmp_path)
    assert code == 1 and "Traceback" not in out
    for cid, anomaly in (("delivery.commit-ts-order", "commit-ts-regression"),
                         ("delivery.per-key-order", "reordered-within-key")):
        assert outcome(res, cid) == "failed", (cid, res[cid])
        f = res[cid]["failures"][0]
        assert f["message"].startswith(anomaly) and f["actor"] == "encoder"
        assert (f["location"]["topic"], f["location"]["partition"]) == tp
    assert outcome(res, "delivery.one-partition-per-key") == "passed"


@pytest.mark.parametrize("which", ["avro", "simple", "avro_no_ts"])
def test_a_key_moved_to_another_partition_fails_one_partition_per_key(which: str, request: pytest.FixtureRequest,
                                                                      tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cap: Capture = request.getfixturevalue(which)
    lines, topic = move_later_message(cap, cap.lines())
    bad = cap.write(lines, tmp_path / "moved.jsonl")
    code, res, _, out = check(capsys, cap, bad, tmp_path)
    assert code == 1 and "Traceback" not in out
    t = res["delivery.one-partition-per-key"]
    assert t["outcome"] == "failed" and t["counts"]["failed"] == 1
    f = t["failures"][0]
    assert f["message"].startswith("key-in-several-partitions: seen in") and f["location"]["topic"] == topic


@pytest.mark.parametrize("which", ["avro", "simple"])
def test_a_replayed_tail_is_duplicates_not_a_reorder(which: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cap: Capture = request.getfixturevalue(which)
    lines, n = replay_tail(cap, cap.lines(), 3)
    assert n >= 2
    code, res, notes, out = check(capsys, cap, cap.write(lines, tmp_path / "replayed.jsonl"), tmp_path)
    for cid in LOG_ONLY:
        assert outcome(res, cid) == "passed", (cid, res[cid])
    assert any(f"{n} duplicate copies (at-least-once replays" in note for note in notes), notes
    assert code == 0, out


def test_without_commit_ts_order_is_not_decided_and_says_why(avro_no_ts: Capture, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    lines = avro_no_ts.lines()
    tp = Counter((r["topic"], r["partition"]) for r in lines).most_common(1)[0][0]
    bad = avro_no_ts.write(reverse_partition(lines, tp), tmp_path / "reversed.jsonl")
    for records in (avro_no_ts.records, bad):
        code, res, notes, out = check(capsys, avro_no_ts, records, tmp_path)
        assert code == 0, out  # nothing the log alone can decide was broken
        for cid in ("delivery.commit-ts-order", "delivery.per-key-order"):
            assert outcome(res, cid) == "not-applicable"
            assert any("no commit ts" in r for r in res[cid]["not_applicable_reasons"]), res[cid]
        assert outcome(res, "delivery.one-partition-per-key") == "passed"
        assert any("carry no commit ts" in n for n in notes), notes


# -- live topics (check --kafka) ---------------------------------------------------------------------

def _scatter(records: list[Any]) -> list[Any]:
    """The key with the most messages in one topic: its last message to the other partition."""
    per_key = Counter((r.topic, r.key) for r in records if r.key is not None and r.value is not None)
    (topic, key), n = per_key.most_common(1)[0]
    assert n >= 2
    last = max(i for i, r in enumerate(records) if (r.topic, r.key) == (topic, key))
    return [replace(r, partition=1 - r.partition) if i == last else r for i, r in enumerate(records)]


def _reverse(records: list[Any]) -> list[Any]:
    by_tp: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for r in records:
        by_tp[(r.topic, r.partition)].append(r)
    return [r for rs in by_tp.values() for r in reversed(rs)]


LIVE: dict[str, Callable[[list[Any]], list[Any]]] = {"ok-": list, "rev-": _reverse, "scat-": _scatter}


@pytest.fixture(scope="module")
def live() -> Any:
    """One workload's records (one commit-ts timeline) under three prefixes: as encoded, each
    partition reversed, and one key's later message moved to the other partition."""
    shape = replace(DEFAULT_SHAPE, transactions=(60, 60), tables=(2, 2), max_rows_per_table=4)
    with EmbeddedSchemaRegistry() as reg, open_kafka("embedded://?brokers=1&partitions=2") as k:
        client = RegistryClient(reg.url)
        p = Producer(k.client_config())
        topics: dict[str, list[str]] = {}
        for prefix, corrupt in LIVE.items():
            enc = TiCDCAvroEncoder()
            enc.open(EncoderContext({"enable-tidb-extension": "true"}, client, partitions=2, topic_prefix=prefix))
            records = [r for ev in sample_workload("live-delivery", 0, shape).events for r in enc.encode(ev)]
            topics[prefix] = sorted({r.topic for r in records})
            for t in topics[prefix]:
                k.create_topic(t, 2)
            for r in corrupt(records):
                p.produce(r.topic, key=r.key, value=r.value, partition=r.partition)
        p.flush(10)
        yield k, reg, topics


def check_live(capsys: pytest.CaptureFixture[str], k: Any, reg: Any, topics: list[str], tmp_path: Path,
               *extra: str) -> tuple[int, dict[str, dict[str, Any]], list[str], str]:
    report = tmp_path / "live.json"
    code = main(["check", "--kafka", f"kafka://{k.bootstrap.split(',')[0]}", "--topics", ",".join(topics),
                 "--registry", reg.url, *EXT, "--report-json", str(report), *extra])
    out, err = capsys.readouterr()
    data = json.loads(report.read_text())
    return code, {r["check"]: r for r in data["results"]}, data["runs"][0]["notes"], out + err


SPARK = pytest.mark.parametrize("spark", [False, True], ids=["no-spark", "spark"])


@SPARK
def test_live_topics_are_judged_for_delivery(live: Any, spark: bool, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Avro is checked per topic-partition; its delivery is judged per topic all the same (on
    Spark, by a second job over the messages' identities), so a key in two partitions is seen."""
    k, reg, topics = live
    mode = [] if spark else ["--no-spark"]
    code, res, notes, out = check_live(capsys, k, reg, topics["ok-"], tmp_path, *mode)
    assert code == 0, out
    for cid in LOG_ONLY:
        assert outcome(res, cid) == "passed" and res[cid]["counts"]["failed"] == 0, (cid, res[cid])
    for cid in NEEDS_SOURCE:
        assert outcome(res, cid) == "skipped"
    assert any("delivery from the log alone" in n for n in notes), notes

    code, res, _, out = check_live(capsys, k, reg, topics["rev-"] + topics["scat-"], tmp_path, *mode)
    assert code == 1 and "Traceback" not in out
    for cid in LOG_ONLY:
        assert outcome(res, cid) == "failed", (cid, res[cid])
    assert {f["location"]["topic"][:4] for f in res["delivery.commit-ts-order"]["failures"]} == {"rev-"}
    scattered = res["delivery.one-partition-per-key"]
    assert scattered["counts"]["failed"] == 1 and scattered["failures"][0]["location"]["topic"].startswith("scat-")


def test_live_topic_read_from_above_offset_zero_says_so(live: Any, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.harness.kafka_source import plan_ranges

    k, reg, topics = live
    topic = topics["ok-"][0]
    rest = {key: v for key, v in k.client_config().items() if key != "bootstrap.servers"}
    part = max(plan_ranges(k.bootstrap, [topic], rest), key=lambda r: r.high).partition
    k.mock.delete_records(topic, part, 2)  # what retention does
    code, res, notes, out = check_live(capsys, k, reg, [topic], tmp_path, "--no-spark")
    assert code == 0, out
    assert outcome(res, "delivery.commit-ts-order") == "passed"
    assert any(f"{topic}[{part}] from offset 2" in n and "cannot be told from a reorder" in n for n in notes), notes


def test_simple_live_topic_delivery(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Simple is checked per topic: its delivery too, in the same task."""
    from conformance.encoders.spi import ManualClock
    from conformance.protocols.ticdc_simple.encoder import TiCDCSimpleEncoder

    with open_kafka("embedded://?brokers=1&partitions=3") as k:
        p = Producer(k.client_config())
        for topic in ("ok_simple", "rev_simple"):
            k.create_topic(topic, 3)
            clock = ManualClock()
            enc = TiCDCSimpleEncoder()
            enc.open(EncoderContext({"topic": topic}, None, clock=clock, partitions=3))
            records = [r for ev in sample_workload("live-simple", 0, replace(DEFAULT_SHAPE, transactions=(40, 40),
                                                                              tables=(2, 2))).events
                       for r in enc.encode(ev) + enc.tick(clock.follow(ev))]
            for r in (_reverse_rows(records) if topic.startswith("rev") else records):
                p.produce(r.topic, key=r.key, value=r.value, partition=r.partition)
        p.flush(10)
        for topic, expected in (("ok_simple", "passed"), ("rev_simple", "failed")):
            report = tmp_path / f"{topic}.json"
            main(["check", "--protocol", "ticdc-simple", "--kafka", f"kafka://{k.bootstrap.split(',')[0]}",
                  "--topics", topic, "--option", f"topic={topic}", "--no-spark", "--report-json", str(report)])
            capsys.readouterr()
            res = {r["check"]: r for r in json.loads(report.read_text())["results"]}
            assert outcome(res, "delivery.commit-ts-order") == expected, res["delivery.commit-ts-order"]
            assert outcome(res, "delivery.one-partition-per-key") == "passed"


def _reverse_rows(records: list[Any]) -> list[Any]:
    """Each partition's row messages in reverse order, control messages where they were (so
    that every row's schema is still announced before it)."""
    by_part: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if json.loads(r.value).get("type") in ("INSERT", "UPDATE", "DELETE"):
            by_part[r.partition].append(i)
    out = list(records)
    for at in by_part.values():
        for i, j in zip(at, reversed(at), strict=True):
            out[i] = records[j]
    return out


# -- with the workload: unknown rows are not a pass (G3) ---------------------------------------------

def test_retention_makes_no_loss_not_applicable_with_the_count() -> None:
    """Offsets 0-4 of a topic's only partition deleted (what retention does): that topic's
    no-loss says how many rows it cannot judge and why; the broker's finding stays INFO."""
    from helpers import retention_run

    shape = replace(DEFAULT_SHAPE, tables=(1, 2), transactions=(120, 120), ddl_rate=0.02, max_rows_per_table=4)
    options = tuple(sorted(get_protocol("ticdc-avro").resolve_options({"enable-tidb-extension": "true"}).items()))
    section, topics = retention_run(options, shape, run_id="retn")
    no_loss = section.tally.checks["delivery.no-loss"]
    reasons = [r for r in no_loss.na_reasons if r.startswith(f"{topics[0]}: ")]
    assert len(reasons) == 1, dict(no_loss.na_reasons)
    m = re.search(r": (\d+) of (\d+) row change\(s\) unknown \((\d+) because retention removed offsets 0-4 of "
                  r"partition 0\); not judged", reasons[0])
    assert m is not None, reasons[0]
    assert int(m.group(1)) == int(m.group(3)) >= 1 and int(m.group(2)) >= int(m.group(1))
    assert no_loss.failed == 0 and no_loss.passed == len(topics) - 1  # the other topics are judged
    broker = section.tally.checks["infra.broker-acks"]
    assert broker.outcome is Outcome.FAILED and broker.level.value == "INFO"
    assert section.verdict() == "pass"
    # the JSON report carries the reason
    from conformance.reporting.model import Report

    rep = Report("run", sections=[section]).to_json()
    (r,) = [x for x in rep["results"] if x["check"] == "delivery.no-loss"]
    assert any("retention removed offsets 0-4" in reason for reason in r["not_applicable_reasons"])
