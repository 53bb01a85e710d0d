"""`debezium.delete.tombstone` over long logs: a delete's next message of its key is found by one
pass over the partition's log (`checks._next_of_deletes`), the same message a scan from each
delete finds, without reading the log once per delete (a topic of a million deletes whose keys
never come again would take hours)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks.registry import Failure, NotApplicable
from conformance.protocols.debezium import checks
from conformance.protocols.debezium.checker import Entry, StreamEvidence
from conformance.protocols.debezium.spec import DbzOptions

_entries = st.lists(st.builds(Entry, st.integers(0, 10 ** 6), st.sampled_from(["c", "u", "d", "r", "tombstone", "other"]),
                              st.sampled_from([None, "k1", "k2", "k3", "k4"])), max_size=40)


def _scan(log: list[Any]) -> dict[int, Any]:
    """The next message of each delete's key, by a scan from the delete (the rule as written)."""
    return {i: nxt for i, e in enumerate(log) if e.kind == "d" and e.key is not None
            for nxt in [next((x for x in log[i + 1:] if x.key == e.key), None)] if nxt is not None}


@settings(max_examples=300, deadline=None)
@given(_entries)
def test_the_next_message_of_each_delete_is_the_scans(log: list[Any]) -> None:
    got = checks._next_of_deletes(log)
    want = _scan(log)
    assert got.keys() == want.keys()
    assert all(got[i] is want[i] for i in want)


class _Counted(list):  # type: ignore[type-arg]
    """A log that counts the entries read from it."""

    reads = 0

    def __getitem__(self, i: Any) -> Any:
        got = super().__getitem__(i)
        _Counted.reads += len(got) if isinstance(i, slice) else 1
        return got

    def __iter__(self) -> Any:
        for x in super().__iter__():
            _Counted.reads += 1
            yield x


def _judge(log: list[Any], complete: bool) -> list[Any]:
    ev = StreamEvidence("t", {0: log}, DbzOptions(), complete)
    return list(checks.delete_tombstone(ev))


def test_a_long_log_of_deletes_is_read_a_few_times_not_once_per_delete() -> None:
    n = 20_000
    log = _Counted(Entry(i, "d", f"k{i}") for i in range(n))  # deletes whose keys never come again
    _Counted.reads = 0
    assert _judge(log, complete=False) == [NotApplicable("no delete")]
    assert _Counted.reads <= 3 * n
    _Counted.reads = 0
    found = _judge(log, complete=True)
    assert len(found) == n and all(isinstance(f, Failure) for f in found)
    assert _Counted.reads <= 3 * n


def test_a_delete_followed_by_its_tombstone_or_by_another_message() -> None:
    log = [Entry(0, "d", "a"), Entry(1, "c", "b"), Entry(2, "tombstone", "a"), Entry(3, "d", "b"), Entry(4, "c", "b")]
    found = _judge(log, complete=True)
    assert len(found) == 1 and isinstance(found[0], Failure) and found[0].location.offset == 3
    assert "c at offset 4" in str(found[0].actual)
