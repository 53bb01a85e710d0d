"""Generator soak: every workload shape a run can ask for, over many seeds, through generation
and the model's own rendering only (no encoder, no broker).

A run regenerates each unit's workload from (seed, shard, shape); a generator that raises on some
seed ends the user's run with an internal error, whatever the encoder does. The shapes a run can
ask for are enumerated exactly as `RunPlan.run_shape` builds them: every protocol, every dialect
its workloads can take (its own, or an `--upstream` server's), every encoder's declared shape (the
reference's, each mutant's defect-revealing overrides). Options never change generation (a
mutant's `needs_options` select its combination, not its workload), so the shapes cover them.

Each workload is then rendered the ways the suite renders it: the SQL script in its dialect, the
workload file (`model/serde`) read back equal, and every value of every row and default through
the model's conversion helpers (`render_value`), which must answer for every value the domains
can produce. A failure is a `Crash`: where (shape label, seed, shard), what raised, and the
traceback's innermost frames; `replay(label, seed, shard)` raises it again.

Used by the suite's tests (`tests/unit/test_generator_soak.py`, a bounded soak in the default
run) and by `benchmarks/generator_soak.py` (≥ 100,000 workloads).
"""

from __future__ import annotations

import json
import math
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

from ..model.dialects import dialect as get_dialect
from ..model.dialects import workload_sql
from ..model.events import Ddl, Transaction, Workload
from ..model.serde import value_from_json, value_to_json, workload_from_json, workload_to_json
from ..model.table import DefaultKind
from ..model.types import Kind, SqlType
from ..model.values import Value, is_float32, mysql_text, values_equal
from ..strategies import Shape, sample_workload


@dataclass(frozen=True, slots=True)
class SoakShape:
    """One shape a run can ask for, with the runs that ask for it (`protocol · dialect · encoder`)."""

    label: str
    shape: Shape
    asked_by: tuple[str, ...] = ()


def soak_shapes(protocols: Iterable[str] | None = None, *, mutants: bool = True,
                refused: list[str] | None = None) -> list[SoakShape]:
    """Every distinct shape `RunPlan.run_shape` makes for the given protocols (all: None), in the
    protocol's own dialect and each `--upstream` server's, for the reference encoder and (with
    `mutants`) every mutant. A combination a run refuses with a usage error (a mutant whose kinds
    the dialect has none of) is no shape: its message goes to `refused`."""
    from ..encoders import all_encoders
    from ..errors import UsageError
    from ..protocols import all_protocols
    from ..upstream import DIALECTS
    from .run import RunPlan

    wanted = None if protocols is None else set(protocols)
    by_shape: dict[Shape, list[str]] = {}
    for suite in all_protocols():
        if wanted is not None and suite.name not in wanted:
            continue
        infos = [e for e in all_encoders(suite.name)
                 if e.name.endswith("/reference") or (mutants and e.catches is not None)]
        own = suite.capabilities.dialect
        for d in dict.fromkeys((own, *DIALECTS)):
            upstream = None if d == own else SimpleNamespace(dialect=d)
            for info in infos:
                plan = RunPlan(suite, info, combos=[], examples=0, seed=0, upstream=upstream)
                try:
                    shape = plan.run_shape()
                except UsageError as exc:
                    if refused is not None:
                        refused.append(f"{suite.name} · {d} · {info.name}: {exc}")
                    continue
                by_shape.setdefault(shape, []).append(f"{suite.name} · {d} · {info.name}")
    return [SoakShape(asked[0] if len(asked) == 1 else f"{asked[0]} (+{len(asked) - 1})", shape, tuple(asked))
            for shape, asked in by_shape.items()]


@dataclass(frozen=True, slots=True)
class Crash:
    """A workload the generator or the model's rendering could not get through."""

    label: str
    seed: str
    shard: int
    stage: str  # "generate" | "render"
    error: str  # "OverflowError: float too large to pack with f format"
    where: str  # innermost frames, one per line

    def describe(self) -> str:
        return (f"{self.stage} crashed on {self.label}, seed {self.seed!r} shard {self.shard}: {self.error}\n"
                f"{self.where}")


@dataclass(slots=True)
class SoakResult:
    workloads: int = 0
    events: int = 0
    values: int = 0
    seconds: float = 0.0
    crashes: list[Crash] = field(default_factory=list)
    per_shape: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.workloads / self.seconds if self.seconds else 0.0

    def distinct_crashes(self) -> list[Crash]:
        """One crash per (stage, error type, innermost frame): the same bug met on many seeds once."""
        seen: dict[tuple[str, str, str], Crash] = {}
        for c in self.crashes:
            seen.setdefault((c.stage, c.error.split(":", 1)[0], c.where.splitlines()[-1] if c.where else ""), c)
        return list(seen.values())


class RenderMismatch(AssertionError):
    """The model's rendering answered, but not what the model holds (a round trip that changed a value)."""


def value_invariants(t: SqlType, v: Value) -> None:
    """What the model promises of every value it holds, checked through the helpers every
    protocol uses: its TiDB/MySQL text (`mysql_text`, defined for every kind), equality with
    itself (`values_equal`), and FLOAT values that are float32 values. Raises if one fails."""
    mysql_text(t, v)
    if not values_equal(t, v, v):
        raise RenderMismatch(f"{t.sql()}: {v!r} is not equal to itself")
    if t.kind is Kind.FLOAT and isinstance(v, float) and math.isfinite(v) and not is_float32(v):
        raise RenderMismatch(f"{t.sql()}: {v!r} is not a float32 value (the model holds FLOAT values as float32)")


