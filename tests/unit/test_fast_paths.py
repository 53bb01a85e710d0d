"""Compiled fast paths (`checks.compiled`) change how a record is judged, never the verdict.

A checker with a fast path accepts, on one generated function per kind of record, the records it
can prove pass every record check still live in their plan; every other record goes through the
checks. These tests hold the fast path to the checks, over the records of the reference and of
every in-memory mutant of each protocol that has one (the option sets of test_check_plans), and
over records of workloads hypothesis generates:

* the tally (every check's counts, findings, reasons) is the same with the fast path on and off;
* the delivery identities (and so the delivery verdicts) are the same, the fast path's worked out
  with its decode, and both are the protocol's identifier's (which decodes the record again);
* the fast path did run (it accepted records) wherever the reference's records were checked.

Kinds are compiled after their first record here (`LEARN_AFTER = 1`), so that the mutants' few
records of each kind meet the fast path as much as they can.
"""

from __future__ import annotations

import contextlib
import math
import random
from typing import Any

import pytest
from helpers import encode, protocol_shape
from hypothesis import given, settings
from hypothesis import strategies as st
from test_check_plans import EXTRA, HANGS  # type: ignore[import-not-found]

from conformance.checks import compiled
from conformance.encoders import EncoderKind, all_encoders
from conformance.harness.capture import DeliveryLogs
from conformance.harness.check import LogCheck, capture_tally, unnumbered
from conformance.infra.inprocess import InProcessRegistry
from conformance.model import mysql_text
from conformance.protocols import all_protocols, get_protocol
from conformance.protocols.base import CAPTURE, Checker
from conformance.strategies import sample_workload, workloads


def _has_fast_path(protocol: str) -> bool:
    suite = get_protocol(protocol)
    checker = suite.checker(suite.resolve_options({}), InProcessRegistry(), capture_tally(suite, "t"), CAPTURE)
    return type(checker).check_fast is not Checker.check_fast


def _valid(protocol: str, options: dict[str, str]) -> bool:
    try:
        get_protocol(protocol).resolve_options(options)
    except Exception:  # noqa: BLE001 - contradictory options
        return False
    return True


CHECKSUMS = {"enable-tidb-extension": "true", "integrity-check-level": "correctness",
             "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"}
AVRO_OPTIONS = [o for o in [{}, {"enable-tidb-extension": "true"}, *EXTRA["ticdc-avro"], CHECKSUMS,
                            {"avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"}]
                if _valid("ticdc-avro", o)]
def _off_by_design(protocol: str, options: dict[str, str]) -> bool:
    """TiCDC Simple's fast path reads JSON only: with Avro it stays off."""
    return protocol == "ticdc-simple" and options.get("encoding-format") == "avro"


FAST = [p.name for p in all_protocols() if _has_fast_path(p.name)]
# (Whole tools, e.g. Debezium's engine, need a server: not here.)
ENCODERS = [(p, e.name, dict(e.needs_options)) for p in FAST for e in all_encoders(p)
            if (e.kind is not EncoderKind.MUTANT or not e.needs_broker) and e.tool is None]


@pytest.fixture(autouse=True)
def _learn_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.protocols.ticdc_avro import fastpath

    monkeypatch.setattr(fastpath, "LEARN_AFTER", 1)


#: Topic prefixes a capture must see as a run's own (Debezium's topic checks strip only a prefix
#: shaped like `harness/stages.py: RunSpec.prefix`); other protocols: f0-, f1-.
PREFIX = {"debezium": "fc{}w0-"}


def _records(protocol: str, encoder: str, options: dict[str, str], seed: str = "fast") -> tuple[list[Any], Any]:
    registry = InProcessRegistry()
    out: list[Any] = []
    for shard in range(2):
        w = sample_workload(seed, shard, protocol_shape(protocol))
        out += encode(encoder, options, w, protocol=protocol, registry=registry,
                      topic_prefix=PREFIX.get(protocol, "f{}-").format(shard),
                      timeout=1.0 if encoder in HANGS else 10.0)
    return out, registry


def check(protocol: str, options: dict[str, str], registry: Any, records: list[Any], *, fast: bool | None
          ) -> tuple[list[dict[str, Any]], dict[str, list[Any]], int]:
    """As `check_log` does (capture mode, every record also to the delivery analysis): the tally
    as JSON, each topic's identified messages, and how many records the fast path accepted
    (`fast`: on or off; None: as the environment says)."""
    suite = get_protocol(protocol)
    resolved = suite.resolve_options(options)
    tally = capture_tally(suite, "test")
    logs = DeliveryLogs(protocol, resolved, registry)
    accepted = 0
    with compiled.forced(fast) if fast is not None else contextlib.nullcontext():
        log = LogCheck(suite, resolved, registry, tally, delivery=logs)
        original = log.checker.check_fast

        def counting(record: Any) -> Any:
            nonlocal accepted
            ok = original(record)  # True, or the identity it worked out (a tuple of one)
            assert ok is False or ok is True or (ok.__class__ is tuple and len(ok) == 1), ok
            accepted += bool(ok)
            return ok

        log.checker.check_fast = counting  # type: ignore[method-assign]
        if fast:  # the CLI's loop (which takes the identity `check_fast` hands over), against the Spark task's
            log.add_all(unnumbered(records))
        else:
            for r in records:
                log.add(None, r)
        log.finish()
    entries = {t: list(es) for t, es in logs.entries.items()}
    logs.judge(tally)
    return [t.to_json() for t in tally], entries, accepted


