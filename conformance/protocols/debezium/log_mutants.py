"""Mutants whose defect the log shows by itself (`log_checks`): a capture alone must catch them."""

from __future__ import annotations

from typing import Any

from ...model.table import Column
from ...model.types import Kind
from ...model.values import Value
from .mutants import _RewritesValues, mutant


@mutant("smallint-as-text", "value.schema-conforms",
        shape={"kinds": (Kind.INT, Kind.SMALLINT, Kind.VARCHAR), "edge_rate": 0.3})
class SmallintAsText(_RewritesValues):
    """Writes smallint values as JSON strings although the schema beside them says int16."""

    def rewrite(self, c: Column, v: Value) -> Any:
        return str(v) if c.type.kind is Kind.SMALLINT else self.KEEP
