"""The canonical model: SQL types, values, tables, row changes, transactions, DDL, workloads.

Standard library only: every other package depends on this one, and it depends on nothing.
"""

from __future__ import annotations

from .events import (
    CaptureStart,
    Ddl,
    DdlKind,
    Event,
    LogicalMessage,
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
    ReplicaIdentity,
    Table,
)
from .types import TIDB_KINDS, InvalidType, Kind, SqlType
from .values import Array, Date, DateTime, Interval, Json, Row, Time, Value

__all__ = [
    "Array", "CaptureStart", "Column", "DEFAULT_CURRENT_TIMESTAMP", "DEFAULT_NULL", "Date", "DateTime", "Ddl",
    "DdlKind", "Default", "DefaultKind", "Event", "Index", "Interval", "InvalidType", "Json", "Kind", "LogicalMessage",
    "NO_DEFAULT", "Op", "ReplicaIdentity", "Row", "RowChange", "SqlType", "TIDB_KINDS", "Table", "Time",
    "Transaction", "Value", "Watermark", "Workload",
    "tso", "tso_physical_ms",
]
