"""The JSON protocols' compiled fast paths give the verdicts of the checks (see test_fast_paths.py,
whose helpers these use; that file also runs every in-memory mutant of each protocol with a fast
path, on the mutant's own options).

Here, for MaxScale KafkaCDC: the reference's records under the option sets and profiles that change
what the rules accept; the same records with whitespace, escapes and values changed where the
fast path's shortcuts look (its compact-text test, its quick temporal texts); a hypothesis
property over generated workloads; and the quick recognisers held to the rules they stand for.
Kinds compile after their first record, so every further record of a kind meets the fast path.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest
from helpers import encode, protocol_shape
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fast_paths import _records, assert_parity  # type: ignore[import-not-found]

from conformance.encoders.spi import Record
from conformance.protocols import get_protocol
from conformance.strategies import workloads

MAXSCALE = "maxscale-kafkacdc"
MAXSCALE_OPTIONS: list[dict[str, str]] = [
    {}, {"profile": "maxscale-24.02"}, {"profile": "docs"}, {"send_schema": "false"},
    {"fraction-digits": "odd-seven", "temporal-text": "strftime"}, {"schema-on-alter": "after-rows"},
    {"bigint-unsigned": "wrap"}, {"match": "db", "exclude": "zz"},
]


@pytest.mark.parametrize("options", MAXSCALE_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_maxscale_fast_path_keeps_verdicts_under_each_option_set(options: dict[str, str]) -> None:
    accepted = 0
    for seed in ("fast", "options", "more"):
        records, registry = _records(MAXSCALE, get_protocol(MAXSCALE).reference().name, options, seed=seed)
        accepted += assert_parity(MAXSCALE, options, registry, records)
    assert accepted, "the fast path accepted nothing: the test exercised nothing"


def _edits(text: str, rng: random.Random) -> list[str]:
    """Texts near `text`: whitespace outside strings (after a comma or colon, at the ends), a
    space inside a string written as an escape (with and without a space outside too), tabs, a
    duplicate key, a number as a string, temporal texts at their edges."""
    out = [text.replace(",", ", ", 1), text.replace(":", ": ", 1), " " + text, text + "\n",
           text.replace(",", ",\t", 1), text.replace('":"', '": "', 1)]
    if " " in text:
        escaped = text.replace(" ", "\\u0020", 1)
        out += [escaped, escaped.replace(",", ", ", 1), text.replace(" ", "\\t", 1)]
    obj = json.loads(text)
    if isinstance(obj, dict) and obj:
        k = rng.choice(list(obj))
        out.append(text[:-1] + f",{json.dumps(k)}:{json.dumps(obj[k])}" + "}")
        for k, v in obj.items():
            if isinstance(v, str) and len(v) >= 8 and v[4:5] == "-":
                for repl in ("2024-02-29", "0000-00-00", "1970-01-01", "2038-01-19", "9999-12-31", "2024-13-01",
                             "2024-12-32"):
                    out.append(text.replace(json.dumps(v), json.dumps(repl + v[10:]), 1))
                out.append(text.replace(json.dumps(v), json.dumps(v + "0"), 1))
                out.append(text.replace(json.dumps(v), json.dumps(v[:-1]), 1))
            elif isinstance(v, str) and v[2:3] == ":":
                for repl in ("838:59:59", "839:00:00", "-838:59:59", "24:00:00", "00:60:00", "99:59:59.999999"):
                    out.append(text.replace(json.dumps(v), json.dumps(repl), 1))
            elif isinstance(v, int) and not isinstance(v, bool) and k not in ("domain", "server_id", "sequence"):
                out.append(text.replace(f'"{k}":{v}', f'"{k}":"{v}"', 1))
                out.append(text.replace(f'"{k}":{v}', f'"{k}":{-v - 1}', 1))
                out.append(text.replace(f'"{k}":{v}', f'"{k}":{v}.0', 1))
                out.append(text.replace(f'"{k}":{v}', f'"{k}":{2 ** 64}', 1))
    return out


@pytest.mark.parametrize("options", [{}, {"profile": "maxscale-24.02"}], ids=["defaults", "maxscale-24.02"])
def test_maxscale_fast_path_keeps_verdicts_over_edited_records(options: dict[str, str]) -> None:
    """Each edited copy follows its original, so it meets the original's compiled kind."""
    records, registry = _records(MAXSCALE, get_protocol(MAXSCALE).reference().name, options, seed="edits")
    rng = random.Random(f"edits{options}")
    out: list[Any] = []
    for r in records:
        out.append(r)
        if r.value is None or rng.random() > 0.5:
            continue
        for text in _edits(r.value.decode("utf-8"), rng):
            out.append(Record(r.topic, r.key, text.encode("utf-8"), r.partition, r.headers, r.timestamp, r.offset))
        if r.key is not None:
            out.append(Record(r.topic, r.key + b"0", r.value, r.partition, r.headers, r.timestamp, r.offset))
    assert assert_parity(MAXSCALE, options, registry, out) > 0


@settings(max_examples=25, deadline=None)
@given(workloads(protocol_shape(MAXSCALE)), st.sampled_from([{}, {"profile": "maxscale-24.02"}, {"send_schema": "false"}]))
def test_maxscale_fast_path_keeps_verdicts_over_generated_workloads(w: Any, options: dict[str, str]) -> None:
    records = encode(get_protocol(MAXSCALE).reference().name, options, w, protocol=MAXSCALE, topic_prefix="h-")
    assert_parity(MAXSCALE, options, None, records + records)


