"""A work unit's Schema Registry compatibility level: set it, predict its verdicts, watch the
encoder's registrations, and gather what the `registry.*` checks judge (checks/compatibility.py).

* **set**: before the encoder (or a whole tool) starts, every subject the workload's tables will
  use gets the run's level (`PUT /config/{subject}`), on whatever registry the run uses: the
  embedded one, a container, a live registry. Subjects are per unit (the topic prefix), so
  combinations with different levels share a registry without meeting.
* **predict**: the protocol's reference encoder runs over the workload against a
  `PredictingRegistry`, which judges each new schema with the registry rules of
  `infra/registry/compat.py` (Apache Avro's schema resolution, transitive where the level says
  so). The first refusal is where the encoder must stop; every registration is labelled with the
  schema change that caused it (`evolution.change_label`) for the report's compatibility table.
* **watch**: an in-process encoder registers through an `ObservedRegistry`, which asks the
  compatibility endpoint first and compares its answer, and the rules', with what registration
  then did.
* **gather**: after encoding, the subjects are read back: every version must be one the level
  allows, the level must be the one set; and the encoder must have stopped at the predicted
  refusal, with no record of that table after it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..checks.compatibility import CompatibilityEvidence, Divergence, Refusal
from ..encoders.spi import EncoderContext, EncoderError, EncoderInfo, ManualClock
from ..infra.registry.compat import ParsedSchema, check_parsed, parse_schema
from ..infra.registry.errors import IncompatibleSchema, RegistryError, SchemaTextError
from ..model.events import Transaction, Workload
from ..protocols.base import ProtocolSuite
from .encode import Encoded
from .evolution import change_label

#: How a refused registration ended, for the report (`Outcome` of the compatibility table).
ACCEPTED = "accepted"
STOPPED = "refused: encoder stopped"
WENT_ON = "refused: encoder went on"
DIVERGED = "refused by the rules, accepted by the registry"


def _short(messages: tuple[str, ...], limit: int = 240) -> str:
    text = "; ".join(m for m in messages if not m.startswith(("{oldSchema:", "{oldSchemaVersion"))) or "incompatible"
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class Registration:
    event: int
    subject: str
    change: str | None  # None: the subject's first version
    accepted: bool


@dataclass(slots=True)
class Prediction:
    level: str
    registrations: list[Registration] = field(default_factory=list)
    refusal: Refusal | None = None
    error: str | None = None  # the reference itself failed for another reason (no prediction past it)


class PredictingRegistry:
    """An in-memory registry that judges every new schema by the rules at one level.

    `actual`: the versions each subject holds in the run's registry after encoding (what the
    encoder under test registered). The reference's k-th new schema of a subject is then judged
    against the first k of them rather than against the reference's own: an encoder whose schemas
    legitimately differ (real Debezium declares some NOT NULL columns optional) is held to the
    verdicts its own schemas earn."""

    def __init__(self, level: str, actual: Mapping[str, list[ParsedSchema]] | None = None) -> None:
        self.level = level
        self.actual = actual or {}
        self.event = 0
        self.log: list[Registration] = []
        self.refused: tuple[str, ParsedSchema, str, int] | None = None  # subject, schema, reason, versions
        self._versions: dict[str, list[ParsedSchema]] = {}
        self._ids: dict[str, int] = {}
        self._texts: dict[int, str] = {}
        self._next = itertools.count(1)

    def register(self, subject: str, schema: str) -> int:
        parsed = parse_schema(schema)
        versions = self._versions.setdefault(subject, [])
        if not any(v.key == parsed.key for v in versions):
            change = change_label(versions[-1].text, schema, [v.text for v in versions[:-1]]) if versions else None
            held = self.actual.get(subject)
            baseline = held[:len(versions)] if held else versions
            verdict = check_parsed(parsed, list(enumerate(baseline, 1)), self.level)
            self.log.append(Registration(self.event, subject, change, verdict.compatible))
            if not verdict.compatible:
                self.refused = (subject, parsed, _short(verdict.messages), len(versions))
                raise IncompatibleSchema(f"Schema being registered is incompatible with an earlier schema for subject "
                                         f"{subject!r} ({self.level})", status=409, error_code=409)
            versions.append(parsed)
        if parsed.key not in self._ids:
            self._ids[parsed.key] = next(self._next)
            self._texts[self._ids[parsed.key]] = schema
        return self._ids[parsed.key]

    def schema_by_id(self, schema_id: int) -> str:
        return self._texts[schema_id]


def predict(suite: ProtocolSuite, workload: Workload, options: Mapping[str, str], prefix: str, level: str, *,
            partitions: int, time_zone: str = "UTC", actual: Mapping[str, list[ParsedSchema]] | None = None
            ) -> Prediction:
    """The reference's registrations over `workload` at `level`, up to the first refusal (judged
    against `actual`, the registry's versions after encoding, where given)."""
    out = Prediction(level)
    reg = PredictingRegistry(level, actual)
    clock = ManualClock()
    ctx = EncoderContext(options=dict(options), registry=reg, clock=clock, partitions=partitions, topic_prefix=prefix,
                         time_zone=time_zone)
    enc = suite.reference().factory()
    try:
        enc.open(ctx)
        for i, event in enumerate(workload.events):
            reg.event = i
            try:
                list(enc.encode(event))
                enc.tick(clock.follow(event))
            except EncoderError as e:
                if reg.refused is not None:
                    subject, _, reason, before = reg.refused
                    topic, table_id = _table_of(suite, workload, i, options, prefix, subject)
                    out.refusal = Refusal(i, subject, topic, reg.log[-1].change or "first version", reason,
                                          table_id, before)
                else:
                    out.error = f"{type(e).__name__}: {e}"
                break
        enc.close()
    except Exception as e:  # noqa: BLE001 - the reference failing is reported, not raised
        out.error = out.error or f"{type(e).__name__}: {e}"
    out.registrations = reg.log
    return out


