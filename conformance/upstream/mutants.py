"""Deliberately broken generator renderings and captures: each names the `source.*` check that
must catch it (the suite's tests assert it does, and that the faithful path passes)."""

from __future__ import annotations

import dataclasses

from ..checks.source import COMMIT_ORDER, LOG_IMAGES, ROWS_AFFECTED, STATEMENT_EXECUTES, STORED_VALUES
from ..model import sql as tidb_sql
from ..model.dialects import Dialect
from ..model.events import Op, RowChange
from ..model.truth import LoggedEvent
from ..model.types import Kind, SqlType
from ..model.values import DateTime, Time, Value
from .base import SourceMutant


def _wrap(base: Dialect, **overrides: object) -> Dialect:
    """`base` with some methods replaced (a subclass made on the fly keeps the database map)."""
    cls = type(f"Mutant{type(base).__name__}", (type(base),), dict(overrides))
    d: Dialect = cls()
    d._db = base._db  # the mutant renders the same databases
    return d


def tidb_literals(base: Dialect) -> Dialect:
    """Number and byte-string literals written as for TiDB, not for this server: FLOAT as
    float32's shortest digits (MariaDB reads 3.4028235e38 as a double above FLOAT's maximum and
    refuses it), bytes as X'..' (a bit string to PostgreSQL, which refuses it for bytea)."""
    inner = type(base).literal

    def literal(self: Dialect, t: SqlType, v: Value) -> str:
        if (t.kind is Kind.FLOAT and isinstance(v, float) and abs(v) != float("inf")) or isinstance(v, bytes):
            return tidb_sql.literal(t, v)
        return inner(self, t, v)

    return _wrap(base, literal=literal)


def datetime_drops_fraction(base: Dialect) -> Dialect:
    """Date-time and time literals without their fractional seconds: the server stores another value."""
    inner = type(base).literal

    def literal(self: Dialect, t: SqlType, v: Value) -> str:
        if isinstance(v, (DateTime, Time)) and v.microsecond:
            v = dataclasses.replace(v, microsecond=0)
        return inner(self, t, v)

    return _wrap(base, literal=literal)


def update_where_after_image(base: Dialect) -> Dialect:
    """UPDATE ... WHERE built from the new image instead of the old one: an update that moves
    a row's key matches nothing."""
    inner = type(base).dml

    def dml(self: Dialect, change: RowChange) -> str:
        if change.op is Op.UPDATE:
            assert change.before is not None and change.after is not None
            text = inner(self, change)
            head = text[: text.rindex(" WHERE ")]
            return f"{head} WHERE {self.where(change.table, change.after)};"
        return inner(self, change)

    return _wrap(base, dml=dml)


def capture_drops_column(logged: list[LoggedEvent]) -> list[LoggedEvent]:
    """A capture that loses the last column of every row image."""

    def cut(img: dict[str, Value] | None) -> dict[str, Value] | None:
        if img is None or not img:
            return img
        last = next(reversed(img))
        return {k: v for k, v in img.items() if k != last}

    return [dataclasses.replace(le, changes=tuple(RowChange(ch.op, ch.table, cut(ch.before), cut(ch.after))
                                                  for ch in le.changes)) for le in logged]


def capture_reorders(logged: list[LoggedEvent]) -> list[LoggedEvent]:
    """A capture that hands out two transactions in the wrong order."""
    out = list(logged)
    idx = [i for i, le in enumerate(out) if not le.is_ddl and le.changes]
    if len(idx) >= 2:
        i, j = idx[0], idx[1]
        out[i], out[j] = out[j], out[i]
    return out


MUTANTS: tuple[SourceMutant, ...] = (
    SourceMutant("tidb-literals", STATEMENT_EXECUTES, tidb_literals.__doc__ or "", dialect=tidb_literals),
    SourceMutant("update-where-after-image", ROWS_AFFECTED, update_where_after_image.__doc__ or "",
                 dialect=update_where_after_image),
    SourceMutant("datetime-drops-fraction", STORED_VALUES, datetime_drops_fraction.__doc__ or "",
                 dialect=datetime_drops_fraction),
    SourceMutant("capture-drops-column", LOG_IMAGES, capture_drops_column.__doc__ or "",
                 capture=capture_drops_column),
    SourceMutant("capture-reorders", COMMIT_ORDER, capture_reorders.__doc__ or "", capture=capture_reorders),
)


def source_mutant(name: str) -> SourceMutant:
    for m in MUTANTS:
        if m.name == name:
            return m
    raise KeyError(f"no source mutant {name!r}: {', '.join(m.name for m in MUTANTS)}")
