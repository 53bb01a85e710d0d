"""Running encoders over generated workloads in tests (no sockets: in-process registry), through
the same in-memory pipeline `conformance run --kafka none` uses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from conformance.checks.results import Tally
from conformance.encoders import find_encoder
from conformance.encoders.spi import Record
from conformance.harness.check import capture_tally, check_log, unnumbered
from conformance.harness.encode import MemoryLog
from conformance.harness.run import RunPlan
from conformance.harness.runners import MemoryRunner
from conformance.harness.stages import ComboResult, HangLatch, RunSpec, encode_unit, new_tally
from conformance.infra.inprocess import InProcessRegistry
from conformance.model.events import Workload
from conformance.protocols import get_protocol
from conformance.strategies import DEFAULT_SHAPE, Shape

_counter = [0]


def cli(capsys: Any, *args: str) -> tuple[int, str]:
    """`conformance ARGS` in this process: its exit code and everything it printed."""
    from conformance.cli.main import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


def report_results(path: Path) -> dict[str, dict[str, Any]]:
    """The results of a report directory's report.json, by check id."""
    return {r["check"]: r for r in json.loads((path / "report.json").read_text())["results"]}


def protocol_shape(protocol: str, shape: Shape = DEFAULT_SHAPE, *, encoder: str | Any = "reference") -> Shape:
    """The shape of a run's workloads for `encoder` of `protocol` (`RunPlan.run_shape`), with
    what the caller changed in `shape` (a mutant's shape) kept."""
    return _plan(protocol, encoder, shape=shape).run_shape()


def _plan(protocol: str, encoder: str | Any, options: Mapping[str, str] | None = None, seed: Any = 0, *,
          shape: Shape = DEFAULT_SHAPE, **plan_fields: Any) -> RunPlan:
    """The plan `conformance run` would make: one combination of `options`, resolved; `encoder`
    by name or an EncoderInfo; what `shape` changes from the default as the plan's overrides
    (the protocol's dialect and kinds replace the default ones, the changes stay)."""
    p = get_protocol(protocol)
    info = find_encoder(encoder, protocol) if isinstance(encoder, str) else encoder
    changed = {f.name: getattr(shape, f.name) for f in fields(Shape)
               if f.name not in ("dialect", "evolutions") and getattr(shape, f.name) != getattr(DEFAULT_SHAPE, f.name)}
    return RunPlan(p, info, [p.resolve_options(dict(options or {}))], 0, seed,
                   shape=replace(DEFAULT_SHAPE, evolutions=shape.evolutions, dialect=shape.dialect),
                   shape_overrides=changed, **plan_fields)


def _spec(protocol: str, encoder: str | Any, options: Mapping[str, str] | None, seed: Any, shape: Shape,
          timeout: float) -> RunSpec:
    _counter[0] += 1
    return _plan(protocol, encoder, options, seed, shape=shape, encoder_timeout=timeout).spec(run_id=f"t{_counter[0]}")


@dataclass(frozen=True, slots=True)
class _OnePrefix(RunSpec):
    """A spec whose units write under one topic prefix the test chose."""

    topic_prefix: str = ""

    def prefix(self, combo: int, shard: int) -> str:
        return self.topic_prefix


def run_encoder(encoder: str, options: Mapping[str, str] | None = None, *, workloads: int = 20, seed: Any = 0,
                shape: Shape = DEFAULT_SHAPE, stop_when_failing: str | None = None, timeout: float = 10.0,
                registry: Any = None, protocol: str = "ticdc-avro") -> Tally:
    spec = _spec(protocol, encoder, options, seed, shape, timeout)
    result = ComboResult(new_tally(get_protocol(protocol)))
    runner = MemoryRunner(registry if registry is not None else InProcessRegistry())
    latch = HangLatch()
    for shard in range(workloads):
        runner.run_unit(spec, 0, shard, result, latch)
        if latch.shard is not None:
            break
        if stop_when_failing and stop_when_failing in result.tally.failed_ids():
            break
    return result.tally


def run_workloads(encoder: str, workloads: list[Workload], options: Mapping[str, str] | None = None,
                  protocol: str = "ticdc-avro") -> Tally:
    spec = _spec(protocol, encoder, options, 0, DEFAULT_SHAPE, 10.0)
    result = ComboResult(new_tally(get_protocol(protocol)))
    runner = MemoryRunner(InProcessRegistry())
    latch = HangLatch()
    for i, w in enumerate(workloads):
        runner.run_unit(spec, 0, i, result, latch, workload=w)
    return result.tally


def shape_with(**overrides: Any) -> Shape:
    return replace(DEFAULT_SHAPE, **overrides)


def problems(tally: Tally) -> dict[str, list[str]]:
    """Failed or errored checks with their first messages (for assertion output)."""
    out = {}
    for t in tally:
        if t.failed or t.errored:
            out[t.id] = [f.message for f in list(t.failures.values())[:3]] + t.errors[:1]
    return out


def docker_problem() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
        return None
    except Exception as e:  # noqa: BLE001 - any failure means: no usable engine here
        return f"no Docker engine answers ({type(e).__name__}); container tests run in the GitHub workflow"