def identified(protocol: str, options: dict[str, str], registry: Any, records: list[Any]) -> dict[str, list[Any]]:
    """Each topic's identified messages as the protocol's identifier alone sees them (no checker
    hands an identity over)."""
    logs = DeliveryLogs(protocol, get_protocol(protocol).resolve_options(options), registry)
    for r in records:
        logs.add_record(r)
    return {t: list(es) for t, es in logs.entries.items()}


def assert_parity(protocol: str, options: dict[str, str], registry: Any, records: list[Any]) -> int:
    fast_tally, fast_entries, accepted = check(protocol, options, registry, records, fast=True)
    slow_tally, slow_entries, none = check(protocol, options, registry, records, fast=False)
    assert none == 0
    assert fast_entries == slow_entries
    assert fast_tally == slow_tally
    # The identities a checker worked out with its decode (fast path or not) are the identifier's.
    assert fast_entries == identified(protocol, options, registry, records)
    return accepted


def assert_reference_parity(protocol: str, options: dict[str, str], seeds: tuple[str, ...] = ("fast", "options")) -> None:
    """The reference's records of each seed keep their verdicts on both paths, and the fast path
    took some of them (else the test exercised nothing)."""
    accepted = 0
    for seed in seeds:
        records, registry = _records(protocol, get_protocol(protocol).reference().name, options, seed=seed)
        accepted += assert_parity(protocol, options, registry, records)
    assert accepted, "the fast path accepted nothing: the test exercised nothing"


@pytest.mark.parametrize(("protocol", "encoder", "needs"), ENCODERS, ids=[e for _p, e, _o in ENCODERS])
def test_the_fast_path_gives_the_verdicts_of_the_checks(protocol: str, encoder: str, needs: dict[str, str]) -> None:
    suite = get_protocol(protocol)
    accepted = 0
    for options in [needs, *({**o, **needs} for o in EXTRA.get(protocol, []))]:
        if options is not needs and _off_by_design(protocol, options):
            continue  # the fast path stays off there (the mutant's own options still run)
        try:
            suite.resolve_options(options)
        except Exception:  # noqa: BLE001 - a mutant's options that contradict an extra set
            continue
        records, registry = _records(protocol, encoder, options)
        accepted += assert_parity(protocol, options, registry, records)
    if encoder == suite.reference().name:
        assert accepted, "the fast path accepted nothing: the test exercised nothing"


def test_the_fast_path_keeps_verdicts_over_shuffled_and_damaged_records() -> None:
    """Records of one kind in another order, and copies with one byte changed (bodies that decode
    to other values, or not at all, or leave bytes over): the fast path meets them after it was
    compiled from good records of the kind."""
    from conformance.encoders.spi import Record

    for protocol in FAST:
        suite = get_protocol(protocol)
        for options in AVRO_OPTIONS if protocol == "ticdc-avro" else [{}, *EXTRA.get(protocol, [])]:
            if not _valid(protocol, options):
                continue
            records, registry = _records(protocol, suite.reference().name, options, seed="damage")
            rng = random.Random(f"{protocol}{sorted(options.items())}")
            damaged = []
            for r in records:
                damaged.append(r)
                if r.value is not None and len(r.value) > 6 and rng.random() < 0.3:
                    i = rng.randrange(5, len(r.value))
                    v = bytearray(r.value)
                    v[i] ^= 1 << rng.randrange(8)
                    damaged.append(Record(r.topic, r.key, bytes(v), r.partition, r.headers, r.timestamp, r.offset))
                if r.value is not None and rng.random() < 0.05:
                    damaged.append(Record(r.topic, r.key, r.value + b"\x00", r.partition, r.headers, r.timestamp,
                                          r.offset))
            rng.shuffle(damaged)
            accepted = assert_parity(protocol, options, registry, records + damaged)
            # TiCDC Simple's and Debezium's fast paths read JSON only: with Avro they stay off.
            assert accepted if not _off_by_design(protocol, options) else accepted == 0


@settings(max_examples=25)
@given(workloads(), st.sampled_from(AVRO_OPTIONS))
def test_the_fast_path_keeps_verdicts_over_generated_workloads(w: Any, options: dict[str, str]) -> None:
    registry = InProcessRegistry()
    suite = get_protocol("ticdc-avro")
    records = encode(suite.reference().name, options, w, protocol="ticdc-avro", registry=registry, topic_prefix="h-")
    # Twice: the second time every kind is compiled.
    assert_parity("ticdc-avro", options, registry, records + records)


