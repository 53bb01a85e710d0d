"""model.mysql_text: which MySQL-family temporal texts a server can store (any sql_mode).

Each row names the source of its bound (the keys are the ones in the module's docstring):
[tidb-check] / [tidb-time] pingcap/tidb pkg/types/time.go, [tidb-docs] TiDB's "Date and Time
Types", [mysql-time] / [mysql-mode] the MySQL 8.4 manual (TIME type, server SQL modes),
[mariadb-time] / [mariadb-115] MariaDB's TIME page and 11.5 release notes, [glibc-tz] the GNU
libc manual's TZ variable, [notes] spec/notes/ticdc.md and maxscale.md.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.model import Date, DateTime, Time
from conformance.model import mysql_text as mt

# -- DATE ---------------------------------------------------------------------------------------

DATE_ACCEPTED = [
    ("0000-00-00", Date(0, 0, 0)),      # zero date, NO_ZERO_DATE off [tidb-check] checkDateType; [notes] ticdc §1.5
    ("2020-00-15", Date(2020, 0, 15)),  # zero month, NO_ZERO_IN_DATE off [tidb-check]; [mysql-mode]
    ("2020-05-00", Date(2020, 5, 0)),   # zero day, same
    ("2020-00-00", Date(2020, 0, 0)),   # both zero, same
    ("2021-02-31", Date(2021, 2, 31)),  # ALLOW_INVALID_DATES: day 1..31 in any month [tidb-check] checkMonthDay
    ("2021-04-31", Date(2021, 4, 31)),  # same
    ("2020-00-31", Date(2020, 0, 31)),  # month 0 lets day reach 31 even without the mode [tidb-check]
    ("0000-01-01", Date(0, 1, 1)),      # years before 1000 work [tidb-check] checkDateRange comment
    ("0001-01-01", Date(1, 1, 1)),      # same ("we can insert '0001-01-01' actually")
    ("9999-12-31", Date(9999, 12, 31)),  # MaxDatetime's date [tidb-check]; [tidb-docs] DATE range
    ("2024-02-29", Date(2024, 2, 29)),  # an ordinary leap day
]

DATE_REJECTED = [
    ("2020-13-01", "month 13"),      # month 0..12 [tidb-check] checkMonthDay
    ("2020-01-32", "day 32"),        # day 0..31 even with ALLOW_INVALID_DATES [tidb-check]; [mysql-mode]
    ("2020-1-01", "not YYYY-MM-DD"),  # servers print two-digit parts [tidb-time] Time.String %Y-%m-%d
    ("20200101", "not YYYY-MM-DD"),
    ("2020-01-01 ", "not YYYY-MM-DD"),
    ("2020-01-01\n", "not YYYY-MM-DD"),  # `$` would have let this through
    ("\u0662\u0660\u0662\u0660-01-01", "not YYYY-MM-DD"),  # Arabic-Indic digits: `\d` would match them
    ("", "not YYYY-MM-DD"),
    ("0-00-00", "not YYYY-MM-DD"),   # MaxScale's zero date is its own rendering [notes] maxscale §4: it normalises
]


@pytest.mark.parametrize(("text", "want"), DATE_ACCEPTED)
def test_dates_a_server_stores(text: str, want: Date) -> None:
    assert mt.parse_date(text) == want


@pytest.mark.parametrize(("text", "says"), DATE_REJECTED)
def test_dates_no_server_stores(text: str, says: str) -> None:
    got = mt.parse_date(text)
    assert isinstance(got, mt.Invalid) and says in got.reason, got


# -- DATETIME -----------------------------------------------------------------------------------

DATETIME_ACCEPTED = [
    ("0000-00-00 00:00:00", None, DateTime(0, 0, 0)),        # zero DATETIME [tidb-docs] zero values table
    ("0000-00-00 12:34:56", None, DateTime(0, 0, 0, 12, 34, 56)),  # checkDateType passes the zero date,
    #                                                          then only the clock is checked [tidb-check]
    ("2020-00-15 10:00:00", None, DateTime(2020, 0, 15, 10)),  # NO_ZERO_IN_DATE off [tidb-check]
    ("2021-02-31 23:59:59", None, DateTime(2021, 2, 31, 23, 59, 59)),  # ALLOW_INVALID_DATES [tidb-check]
    ("9999-12-31 23:59:59.999999", 6, DateTime(9999, 12, 31, 23, 59, 59, 999999)),  # MaxDatetime [tidb-check]
    ("1000-01-01 00:00:00.000000", 6, DateTime(1000, 1, 1)),   # [tidb-docs] DATETIME range start
    ("2020-01-01 00:00:00.5", 1, DateTime(2020, 1, 1, 0, 0, 0, 500000)),
    ("2020-01-01 00:00:00.123000", 3, DateTime(2020, 1, 1, 0, 0, 0, 123000)),  # trailing zeros fit fsp 3
    ("2020-01-01 00:00:00.123456", None, DateTime(2020, 1, 1, 0, 0, 0, 123456)),  # fsp unknown (Avro schemas)
]

DATETIME_REJECTED = [
    ("2020-01-01 24:00:00", None, "hour 24"),     # hour >= 24 [tidb-check] checkDatetimeType
    ("2020-01-01 00:60:00", None, "minute 60"),   # minute >= 60, same
    ("2020-01-01 00:00:60", None, "second 60"),   # second >= 60, same (no leap second)
    ("2020-13-01 00:00:00", None, "month 13"),    # [tidb-check] checkMonthDay
    ("2020-01-32 00:00:00", None, "day 32"),
    ("2020-01-01T00:00:00", None, "not YYYY-MM-DD"),   # ISO's T is not the server's text
    ("2020-01-01 00:00:00.1234567", None, "not YYYY-MM-DD"),  # fsp is at most 6 [tidb-docs]
    ("2020-01-01 00:00:00.", None, "not YYYY-MM-DD"),
    ("2020-01-01 0:00:00", None, "not YYYY-MM-DD"),
    ("2020-01-01 00:00:00.1234", 3, "finer than an fsp-3 column"),  # a DATETIME(3) holds milliseconds
    ("2020-01-01 00:00:00.5", 0, "finer than an fsp-0 column"),
    ("2020-01-01 00:00:00", 7, "fsp 7 is outside 0..6"),  # [tidb-docs] fsp 0..6
]


@pytest.mark.parametrize(("text", "fsp", "want"), DATETIME_ACCEPTED)
def test_datetimes_a_server_stores(text: str, fsp: int | None, want: DateTime) -> None:
    assert mt.parse_datetime(text, fsp=fsp) == want


@pytest.mark.parametrize(("text", "fsp", "says"), DATETIME_REJECTED)
def test_datetimes_no_server_stores(text: str, fsp: int | None, says: str) -> None:
    got = mt.parse_datetime(text, fsp=fsp)
    assert isinstance(got, mt.Invalid) and says in got.reason, got


# -- TIMESTAMP ----------------------------------------------------------------------------------

TIMESTAMP_ACCEPTED = [
    # (text, server, utc) — in any zone unless utc
    ("0000-00-00 00:00:00", mt.TIDB, True),         # the zero TIMESTAMP [tidb-check] checkTimestampType; [tidb-docs]
    ("0000-00-00 00:00:00.000", mt.TIDB, False),    # same at fsp 3 (Time.String prints fsp digits) [tidb-time]
    ("1970-01-01 00:00:01", mt.TIDB, True),         # MinTimestamp [tidb-check]
    ("2038-01-19 03:14:07.999999", mt.TIDB, True),  # MaxTimestamp [tidb-check]; [tidb-docs]
    ("1969-12-31 12:00:01", mt.TIDB, False),        # the first instant printed at UTC-12 (Etc/GMT+12)
    ("2038-01-19 17:14:07", mt.TIDB, False),        # the last printed at UTC+14 (Pacific/Kiritimati)
    ("1969-12-30 23:00:01", mt.TIDB, False),        # the margin's edge: UTC-25h covers a POSIX TZ -24:59:59 [glibc-tz]
    ("2038-01-20 04:14:07.999999", mt.TIDB, False),  # UTC+25h
    ("2106-02-07 06:28:15.999999", mt.MARIADB, True),  # MariaDB >= 11.5 on 64-bit [mariadb-115]
    ("2024-02-29 00:00:00", mt.TIDB, True),          # a real leap day
]

TIMESTAMP_REJECTED = [
    ("1970-01-01 00:00:00", mt.TIDB, True, "TIMESTAMP range in UTC"),  # one second before MinTimestamp
    ("2038-01-19 03:14:08", mt.TIDB, True, "TIMESTAMP range in UTC"),  # one second after MaxTimestamp
    ("2038-01-20 04:14:08", mt.TIDB, False, "any time zone"),  # beyond every zone's offset
    ("1969-12-30 23:00:00", mt.TIDB, False, "any time zone"),
    ("2500-01-01 00:00:00", mt.TIDB, False, "any time zone"),
    ("2106-02-07 06:28:15", mt.TIDB, True, "TiDB's TIMESTAMP range"),  # MariaDB's newer end is not TiDB's
    ("2021-02-31 00:00:00", mt.TIDB, False, "not a calendar date"),  # ALLOW_INVALID_DATES does not apply
    #                                                   to TIMESTAMP [mysql-mode]; GoTime refuses it [tidb-check]
    ("2020-00-15 00:00:00", mt.TIDB, False, "not a calendar date"),  # no zero parts [tidb-docs]
    ("2021-02-29 00:00:00", mt.TIDB, False, "not a calendar date"),  # not a leap year
    ("0000-00-00 12:00:00", mt.TIDB, False, "zero TIMESTAMP"),  # not the zero value, and not in range
    ("2020-01-01 24:00:00", mt.TIDB, False, "hour 24"),
]


@pytest.mark.parametrize(("text", "server", "utc"), TIMESTAMP_ACCEPTED)
def test_timestamps_a_server_prints(text: str, server: mt.Server, utc: bool) -> None:
    got = mt.parse_timestamp(text, server=server, utc=utc)
    assert isinstance(got, DateTime), got


@pytest.mark.parametrize(("text", "server", "utc", "says"), TIMESTAMP_REJECTED)
def test_timestamps_no_server_prints(text: str, server: mt.Server, utc: bool, says: str) -> None:
    got = mt.parse_timestamp(text, server=server, utc=utc)
    assert isinstance(got, mt.Invalid) and says in got.reason, got


@given(st.datetimes(min_value=dt.datetime(1970, 1, 1, 0, 0, 1), max_value=dt.datetime(2038, 1, 19, 3, 14, 7, 999999)),
       st.integers(-(24 * 3600 + 59 * 60 + 59), 24 * 3600 + 59 * 60 + 59))
def test_every_storable_instant_passes_in_every_zone_offset(utc: dt.datetime, offset_s: int) -> None:
    """The margin is wide enough: a stored TIMESTAMP printed at any offset a POSIX TZ allows
    ([glibc-tz]: up to 24:59:59) is accepted."""
    local = utc + dt.timedelta(seconds=offset_s)
    text = DateTime.from_python(local).text(6)
    assert isinstance(mt.parse_timestamp(text, server=mt.TIDB), DateTime), text


# -- TIME ---------------------------------------------------------------------------------------

TIME_ACCEPTED = [
    ("838:59:59", mt.TIDB, Time(False, 838, 59, 59)),    # MaxTime [tidb-time]; [mysql-time]
    ("-838:59:59", mt.TIDB, Time(True, 838, 59, 59)),    # MinTime, same
    ("838:59:59.000000", mt.TIDB, Time(False, 838, 59, 59)),  # "'838:59:59.000000'" [mysql-time]; [tidb-docs]
    ("-838:59:59.000", mt.MYSQL, Time(True, 838, 59, 59)),
    ("838:59:59.999999", mt.MARIADB, Time(False, 838, 59, 59, 999999)),  # MariaDB's end [mariadb-time]
    ("-838:59:59.999999", mt.MARIADB, Time(True, 838, 59, 59, 999999)),
    ("838:59:58.999999", mt.TIDB, Time(False, 838, 59, 58, 999999)),  # below the end: any fraction
    ("-00:00:01", mt.TIDB, Time(True, 0, 0, 1)),         # negative with zero hours: sign from d < 0
    #                                                    [tidb-time] Duration.String
    ("-00:00:00.000001", mt.TIDB, Time(True, 0, 0, 0, 1)),
    ("00:00:00", mt.TIDB, Time(False, 0, 0, 0)),         # the zero TIME [tidb-docs]
    ("100:00:00", mt.TIDB, Time(False, 100, 0, 0)),      # hours may exceed 24 [notes] ticdc §1.5
    ("23:59:59.5", mt.TIDB, Time(False, 23, 59, 59, 500000)),
]

TIME_REJECTED = [
    ("839:00:00", mt.TIDB, "TIME range"),               # beyond MaxTime [tidb-time]
    ("-839:00:00", mt.TIDB, "TIME range"),
    ("839:00:00", mt.MARIADB, "TIME range"),            # beyond MariaDB's too [mariadb-time]
    ("838:59:59.000001", mt.TIDB, "TIME range"),        # MaxTime has no fraction [tidb-time]; [mysql-time]
    ("-838:59:59.5", mt.MYSQL, "TIME range"),           # same below [mysql-time]
    ("999:00:00", mt.TIDB, "TIME range"),
    ("12:60:00", mt.TIDB, "minute 60"),
    ("12:00:60", mt.TIDB, "second 60"),
    ("-00:00:00", mt.TIDB, "negative zero"),            # stored and printed as 00:00:00 [tidb-time] Duration.String
    ("-00:00:00.000", mt.TIDB, "negative zero"),
    ("1:00:00", mt.TIDB, "not [-]hh:mm:ss"),             # hours are printed with two digits at least (%02d)
    ("1000:00:00", mt.TIDB, "not [-]hh:mm:ss"),
    ("+01:00:00", mt.TIDB, "not [-]hh:mm:ss"),
    ("01:00", mt.TIDB, "not [-]hh:mm:ss"),
    ("1 01:00:00", mt.TIDB, "not [-]hh:mm:ss"),          # the 'D hh:mm:ss' input form is never printed
]


@pytest.mark.parametrize(("text", "server", "want"), TIME_ACCEPTED)
def test_times_a_server_stores(text: str, server: mt.Server, want: Time) -> None:
    assert mt.parse_time(text, server=server) == want


@pytest.mark.parametrize(("text", "server", "says"), TIME_REJECTED)
def test_times_no_server_stores(text: str, server: mt.Server, says: str) -> None:
    got = mt.parse_time(text, server=server)
    assert isinstance(got, mt.Invalid) and says in got.reason, got


def test_time_fraction_follows_fsp() -> None:
    assert mt.parse_time("12:00:00.120", server=mt.TIDB, fsp=2) == Time(False, 12, 0, 0, 120000)
    got = mt.parse_time("12:00:00.125", server=mt.TIDB, fsp=2)
    assert isinstance(got, mt.Invalid) and "fsp-2" in got.reason


# -- YEAR ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("0", 0), ("0000", 0),   # the zero YEAR [tidb-docs] ("or the zero value of 0000")
    ("1901", 1901),          # MinYear [tidb-time]
    ("2155", 2155),          # MaxYear [tidb-time]
    ("2024", 2024),
])
def test_years_a_server_stores(text: str, want: int) -> None:
    assert mt.parse_year(text) == want


@pytest.mark.parametrize(("text", "says"), [
    ("1900", "neither 0 nor"),   # below MinYear (MaxScale prints YEAR 0 as 1900 [notes] maxscale §4: its own quirk)
    ("2156", "neither 0 nor"),   # above MaxYear
    ("99", "neither 0 nor"),     # two-digit input is converted on the way in, never printed [tidb-docs]
    ("-1", "not a YEAR"),
    ("20245", "not a YEAR"),
    ("", "not a YEAR"),
])
def test_years_no_server_stores(text: str, says: str) -> None:
    got = mt.parse_year(text)
    assert isinstance(got, mt.Invalid) and says in got.reason, got


def test_numeric_rules_match_the_text_rules() -> None:
    """Protocols that carry parts (Avro YEAR is an int) get the same verdicts as from text."""
    assert mt.check_year(0) is None and mt.check_year(2155) is None
    assert isinstance(mt.check_year(1900), mt.Invalid)
    assert mt.check_date(2021, 2, 31) is None and isinstance(mt.check_date(2021, 13, 1), mt.Invalid)
    assert mt.check_time(Time(False, 838, 59, 59), server=mt.TIDB) is None
    assert isinstance(mt.check_time(Time(False, 838, 59, 59, 1), server=mt.TIDB), mt.Invalid)
    assert mt.check_time(Time(False, 838, 59, 59, 1), server=mt.MARIADB) is None


@given(st.text(max_size=30))
def test_any_text_is_parsed_or_refused_never_raises(text: str) -> None:
    for r in (mt.parse_date(text), mt.parse_datetime(text), mt.parse_timestamp(text, server=mt.TIDB),
              mt.parse_time(text, server=mt.TIDB), mt.parse_year(text)):
        assert r is not None


def test_the_reference_renderings_round_trip() -> None:
    """The model's own text forms (what the reference encoders print) parse back to the value."""
    assert mt.parse_date(Date(0, 0, 0).text()) == Date(0, 0, 0)
    v = DateTime(2038, 1, 19, 3, 14, 7, 999999)
    assert mt.parse_timestamp(v.text(6), server=mt.TIDB, fsp=6, utc=True) == v
    t = Time(True, 838, 59, 59)
    assert mt.parse_time(t.text(3), server=mt.TIDB, fsp=3) == t
