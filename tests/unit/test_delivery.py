"""The delivery analysis: every anomaly of the taxonomy, and what must stay unknown."""

from __future__ import annotations

from conformance.checks.delivery import (
    TAXONOMY,
    Anomaly,
    DeliveryEvidence,
    LogEntry,
    Sent,
    Version,
    analyse,
    analyse_log,
    commit_ts_order,
    no_loss,
    one_partition_per_key,
    per_key_order,
)
from conformance.checks.registry import NotApplicable
from conformance.protocols import anomaly_checks, get_check

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


def test_every_anomaly_names_the_checks_that_report_it() -> None:
    """The watermark anomalies are the protocols' own stream checks' business (they see the
    watermarks); every other anomaly but the allowed duplicate has a delivery or infra check."""
    for kind in TAXONOMY.values():
        for cid in anomaly_checks(kind.name):
            assert get_check(cid).id == cid
        assert anomaly_checks(kind.name) or kind.name is Anomaly.DUPLICATED
    assert "ticdc-simple.order.watermark" in anomaly_checks(Anomaly.LATE_EVENT_AFTER_WATERMARK)
    assert "ticdc-avro.watermark.order" in anomaly_checks(Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK)


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



def test_a_missing_look_alike_is_not_the_next_one_out_of_order() -> None:
    """A key deleted twice, the first tombstone never written: the tombstone after the second
    insert is the second delete (the first is missing), not the first one late."""
    vs = [Version("k", 0, "ins1"), Version("k", 1, "del"), Version("k", 2, "ins2"), Version("k", 3, "del")]
    log = [LogEntry(T, 0, i, "k", m) for i, m in enumerate(["ins1", "ins2", "del"])]
    rep = analyse(vs, log)
    assert rep.of(Anomaly.REORDERED_WITHIN_KEY) == []
    assert [f.detail for f in rep.of(Anomaly.LOST)] == ["version 1 (commit ts None) never reached the log"]
    # in order: the tombstone before the second insert is the first delete
    rep = analyse(vs, [LogEntry(T, 0, i, "k", m) for i, m in enumerate(["ins1", "del", "ins2", "del"])])
    assert rep.findings == []


def test_a_retried_look_alike_is_a_copy_and_a_missing_one_is_not_borrowed() -> None:
    vs = [Version("k", 0, "ins1"), Version("k", 1, "del"), Version("k", 2, "ins2"), Version("k", 3, "del"),
          Version("k", 4, "ins3"), Version("k", 5, "del")]

    def run(*matches: str):  # type: ignore[no-untyped-def]
        return analyse(vs, [LogEntry(T, 0, i, "k", m) for i, m in enumerate(matches)])

    # a tombstone retried right after itself: a copy of it, not the next delete come early
    rep = run("ins1", "del", "del", "ins2", "del", "ins3", "del")
    assert rep.of(Anomaly.REORDERED_WITHIN_KEY) == [] and rep.of(Anomaly.LOST) == []
    assert [f.detail for f in rep.of(Anomaly.DUPLICATED)] == ["version 1 seen 2 times"]
    # an insert missing between two tombstones: the second tombstone is the later delete
    rep = run("ins1", "del", "ins2", "del", "del")
    assert [f.detail for f in rep.of(Anomaly.LOST)] == ["version 4 (commit ts None) never reached the log"]
    assert rep.of(Anomaly.REORDERED_WITHIN_KEY) == [] and rep.of(Anomaly.DUPLICATED) == []
    # a replayed tail after a restart: copies
    rep = run("ins1", "del", "ins2", "del", "ins2", "del", "ins3", "del")
    assert len(rep.of(Anomaly.DUPLICATED)) == 2 and rep.of(Anomaly.REORDERED_WITHIN_KEY) == []
    assert rep.of(Anomaly.LOST) == []


# -- the checks' verdicts -----------------------------------------------------------------------

def test_unknown_rows_and_none_lost_is_not_a_pass() -> None:
    """Retention removed offsets a version may have had: no-loss says it cannot tell, with how
    many and why, rather than passing (G3)."""
    a = versions("a", 3)
    ev = DeliveryEvidence(T, analyse(a, [entry(5, a[2])], low_watermarks={(T, 0): 5}))
    got = no_loss(ev)
    assert isinstance(got, NotApplicable)
    assert "2 of 3 row change(s) unknown" in got.reason and "retention removed offsets 0-4 of partition 0" in got.reason
    # a loss is still a loss when other rows are unknown (retention spares no version of its
    # topic: which partition a version would have had is not known)
    lost = Version("b", 0, "b0", topic=T)
    rep = analyse([*a, lost], [entry(5, a[2])], [Sent("b", "b0", T, None, None, error="MSG_TIMED_OUT")],
                  low_watermarks={(T, 0): 5})
    assert rep.unknown == 3 and rep.of(Anomaly.LOST) == []
    rep = analyse([*a, Version("b", 0, "b0", topic="elsewhere")], [entry(5, a[2])], low_watermarks={(T, 0): 5})
    assert rep.unknown == 2 and len(rep.of(Anomaly.LOST)) == 1
    assert isinstance(no_loss(DeliveryEvidence(T, rep)), list)
    assert no_loss(DeliveryEvidence(T, analyse(a, [entry(i, v) for i, v in enumerate(a)]))) is None


def test_duplicates_are_counted() -> None:
    a = versions("a", 3)
    rep = analyse(a, [entry(0, a[0]), entry(1, a[1]), entry(2, a[0]), entry(3, a[1]), entry(4, a[2])])
    assert rep.duplicates == 2 and rep.delivered == 3


# -- without the workload -----------------------------------------------------------------------