# -- the values the fast path recognises without running a value rule --------------------------------

def _temporal_texts() -> st.SearchStrategy[str]:
    digits = st.text(alphabet="0123456789", min_size=1, max_size=3)
    part = st.one_of(digits, st.sampled_from(["00", "01", "12", "13", "19", "23", "24", "28", "29", "30", "31", "32",
                                              "59", "60", "99", "837", "838", "839", "1970", "1971", "2037", "2038"]))
    return st.builds(lambda y, mo, d, h, mi, s, f, neg: f"{neg}{y}-{mo}-{d} {h}:{mi}:{s}{f}",
                     part, part, part, part, part, part, st.sampled_from(["", ".5", ".123456", ".1234567"]),
                     st.sampled_from(["", "-"]))


@settings(max_examples=3000)
@given(_temporal_texts(), st.sampled_from(["date", "datetime", "timestamp", "time"]))
def test_quick_temporal_texts_are_a_subset_of_what_the_rules_accept(text: str, fam: str) -> None:
    from conformance.protocols.ticdc_avro.checks.types import QUICK_TEXT, _temporal_problem

    for candidate in (text, text.split(" ", 1)[0], text.split(" ", 1)[-1], text.lstrip("-")):
        if QUICK_TEXT[fam].fullmatch(candidate):
            assert _temporal_problem(fam, candidate) is None, candidate


def test_quick_temporal_texts_cover_the_common_values() -> None:
    from conformance.protocols.ticdc_avro.checks.types import QUICK_TEXT

    assert QUICK_TEXT["date"].fullmatch("2024-02-29")
    assert QUICK_TEXT["datetime"].fullmatch("0000-00-00 00:00:00")
    assert QUICK_TEXT["timestamp"].fullmatch("2024-02-28 23:59:59.123456")
    assert not QUICK_TEXT["timestamp"].fullmatch("2024-02-29 00:00:00")  # to the rule: a leap day
    assert QUICK_TEXT["time"].fullmatch("837:59:59.999999")
    assert not QUICK_TEXT["time"].fullmatch("838:59:59")  # to the rule: the edge
    assert mysql_text.parse_time("838:59:59", server=mysql_text.TIDB)


@settings(max_examples=500)
@given(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True)))
def test_quick_numbers_are_a_subset_of_what_the_rules_accept(v: Any) -> None:
    from conformance.protocols.ticdc_avro.checks import types
    from conformance.protocols.ticdc_avro.spec import AvroOptions, Family

    o = AvroOptions()
    for fam, expr in types._QUICK_EXPR.items():
        if eval(expr.format(v="v", isfinite="math.isfinite"), {"v": v, "math": math}):  # noqa: S307 - our own
            assert types._VALUE_RULES[fam](None, v, o) is None, (fam, v)
    assert Family.INT_UNSIGNED in types._QUICK_EXPR


def _decimals() -> st.SearchStrategy[str]:
    """Decimal texts near what the quick vector test takes: up to 8 digits, any exponent."""
    return st.builds(lambda sign, digits, exp: f"{sign}{float(digits + 'e' + str(exp)):.60f}".rstrip("0").rstrip(".")
                     if exp < 0 else f"{sign}{int(digits) * 10 ** exp}",
                     st.sampled_from(["", "-"]), st.text(alphabet="0123456789", min_size=1, max_size=8),
                     st.integers(-40, 40))


@settings(max_examples=3000)
@given(st.lists(_decimals(), max_size=4))
def test_quick_vectors_are_a_subset_of_what_the_rule_accepts(elements: list[str]) -> None:
    from conformance.model.values import parse_vector
    from conformance.protocols.ticdc_avro.checks.types import quick_vector

    for text in ("[" + ",".join(elements) + "]", *(f"[{e}]" for e in elements)):
        if quick_vector(text):
            parse_vector(text)  # raises ValueError where the quick test was wrong


def test_quick_vectors_cover_the_common_values() -> None:
    from conformance.protocols.ticdc_avro.checks.types import quick_vector

    assert quick_vector("[]") and quick_vector("[1,-2.5,0.1,0,123456,0.000123]")
    assert not quick_vector("[1.0]") and not quick_vector("[0.1234567891]") and not quick_vector("[-0]")


def test_the_switch_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiled.ENV, "0")
    assert not compiled.enabled()
    monkeypatch.setenv(compiled.ENV, "1")
    assert compiled.enabled()
    with compiled.forced(False):
        assert not compiled.enabled()
    options = {"enable-tidb-extension": "true"}
    records, registry = _records("ticdc-avro", "ticdc-avro/reference", options)
    assert check("ticdc-avro", options, registry, records, fast=None)[2] > 0
    monkeypatch.setenv(compiled.ENV, "off")
    assert check("ticdc-avro", options, registry, records, fast=None)[2] == 0