def _table_of(suite: ProtocolSuite, workload: Workload, event: int, options: Mapping[str, str], prefix: str,
              subject: str) -> tuple[str, int | None]:
    """The topic and the table of event `event` whose schema registers under `subject`."""
    e = workload.events[event]
    if not isinstance(e, Transaction):
        return subject, None
    for change in e.changes:
        one = replace(workload, events=(replace(e, changes=(change,)),))
        for t in suite.topics(one, options, prefix):
            if subject in suite.topic_subjects(t):
                return t, change.table.table_id
    return subject, None


class ObservedRegistry:
    """The registry as an in-process encoder sees it, each registration watched: the compatibility
    endpoint asked first, its answer and the rules' compared with what registration did."""

    def __init__(self, inner: Any, level: str) -> None:
        self.inner = inner
        self.level = level
        self.divergences: list[Divergence] = []
        self._accepted: dict[str, list[ParsedSchema]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def register(self, subject: str, schema: str) -> int:
        try:
            parsed: ParsedSchema | None = parse_schema(schema)
        except SchemaTextError:
            parsed = None  # invalid Avro: the registry's 422 is the encoder's finding, not ours
        accepted = self._accepted.setdefault(subject, [])
        endpoint: bool | None = None
        if parsed is not None and accepted and all(v.key != parsed.key for v in accepted):
            try:
                endpoint = self.inner.test_compatibility(subject, schema)
                if not self.level.endswith("_TRANSITIVE"):
                    # Against the latest version only: what a non-transitive level checks.
                    latest = self.inner.test_compatibility(subject, schema, "latest")
                    if latest != endpoint:
                        self._diverge(subject, "the compatibility endpoint answered differently against the latest "
                                      f"version ({latest}) and against the versions {self.level} checks ({endpoint})",
                                      "the same answer", f"{latest} / {endpoint}")
            except (RegistryError, AttributeError):
                endpoint = None
        try:
            schema_id = int(self.inner.register(subject, schema))
        except IncompatibleSchema:
            if parsed is not None:
                rules = check_parsed(parsed, list(enumerate(accepted, 1)), self.level)
                if rules.compatible:
                    self._diverge(subject, f"the registry refused a schema that {self.level} allows after the "
                                  f"subject's {len(accepted)} version(s)", "accepted", "409 incompatible")
                if endpoint is True:
                    self._diverge(subject, "the compatibility endpoint said compatible, registration then refused it",
                                  "the same answer from both", "compatible, then 409")
            raise
        if parsed is not None:
            if endpoint is False:
                self._diverge(subject, "the compatibility endpoint said incompatible, registration then accepted it",
                              "the same answer from both", f"incompatible, then id {schema_id}")
            if all(v.key != parsed.key for v in accepted):
                accepted.append(parsed)
        return schema_id

    def _diverge(self, subject: str, message: str, expected: str, actual: str) -> None:
        self.divergences.append(Divergence(subject, message, expected, actual))


class LenientRegistry:
    """A registry fault (the `registry-accepts-incompatible` mutant): it accepts every schema its
    level refuses, lowering the subject's level for that registration, as a registry that skips
    its compatibility check would. Its compatibility endpoint still answers truthfully."""

    def __init__(self, inner: Any, level: str) -> None:
        self.inner = inner
        self.level = level

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def register(self, subject: str, schema: str) -> int:
        try:
            return int(self.inner.register(subject, schema))
        except IncompatibleSchema:
            self.inner.set_compatibility("NONE", subject)
            try:
                return int(self.inner.register(subject, schema))
            finally:
                self.inner.set_compatibility(self.level, subject)


#: Registry faults a mutant may name (`EncoderInfo.registry_fault`).
REGISTRY_FAULTS: Mapping[str, Callable[[Any, str], Any]] = {"lenient": LenientRegistry}


@dataclass(eq=False)
class Gate:
    """One unit's compatibility level, from setting it to the evidence (see the module doc)."""

    suite: ProtocolSuite
    registry: Any
    options: Mapping[str, str]
    prefix: str
    level: str
    info: EncoderInfo
    prediction: Prediction | None = field(default=None, init=False)
    workload: Workload | None = field(default=None, init=False)
    _where: tuple[int, str] = field(default=(1, "UTC"), init=False)
    observer: ObservedRegistry | None = field(default=None, init=False)
    # A capture replayed (`check --workload`): its registry is read, never written (no level set,
    # nothing watched), and its subjects' levels are the deployment's own.
    read_only: bool = False

    def set_levels(self, workload: Workload) -> str | None:
        """The run's level on every subject the workload's tables will use (before anything
        registers); None, or why it could not be set (a registry that is down: the encoder's own
        registrations then say what happens, and the `registry.*` checks are skipped)."""
        if self.read_only:
            return None
        try:
            for subject in sorted(self.suite.subjects(workload, self.options, self.prefix)):
                self.registry.set_compatibility(self.level, subject)
        except RegistryError as e:
            return f"the level could not be set on the registry: {e}"
        return None

    def predict(self, workload: Workload, *, partitions: int, time_zone: str) -> None:
        self.workload = workload
        self._where = (partitions, time_zone)
        self.prediction = predict(self.suite, workload, self.options, self.prefix, self.level,
                                  partitions=partitions, time_zone=time_zone)

    def encoder_registry(self) -> Any:
        """What the encoder registers through: the run's registry, watched (and faulty for a registry mutant)."""
        if self.read_only:
            return self.registry
        inner = self.registry
        fault = self.info.registry_fault
        if fault is not None:
            inner = REGISTRY_FAULTS[fault](inner, self.level)
        self.observer = ObservedRegistry(inner, self.level)
        return self.observer

    def refused_event(self) -> int | None:
        """The event of the predicted refusal (None: nothing is refused)."""
        r = self.prediction.refusal if self.prediction is not None else None
        return r.event if r is not None else None

    def excuse(self, event: int, exc: BaseException) -> bool:
        """Where the level can refuse anything, an error ends the encoding as a stop, provisionally:
        `evidence` decides whether a refusal explains it (the documented error state) or it was a
        crash after all."""
        return self.level != "NONE"

    @staticmethod
    def _explains(workload: Workload, refusal: Refusal | None, stopped: int) -> bool:
        """A refusal explains a stop at or after it, or before it where only DDL and watermarks lie
        between (a tool's error surfaces after its last record)."""
        if refusal is None:
            return False
        return stopped >= refusal.event or not any(
            isinstance(e, Transaction) for e in workload.events[stopped:refusal.event])

    def judged_workload(self, workload: Workload, ev: CompatibilityEvidence, out: Encoded) -> Workload | None:
        """What delivery is owed after a refusal (None: the workload as encoded): every event before
        it; of the refused transaction, the changes before the refused table's first one if the
        encoder delivered any of it (a tool stops at the failing record); of later transactions up
        to where it stopped, the other tables' changes it delivered (a changefeed's other tables
        may run ahead of its error state). Nothing of the refused table from the refusal on."""
        r = ev.refusal
        if r is None or ev.registry_took_it or ev.crashed_before:
            return None
        end = max(r.event, out.stopped if out.stopped is not None else out.encoded)
        sent = {m.event for m in out.sink.ledger if not m.attempt}
        events = list(workload.events[:r.event])
        for i in range(r.event, min(end + 1, len(workload.events))):
            e = workload.events[i]
            if not isinstance(e, Transaction):
                events.append(e)
                continue
            if i not in sent:
                continue
            changes = e.changes
            if i == r.event:
                first = next((k for k, c in enumerate(changes) if c.table.table_id == r.table_id), len(changes))
                changes = changes[:first]
            kept = tuple(c for c in changes if c.table.table_id != r.table_id)
            if kept:
                events.append(replace(e, changes=kept))
        return replace(workload, events=tuple(events))

    def evidence(self, workload: Workload, out: Encoded) -> CompatibilityEvidence:
        ev = CompatibilityEvidence(self.level, observed=self.observer is not None)
        if self.observer is not None:
            ev.divergences.extend(self.observer.divergences)
        actual: dict[str, list[ParsedSchema]] = {}
        for subject in sorted(self.suite.subjects(workload, self.options, self.prefix)):
            held = self._read_back(subject, ev)
            if held:
                actual[subject] = held
        p = self.prediction
        if p is not None and (p.refusal is not None or out.stopped is not None) and actual:
            # Judged again against what the encoder itself registered.
            partitions, time_zone = self._where
            p = self.prediction = predict(self.suite, workload, self.options, self.prefix, self.level,
                                          partitions=partitions, time_zone=time_zone, actual=actual)
        r = ev.refusal = p.refusal if p is not None else None
        if r is not None and len(actual.get(r.subject, ())) > r.versions_before:
            # A version was accepted where the rules refuse one: no refusal happened (the registry
            # diverged, which registry.verdict reports, or the encoder registered another schema).
            ev.registry_took_it = True
        if out.stopped is not None:
            if not ev.registry_took_it and self._explains(workload, r, out.stopped):
                assert r is not None
                ev.stopped_at = max(out.stopped, r.event)
            else:
                ev.unexplained_stop = out.stopped
        if r is not None:
            ev.crashed_before = ((out.crashed or out.hung) and out.encoded < r.event) or (
                ev.unexplained_stop is not None and ev.unexplained_stop < r.event)
            of_subject: dict[str, bool] = {}
            for m in out.sink.ledger:
                if m.event < r.event or m.attempt:
                    continue
                hit = of_subject.get(m.topic)
                if hit is None:
                    hit = of_subject[m.topic] = r.subject in self.suite.topic_subjects(m.topic)
                if hit:
                    ev.after.append((m.topic, m.partition, m.offset, m.event))
        return ev

    def _read_back(self, subject: str, ev: CompatibilityEvidence) -> list[ParsedSchema]:
        """The subject's versions as the registry holds them, each judged against the earlier ones
        at the level (a version the level forbids is the registry's divergence)."""
        try:
            versions = self.registry.versions(subject)
        except RegistryError:
            return []  # never registered (a table without rows, a refused first version)
        texts = [self.registry.version(subject, v).schema for v in versions]
        held = []
        for t in texts:
            try:
                held.append(parse_schema(t))
            except SchemaTextError:
                return []  # a schema the rules cannot read: the protocol's schema checks say so
        if len(texts) < 2 or self.read_only:
            return held
        level = str(self.registry.get_compatibility(subject)).upper()
        if level != self.level:
            ev.divergences.append(Divergence(subject, f"the subject's level is {level}, though the run set "
                                             f"{self.level}", self.level, level))
        for i in range(1, len(held)):
            verdict = check_parsed(held[i], list(enumerate(held[:i], 1)), self.level)
            if not verdict.compatible:
                ev.divergences.append(Divergence(
                    subject, f"the registry accepted version {versions[i]} although {self.level} forbids it",
                    "409: incompatible", f"version {versions[i]} ({_short(verdict.messages)})"))
        return held

    def outcomes(self, ev: CompatibilityEvidence) -> Counter[tuple[str, str]]:
        """(schema change, outcome) counts of this unit, for the report's compatibility table."""
        out: Counter[tuple[str, str]] = Counter()
        if self.prediction is None:
            return out
        for reg in self.prediction.registrations:
            if reg.change is None:
                continue
            if reg.accepted:
                out[(reg.change, ACCEPTED)] += 1
            elif ev.registry_took_it:
                # The registry took a later version: its divergence, or the encoder's own schema
                # (which the level allows) where the reference's would have been refused.
                diverged = any(d.subject == reg.subject for d in ev.divergences)
                out[(reg.change, DIVERGED if diverged else ACCEPTED)] += 1
            elif ev.stopped_at is not None and ev.stopped_at >= reg.event and not ev.after:
                out[(reg.change, STOPPED)] += 1
            else:
                out[(reg.change, WENT_ON)] += 1
        return out
