"""MySQL-family text forms of temporal values, and which of them a server can store.

One rule for every protocol that carries DATE, DATETIME, TIMESTAMP, TIME and YEAR values as the
server prints them (TiCDC Avro and Simple; MaxScale KafkaCDC, which renders MariaDB values, next):
**accept every value a server can store under some sql_mode, reject only what none can.** A
captured topic comes from a server whose sql_mode is unknown (the suite's own reproductions set
`sql_mode = ''`), so the union over modes is what counts:

* the zero date `0000-00-00` (and `0000-00-00 hh:mm:ss` in a DATETIME): NO_ZERO_DATE off
  [tidb-check] checkDateType, [tidb-docs];
* zero parts in a date (`2020-00-15`, `2020-05-00`): NO_ZERO_IN_DATE off [tidb-check], [mysql-mode];
* day 00..31 in every month (`2021-02-31`): ALLOW_INVALID_DATES on [tidb-check] checkMonthDay,
  [mysql-mode]; month 00..12;
* years 0000..9999: [tidb-check] checkDateRange ("we can insert '0001-01-01' actually"), MaxDatetime;
* a DATETIME's clock 00..23:00..59:00..59, fraction up to .999999: [tidb-check] checkDatetimeType,
  MaxDatetime, [tidb-docs];
* TIMESTAMP: the zero value `0000-00-00 00:00:00`, or a real calendar date within
  1970-01-01 00:00:01 .. 2038-01-19 03:14:07.999999 UTC (MariaDB >= 11.5: .. 2106-02-07
  06:28:15.999999): [tidb-check] checkTimestampType (its GoTime call refuses invalid dates),
  [mysql-mode] ("ALLOW_INVALID_DATES ... does not apply to TIMESTAMP"), [tidb-docs], [mariadb-115];
* TIME -838:59:59 .. 838:59:59, with no fraction beyond either end on MySQL and TiDB, up to
  .999999 on MariaDB: [tidb-time] MaxTime/MinTime, [mysql-time], [mariadb-time];
* YEAR 0 or 1901..2155: [tidb-time] MinYear/MaxYear, [tidb-docs].

TIMESTAMP is stored in UTC and printed in a time zone: TiCDC prints it in its server's `--tz`
(spec/notes/ticdc.md §1.5, §3.1), MaxScale in its process's zone (`localtime_r`,
spec/notes/maxscale.md §4). Unless the caller knows the text is UTC, the stored window is widened
by `ZONE_MARGIN` (25 h) on both sides: no offset a server or encoder can print in reaches it
(IANA zones stay within -12..+14 h since 1970, MySQL's `time_zone` within -13:59..+14:00, a POSIX
`TZ` offset within ±24:59:59 [glibc-tz]), so a value near an end rendered in any zone passes,
while text no zone can produce (1900, 2500) fails.

A negative zero TIME (`-00:00:00`, `-00:00:00.000`) is refused: servers store it as 00:00:00 and
print a sign only for a negative duration ([tidb-time] Duration.String writes `-` when d < 0),
while `-00:00:01` is a real negative value.

This module judges values in the canonical text forms TiDB and MySQL print (four-digit year,
two-digit parts, hours of TIME in two or three digits, a fraction of 1..6 digits after a dot).
How a protocol renders them is its own rule and stays in its checks: whether the fraction always
has exactly fsp digits, MaxScale's `0-00-00` zero date or 7-digit odd-precision fractions (it
normalises those before calling here). With `fsp` given, a fraction finer than the column holds
(`.1234` in a DATETIME(3)) is refused; trailing zeros are fine (`.123000`).

Sources:
[tidb-check]  pingcap/tidb pkg/types/time.go: checkDateType, checkDateRange, checkMonthDay
              (allowZeroInDate, allowInvalidDate: maxDay 31), checkDatetimeType, checkTimestampType,
              MaxDatetime = 9999-12-31 23:59:59.999999, MinTimestamp / MaxTimestamp (BoundTimezone UTC).
[tidb-time]   pingcap/tidb pkg/types (time.go constants): MaxTime = 838h59m59s, MinTime = -MaxTime,
              MinYear 1901, MaxYear 2155; Duration.String ("%02d:%02d:%02d", sign when d < 0).
[tidb-docs]   docs.pingcap.com/tidb/stable/data-type-date-and-time (pingcap/docs data-type-date-and-time.md):
              TIME '-838:59:59.000000'..'838:59:59.000000'; DATETIME ..'9999-12-31 23:59:59.999999';
              TIMESTAMP '1970-01-01 00:00:01.000000'..'2038-01-19 03:14:07.999999' UTC, "zero is not permitted
              to appear in the month-portion or day-portion" except the zero value; YEAR 1901..2155 or 0000;
              zero month/day allowed in DATE and DATETIME without NO_ZERO_DATE.
[mysql-time]  dev.mysql.com/doc/refman/8.4/en/time.html: "the range for TIME values is '-838:59:59.000000'
              to '838:59:59.000000'".
[mysql-mode]  dev.mysql.com/doc/refman/8.4/en/sql-mode.html: ALLOW_INVALID_DATES checks only month 1..12
              and day 1..31, applies to DATE and DATETIME, "does not apply to TIMESTAMP columns, which
              always require a valid date"; NO_ZERO_IN_DATE / NO_ZERO_DATE off permit zero parts.
[mariadb-time] mariadb.com/kb/en/time/: "The range is '-838:59:59.999999' to '838:59:59.999999'".
[mariadb-115] mariadb.com/kb/en/what-is-mariadb-115 (MDEV-32188): TIMESTAMP up to '2106-02-07 06:28:15 UTC'
              on 64-bit platforms.
[glibc-tz]    GNU C Library manual, "Specifying the Time Zone with TZ": offset hour 0..24, minute and
              second 0..59.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from dataclasses import dataclass

from .values import Date, DateTime, Time

__all__ = [
    "MARIADB", "MYSQL", "TIDB", "TIME_MAX", "TIMESTAMP_MIN_UTC", "YEAR_MAX", "YEAR_MIN", "ZONE_MARGIN",
    "Invalid", "Server", "check_date", "check_datetime", "check_time", "check_timestamp", "check_year",
    "parse_date", "parse_datetime", "parse_time", "parse_timestamp", "parse_year",
]


@dataclass(frozen=True, slots=True)
class Invalid:
    """Why a text (or value) cannot be one a server stores."""

    reason: str


@dataclass(frozen=True, slots=True)
class Server:
    """The bounds that differ between server families (everything else is common)."""

    name: str
    # The largest |TIME| in microseconds: MySQL and TiDB stop at 838:59:59 exactly, MariaDB at .999999.
    time_max_micros: int
    # The last TIMESTAMP instant, in UTC.
    timestamp_max_utc: DateTime


_TIME_MAX_S = (838 * 60 + 59) * 60 + 59
TIME_MAX = Time(False, 838, 59, 59)
TIMESTAMP_MIN_UTC = DateTime(1970, 1, 1, 0, 0, 1)  # [tidb-check] MinTimestamp, [tidb-docs], MySQL datetime.html
YEAR_MIN, YEAR_MAX = 1901, 2155  # [tidb-time] MinYear/MaxYear; the zero YEAR 0 besides
# Wider than any UTC offset a TIMESTAMP can be printed in (POSIX TZ allows up to 24:59:59 [glibc-tz]).
ZONE_MARGIN = _dt.timedelta(hours=25)

TIDB = Server("TiDB", _TIME_MAX_S * 1_000_000, DateTime(2038, 1, 19, 3, 14, 7, 999999))
MYSQL = Server("MySQL", _TIME_MAX_S * 1_000_000, DateTime(2038, 1, 19, 3, 14, 7, 999999))
MARIADB = Server("MariaDB", _TIME_MAX_S * 1_000_000 + 999_999, DateTime(2106, 2, 7, 6, 28, 15, 999999))

# ASCII digits only: `\d` would take other scripts' digits, which no server prints.
_FRACTION = r"(?:\.([0-9]{1,6}))?"
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATETIME_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})" + _FRACTION)
_TIME_RE = re.compile(r"(-?)([0-9]{2,3}):([0-9]{2}):([0-9]{2})" + _FRACTION)
_YEAR_RE = re.compile(r"[0-9]{1,4}")


# -- numeric rules (for protocols that carry parts, not text) -----------------------------------------

def check_date(year: int, month: int, day: int) -> Invalid | None:
    """A DATE (or DATETIME's date) some sql_mode lets a server store: zero parts and day 31 in any
    month included, since NO_ZERO_IN_DATE may be off and ALLOW_INVALID_DATES on [tidb-check]."""
    if not 0 <= year <= 9999:
        return Invalid(f"year {year} is outside 0000..9999")
    if not 0 <= month <= 12:
        return Invalid(f"month {month} is outside 00..12")
    if not 0 <= day <= 31:
        return Invalid(f"day {day} is outside 00..31")
    return None


def _check_clock(hour: int, minute: int, second: int) -> Invalid | None:
    if not 0 <= hour <= 23:
        return Invalid(f"hour {hour} is outside 00..23")
    return _check_minute_second(minute, second)


def _check_minute_second(minute: int, second: int) -> Invalid | None:
    if not 0 <= minute <= 59:
        return Invalid(f"minute {minute} is outside 00..59")
    if not 0 <= second <= 59:
        return Invalid(f"second {second} is outside 00..59")
    return None


def _check_fraction(micros: int, fsp: int | None) -> Invalid | None:
    if not 0 <= micros <= 999_999:
        return Invalid(f"microsecond {micros} is outside 0..999999")
    if fsp is None:
        return None
    if not 0 <= fsp <= 6:
        return Invalid(f"fsp {fsp} is outside 0..6")
    if micros % 10 ** (6 - fsp):
        return Invalid(f"fraction .{micros:06d} is finer than an fsp-{fsp} column holds")
    return None


def check_datetime(v: DateTime, *, fsp: int | None = None) -> Invalid | None:
    """A DATETIME(fsp) value some sql_mode lets a server store."""
    return (check_date(v.year, v.month, v.day) or _check_clock(v.hour, v.minute, v.second)
            or _check_fraction(v.microsecond, fsp))


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


@functools.lru_cache(maxsize=16)
def _timestamp_window(server: Server, margin: _dt.timedelta) -> tuple[DateTime, DateTime]:
    lo = TIMESTAMP_MIN_UTC.to_python() - margin
    hi = server.timestamp_max_utc.to_python() + margin
    return DateTime.from_python(lo), DateTime.from_python(hi)


def check_timestamp(v: DateTime, *, server: Server, fsp: int | None = None, utc: bool = False) -> Invalid | None:
    """A TIMESTAMP(fsp) as a server prints it: the zero value, or a real calendar date whose
    instant lies in the server's TIMESTAMP range. `utc`: the text is known to be printed in UTC
    (then the range is exact); otherwise it may be in any zone, and the range is widened by
    `ZONE_MARGIN` on both sides."""
    problem = check_datetime(v, fsp=fsp)
    if problem is not None:
        return problem
    if v.is_zero:
        if (v.hour, v.minute, v.second, v.microsecond) != (0, 0, 0, 0):
            return Invalid("the zero TIMESTAMP is 0000-00-00 00:00:00; a zero date with a time is not one")
        return None
    if v.month == 0 or v.day == 0 or v.day > _days_in_month(v.year, v.month):
        # checkTimestampType's GoTime refuses it; MySQL: ALLOW_INVALID_DATES does not apply to TIMESTAMP.
        return Invalid(f"{v.year:04d}-{v.month:02d}-{v.day:02d} is not a calendar date, "
                       "which a TIMESTAMP always is (or the zero value)")
    lo, hi = _timestamp_window(server, _dt.timedelta(0) if utc else ZONE_MARGIN)
    if not lo <= v <= hi:
        where = "UTC" if utc else f"any time zone (UTC ± {ZONE_MARGIN.total_seconds() / 3600:g} h)"
        return Invalid(f"outside {server.name}'s TIMESTAMP range in {where}: {lo.text(6)} .. {hi.text(6)}")
    return None


def check_time(v: Time, *, server: Server, fsp: int | None = None) -> Invalid | None:
    """A TIME(fsp) value a server stores: within ±838:59:59 (MariaDB: ±838:59:59.999999)."""
    problem = _check_minute_second(v.minutes, v.seconds) or _check_fraction(v.microsecond, fsp)
    if problem is not None:
        return problem
    if v.hours < 0:
        return Invalid(f"hours {v.hours} are negative; the sign is separate")
    magnitude = ((v.hours * 60 + v.minutes) * 60 + v.seconds) * 1_000_000 + v.microsecond
    if magnitude > server.time_max_micros:
        limit = TIME_MAX.text(0) + (".999999" if server.time_max_micros % 1_000_000 else ".000000")
        return Invalid(f"beyond {server.name}'s TIME range ±{limit}")
    if v.negative and magnitude == 0:
        return Invalid("negative zero: a server stores and prints it as 00:00:00")
    return None


def check_year(n: int) -> Invalid | None:
    """A YEAR value: 0 (the zero YEAR) or 1901..2155."""
    if n == 0 or YEAR_MIN <= n <= YEAR_MAX:
        return None
    return Invalid(f"YEAR {n} is neither 0 nor within {YEAR_MIN}..{YEAR_MAX}")


# -- text -----------------------------------------------------------------------------------------------

def _micros(fraction: str | None) -> int:
    return int(fraction.ljust(6, "0")) if fraction else 0


def parse_date(text: str) -> Date | Invalid:
    """`YYYY-MM-DD` as a DATE some sql_mode stores (zero date, zero parts and day 31 included)."""
    m = _DATE_RE.fullmatch(text)
    if m is None:
        return Invalid("not YYYY-MM-DD")
    d = Date(*(int(x) for x in m.groups()))
    return check_date(d.year, d.month, d.day) or d


def _parse_datetime_text(text: str) -> DateTime | Invalid:
    m = _DATETIME_RE.fullmatch(text)
    if m is None:
        return Invalid("not YYYY-MM-DD hh:mm:ss[.fraction]")
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    return DateTime(y, mo, d, h, mi, s, _micros(m.group(7)))


def parse_datetime(text: str, *, fsp: int | None = None) -> DateTime | Invalid:
    """`YYYY-MM-DD hh:mm:ss[.f]` as a DATETIME(fsp) some sql_mode stores."""
    v = _parse_datetime_text(text)
    if isinstance(v, Invalid):
        return v
    return check_datetime(v, fsp=fsp) or v


def parse_timestamp(text: str, *, server: Server, fsp: int | None = None, utc: bool = False) -> DateTime | Invalid:
    """`YYYY-MM-DD hh:mm:ss[.f]` as a TIMESTAMP(fsp) printed in some time zone (in UTC when `utc`);
    see `check_timestamp`."""
    v = _parse_datetime_text(text)
    if isinstance(v, Invalid):
        return v
    return check_timestamp(v, server=server, fsp=fsp, utc=utc) or v


def parse_time(text: str, *, server: Server, fsp: int | None = None) -> Time | Invalid:
    """`[-]hh:mm:ss[.f]` (hours in two or three digits) as a TIME(fsp) the server stores."""
    m = _TIME_RE.fullmatch(text)
    if m is None:
        return Invalid("not [-]hh:mm:ss[.fraction]")
    sign, h, mi, s, frac = m.groups()
    v = Time(sign == "-", int(h), int(mi), int(s), _micros(frac))
    return check_time(v, server=server, fsp=fsp) or v


def parse_year(text: str) -> int | Invalid:
    """A YEAR as decimal digits (`2024`, `0`, `0000`): 0 or 1901..2155."""
    if _YEAR_RE.fullmatch(text) is None:
        return Invalid("not a YEAR's decimal digits")
    n = int(text)
    return check_year(n) or n
