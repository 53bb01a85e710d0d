"""DML/DDL histories as hypothesis steps, checked event by event against the reference encoder."""

from __future__ import annotations

from hypothesis import settings
from hypothesis.stateful import invariant

from conformance.encoders.spi import EncoderContext
from conformance.harness.stages import new_tally
from conformance.infra.inprocess import InProcessRegistry
from conformance.protocols import get_protocol
from conformance.protocols.base import ENCODE
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder
from conformance.strategies.machine import WorkloadMachine

PROTOCOL = get_protocol("ticdc-avro")
OPTIONS = PROTOCOL.resolve_options({"enable-tidb-extension": "true"})
REGISTRY = InProcessRegistry()
RUN = [0]


class ReferenceMachine(WorkloadMachine):
    def __init__(self) -> None:
        super().__init__()
        RUN[0] += 1
        prefix = f"sm{RUN[0]}-"
        self.tally = new_tally(PROTOCOL)
        self.encoder = TiCDCAvroEncoder()
        self.encoder.open(EncoderContext(OPTIONS, REGISTRY, topic_prefix=prefix))
        self.checker = PROTOCOL.checker(OPTIONS, REGISTRY, self.tally, ENCODE, topic_prefix=prefix)

    @invariant()
    def newest_events_conform(self) -> None:
        for ev in self.new_events():
            self.checker.check_event(ev, self.encoder.encode(ev))
        failing = {t.id: [f.message for f in t.failures.values()] for t in self.tally if t.failed or t.errored}
        assert failing == {}


ReferenceMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=15, deadline=None)
TestReferenceMachine = ReferenceMachine.TestCase
