"""Running encoders over generated workloads in tests (no sockets: in-process registry)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from conformance.checks.results import Tally
from conformance.encoders import find_encoder
from conformance.harness.local import Guard, make_tally, run_workload
from conformance.infra.inprocess import InProcessRegistry
from conformance.model.events import Workload
from conformance.protocols import get_protocol
from conformance.strategies import DEFAULT_SHAPE, Shape, sample_workload

_counter = [0]


def run_encoder(encoder: str, options: Mapping[str, str] | None = None, *, workloads: int = 20, seed: Any = 0,
                shape: Shape = DEFAULT_SHAPE, stop_when_failing: str | None = None, timeout: float = 10.0,
                registry: Any = None, protocol: str = "ticdc-avro") -> Tally:
    p = get_protocol(protocol)
    info = find_encoder(encoder, protocol)
    opts = p.resolve_options(dict(options or {}))
    tally = make_tally(p)
    reg = registry if registry is not None else InProcessRegistry()
    guard = Guard(timeout)
    try:
        for shard in range(workloads):
            w = sample_workload(seed, shard, shape)
            _counter[0] += 1
            run_workload(p, info, opts, reg, w, tally, topic_prefix=f"t{_counter[0]}-", guard=guard)
            if guard.hung:
                break
            if stop_when_failing and stop_when_failing in tally.failed_ids():
                break
    finally:
        guard.close()
    return tally


def run_workloads(encoder: str, workloads: list[Workload], options: Mapping[str, str] | None = None,
                  protocol: str = "ticdc-avro") -> Tally:
    p = get_protocol(protocol)
    info = find_encoder(encoder, protocol)
    opts = p.resolve_options(dict(options or {}))
    tally = make_tally(p)
    reg = InProcessRegistry()
    guard = Guard(10.0)
    try:
        for w in workloads:
            _counter[0] += 1
            run_workload(p, info, opts, reg, w, tally, topic_prefix=f"t{_counter[0]}-", guard=guard)
    finally:
        guard.close()
    return tally


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


def encode(encoder: str, options: Mapping[str, str], workload: Workload, *, protocol: str) -> list[Any]:
    """The records an encoder makes for one workload, with the offsets a log would give them."""
    from conformance.harness.local import assign_offsets

    p = get_protocol(protocol)
    info = find_encoder(encoder, protocol)
    guard = Guard(10.0)
    try:
        _counter[0] += 1
        res = run_workload(p, info, p.resolve_options(dict(options)), InProcessRegistry(), workload, make_tally(p),
                           topic_prefix=f"t{_counter[0]}-", guard=guard, keep_records=True)
    finally:
        guard.close()
    return assign_offsets(res.dumped)


def check_capture(records: list[Any], options: Mapping[str, str] | None = None, *, protocol: str,
                  partitions: int | None = None) -> Tally:
    """Records checked as `conformance check` checks a capture: no workload, only the log."""
    from conformance.checks.registry import Location

    p = get_protocol(protocol)
    tally = make_tally(p)
    checker = p.checker(p.resolve_options(dict(options or {})), None, tally,  # type: ignore[attr-defined]
                        with_source=False, partitions=partitions)
    for r in records:
        checker.check_record(r, Location(topic=r.topic, partition=r.partition, offset=r.offset))
    checker.finish()
    return tally


def run_info(info: Any, workloads: list[Workload], options: Mapping[str, str] | None = None, *, protocol: str,
             registry: Any = None, timeout: float = 20.0) -> Tally:
    """Like run_workloads, for an EncoderInfo (e.g. a subprocess encoder): every workload in
    turn, the run going on after a failure, as the harness goes on with the next shard."""
    p = get_protocol(protocol)
    opts = p.resolve_options(dict(options or {}))
    tally = make_tally(p)
    reg = registry if registry is not None else InProcessRegistry()
    guard = Guard(timeout)
    try:
        for w in workloads:
            _counter[0] += 1
            run_workload(p, info, opts, reg, w, tally, topic_prefix=f"t{_counter[0]}-", guard=guard)
    finally:
        guard.close()
    return tally


def counts(tally: Tally) -> dict[str, tuple[Any, ...]]:
    """Per-check outcome counts: what two runs must agree on to give the same verdicts."""
    return {t.id: (t.outcome.value, t.passed, t.failed, t.errored, t.not_applicable, t.skipped) for t in tally}