def render_value(dialect: str, t: SqlType, v: Value) -> None:
    """Every conversion the model makes of one value of a column of type `t`: its SQL literal in
    `dialect`, `value_invariants`, and its workload-file form read back equal. Raises if one
    cannot answer or a round trip changes the value."""
    if v is None:
        return
    get_dialect(dialect).literal(t, v)
    value_invariants(t, v)
    back = value_from_json(t, json.loads(json.dumps(value_to_json(t, v))))
    if not values_equal(t, back, v):
        raise RenderMismatch(f"{t.sql()}: {v!r} reads back from a workload file as {back!r}")


def render_workload(w: Workload) -> tuple[int, int]:
    """The model's own renderings of a whole workload: its SQL script (every literal in its
    dialect), its workload file read back equal, `value_invariants` of every value and literal
    default. Returns (events, values) rendered."""
    workload_sql(w)
    text = json.dumps(workload_to_json(w))
    # Compared as files: NaN (a value of PostgreSQL's numeric and floats) is unequal to itself in Python.
    if json.dumps(workload_to_json(workload_from_json(json.loads(text)))) != text:
        raise RenderMismatch("the workload file reads back as another workload")
    values = 0
    for e in w.events:
        if isinstance(e, Ddl) and e.table is not None:
            for c in e.table.columns:
                if c.default.kind is DefaultKind.VALUE and c.default.value is not None:
                    value_invariants(c.type, c.default.value)
                    values += 1
        elif isinstance(e, Transaction):
            for ch in e.changes:
                for image in (ch.before, ch.after):
                    if image is None:
                        continue
                    for c in ch.table.columns:
                        v = image.get(c.name)
                        if v is not None:
                            value_invariants(c.type, v)
                            values += 1
    return len(w.events), values


def _innermost(exc: BaseException, frames: int = 4) -> str:
    tb = traceback.extract_tb(exc.__traceback__)[-frames:]
    return "\n".join(f"  {f.filename.rsplit('/conformance/', 1)[-1]}:{f.lineno} in {f.name}" for f in tb)


def _one(s: SoakShape, seed: str, shard: int, result: SoakResult) -> None:
    try:
        w = sample_workload(seed, shard, s.shape)
    except Exception as exc:  # noqa: BLE001 - the soak reports what the generator raises
        result.crashes.append(Crash(s.label, seed, shard, "generate", f"{type(exc).__name__}: {exc}"[:300],
                                    _innermost(exc)))
        return
    try:
        events, values = render_workload(w)
    except Exception as exc:  # noqa: BLE001 - the soak reports what the rendering raises
        result.crashes.append(Crash(s.label, seed, shard, "render", f"{type(exc).__name__}: {exc}"[:300],
                                    _innermost(exc)))
        return
    result.events += events
    result.values += values


def units(shapes: Sequence[SoakShape], workloads: int, *, weights: Callable[[SoakShape], float] | None = None
          ) -> Iterator[tuple[SoakShape, int]]:
    """`workloads` (shape, shard) units spread over the shapes in proportion to `weights`
    (default: equal), every shape at least once, interleaved so that a partial soak (a deadline)
    has still met every shape."""
    w = [max(weights(s), 0.0) if weights else 1.0 for s in shapes]
    total = sum(w) or 1.0
    exact = [workloads * x / total for x in w]
    counts = [max(1, int(e)) for e in exact]
    # The largest remainders take what flooring left over, so the shapes share `workloads` exactly
    # (rounding each share lost or added a few once there were many shapes).
    for i in sorted(range(len(exact)), key=lambda i: exact[i] - int(exact[i]), reverse=True)[:workloads - sum(counts)]:
        counts[i] += 1
    for i in range(max(counts, default=0)):
        for s, n in zip(shapes, counts, strict=True):
            if i < n:
                yield s, i


def soak(shapes: Sequence[SoakShape], workloads: int, *, seed: str = "soak", first_shard: int = 0,
         deadline: float | None = None, progress: Callable[[int], None] | None = None,
         weights: Callable[[SoakShape], float] | None = None) -> SoakResult:
    """Generate and render `workloads` workloads over `shapes` (seeds `seed`, shards from
    `first_shard`); stops early at `deadline` (time.monotonic()). Never raises for what a
    workload does: every failure is a `Crash` in the result."""
    return soak_units(units(shapes, workloads, weights=weights), seed=seed, first_shard=first_shard,
                      deadline=deadline, progress=progress)


def soak_units(todo: Iterable[tuple[SoakShape, int]], *, seed: str = "soak", first_shard: int = 0,
               deadline: float | None = None, progress: Callable[[int], None] | None = None) -> SoakResult:
    """`soak` over given (shape, index) units (a slice of `units(...)`, for one of several processes)."""
    result = SoakResult()
    start = time.monotonic()
    for s, i in todo:
        if deadline is not None and time.monotonic() > deadline:
            break
        _one(s, seed, first_shard + i, result)
        result.workloads += 1
        result.per_shape[s.label] = result.per_shape.get(s.label, 0) + 1
        if progress is not None:
            progress(1)
    result.seconds = time.monotonic() - start
    return result


def replay(shape: Shape, seed: str, shard: int) -> Workload:
    """One soak unit again, raising what it raised (for a regression test or a debugger)."""
    w = sample_workload(seed, shard, shape)
    render_workload(w)
    return w


def shape_of(label: str, shapes: Sequence[SoakShape] | None = None) -> Shape:
    """The shape a crash's label names (`protocol · dialect · encoder`, as a soak printed it)."""
    for s in shapes if shapes is not None else soak_shapes():
        if label == s.label or label in s.asked_by:
            return s.shape
    raise KeyError(f"no soak shape is labelled {label!r}")
