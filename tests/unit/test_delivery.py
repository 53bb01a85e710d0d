"""The delivery analysis: every anomaly of the taxonomy, and what must stay unknown."""

from __future__ import annotations

from conformance.checks.delivery import TAXONOMY, Anomaly, LogEntry, Sent, Version, analyse, watermark_findings

T = "topic"


def versions(entity: str, n: int, ts0: int = 100) -> list[Version]:
    return [Version(entity, i, (entity, i), ts=ts0 + i, topic=T) for i in range(n)]


def entry(off: int, v: Version, part: int = 0) -> LogEntry:
    return LogEntry(T, part, off, v.entity, v.match, v.ts, fingerprint=(v.entity, v.seq))


def test_clean_log() -> None:
    a, b = versions("a", 3), versions("b", 2, 200)
    log = [entry(i, v) for i, v in enumerate(a + b)]
    rep = analyse(a + b, log)
    assert rep.findings == [] and rep.delivered == 5 and rep.expected == 5


def test_lost_and_duplicated() -> None:
    a = versions("a", 3)
    log = [entry(0, a[0]), entry(1, a[1]), entry(2, a[0]), entry(3, a[1])]  # replay; a[2] never arrives
    rep = analyse(a, log)
    assert [f.anomaly for f in rep.of(Anomaly.LOST)] == [Anomaly.LOST]
    assert len(rep.of(Anomaly.DUPLICATED)) == 2
    assert rep.of(Anomaly.REORDERED_WITHIN_KEY) == []  # replays are duplicates, not reorders
    assert rep.of(Anomaly.COMMIT_TS_REGRESSION) == []
    assert TAXONOMY[Anomaly.DUPLICATED].allowed_at_least_once and not TAXONOMY[Anomaly.LOST].allowed_at_least_once


def test_reorder_within_key_and_commit_ts_regression() -> None:
    a = versions("a", 3)
    rep = analyse(a, [entry(0, a[0]), entry(1, a[2]), entry(2, a[1])])
    assert len(rep.of(Anomaly.REORDERED_WITHIN_KEY)) == 1
    assert rep.of(Anomaly.REORDERED_WITHIN_KEY)[0].offset == 2
    assert len(rep.of(Anomaly.COMMIT_TS_REGRESSION)) == 1
    assert Anomaly.COMMIT_TS_REGRESSION in TAXONOMY[Anomaly.REORDERED_WITHIN_KEY].implies


def test_key_in_several_partitions() -> None:
    a = versions("a", 2)
    rep = analyse(a, [entry(0, a[0], part=0), entry(0, a[1], part=1)])
    assert len(rep.of(Anomaly.KEY_IN_SEVERAL_PARTITIONS)) == 1


def test_unexpected_message() -> None:
    a = versions("a", 1)
    stranger = LogEntry(T, 0, 1, "zz", ("zz", 0))
    rep = analyse(a, [entry(0, a[0]), stranger])
    assert len(rep.of(Anomaly.UNEXPECTED)) == 1


def test_acked_but_missing_is_a_broker_anomaly_not_loss() -> None:
    a = versions("a", 2)
    sent = [Sent("a", a[0].match, T, 0, 0, fingerprint=("a", 0)), Sent("a", a[1].match, T, 0, 1, fingerprint=("a", 1))]
    rep = analyse(a, [entry(0, a[0])], sent)
    assert rep.of(Anomaly.LOST) == []
    assert len(rep.of(Anomaly.BROKER_LOST_ACK)) == 1 and rep.unknown == 1
    assert TAXONOMY[Anomaly.BROKER_LOST_ACK].actor.value == "infrastructure"


def test_failed_delivery_not_resent_is_loss() -> None:
    a = versions("a", 2)
    sent = [Sent("a", a[0].match, T, 0, 0), Sent("a", a[1].match, T, None, None, error="MSG_TIMED_OUT")]
    rep = analyse(a, [entry(0, a[0])], sent)
    assert len(rep.of(Anomaly.LOST)) == 1 and rep.unknown == 0


def test_retention_makes_missing_versions_unknown() -> None:
    a = versions("a", 3)
    rep = analyse(a, [entry(5, a[2])], low_watermarks={(T, 0): 5})
    assert rep.of(Anomaly.LOST) == [] and rep.unknown == 2
    assert len(rep.of(Anomaly.RETENTION)) == 1


def test_acked_offsets_below_the_low_watermark_are_retention_not_broker_loss() -> None:
    a = versions("a", 2)
    sent = [Sent("a", a[0].match, T, 0, 0), Sent("a", a[1].match, T, 0, 7)]
    rep = analyse(a, [entry(7, a[1])], sent, low_watermarks={(T, 0): 3})
    assert rep.of(Anomaly.BROKER_LOST_ACK) == [] and rep.unknown == 1


def test_watermarks() -> None:
    log = [(0, "row", 10, None), (1, "watermark", 10, None), (2, "row", 9, None), (3, "row", 20, None),
           (4, "watermark", 25, None), (5, "row", 20, None)]
    found = watermark_findings(log, {10: 1, 9: 1, 20: 2}, T, 0)
    kinds = [f.anomaly for f in found]
    assert kinds.count(Anomaly.LATE_EVENT_AFTER_WATERMARK) == 2  # ts 9 after wm 10, ts 20 after wm 25
    assert kinds.count(Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK) == 1  # wm 25 with 1 of 2 of ts 20


def test_acked_without_offset_and_missing_is_a_broker_anomaly() -> None:
    a = versions("a", 2)
    sent = [Sent("a", a[0].match, T, 0, 0), Sent("a", a[1].match, T, 0, None, acked=True)]
    rep = analyse(a, [entry(0, a[0])], sent)
    assert rep.of(Anomaly.LOST) == [] and rep.unknown == 1
    assert len(rep.of(Anomaly.BROKER_LOST_ACK)) == 1


def test_look_alike_versions_are_told_apart_by_order() -> None:
    # a key deleted twice, no commit ts in the message: both tombstones look the same
    vs = [Version("k", 0, "ins"), Version("k", 1, "del"), Version("k", 2, "ins"), Version("k", 3, "del")]
    log = [LogEntry(T, 0, i, "k", m) for i, m in enumerate(["ins", "del", "ins", "del"])]
    rep = analyse(vs, log)
    assert rep.findings == [] and rep.delivered == 4
    rep2 = analyse(vs, log[:2])  # the second pair never arrived
    assert len(rep2.of(Anomaly.LOST)) == 2
    rep3 = analyse(vs, log + log[2:])  # replay of the second pair
    assert len(rep3.of(Anomaly.DUPLICATED)) == 2 and rep3.of(Anomaly.LOST) == []
