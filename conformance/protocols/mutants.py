"""Declaring mutants, once for every protocol.

A mutant is a reference encoder with one deliberate defect; it names the check that must catch
it. A protocol declares its mutants with a `MutantRegistry` over its checks (`CheckRegistry`):

    mutant = MutantRegistry(CHECKS)

    @mutant("magic-byte-one", "framing.magic-byte")      # the check id, relative to the protocol
    class MagicByteOne(TiCDCAvroEncoder):
        \"\"\"Frames records with magic byte 0x01 instead of 0x00.\"\"\"

The kill list (which check catches which mutant) is read from these declarations: the suite's
tests assert that every check has a mutant, every mutant is caught by the check it names, and
the reference passes everything. Delivery mutants (the reference behind a broken sink policy,
`encoders/sink.py`) are expanded for every protocol here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..checks.registry import CheckRegistry
from ..encoders.spi import Encoder, EncoderInfo, EncoderKind

if TYPE_CHECKING:
    from .base import ProtocolSuite

E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class MutantSpec:
    name: str
    catches: str  # the full id of the check that must catch it
    description: str
    factory: Callable[[], Encoder] = field(compare=False, repr=False)
    needs_options: Mapping[str, str] = field(default_factory=dict)
    # Workload shape overrides (fields of `strategies.Shape`) that make the defect likely to show.
    shape: Mapping[str, Any] = field(default_factory=dict)
    # A broker fault schedule that exposes the defect (a defect in how the encoder resumes after
    # a failed delivery only shows when deliveries fail): the mutant then runs over Kafka only.
    faults: str | None = None
    # The defect shows only where the truth is a server's change log (its ids): the mutant then
    # runs against a server (`--upstream`), never in memory.
    needs_server: bool = False


class MutantRegistry:
    """A protocol's mutants, in declaration order; `@registry(name, catches, …)` declares one."""

    def __init__(self, checks: CheckRegistry) -> None:
        self.checks = checks
        self.protocol = checks.protocol
        self._declared: list[tuple[str, str, str, Callable[[], Encoder], dict[str, str], dict[str, Any],
                                   str | None, bool]] = []

    def __call__(self, name: str, catches: str, *, needs: Mapping[str, str] | None = None,
                 shape: Mapping[str, Any] | None = None, faults: str | None = None, needs_server: bool = False
                 ) -> Callable[[type[E]], type[E]]:
        """`catches` is a check id: relative to the protocol (`framing.magic-byte`) or absolute
        for a protocol-independent check (`encoder.no-crash`); resolved against the protocol's
        checks when the mutants are listed."""

        def deco(cls: type[E]) -> type[E]:
            doc = (cls.__doc__ or name).strip().splitlines()[0]
            self._declared.append((name, catches, doc, cls, dict(needs or {}), dict(shape or {}),  # type: ignore[arg-type]
                                   faults, needs_server))
            return cls

        return deco

    def __iter__(self) -> Iterator[MutantSpec]:
        return iter(self.specs())

    def specs(self) -> list[MutantSpec]:
        out = []
        for name, catches, doc, factory, needs, shape, faults, needs_server in self._declared:
            found = self.checks.resolve(catches)
            if found is None:
                raise LookupError(f"mutant {self.protocol}/{name} names no registered check: {catches!r}")
            out.append(MutantSpec(name, found.id, doc, factory, needs, shape, faults, needs_server))
        return out


COMMIT_TS_ORDER = "delivery.commit-ts-order"
PER_KEY_ORDER = "delivery.per-key-order"


def encoder_infos(suite: ProtocolSuite) -> list[EncoderInfo]:
    """A protocol's encoders as the CLI lists them: its reference, its mutants, and one delivery
    mutant per broken sink policy (the reference behind it, with the options under which every
    delivery check can be decided)."""
    from ..encoders.sink import SINKS

    ref = suite.reference()
    out = [ref]
    for m in suite.mutants():
        out.append(EncoderInfo(f"{suite.name}/mutant/{m.name}", suite.name, EncoderKind.MUTANT, m.factory,
                               m.description, catches=m.catches, needs_options=m.needs_options, shape=m.shape,
                               faults=m.faults, needs_server=m.needs_server))
    if any(o.name == "registry-compatibility" for o in suite.options):
        out.append(EncoderInfo(
            f"{suite.name}/mutant/registry-accepts-incompatible", suite.name, EncoderKind.MUTANT, ref.factory,
            "The reference against a registry that accepts the schema changes its level refuses.",
            catches=f"{suite.name}.registry.verdict",
            needs_options={**suite.registry_options(), "registry-compatibility": "FULL_TRANSITIVE"},
            shape={"ddl_rate": 0.4, "transactions": (6, 14)}, registry_fault="lenient"))
    for name, sink in SINKS.items():
        if sink.catches is None:
            continue
        doc = (sink.__doc__ or name).strip().splitlines()[0]
        catches = sink.catches
        if catches == COMMIT_TS_ORDER and not suite.carries_commit_ts(suite.capabilities.delivery_options):
            # Messages without a commit ts (Debezium's JSON): what reordering breaks there is the
            # order of each key's versions.
            catches = PER_KEY_ORDER
        out.append(EncoderInfo(f"{suite.name}/mutant/{name}", suite.name, EncoderKind.MUTANT, ref.factory, doc,
                               catches=catches, needs_options=suite.capabilities.delivery_options,
                               shape=dict(sink.shape), sink=name, faults=sink.faults))
    return out
