"""The canonical model: SQL types, values, tables, row changes, transactions, DDL, workloads.

Standard library only: every other package depends on this one, and it depends on nothing.
"""

from __future__ import annotations

from .events import (
    Ddl,
    DdlKind,
    Event,
    Op,
    RowChange,
    Transaction,
    Watermark,
    Workload,
    tso,
    tso_physical_ms,
)
from .table import (
    DEFAULT_CURRENT_TIMESTAMP,
    DEFAULT_NULL,
    NO_DEFAULT,
    Column,
    Default,
    DefaultKind,
    Index,
    Table,
)
from .types import InvalidType, Kind, SqlType
from .values import Date, DateTime, Json, Row, Time, Value

__all__ = [
    "Column", "DEFAULT_CURRENT_TIMESTAMP", "DEFAULT_NULL", "Date", "DateTime", "Ddl", "DdlKind",
    "Default", "DefaultKind", "Event", "Index", "InvalidType", "Json", "Kind", "NO_DEFAULT", "Op",
    "Row", "RowChange", "SqlType", "Table", "Time", "Transaction", "Value", "Watermark", "Workload",
    "tso", "tso_physical_ms",
]