# -- the quick recognisers ----------------------------------------------------------------------------------

def _texts() -> st.SearchStrategy[str]:
    digits = st.one_of(st.text(alphabet="0123456789", min_size=1, max_size=4),
                       st.integers(0, 99).map("{:02d}".format), st.integers(0, 9999).map("{:04d}".format))
    part = st.one_of(digits, st.sampled_from(["00", "01", "12", "13", "19", "23", "24", "28", "29", "30", "31", "32",
                                              "59", "60", "99", "837", "838", "839", "1900", "1901", "1970", "1971",
                                              "2037", "2038", "2155", "2156", "0000"]))
    frac = st.sampled_from(["", ".5", ".123456", ".1234567", ".000000", ".12345"])
    # The edges QUICK_TEXT names one by one (the zero values, the ends of TIMESTAMP's and TIME's
    # ranges) and their neighbours, with each fraction.
    edges = st.builds(lambda e, f: e + f, st.sampled_from([
        "0000-00-00 00:00:00", "0000-00-00 00:00:01", "0000-01-01 00:00:00", "1970-01-01 00:00:01",
        "1970-01-01 00:00:00", "1969-12-31 23:59:59", "2038-01-19 03:14:07", "2038-01-19 03:14:08", "838:59:59",
        "-838:59:59", "839:00:00", "-839:00:00", "838:59:60", "-00:00:00", "-00:00:01", "-000:00:00", "-0:00:00",
        "-01:00:00", "-100:00:00", "-837:59:59", "0000", "000", "00000", "-0000"]), frac)
    return st.one_of(
        edges,
        st.builds(lambda y, mo, d, h, mi, s, f: f"{y}-{mo}-{d} {h}:{mi}:{s}{f}", part, part, part, part, part, part, frac),
        st.builds(lambda y, mo, d: f"{y}-{mo}-{d}", part, part, part),
        st.builds(lambda neg, h, mi, s, f: f"{neg}{h}:{mi}:{s}{f}", st.sampled_from(["", "-"]), part, part, part, frac),
        part)


@settings(max_examples=3000)
@given(_texts())
def test_maxscale_quick_temporal_texts_are_a_subset_of_what_the_rules_accept(text: str) -> None:
    from conformance.protocols.maxscale_kafkacdc.checks import values
    from conformance.protocols.maxscale_kafkacdc.decoder import Column
    from conformance.protocols.maxscale_kafkacdc.spec import CdcOptions

    for rt, quick in values.QUICK_TEXT.items():
        if quick.fullmatch(text) is None:
            continue
        col = Column("c", "string", rt.upper(), False)
        for odd, strftime in itertools.product(["six", "odd-seven"], ["padded", "strftime"]):
            o = CdcOptions.from_options({"fraction-digits": odd, "temporal-text": strftime})
            if rt in values._TEMPORAL_TOKENS:
                assert values.temporal_problem(col, text, o) is None, (rt, text, o)
            if rt in values._TIMESTAMP_TOKENS:
                assert values.timestamp_problem(col, text, o) is None, (rt, text, o)
            if rt in values._FRACTION_TOKENS:
                assert values.fraction_problem(col, text, o) is None, (rt, text, o)


def test_maxscale_quick_temporal_texts_cover_the_common_values() -> None:
    from conformance.protocols.maxscale_kafkacdc.checks.values import QUICK_TEXT

    assert QUICK_TEXT["date"].fullmatch("0000-00-00") and QUICK_TEXT["date"].fullmatch("2024-02-31")
    assert QUICK_TEXT["datetime"].fullmatch("2024-02-28 23:59:59.123456")
    assert not QUICK_TEXT["datetime"].fullmatch("2024-02-28 23:59:59.1234567")  # to the rule: odd-seven
    assert QUICK_TEXT["timestamp_"].fullmatch("2037-12-31 23:59:59")
    assert not QUICK_TEXT["timestamp_"].fullmatch("2024-02-29 00:00:00")  # to the rule: a leap day
    assert QUICK_TEXT["time"].fullmatch("837:59:59.999999") and not QUICK_TEXT["time"].fullmatch("-00:00:01")
    assert QUICK_TEXT["year"].fullmatch("2155") and not QUICK_TEXT["year"].fullmatch("1900")
    # The edges the realistic workload writes often (each would otherwise run its rule).
    assert QUICK_TEXT["time"].fullmatch("-12:34:56.123456") and QUICK_TEXT["time"].fullmatch("-837:59:59")
    assert QUICK_TEXT["time"].fullmatch("838:59:59.000000") and QUICK_TEXT["time"].fullmatch("-838:59:59")
    assert not QUICK_TEXT["time"].fullmatch("-00:00:00") and not QUICK_TEXT["time"].fullmatch("-000:00:00")
    assert QUICK_TEXT["timestamp_"].fullmatch("0000-00-00 00:00:00.000000")
    assert QUICK_TEXT["timestamp_"].fullmatch("1970-01-01 00:00:01") and QUICK_TEXT["timestamp_"].fullmatch(
        "2038-01-19 03:14:07.999999")
    assert not QUICK_TEXT["timestamp_"].fullmatch("2038-01-19 03:14:08")
    assert QUICK_TEXT["year"].fullmatch("0000")
