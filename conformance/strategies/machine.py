"""A hypothesis `RuleBasedStateMachine` over `HistoryBuilder`: DML/DDL histories as steps.

Subclass it and add invariants (e.g. "the encoder's output for the newest event passes every
check"); hypothesis then searches for a failing sequence and prints it as replayable steps.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from ..model.events import Event, Workload
from .history import DEFAULT_SHAPE, HistoryBuilder, Shape
from .source import HypothesisSource


class _LateSource(HypothesisSource):
    """A source whose `draw` is swapped for each rule's `data.draw`."""

    def __init__(self) -> None:
        super().__init__(lambda s: (_ for _ in ()).throw(RuntimeError("no draw bound")))


class WorkloadMachine(RuleBasedStateMachine):
    shape: Shape = DEFAULT_SHAPE

    def __init__(self) -> None:
        super().__init__()
        self.src = _LateSource()
        self.builder = HistoryBuilder(self.src, self.shape)
        self.seen = 0

    def _bind(self, data: Any) -> None:
        self.src.draw = data.draw

    def new_events(self) -> list[Event]:
        """Events added since the last call (hook for invariants)."""
        out = self.builder.events[self.seen:]
        self.seen = len(self.builder.events)
        return out

    @initialize(data=st.data())
    def create_schema(self, data: Any) -> None:
        self._bind(data)
        self.builder.create_database()
        self.builder.create_table()

    @precondition(lambda self: len(self.builder.tables) < 3)
    @rule(data=st.data())
    def create_table(self, data: Any) -> None:
        self._bind(data)
        self.builder.create_table()

    @rule(data=st.data())
    def transaction(self, data: Any) -> None:
        self._bind(data)
        self.builder.transaction()

    @rule(data=st.data())
    def ddl(self, data: Any) -> None:
        self._bind(data)
        self.builder.random_ddl()

    @rule()
    def watermark(self) -> None:
        self.builder.watermark()

    def workload(self) -> Workload:
        meta: dict[str, object] = {} if self.shape.dialect == "tidb" else {"dialect": self.shape.dialect}
        return Workload(tuple(self.builder.events), seed="state-machine", meta=meta)
