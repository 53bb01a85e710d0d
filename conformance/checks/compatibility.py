"""Schema Registry compatibility: what the registry and the encoder do with a schema change.

When a table changes, an encoder that writes Avro registers the table's next schema under its
subject, and the registry judges it at the subject's compatibility level. The documents say
what must follow (spec 000 and 003, "schema evolution"): accepted, the following records carry
the new id; refused, "the registration fails … the changefeed enters an error state" — the
encoder stops with an error, everything before the change delivered, no record of that table
written after it with a stale or a missing schema id. Debezium's Avro converter fails its task
the same way (a `DataException` from the converter).

The run predicts each verdict from the registry's rules (`infra/registry/compat.py`: Avro schema
resolution, transitive where the level says so) over the schemas the reference would register,
and gathers what happened (`harness/compatibility.py`). Two checks judge it, declared for every
protocol that registers schemas (`declare`):

* `<protocol>.registry.verdict`: the registry applied its level — every version it holds is one
  the level allows after the earlier ones, every refusal it answered is one the level demands,
  its compatibility endpoint answered as registration then did, and the subject's level is the
  one the run set. A divergence is the registry's (actor: infrastructure), not the encoder's.
* `<protocol>.registry.rejection`: after a refused registration, the encoder stopped there with
  an error and wrote no record of that table from that change on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .registry import Actor, CheckRegistry, Failure, Level, Location, NotApplicable, Scope

CLAUSE = ("spec 000/003 (schema evolution): a schema change the subject's compatibility level refuses fails the "
          "registration and the changefeed enters an error state; Confluent Schema Registry: a new version is "
          "accepted only if compatible with the latest (or, transitive, every) version per the level")


@dataclass(frozen=True, slots=True)
class Refusal:
    """A registration the rules refuse: the first of the unit (the encoder must stop there)."""

    event: int  # index of the source event whose records needed the schema
    subject: str
    table: str  # the topic of the table whose schema it is
    change: str  # the schema change that caused it ("add NOT NULL column without default", …)
    reason: str  # the rules' messages, shortened
    table_id: int | None = None  # the table (its row changes from `event` on are never owed)
    versions_before: int = 0  # versions of the subject the registry holds when it refuses


@dataclass(slots=True)
class Divergence:
    """Where the registry did not do what its level says."""

    subject: str
    message: str
    expected: str
    actual: str


@dataclass(slots=True)
class CompatibilityEvidence:
    """What one work unit's registrations came to, at the level the run set."""

    level: str
    refusal: Refusal | None = None
    # The registry holds the schema the rules refuse (it diverged): the encoder was right to go on.
    registry_took_it: bool = False
    stopped_at: int | None = None  # where the encoder stopped with the error a refusal explains (None: it went on)
    unexplained_stop: int | None = None  # where it stopped with an error no refusal explains (a crash)
    crashed_before: bool = False  # it stopped earlier, for another reason (encoder.no-crash says so)
    # Records of the refused table written from the refused change on: (topic, partition, offset, event).
    after: list[tuple[str, int | None, int | None, int]] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    observed: bool = False  # the registrations were seen as they happened (an in-process encoder)


def check_ids(protocol: str) -> tuple[str, str]:
    """The ids of a protocol's two registry checks: verdict, rejection."""
    return f"{protocol}.registry.verdict", f"{protocol}.registry.rejection"


def declare(check: CheckRegistry) -> None:
    """Declare a protocol's `registry.verdict` and `registry.rejection` in its registry."""

    @check("registry.verdict", level=Level.MUST, scope=Scope.RUN, clause=CLAUSE)
    def registry_verdict(ev: CompatibilityEvidence) -> Iterator[Failure | NotApplicable]:
        """The registry applies the subject's compatibility level: it accepts what the level allows and
        refuses what it forbids, and its compatibility endpoint agrees with what registration does."""
        for d in ev.divergences:
            yield Failure(d.message, expected=d.expected, actual=d.actual, location=Location(subject=d.subject),
                          actor=Actor.INFRASTRUCTURE,
                          hint="The registry is at fault, not the encoder: report it to the registry's maintainers, "
                               "or run against a registry that applies Confluent's rules.")

    @check("registry.rejection", level=Level.MUST, scope=Scope.RUN, clause=CLAUSE)
    def registry_rejection(ev: CompatibilityEvidence) -> Iterator[Failure | NotApplicable]:
        """When the registry refuses a table's new schema, the encoder stops there with an error: nothing
        before the change is lost, and no record of that table follows it with a stale or missing schema id."""
        r = ev.refusal
        if r is None:
            yield NotApplicable(f"no schema change the {ev.level} level refuses")
            return
        if ev.registry_took_it:
            yield NotApplicable("the registry took a later version of the subject: the encoder's own schema, which the "
                                "level allows, or a registry divergence (registry.verdict says which)")
            return
        if ev.crashed_before:
            yield NotApplicable("the encoder stopped before the refused change (encoder.no-crash reports it)")
            return
        where = Location(table=r.table, subject=r.subject, part=f"event {r.event}")
        if ev.after:
            topic, partition, offset, event = ev.after[0]
            yield Failure(f"{len(ev.after)} record(s) of {r.table} written after the registry refused its new schema "
                          f"({r.change}; {ev.level}): the first from event {event}",
                          expected="no record of the table after the refused registration (an error state)",
                          actual=f"topic {topic} partition {partition} offset {offset}", location=where)
        if ev.stopped_at is None:
            yield Failure(f"the encoder went on after the registry refused the new schema of {r.table} "
                          f"({r.change}; {ev.level}: {r.reason})",
                          expected=f"an error at event {r.event} (the changefeed enters an error state)",
                          actual="no error", location=where)
