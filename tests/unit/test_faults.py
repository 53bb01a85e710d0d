"""Fault schedules: parsing, planning and the injector's timing, without sockets or sleeping."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from conformance.infra.faults import (
    GRAMMAR,
    LOST_ACK_RTT_MS,
    Action,
    BrokerDown,
    Disconnects,
    FaultInjector,
    FaultSchedule,
    FaultsUnsupported,
    Latency,
    LeaderMoves,
    LostAcks,
    RequestErrors,
    default_broker,
    plan,
)
from conformance.infra.mockcluster import ApiKey, error_code, error_name

# -- fakes ----------------------------------------------------------------------------------


class FakeMock:
    """Records every call the plan makes, as (method, args) tuples."""

    def __init__(self, brokers: int = 3, fail_on: str | None = None) -> None:
        self.brokers = brokers
        self.calls: list[tuple[object, ...]] = []
        self.fail_on = fail_on

    def _record(self, *call: object) -> None:
        if call[0] == self.fail_on:
            raise RuntimeError(f"{call[0]} refused")
        self.calls.append(call)

    def broker_down(self, broker_id: int) -> None:
        self._record("broker_down", broker_id)

    def broker_up(self, broker_id: int) -> None:
        self._record("broker_up", broker_id)

    def set_rtt(self, broker_id: int, ms: int) -> None:
        self._record("set_rtt", broker_id, ms)

    def push_request_errors(self, api_key: ApiKey | int, errors: Sequence[str | int]) -> None:
        self._record("push", ApiKey(api_key).name, tuple(errors))

    def clear_request_errors(self, api_key: ApiKey | int) -> None:
        self._record("clear", ApiKey(api_key).name)

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        self._record("leader", topic, partition, broker_id)


class FakeCluster:
    def __init__(self, mock: FakeMock | None, partitions: dict[str, int], leaders: dict[str, dict[int, int]]) -> None:
        self.url = "embedded://?brokers=3" if mock is not None else "kafka://broker:9092"
        self.kind = "embedded" if mock is not None else "external"
        self.mock = mock
        self._partitions = partitions
        self._leaders = leaders

    def partitions(self, topic: str) -> int:
        return self._partitions[topic]

    def leaders(self, topic: str) -> dict[int, int]:
        return dict(self._leaders.get(topic, {}))


class FakeTime:
    """A clock that only moves when the injector sleeps; it never passes ``limit`` seconds."""

    def __init__(self, limit: float = float("inf")) -> None:
        self.now = 1000.0
        self.limit = 1000.0 + limit
        self.sleeps = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> bool:
        self.sleeps += 1
        if self.now + seconds > self.limit:
            time.sleep(0.005)  # parked at the limit: let the test act, then stop
            return False
        self.now += seconds
        return False


def apply_all(actions: list[Action], mock: FakeMock) -> list[tuple[object, ...]]:
    for action in actions:
        action.apply(mock)
    return mock.calls


# -- parsing --------------------------------------------------------------------------------

EXAMPLE = (
    "broker-down@2s:3s,produce-errors@5s:NOT_LEADER_FOR_PARTITION×5,latency@1s:4s:500ms,"
    "leader-moves@3s:2s:5,lost-acks@4s:3s,disconnects@6s:5"
)


def test_parses_every_kind_of_the_documented_example() -> None:
    s = FaultSchedule.parse(EXAMPLE)
    assert s.faults == (
        BrokerDown(2000, 3000, None),
        RequestErrors("produce", 5000, "NOT_LEADER_FOR_PARTITION", 5),
        Latency(1000, 4000, 500, None),
        LeaderMoves(3000, 2000, 5),
        LostAcks(4000, 3000, None),
        Disconnects(6000, 5),
    )
    assert str(s) == EXAMPLE
    assert FaultSchedule.parse(str(s)) == s
    assert s.duration == 7.0  # lost-acks ends at 4s + 3s


def test_optional_arguments_and_fetch_errors() -> None:
    s = FaultSchedule.parse("broker-down@0s:1s:2,latency@0ms:1s:20ms:3,lost-acks@1s:2s:1,fetch-errors@1s:request_timed_out")
    assert s.faults == (
        BrokerDown(0, 1000, 2),
        Latency(0, 1000, 20, 3),
        LostAcks(1000, 2000, 1),
        RequestErrors("fetch", 1000, "REQUEST_TIMED_OUT", 1),
    )
    assert str(s) == "broker-down@0s:1s:2,latency@0s:1s:20ms:3,lost-acks@1s:2s:1,fetch-errors@1s:REQUEST_TIMED_OUT×1"
    assert s.faults[3].api_key is ApiKey.Fetch


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("produce-errors@1.5s:not_leader_for_partitionx5", "produce-errors@1.5s:NOT_LEADER_FOR_PARTITION×5"),
        ("produce-errors@1500ms:NOT_LEADER_FOR_PARTITION*5", "produce-errors@1.5s:NOT_LEADER_FOR_PARTITION×5"),
        ("produce-errors@2000ms:NOT_LEADER_FOR_PARTITION × 5", "produce-errors@2s:NOT_LEADER_FOR_PARTITION×5"),
        ("produce-errors@0.25s:transport×2", "produce-errors@250ms:_TRANSPORT×2"),
        ("produce-errors@1s:_transport", "produce-errors@1s:_TRANSPORT×1"),
        ("PRODUCE-ERRORS@1s:not_enough_replicas×3", "produce-errors@1s:NOT_ENOUGH_REPLICAS×3"),
        ("fetch-errors@1.234s:INVALID_TXN_STATE×2", "fetch-errors@1.234s:INVALID_TXN_STATE×2"),
        (" disconnects@6s:x5 , leader-moves@0s:1s:*2 ", "disconnects@6s:5,leader-moves@0s:1s:2"),
        ("latency@1s:4s:1.5s", "latency@1s:4s:1.5s"),
    ],
)
def test_alternative_spellings_render_canonically(text: str, canonical: str) -> None:
    s = FaultSchedule.parse(text)
    assert str(s) == canonical
    assert FaultSchedule.parse(canonical) == s


def test_empty_schedule() -> None:
    s = FaultSchedule.parse("  ")
    assert s.faults == () and not s and str(s) == "" and s.duration == 0


@pytest.mark.parametrize(
    ("text", "item", "why"),
    [
        ("broker-down@2s", "broker-down@2s", "broker-down@START:DURATION[:BROKER]"),
        ("bogus@1s", "bogus@1s", "unknown fault kind 'bogus'"),
        ("broker-down 2s:3s", "broker-down 2s:3s", "missing '@START'"),
        ("broker-down@2x:3s", "broker-down@2x:3s", "start '2x' is not a time"),
        ("broker-down@2s:3", "broker-down@2s:3", "duration '3' is not a time"),
        ("broker-down@2s:3s:0", "broker-down@2s:3s:0", "broker '0' is not a broker id"),
        ("latency@1s:4s", "latency@1s:4s", "latency@START:DURATION:RTT[:BROKER]"),
        ("latency@1s:4s:0.5ms", "latency@1s:4s:0.5ms", "finer than a millisecond"),
        ("produce-errors@1s:NOPE×5", "produce-errors@1s:NOPE×5", "Unknown Kafka error name 'NOPE'"),
        ("produce-errors@1s:NOT_LEADER_FOR_PARTITIO×5", "NOT_LEADER_FOR_PARTITIO", "Did you mean NOT_LEADER_FOR_PARTITION"),
        ("produce-errors@1s:NO_ERROR", "produce-errors@1s:NO_ERROR", "NO_ERROR is not an error to inject"),
        ("disconnects@1s:0", "disconnects@1s:0", "count '0' is not a count"),
        ("leader-moves@1s:2s", "leader-moves@1s:2s", "leader-moves@START:DURATION:N"),
        ("broker-down@1s:1s,,latency@1s:1s:1ms", "#2", "stray comma"),
        ("broker-down@1s:1s,lost-acks@1s", "lost-acks@1s", "fault #2"),
    ],
)
def test_errors_name_the_bad_item_and_quote_the_grammar(text: str, item: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        FaultSchedule.parse(text)
    message = str(info.value)
    assert item in message
    assert why in message
    assert GRAMMAR in message


def test_error_codes_by_name() -> None:
    assert error_code("not_leader_for_partition") == error_code("NOT_LEADER_FOR_PARTITION") == 6
    assert error_code("transport") == error_code("_TRANSPORT") == -195
    assert error_name(-195) == "_TRANSPORT" and error_name(6) == "NOT_LEADER_FOR_PARTITION"
    assert error_name(99999) == "ERR_99999"
    with pytest.raises(ValueError, match="Unknown Kafka error code"):
        error_code(99999)


# -- planning -------------------------------------------------------------------------------

TOPICS = {"orders": 3, "users": 2}
LEADERS = {("orders", 0): 2, ("orders", 1): 3, ("orders", 2): 1, ("users", 0): 1, ("users", 1): 2}


def test_plan_is_time_ordered_with_undo_actions() -> None:
    actions = plan(FaultSchedule.parse(EXAMPLE), TOPICS, 3, LEADERS)
    times = [a.at_ms for a in actions]
    assert times == sorted(times)
    described = [(a.at_ms, a.description) for a in actions if not a.description.startswith("leader move")]
    assert described == [
        (1000, "every broker answers after 500ms"),
        (2000, "broker 2 down"),  # the leader of orders[0]
        (4000, "every broker holds its acks (RTT 10s)"),
        (5000, "broker 2 up"),  # same instant: ends first, then schedule order
        (5000, "every broker RTT back to 0"),  # latency ends
        (5000, "next 5 Produce request(s) fail with NOT_LEADER_FOR_PARTITION"),
        (6000, "next 5 Produce request(s) drop the connection"),
        (7000, "every broker RTT back to 0"),  # lost-acks ends
    ]
    calls = apply_all([a for a in actions if not a.description.startswith("leader move")], FakeMock())
    assert calls == [
        ("set_rtt", -1, 500),
        ("broker_down", 2),
        ("set_rtt", -1, LOST_ACK_RTT_MS),
        ("broker_up", 2),
        ("set_rtt", -1, 0),
        ("push", "Produce", ("NOT_LEADER_FOR_PARTITION",) * 5),
        ("push", "Produce", ("_TRANSPORT",) * 5),
        ("set_rtt", -1, 0),
    ]


def test_actions_that_turn_state_on_carry_their_reset() -> None:
    actions = plan(FaultSchedule.parse("broker-down@1s:1s:3,produce-errors@0s:REQUEST_TIMED_OUT×2"), TOPICS, 3)
    starts = {a.description: a for a in actions if a.reset is not None}
    ends = [a for a in actions if a.reset is None]
    assert set(starts) == {"broker 3 down", "next 2 Produce request(s) fail with REQUEST_TIMED_OUT"}
    assert [a.description for a in ends] == ["broker 3 up"]
    assert ends[0].state == starts["broker 3 down"].state == ("down", 3)
    mock = FakeMock()
    for action in starts.values():
        assert action.reset is not None
        action.reset(mock)
    assert sorted(mock.calls) == [("broker_up", 3), ("clear", "Produce")]


def test_back_to_back_faults_end_before_the_next_starts() -> None:
    # The first latency ends at 2s exactly when the second starts: RTT 0 must not win.
    actions = plan(FaultSchedule.parse("latency@2s:1s:30ms:1,latency@0s:2s:10ms:1"), TOPICS, 3)
    assert [(a.at_ms, a.description) for a in actions] == [
        (0, "broker 1 answers after 10ms"),
        (2000, "broker 1 RTT back to 0"),
        (2000, "broker 1 answers after 30ms"),
        (3000, "broker 1 RTT back to 0"),
    ]


def test_lost_acks_hold_responses_for_the_whole_fault() -> None:
    short, long = plan(FaultSchedule.parse("lost-acks@0s:3s:2,lost-acks@10s:30s"), TOPICS, 3)[0::2]
    assert apply_all([short, long], FakeMock()) == [("set_rtt", 2, LOST_ACK_RTT_MS), ("set_rtt", -1, 30_000)]
    custom = plan(FaultSchedule.parse("lost-acks@0s:1s"), TOPICS, 3, lost_ack_rtt_ms=2500)[0]
    assert apply_all([custom], FakeMock()) == [("set_rtt", -1, 2500)]


def test_default_broker_choice() -> None:
    assert default_broker(TOPICS, LEADERS, 3) == 2  # leader of orders[0]
    assert default_broker({"users": 2, "orders": 3}, LEADERS, 3) == 1  # leader of users[0]
    assert default_broker(TOPICS, None, 3) == 1
    assert default_broker({}, LEADERS, 3) == 1
    assert default_broker(TOPICS, {("orders", 0): -1}, 3) == 1  # leaderless: fall back
    assert default_broker(TOPICS, {("orders", 0): 7}, 3) == 1  # stale id beyond the cluster
    down = plan(FaultSchedule.parse("broker-down@0s:1s"), {"users": 2}, 3, LEADERS)[0]
    assert down.description == "broker 1 down"


def test_leader_moves_spread_evenly_round_robin() -> None:
    actions = plan(FaultSchedule.parse("leader-moves@3s:2s:4"), {"orders": 3}, 3, LEADERS)
    assert [a.at_ms for a in actions] == [3000, 3500, 4000, 4500]
    mock = FakeMock()
    per_move = []
    for action in actions:
        mock.calls.clear()
        action.apply(mock)
        per_move.append([c[3] for c in mock.calls])
    # orders[0] starts on 2, orders[1] on 3, orders[2] on 1; each move advances one broker.
    assert per_move == [[3, 1, 2], [1, 2, 3], [2, 3, 1], [3, 1, 2]]
    assert actions[0].description == "leader move 1/4: orders[0]→3 orders[1]→1 orders[2]→2"


def test_leader_moves_without_known_leaders_and_with_many_partitions() -> None:
    actions = plan(FaultSchedule.parse("leader-moves@0s:1s:3"), {"big": 10}, 2)
    assert [a.at_ms for a in actions] == [0, 333, 666]
    first = apply_all(actions[:1], FakeMock(brokers=2))
    # Without metadata partition p is assumed on broker p % 2 + 1, so every leader flips.
    assert [c[3] for c in first] == [2, 1] * 5
    assert actions[0].description.endswith("(+4 more)")


def test_plan_rejects_impossible_faults() -> None:
    with pytest.raises(ValueError, match=r"names broker 4, but the cluster has brokers 1\.\.3"):
        plan(FaultSchedule.parse("broker-down@0s:1s:4"), TOPICS, 3)
    with pytest.raises(ValueError, match="latency@0s:1s:5ms:9"):
        plan(FaultSchedule.parse("latency@0s:1s:5ms:9"), TOPICS, 3)
    with pytest.raises(ValueError, match="no topic is watched"):
        plan(FaultSchedule.parse("leader-moves@0s:1s:2"), {}, 3)


# -- the injector ---------------------------------------------------------------------------


def test_injector_applies_the_plan_at_its_offsets() -> None:
    mock = FakeMock()
    cluster = FakeCluster(mock, {"orders": 3}, {"orders": {0: 3, 1: 1, 2: 2}})
    fake = FakeTime()
    injector = FaultInjector(
        cluster, "broker-down@2s:3s,produce-errors@1s:NOT_LEADER_FOR_PARTITION×2", ["orders"],
        clock=fake.clock, sleep=fake.sleep,
    )
    with injector:
        assert injector.wait(5.0)
    assert injector.log == [
        (1.0, "next 2 Produce request(s) fail with NOT_LEADER_FOR_PARTITION"),
        (2.0, "broker 3 down"),
        (5.0, "broker 3 up"),
        (5.0, "(stop) clear pending Produce errors"),
    ]
    assert mock.calls == [
        ("push", "Produce", ("NOT_LEADER_FOR_PARTITION", "NOT_LEADER_FOR_PARTITION")),
        ("broker_down", 3),
        ("broker_up", 3),
        ("clear", "Produce"),
    ]
    assert injector.errors == [] and injector.active == []
    injector.stop()  # idempotent
    assert len(injector.log) == 4


def test_stop_undoes_what_is_still_active() -> None:
    mock = FakeMock()
    cluster = FakeCluster(mock, {"t": 1}, {"t": {0: 2}})
    fake = FakeTime(limit=10.0)
    injector = FaultInjector(
        cluster, "broker-down@1s:3600s,latency@2s:3600s:50ms:3,leader-moves@0s:3600s:2", ["t"],
        clock=fake.clock, sleep=fake.sleep,
    )
    injector.start()
    deadline = time.monotonic() + 5
    while len(injector.log) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert injector.running
    assert injector.active == ["broker 2 down", "broker 3 answers after 50ms"]
    injector.stop()
    assert not injector.running
    assert [text for _, text in injector.log] == [
        "leader move 1/2: t[0]→3",
        "broker 2 down",
        "broker 3 answers after 50ms",
        "(stop) broker 3 RTT back to 0",
        "(stop) broker 2 up",
    ]
    assert mock.calls[-2:] == [("set_rtt", 3, 0), ("broker_up", 2)]
    with pytest.raises(RuntimeError, match="runs once"):
        injector.start()


def test_failed_actions_are_logged_and_the_run_goes_on() -> None:
    mock = FakeMock(fail_on="broker_down")
    cluster = FakeCluster(mock, {"t": 1}, {})
    fake = FakeTime()
    with FaultInjector(cluster, "broker-down@0s:1s,disconnects@2s:1", ["t"], clock=fake.clock, sleep=fake.sleep) as inj:
        assert inj.wait(5.0)
    texts = [text for _, text in inj.log]
    assert texts[0] == "broker 1 down: FAILED (RuntimeError: broker_down refused)"
    assert texts[1:] == ["broker 1 up", "next 1 Produce request(s) drop the connection",
                         "(stop) clear pending Produce errors"]
    assert inj.errors == [texts[0]]


def test_stop_interrupts_a_real_wait_promptly() -> None:
    mock = FakeMock()
    cluster = FakeCluster(mock, {"t": 1}, {})
    injector = FaultInjector(cluster, "broker-down@3600s:1s", ["t"]).start()
    started = time.monotonic()
    injector.stop()
    assert time.monotonic() - started < 1.0
    assert injector.log == [] and mock.calls == []
    assert not any(t.name == "fault-injector" and t.is_alive() for t in threading.enumerate())


def test_faults_need_the_embedded_cluster() -> None:
    cluster = FakeCluster(None, {"t": 1}, {})
    with pytest.raises(FaultsUnsupported) as info:
        FaultInjector(cluster, "broker-down@1s:1s", ["t"])
    message = str(info.value)
    assert "kafka://broker:9092" in message and "external" in message and "embedded://" in message


def test_injector_validates_against_the_topology_on_start() -> None:
    cluster = FakeCluster(FakeMock(brokers=1), {"t": 1}, {})
    injector = FaultInjector(cluster, "broker-down@0s:1s:2", ["t"])
    with pytest.raises(ValueError, match="brokers 1..1"):
        injector.start()
    with pytest.raises(ValueError, match="unknown fault kind"):
        FaultInjector(cluster, "explode@1s", ["t"])