def encode(encoder: str, options: Mapping[str, str], workload: Workload, *, protocol: str,
           registry: Any = None, topic_prefix: str | None = None, timeout: float = 10.0) -> list[Record]:
    """The records an encoder makes for one workload, as they sit in the in-memory log (with
    their partitions and offsets), in the order they were written: the run's encode stage
    (`stages.encode_unit`), its calls bounded by `timeout`."""
    spec = _spec(protocol, encoder, options, 0, DEFAULT_SHAPE, timeout)
    prefix = f"t{_counter[0]}-" if topic_prefix is None else topic_prefix
    one = _OnePrefix(**{f.name: getattr(spec, f.name) for f in fields(RunSpec)}, topic_prefix=prefix)
    log = MemoryLog()
    encode_unit(one, 0, 0, log, registry if registry is not None else InProcessRegistry(), HangLatch(),
                workload=workload)
    return [r.record() for r in log.records()]


def check_capture(records: Iterable[Record], options: Mapping[str, str] | None = None, *, protocol: str,
                  partitions: int | None = None, registry: Any = None, complete: bool = False) -> Tally:
    """Records checked as `conformance check` checks a capture: no workload, only the log
    (`complete`: as `check --complete`, each partition to its end)."""
    p = get_protocol(protocol)
    tally = capture_tally(p, "captured records")
    check_log(p, p.resolve_options(dict(options or {})), registry, unnumbered(records), tally, partitions=partitions,
              complete=complete)
    return tally




def retention_run(options: tuple[tuple[str, str], ...], shape: Shape, *, run_id: str) -> tuple[Any, list[str]]:
    """One TiCDC Avro unit produced to the embedded Kafka (one partition per topic), whose five
    oldest offsets of its first topic retention then removes, read back and judged: the report
    section and the unit's topics."""
    from conformance.encoders.sink import KafkaTransport
    from conformance.harness.runners import read_topics
    from conformance.harness.stages import encode_unit, judge_unit, sections
    from conformance.infra.kafka import open_kafka
    from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient

    with EmbeddedSchemaRegistry() as reg, open_kafka("embedded://?brokers=1&partitions=1") as k, \
            RegistryClient(reg.url) as registry:
        spec = RunSpec("ticdc-avro", "ticdc-avro/reference", "retention", shape, (options,), partitions=1,
                       run_id=run_id, kafka_config=tuple(k.client_config().items()), registry_url=reg.url)
        unit = encode_unit(spec, 0, 0, KafkaTransport(dict(spec.kafka_config)), registry, HangLatch(),
                           prepare=lambda ts: [k.create_topic(t, 1) for t in ts])
        assert unit.records > 10
        k.mock.delete_records(unit.topics[0], 0, 5)  # what retention would do
        logs, lows = read_topics(k, unit.topics, dict(spec.kafka_config))
        result = ComboResult(new_tally(get_protocol("ticdc-avro")))
        result.add_unit(unit)
        for topic in judge_unit(spec, unit, logs, lows, registry):
            result.add_topic(topic)
        (section,) = sections(spec, {0: result})
    return section, unit.topics


def consume_all(cluster: Any, topics: list[str], *, timeout: float = 30.0) -> list[Any]:
    """Every record of the topics up to their high watermarks, through the suite's one reader."""
    from conformance.harness.runners import read_topics

    logs, _ = read_topics(cluster, topics, cluster.client_config(), timeout=timeout)
    return [r for t in topics for r in logs.get(t, [])]


def log_ranges(cluster: Any, topics: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
    """(low, high) watermarks of every partition of the topics."""
    from conformance.harness.kafka_source import plan_ranges

    config = {k: v for k, v in cluster.client_config().items() if k != "bootstrap.servers"}
    return {(r.topic, r.partition): (r.low, r.high) for r in plan_ranges(cluster.bootstrap, topics, config)}


def run_info(info: Any, workloads: list[Workload], options: Mapping[str, str] | None = None, *, protocol: str,
             registry: Any = None, timeout: float = 20.0) -> Tally:
    """Like run_workloads, for an EncoderInfo (e.g. a subprocess encoder): every workload in
    turn, the run going on after a failure, as the harness goes on with the next shard."""
    spec = _spec(protocol, info, options, 0, DEFAULT_SHAPE, timeout)
    result = ComboResult(new_tally(get_protocol(protocol)))
    runner = MemoryRunner(registry if registry is not None else InProcessRegistry())
    for i, w in enumerate(workloads):
        # A fresh latch per workload: after a hang the next shard still runs (a subprocess
        # encoder is restarted per shard, and the adapter killed the hung one).
        runner.run_unit(spec, 0, i, result, HangLatch(), workload=w, info=info)
    return result.tally


def counts(tally: Tally) -> dict[str, tuple[Any, ...]]:
    """Per-check outcome counts: what two runs must agree on to give the same verdicts."""
    return {t.id: (t.outcome.value, t.passed, t.failed, t.errored, t.not_applicable, t.skipped) for t in tally}


def positional(text: str) -> str:
    """A number's text without exponent, and without trailing fraction zeros."""
    import decimal

    out = format(decimal.Decimal(text), "f")
    return out.rstrip("0").rstrip(".") if "." in out else out


def float32_texts_near(x: float) -> list[str]:
    """Texts of the float32 x at every rounding (too short, exact, too long), positional at any
    magnitude, their last digit moved by one, a fixed-point text of each precision, and the
    float32's own text (Go's shortest 'f')."""
    from conformance.model.values import go_format_float

    out = [go_format_float(x, 32, "f")]
    for q in range(0, 11):
        out.append(f"{x:.{q}f}")
        text = positional(f"{x:.{q}e}")
        out.append(text)
        if text[-1] not in "09":
            out.append(text[:-1] + str(int(text[-1]) + 1))
            out.append(text[:-1] + str(int(text[-1]) - 1))
    return out
