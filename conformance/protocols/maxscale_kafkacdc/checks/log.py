"""What a MaxScale KafkaCDC DML event shows against its table's schema event, without the
workload: integers within the range their declared type and `unsigned` flag allow."""

from __future__ import annotations

from typing import Any

from ....checks.registry import Failure, Level, Scope
from ...kit import Findings, brief
from ..checker import RecordEvidence
from ..decoder import Column, is_int
from ..spec import NOTES, SEED
from .common import check
from .values import declared_values

#: Bits of each integer type token (real_type, lower case): TINYINT / BOOL 8 … BIGINT / SERIAL 64.
_BITS = {"tinyint": 8, "bool": 8, "boolean": 8, "int1": 8, "smallint": 16, "int2": 16, "mediumint": 24,
         "middleint": 24, "int3": 24, "int": 32, "integer": 32, "int4": 32, "bigint": 64, "int8": 64, "serial": 64}


def integer_range(real_type: str, unsigned: bool, *, bigint_wrap: bool = False) -> tuple[int, int] | None:
    """The values a column of this declared type holds (None: not an integer type with a range)."""
    bits = _BITS.get(real_type.lower())
    if bits is None:
        return None
    if real_type.lower() == "serial":
        unsigned = True  # SERIAL is BIGINT UNSIGNED
    if unsigned and bits == 64 and bigint_wrap:
        return -(1 << 63), (1 << 64) - 1  # 24.02 writes values >= 2^63 negative (--option bigint-unsigned=wrap)
    if unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


@check("value.integer-range", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (DML events follow the format specified in the DDL event); {NOTES} §2.2 (the schema "
              "event's real_type and unsigned flag), §4 (integers as the column's signed or unsigned value)",
       docs_vs_code="24.02 code: BIGINT UNSIGNED values >= 2^63 wrap negative (--option bigint-unsigned=wrap "
                    "accepts them)")
def value_integer_range(ev: RecordEvidence) -> Findings:
    """An integer column's value lies in the range of its declared type: unsigned ones never negative."""

    def bounds(declared: Column) -> tuple[int, int] | None:
        assert declared.real_type is not None
        return integer_range(declared.real_type, bool(declared.unsigned), bigint_wrap=ev.o.bigint_wrap)

    def judge(name: str, declared: Column, v: Any) -> Failure | None:
        lo, hi = bounds(declared) or (v, v)
        if not is_int(v) or lo <= v <= hi:
            return None  # a JSON value of another kind is value.json-type's
        kind = f"{declared.real_type}{' UNSIGNED' if declared.unsigned else ''}"
        return Failure(f"a {kind} column holds a value outside its range", expected=f"{lo} .. {hi}",
                       actual=brief(v, 40), location=ev.at(name))

    yield from declared_values(ev, judge, applies=lambda declared: bounds(declared) is not None,
                               none="no integer column whose declared type is known")
