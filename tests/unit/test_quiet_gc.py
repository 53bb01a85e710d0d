"""The check loops' garbage-collector setting (`harness.check._quiet_gc`): quieter inside, as it was
after, and never off (cycles a loop drops are still freed while it runs, so a long check's memory
stays bounded)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from conformance.checks.delivery import LogEntry
from conformance.encoders.spi import Record
from conformance.harness import check
from conformance.harness.capture import DeliveryLogs
from conformance.harness.check import QUIET_GC_THRESHOLD, _quiet_gc, capture_tally, check_log
from conformance.protocols import get_protocol


def test_quiet_inside_and_as_before_after() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert before != QUIET_GC_THRESHOLD
    with _quiet_gc():
        assert gc.get_threshold() == QUIET_GC_THRESHOLD
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen  # the heap the loop found is out of the collector's walks
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_restored_when_the_loop_raises() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(RuntimeError), _quiet_gc():
        raise RuntimeError("a check loop that fails")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_nested_loops_share_the_outer_setting() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with _quiet_gc():
        inside = gc.get_freeze_count()
        with _quiet_gc():
            assert gc.get_threshold() == QUIET_GC_THRESHOLD
        # The inner loop's end does not undo the outer's setting.
        assert gc.get_threshold() == QUIET_GC_THRESHOLD
        # Still frozen (a frozen object freed meanwhile, e.g. by another thread, leaves the count).
        assert gc.get_freeze_count() > inside // 2
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen
    assert check._gc_depth == 0


def test_a_heap_someone_else_froze_stays_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with _quiet_gc():
            assert gc.get_threshold() == QUIET_GC_THRESHOLD
        # Not thawed: `gc.unfreeze` would empty it (a frozen object freed meanwhile, e.g. by
        # another thread of the test process, leaves the count on its own).
        assert gc.get_freeze_count() > frozen // 2 > 0
    finally:
        gc.unfreeze()


class _Node:
    """A cycle's half (each points at the other), counted while alive."""

    alive = 0
    peak = 0
    __slots__ = ("other",)

    def __init__(self) -> None:
        self.other: _Node | list[_Node] | None = None
        _Node.alive += 1
        _Node.peak = max(_Node.peak, _Node.alive)

    def __del__(self) -> None:
        _Node.alive -= 1


def _cycles(n: int) -> None:
    for _ in range(n):
        a, b = _Node(), _Node()
        a.other, b.other = b, a


def test_cycles_the_loop_drops_are_freed_while_it_runs() -> None:
    """Collection is quieter, never off: 200,000 cycles dropped one after another never have more
    than a few young generations' worth alive at once (with the collector off, all of them would)."""
    gc.collect()
    _Node.alive = _Node.peak = 0
    with _quiet_gc():
        _cycles(200_000)
        assert _Node.peak < 2 * QUIET_GC_THRESHOLD[0] * QUIET_GC_THRESHOLD[1] < 400_000, _Node.peak
    gc.collect()
    assert _Node.alive == 0


def test_long_lived_state_dropped_as_garbage_is_freed_while_the_loop_runs() -> None:
    """A check task's logs live long (promoted to the oldest generation) and then become garbage
    as a whole, cycles and all (a partition's checker, once its stream checks ran): full
    collections still come by the interpreter's rule and about as soon, so what is held stays
    bounded however many partitions the loop goes through (a 10M-record task on Spark)."""
    gc.collect()
    _Node.alive = _Node.peak = 0
    held: list[_Node] = []
    with _quiet_gc():
        for _partition in range(30):
            head = _Node()
            state = [head]
            for _ in range(40_000):
                n = _Node()
                n.other = head
                state.append(n)
            head.other = state  # type: ignore[assignment]  # a cycle through the whole log
            held = state
            del state, head, n
        peak = _Node.peak
    del held
    gc.collect()
    assert _Node.alive == 0
    # 30 partitions × 40,001 nodes were made; at most a few partitions' worth were ever alive
    # (~270k here, ~170k at the default thresholds; with full collections put off ten times
    # longer, ~840k; never collected, all 1.2M).
    assert peak < 30 * 40_001 / 3, peak


def _items(seen: list[tuple[int, int, int]]) -> Iterator[tuple[int, Record]]:
    seen.append(gc.get_threshold())
    yield 1, Record(topic="t", partition=0, offset=0, key=None, value=b"{}")
    seen.append(gc.get_threshold())


def test_check_log_runs_its_loop_quiet() -> None:
    suite = get_protocol("maxscale-kafkacdc")
    options = suite.resolve_options({})
    tally = capture_tally(suite, "a test")
    seen: list[tuple[int, int, int]] = []
    before = gc.get_threshold()
    assert check_log(suite, options, None, _items(seen), tally, delivery=DeliveryLogs(suite.name, options, None)) == 1
    assert seen == [QUIET_GC_THRESHOLD, QUIET_GC_THRESHOLD]
    assert gc.get_threshold() == before


def test_a_logs_kept_rows_leave_the_collectors_walks() -> None:
    """What `DeliveryLogs` keeps of every row message until its topic is judged is a plain tuple
    of atomic values, which the collector stops tracking the first time it meets one: the later
    collections of a long check do not walk hundreds of thousands of them again (a NamedTuple, a
    tuple subclass, would stay tracked). The rows read back as `LogEntry` fields, by position."""
    suite = get_protocol("ticdc-simple")
    options = suite.resolve_options({})
    logs = DeliveryLogs(suite.name, options, None)
    known = (("e", b"m", 7),)
    for off in range(3):
        logs.add_record(Record(topic="t", partition=1, offset=off, key=None, value=b"{}"), known)
    rows = logs.entries["t"]
    assert [tuple(r) for r in rows] == [tuple(LogEntry("t", 1, off, "e", b"m", 7, None)) for off in range(3)]
    gc.collect()
    assert all(type(r) is tuple and not gc.is_tracked(r) for r in rows)
