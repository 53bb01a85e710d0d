"""The MaxScale KafkaCDC checker's compiled fast path (see `checks.compiled`).

A *kind* of record is a DML event of one topic-partition and one table (`table_schema`,
`table_name`), read with one schema event of its table (the latest of the partition when it
comes, or none: the `KnownSchema` object itself), whose value's keys are one tuple, in order.
Every record check's answer on a DML event depends, beyond the values the generated code reads,
on these alone: which fields the event has (the fixed ones, its columns), the declared type of
each column (from the schema event) and the options. So after the checks have judged a kind's
first record, the kind gets one generated function over the parsed value, its text and the key
bytes that returns which *variant* of outcomes the record has when every check surely passes or
has nothing to judge (`value.temporal` and its kin have nothing to judge where every such column
is null: a bit each), and None otherwise. Schema events, and every record the function does not
accept, go through the checks as before.

What the checks keep per record besides outcomes (the partition's log, which the stream checks
judge at the end: the DML's entry, whether it repeats an earlier message, whether a schema event
of its table came before it) is kept here exactly as `CdcChecker.evidence` keeps it, and the
delivery identity is worked out from the same parse. The generated function compares the Kafka
key with the value's `GTID:event_number`, so an accepted record's key bytes serve as they are:
as its identity in the partition's log (`checker.dml_ident` gives the checks the same where the
key spells its value's place) and as its delivery match (`delivery.match`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...checks.compiled import Answer, FastRules, Source, variant_expression, variant_plan
from ...checks.registry import CheckSpec
from ...checks.results import RecordPlan
from ..kit import digest
from . import spec

#: Kinds one checker keeps (a capture has few; beyond this, the table starts again).
MAX_KINDS = 20_000

#: (topic, partition, table_schema, table_name, the value's keys in order)
Kind = tuple[str, int, Any, Any, tuple[str, ...]]


@dataclass(slots=True)
class FastKind:
    schema: Any  # the KnownSchema the kind was compiled for (None: no schema event seen)
    # Set once compiled: the function (its answer: the variant, or None), the table, the identity's
    # entity, what each check answers and the outcomes of each variant met so far.
    accept: Callable[[dict[str, Any], str, bytes | None], int | None] | None = None
    table: tuple[str, str] = ("", "")
    entity: bytes = b""
    specs: list[CheckSpec] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    outcomes: dict[int, RecordPlan] = field(default_factory=dict)
    hopeless: bool = False  # a check has no fast rule, or its rule cannot prove a pass

    def outcome(self, variant: int) -> RecordPlan:
        """The outcomes of the records of one variant, as a plan whose checks are all fixed (the
        tally counts them when it is read, as it counts a plan's)."""
        return variant_plan(self.outcomes, self.specs, self.answers, variant)


#: The fixed fields the generated code reads into locals (see `checks.common.fast`).
_LOCALS = {"domain": "_d", "server_id": "_s", "sequence": "_q", "event_number": "_n", "timestamp": "_t",
           "event_type": "_et"}


def read_field(src: Source, name: str) -> str:
    """The local holding the value's field `name` (a key of every value of the kind), read once."""
    return src.value(f"obj[{src.const(name, 'n')}]", name=_LOCALS.get(name))


#: One reader of each tuple of keys met (kinds alike share it, and so share their text).
_GETTERS: dict[tuple[str, ...], Callable[[dict[str, Any]], tuple[Any, ...]]] = {}


def read_group(src: Source, names: Sequence[str]) -> str:
    """The local holding the tuple of the values of `names` (keys of every value of the kind; at
    least one), read at once. Rules that judge many columns alike loop over such a tuple, the
    columns' own data in constant tuples beside it: so the generated text depends on which groups
    a kind has, not on its columns one by one, and kinds of many tables share one text (and one
    `compile`)."""
    key = tuple(names)
    if len(key) == 1:
        return src.value(f"(obj[{src.const(key[0], 'n')}],)", "g")
    getter = _GETTERS.get(key)
    if getter is None:
        if len(_GETTERS) >= MAX_KINDS:
            _GETTERS.clear()
        getter = _GETTERS[key] = operator.itemgetter(*key)
    return src.value(f"{src.const(getter, 'get')}(obj)", "g")


def compile_kind(kind: FastKind, ev: Any, specs: list[CheckSpec], rules: FastRules, topic: str) -> None:
    """Generate the kind's function from one of its records (`ev`: only what the kind decides is
    read); a kind some check of which cannot be proven stays on the checks."""
    obj = ev.msg.obj
    table = ev.msg.table
    if obj is None or table is None or any(k not in obj for k in spec.DML_FIXED) or "namespace" in obj:
        kind.hopeless = True
        return
    src = Source("accept", ("obj", "text", "key"))
    for name in _LOCALS:
        read_field(src, name)
    answers = rules.outcomes(specs, ev, src)
    if answers is None:
        kind.hopeless = True
        return
    src.line(f"return {variant_expression(answers)}")
    kind.accept = src.build()
    kind.table = table
    kind.entity = digest(("t", topic, *table))
    kind.specs = list(specs)
    kind.answers = answers
