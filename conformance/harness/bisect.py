"""Regression hunting over encoder versions: which one first fails an example.

`probe` runs one encoder on the example's workloads (in memory, as `reproduce` does) and says
good (the check passes), bad (it fails) or skip (the encoder cannot be found, built or started:
it wrote nothing and crashed, or the infrastructure refused it). `bisect` checks that the first
version is good and the last bad, then halves the range between them, stepping around versions
that skip, in about ⌈log2 n⌉ probes. `git bisect run` inside an encoder's repository uses the
same probe through `conformance reproduce FILE --bisect-exit` (0 good, 1 bad, 125 skip).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..checks.common import ENCODER_NO_CRASH
from ..checks.registry import Level, Outcome
from ..encoders import find_encoder
from ..encoders.spi import ConfigurationError
from ..errors import InfrastructureError, UsageError
from ..model.events import Workload
from ..protocols.base import ProtocolSuite
from .capture import parse_line
from .run import run_in_memory
from .stages import ComboResult, new_tally

GOOD, BAD, SKIP = "good", "bad", "skip"
EXIT = {GOOD: 0, BAD: 1, SKIP: 125}  # git bisect run's contract


@dataclass
class Probe:
    index: int
    encoder: str
    outcome: str
    detail: str = ""
    records: list[Any] = field(default_factory=list, repr=False)  # what it wrote (for the diff)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "encoder": self.encoder, "outcome": self.outcome, "detail": self.detail}


def probe(suite: ProtocolSuite, encoder: str, options: dict[str, str], workloads: Sequence[Workload],
          check: str | None, registry: Any, *, index: int = 0, timeout: float = 30.0) -> Probe:
    """One encoder on the workloads: bad when `check` (else any MUST check) fails."""
    try:
        info = find_encoder(encoder, suite.name)
    except (LookupError, UsageError, ConfigurationError) as e:
        return Probe(index, encoder, SKIP, f"cannot be found: {e}")
    buf = io.StringIO()
    result = ComboResult(new_tally(suite))
    try:
        for shard, w in enumerate(workloads):
            run_in_memory(suite, info, options, registry, w, timeout=timeout, shard=shard, dump=buf, into=result)
    except (InfrastructureError, ConfigurationError, OSError) as e:
        return Probe(index, encoder, SKIP, f"cannot be started: {e}")
    records = [parse_line(line) for line in buf.getvalue().splitlines() if line.strip()]
    tally = result.tally
    crashed = tally.checks[ENCODER_NO_CRASH].outcome is Outcome.FAILED
    if crashed and not records and check != ENCODER_NO_CRASH:
        return Probe(index, encoder, SKIP, "wrote nothing and crashed: it does not start", records)
    if check is not None:
        bad = tally.checks[check].outcome is Outcome.FAILED
        return Probe(index, encoder, BAD if bad else GOOD, f"{check}: {'fails' if bad else 'passes'}", records)
    failed = sorted(t.id for t in tally if t.outcome is Outcome.FAILED and t.level is Level.MUST)
    return Probe(index, encoder, BAD if failed else GOOD, ", ".join(failed) or "every MUST check passes", records)


@dataclass
class Bisection:
    probes: list[Probe]
    last_good: int
    first_bad: int
    untestable: list[int]  # versions between the two that skipped (the first bad may be among them)

    def to_json(self, specs: Sequence[str]) -> dict[str, Any]:
        return {"first_bad": specs[self.first_bad], "last_good": specs[self.last_good],
                "untestable_between": [specs[i] for i in self.untestable], "runs": len(self.probes),
                "probes": [p.to_json() for p in self.probes]}


def bisect(specs: Sequence[str], run: Callable[[int], Probe]) -> Bisection:
    """The first bad version of `specs` (ordered oldest first), `run(i)` probing version i."""
    if len(specs) < 2:
        raise UsageError("bisect needs at least two versions")
    probes: list[Probe] = []

    def at(i: int) -> Probe:
        p = run(i)
        probes.append(p)
        return p

    first, last = at(0), at(len(specs) - 1)
    if first.outcome != GOOD or last.outcome != BAD:
        raise UsageError(f"the first version must pass and the last fail the example: {specs[0]} is {first.outcome} "
                         f"({first.detail}), {specs[-1]} is {last.outcome} ({last.detail})")
    lo, hi, skipped = 0, len(specs) - 1, set()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        # The nearest testable version to the middle, alternating sides.
        order = sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))
        found = None
        for i in order:
            if i in skipped:
                continue
            p = at(i)
            if p.outcome == SKIP:
                skipped.add(i)
                continue
            found = p
            break
        if found is None:
            break
        if found.outcome == GOOD:
            lo = found.index
        else:
            hi = found.index
    return Bisection(probes, lo, hi, sorted(i for i in skipped if lo < i < hi))