def log_of(*items: tuple[int, str, int | None], part: int = 0) -> list[LogEntry]:
    """(offset, entity, commit ts) entries; the match is the commit ts (or the entity's tombstone)."""
    return [LogEntry(T, part, off, ent, ts if ts is not None else "tombstone", ts, fingerprint=(off,))
            for off, ent, ts in items]


def log_only(log: list[LogEntry], **kw: object) -> DeliveryEvidence:
    return DeliveryEvidence(T, analyse_log(log, **kw), with_source=False)  # type: ignore[arg-type]


def test_log_alone_clean() -> None:
    ev = log_only(log_of((0, "a", 1), (1, "b", 2), (2, "a", 3), (3, "a", None)))
    assert ev.report.findings == [] and ev.report.delivered == 4 and ev.report.with_ts == 3
    for fn in (per_key_order, commit_ts_order, one_partition_per_key):
        assert fn(ev) is None


def test_log_alone_commit_ts_regression_and_reorder_within_key() -> None:
    ev = log_only(log_of((0, "a", 1), (1, "b", 5), (2, "b", 3), (3, "a", 2)))
    regressions = ev.report.of(Anomaly.COMMIT_TS_REGRESSION)
    assert [f.offset for f in regressions] == [2, 3]  # 3 after 5, 2 after 5
    assert [f.offset for f in ev.report.of(Anomaly.REORDERED_WITHIN_KEY)] == [2]  # b: 3 after 5; a: 1 then 2 is fine
    assert commit_ts_order(ev) and per_key_order(ev)


def test_log_alone_a_replay_is_a_duplicate_not_a_reorder() -> None:
    # a restart re-sent offsets 0-1 after 2: the same (entity, commit ts) again
    ev = log_only(log_of((0, "a", 1), (1, "a", 2), (2, "a", 3), (3, "a", 1), (4, "a", 2), (5, "a", 4)))
    assert ev.report.findings[0].anomaly is Anomaly.DUPLICATED
    assert ev.report.of(Anomaly.COMMIT_TS_REGRESSION) == [] and ev.report.of(Anomaly.REORDERED_WITHIN_KEY) == []
    assert ev.report.duplicates == 2 and ev.report.delivered == 4


def test_log_alone_without_commit_ts_nothing_is_deduplicated_or_ordered() -> None:
    # a key deleted twice: the same tombstone, a new version each time
    ev = log_only(log_of((0, "a", None), (1, "a", None)))
    assert ev.report.duplicates == 0 and ev.report.delivered == 2
    assert isinstance(commit_ts_order(ev), NotApplicable) and isinstance(per_key_order(ev), NotApplicable)
    no_ts = DeliveryEvidence(T, ev.report, has_commit_ts=False, with_source=False)
    assert isinstance(per_key_order(no_ts), NotApplicable) and "no commit ts" in per_key_order(no_ts).reason  # type: ignore[union-attr]
    assert one_partition_per_key(no_ts) is None


def test_log_alone_key_in_several_partitions() -> None:
    ev = log_only(log_of((0, "a", 1), (1, "b", 2)) + log_of((0, "a", 3), part=1))
    (f,) = ev.report.of(Anomaly.KEY_IN_SEVERAL_PARTITIONS)
    assert f.entity == "a" and "topic[0]" in f.detail and "topic[1]" in f.detail
    assert one_partition_per_key(ev)


def test_log_alone_read_from_above_zero_says_a_replay_may_hide() -> None:
    ev = log_only(log_of((7, "a", 5), (8, "a", 4)), starts={(T, 0): 7})
    (f,) = ev.report.of(Anomaly.COMMIT_TS_REGRESSION)
    assert f.hint is not None and "below 7" in f.hint
    failures = commit_ts_order(ev)
    assert isinstance(failures, list) and failures[0].hint == f.hint
    assert log_only(log_of((0, "a", 5), (1, "a", 4))).report.findings[0].hint is None


def test_log_alone_undecodable_messages_are_counted_apart() -> None:
    ev = log_only([LogEntry(T, 0, 0, None, None)])
    assert ev.report.unattributed == 1 and ev.report.delivered == 0
    assert isinstance(one_partition_per_key(ev), NotApplicable)


def test_tables_sharing_a_partition_may_interleave_in_commit_ts() -> None:
    """TiCDC orders each table's events; tables that share a partition interleave (tiflow's
    consumer keeps one high watermark per table and partition). With ts_scope="entity" (Simple,
    whose entity is a table) only a table going back in commit ts is a regression."""
    a, b = versions("a", 2, 100), versions("b", 2, 200)
    interleaved = [entry(0, b[0]), entry(1, a[0]), entry(2, b[1]), entry(3, a[1])]  # a's 100 after b's 200
    assert len(analyse(a + b, interleaved).of(Anomaly.COMMIT_TS_REGRESSION)) == 2
    assert analyse(a + b, interleaved, ts_scope="entity").findings == []
    backwards = [entry(0, b[0]), entry(1, a[1]), entry(2, a[0]), entry(3, b[1])]  # a: 101 then 100
    (reg,) = analyse(a + b, backwards, ts_scope="entity").of(Anomaly.COMMIT_TS_REGRESSION)
    assert reg.offset == 2 and "of the same table" in reg.detail

    log = log_of((0, "b", 200), (1, "a", 100), (2, "b", 201), (3, "a", 101))
    assert len(analyse_log(log).of(Anomaly.COMMIT_TS_REGRESSION)) == 2
    assert log_only(log, ts_scope="entity").report.findings == []
    (reg,) = analyse_log(log_of((0, "b", 200), (1, "a", 101), (2, "a", 100)), ts_scope="entity").of(
        Anomaly.COMMIT_TS_REGRESSION)
    assert reg.offset == 2 and reg.hint is None
