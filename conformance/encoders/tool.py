"""Whole CDC tools as encoders (black-box mode).

A tool reads the database's change log and hands over Kafka records on its own; the suite does
not call it per event. Its adapter (`ToolAdapter`) is started once per run and worker (a JVM, a
process), then, per workload, drives the upstream itself: it prepares what the tool needs before
the first statement (a replication slot, a position), applies the workload through the upstream,
waits until the tool has caught up (a bound: a tool that never catches up is `encoder.responsive`
failed, with its log tail) and returns what the tool handed over, grouped by source event.

The harness then runs those records through the same pipeline as any encoder's (`ReplayEncoder`):
the sink and Kafka, the record, event and stream checks, delivery against the source truth.
Topics get the run's own prefix, as a topic-routing transform would, so that runs never collide.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..model.events import Event, Workload
from .spi import EncoderContext, EncoderError, EncoderHung, Record


class ToolFailed(EncoderError):
    """The tool stopped or refused the workload; `evidence` is the tail of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail

    @property
    def evidence(self) -> str | None:
        return self.log_tail or None


class ToolHung(EncoderHung):
    """The tool did not catch up within its bound; `evidence` is the tail of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail

    @property
    def evidence(self) -> str | None:
        return self.log_tail or None


@dataclass(slots=True)
class ToolRun:
    """One workload through the tool: what the upstream captured (the source truth), the tool's
    records per event of the captured workload (same length as its events), and the problem
    that stopped the tool part way, if any (records before it stay)."""

    captured: Any  # upstream.base.Captured
    batches: list[list[Record]]
    problem: EncoderError | None = None
    seconds: dict[str, float] = field(default_factory=dict)


class ToolAdapter(Protocol):
    def start(self, upstream: Any, options: Mapping[str, str]) -> None:
        """Start what lives for the whole run (e.g. a JVM). Idempotent."""

    def run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float) -> ToolRun:
        """Apply `workload` through `upstream` while the tool captures it; wait for the tool."""

    def stop(self) -> None:
        """Stop what `start` started. Idempotent."""


class ReplayEncoder:
    """Hands the harness, event by event, what the tool handed over for that event; raises the
    tool's problem at the first event it left without records."""

    def __init__(self, run: ToolRun, protocol: str) -> None:
        self.protocol = protocol
        self.run = run
        self.ctx: EncoderContext | None = None
        self.index = 0
        self.last_with_records = max((i for i, b in enumerate(run.batches) if b), default=-1)
        # Where each event sits in the captured workload: after a restart the harness resumes at
        # its checkpoint, not at the first event.
        events = getattr(getattr(run.captured, "workload", None), "events", ())
        self.positions = {id(e): i for i, e in enumerate(events)}

    def open(self, ctx: EncoderContext) -> None:
        self.ctx = ctx
        self.index = 0

    def encode(self, event: Event) -> list[Record]:
        i = self.positions.get(id(event), self.index)
        self.index = i + 1
        if self.run.problem is not None and i > self.last_with_records:
            raise self.run.problem
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        batch = self.run.batches[i] if i < len(self.run.batches) else []
        return [Record(prefix + r.topic, r.key, r.value, r.partition, headers=r.headers) for r in batch]

    def tick(self, now: float) -> list[Record]:
        return []

    def close(self) -> None:
        pass


_ADAPTERS: dict[tuple[str, str], Any] = {}


def worker_tool(name: str, factory: Callable[[], ToolAdapter], upstream: Any, options: Mapping[str, str]
                ) -> ToolAdapter:
    """One adapter per tool and upstream per worker process, started once, stopped at exit."""
    key = (name, getattr(upstream, "url", ""))
    adapter = _ADAPTERS.get(key)
    if adapter is None:
        adapter = _ADAPTERS[key] = factory()
        atexit.register(_stop, adapter)
    adapter.start(upstream, options)
    return adapter


def _stop(adapter: ToolAdapter) -> None:
    with contextlib.suppress(Exception):
        adapter.stop()


def stop_all() -> None:
    for a in list(_ADAPTERS.values()):
        _stop(a)
    _ADAPTERS.clear()


def group_in_order(events: Sequence[Event], groups: Sequence[list[Record]],
                   wants: Callable[[Event], bool]) -> list[list[Record]]:
    """The k-th group of records for the k-th event that `wants` one; [] for the others."""
    out: list[list[Record]] = []
    it = iter(groups)
    for e in events:
        out.append(list(next(it, [])) if wants(e) else [])
    return out
