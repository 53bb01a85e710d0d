"""Baselines of expected failures (`--baseline FILE`): known failures do not fail the verdict.

A baseline is a JSON file of entries, each naming a check (an id, or a pattern such as
`delivery.*`), optionally a protocol, an encoder (a pattern too) and options (every option given
must have that value in the combination), with a reason, a ticket and an expiry date:

    {"format": "cdc-conformance/baseline", "format_version": 1, "entries": [
      {"check": "debezium.row.values", "encoder": "debezium/engine-postgres",
       "options": {"time.precision.mode": "nanoseconds"}, "reason": "timestamps beyond 2262 become null",
       "ticket": "https://issues.redhat.com/browse/DBZ-0000", "expires": "2027-03-31"}]}

An entry can be narrowed to findings: `message` (a pattern every finding's message matches),
`seed` and `shards` (every finding comes from these generated workloads): then it covers a failed
check only where each of its findings is one of those (a check with findings beyond the report's
limit of distinct ones is not covered), so that a defect known in one workload does not hide
another.

Against a report, a failure an entry covers is *known* (reported, not failing the verdict); after
the entry's expiry date it is *expired* and fails again. An entry whose check ran under matching
options without failing is *stale* (the defect is gone or the workloads missed it: reported, and
`--baseline-strict` fails the run on it, so that the file stays a burn-down list); one whose check
never ran there is *unobserved*. Errors of a check (the suite's own bugs) are never covered.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError

FORMAT = "cdc-conformance/baseline"
_KEYS = {"check", "protocol", "encoder", "options", "reason", "ticket", "expires", "message", "seed", "shards"}


@dataclass(frozen=True)
class Entry:
    check: str  # a check id or an fnmatch pattern
    reason: str = ""
    ticket: str | None = None
    expires: dt.date | None = None
    protocol: str | None = None
    encoder: str | None = None  # a name or an fnmatch pattern
    options: Mapping[str, str] = field(default_factory=dict)
    message: str | None = None  # a pattern every finding's message matches
    seed: str | None = None  # every finding comes from a workload of this seed …
    shards: tuple[int, ...] | None = None  # … and of these shards

    def matches(self, protocol: str, encoder: str, options: Mapping[str, str], check: str) -> bool:
        return (fnmatch.fnmatchcase(check, self.check)
                and (self.protocol is None or self.protocol == protocol)
                and (self.encoder is None or fnmatch.fnmatchcase(encoder, self.encoder))
                and all(options.get(k) == v for k, v in self.options.items()))

    @property
    def narrowed(self) -> bool:
        return self.message is not None or self.seed is not None or self.shards is not None

    def covers(self, findings: Sequence[Finding], beyond: int = 0) -> bool:
        """Whether every finding of a failed check is one this entry names."""
        if not self.narrowed:
            return True
        return beyond == 0 and bool(findings) and all(
            (self.message is None or fnmatch.fnmatchcase(f.message, self.message))
            and (self.seed is None or f.seed == self.seed)
            and (self.shards is None or f.shard in self.shards) for f in findings)

    def expired(self, today: dt.date) -> bool:
        return self.expires is not None and today > self.expires

    def to_json(self) -> dict[str, Any]:
        out = {"check": self.check, "protocol": self.protocol, "encoder": self.encoder,
               "options": dict(self.options) or None, "reason": self.reason, "ticket": self.ticket or None,
               "expires": None if self.expires is None else self.expires.isoformat(), "message": self.message,
               "seed": self.seed, "shards": None if self.shards is None else list(self.shards)}
        return {k: v for k, v in out.items() if v is not None}

    def describe(self) -> str:
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        bits = [self.check, *(x for x in (self.encoder, opts) if x)]
        return " · ".join(bits) + (f" — {self.reason}" if self.reason else "") + (
            f" ({self.ticket})" if self.ticket else "") + (f", expires {self.expires}" if self.expires else "")


def entry_from_json(d: Any, where: str) -> Entry:
    if not isinstance(d, dict):
        raise UsageError(f"{where}: an entry is a JSON object")
    unknown = set(d) - _KEYS
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                         f"(an entry has {', '.join(sorted(_KEYS))})")
    check = d.get("check")
    if not isinstance(check, str) or not check:
        raise UsageError(f"{where}: \"check\" names a check id or a pattern (e.g. \"delivery.*\")")
    options = d.get("options") or {}
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        raise UsageError(f"{where}: \"options\" maps option names to values given as strings")
    expires = None
    if d.get("expires") is not None:
        try:
            expires = dt.date.fromisoformat(str(d["expires"]))
        except ValueError:
            raise UsageError(f"{where}: \"expires\" is a date, YYYY-MM-DD (got {d['expires']!r})") from None
    for key in ("protocol", "encoder", "reason", "ticket", "message"):
        if d.get(key) is not None and not isinstance(d[key], str):
            raise UsageError(f"{where}: \"{key}\" is a string")
    shards = d.get("shards")
    if shards is not None and not (isinstance(shards, list) and all(type(x) is int for x in shards)):
        raise UsageError(f"{where}: \"shards\" is a list of shard numbers")
    return Entry(check, d.get("reason") or "", d.get("ticket"), expires, d.get("protocol"), d.get("encoder"),
                 dict(options), d.get("message"), None if d.get("seed") is None else str(d["seed"]),
                 None if shards is None else tuple(shards))


@dataclass
class Baseline:
    entries: list[Entry]
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": 1, "entries": [e.to_json() for e in self.entries]}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def load(path: str | Path, *, missing_ok: bool = False) -> Baseline:
    """The baseline at `path`, or a usage error saying what is wrong with it (an empty baseline
    where it does not exist and `missing_ok`)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if missing_ok:
            return Baseline([], str(p))
        raise UsageError(f"--baseline {p}: no such file (create one with `conformance baseline update`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"--baseline {p}: not a JSON baseline ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), list):
        raise UsageError(f"--baseline {p}: not a baseline (expected {{\"format\": \"{FORMAT}\", \"entries\": […]}})")
    if data.get("format_version") != 1:
        raise UsageError(f"--baseline {p}: format_version {data.get('format_version')!r}; this suite reads 1")
    return Baseline([entry_from_json(d, f"--baseline {p}, entry {i + 1}") for i, d in enumerate(data["entries"])],
                    str(p))


# -- a baseline against results ----------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    message: str
    seed: str | None = None
    shard: int | None = None


@dataclass(frozen=True)
class Judged:
    """One result as a report holds it (protocol, encoder, options of its combination), with its
    distinct findings and how many more it had than the report keeps."""

    protocol: str
    encoder: str
    label: str
    options: Mapping[str, str]
    check: str
    outcome: str
    findings: tuple[Finding, ...] = ()
    beyond: int = 0


@dataclass
class Verdicts:
    """What a baseline says of a report's results."""

    known: list[tuple[Judged, Entry]] = field(default_factory=list)
    expired: list[tuple[Judged, Entry]] = field(default_factory=list)
    stale: list[Entry] = field(default_factory=list)
    unobserved: list[Entry] = field(default_factory=list)

    def known_keys(self) -> set[tuple[str, str, str]]:
        """(encoder, label, check) of every known failure."""
        return {(j.encoder, j.label, j.check) for j, _ in self.known}

    def to_json(self, baseline: Baseline) -> dict[str, Any]:
        def one(j: Judged, e: Entry) -> dict[str, Any]:
            return {"check": j.check, "encoder": j.encoder, "label": j.label, "entry": e.to_json()}

        return {"file": baseline.path, "entries": len(baseline.entries),
                "known": [one(j, e) for j, e in self.known], "expired": [one(j, e) for j, e in self.expired],
                "stale": [e.to_json() for e in self.stale], "unobserved": [e.to_json() for e in self.unobserved]}


def judge(baseline: Baseline, results: Iterable[Judged], *, today: dt.date | None = None) -> Verdicts:
    today = today or dt.date.today()
    out = Verdicts()
    seen: dict[int, set[str]] = {}  # entry index -> outcomes of the results it matched
    for r in results:
        covering = None
        for i, e in enumerate(baseline.entries):
            if e.matches(r.protocol, r.encoder, r.options, r.check) and (
                    r.outcome != "failed" or e.covers(r.findings, r.beyond)):
                seen.setdefault(i, set()).add(r.outcome)
                if covering is None or (covering.expired(today) and not e.expired(today)):
                    covering = e
        if covering is not None and r.outcome == "failed":
            (out.expired if covering.expired(today) else out.known).append((r, covering))
    for i, e in enumerate(baseline.entries):
        outcomes = seen.get(i, set())
        if "failed" in outcomes:
            continue
        (out.stale if "passed" in outcomes else out.unobserved).append(e)
    return out


def findings_of(result: Mapping[str, Any]) -> tuple[Finding, ...]:
    """A report result's findings (its `failures`), as an entry narrows them."""
    return tuple(Finding(str(f.get("message", "")), None if f.get("seed") is None else str(f["seed"]),
                         f.get("shard")) for f in result.get("failures", []))


def report_results(report: Mapping[str, Any]) -> list[Judged]:
    """Every result of a report.json, with its combination (as `conformance compare` reads it)."""
    runs = report.get("runs", [])
    out = []
    for r in report.get("results", []):
        run = runs[r.get("run", 0)] if 0 <= r.get("run", 0) < len(runs) else {}
        out.append(Judged(str(run.get("protocol", "")), str(r.get("encoder", run.get("encoder", ""))),
                          str(r.get("label", run.get("label", ""))), dict(r.get("options", run.get("options", {}))),
                          r["check"], r["outcome"], findings_of(r), int(r.get("more_failures", 0))))
    return out


def update(baseline: Baseline, report: Mapping[str, Any], *, reason: str = "", ticket: str | None = None,
           expires: str | None = None) -> tuple[list[Entry], list[Entry]]:
    """Add the report's failures that no unexpired entry covers and remove the entries it shows
    stale; returns (added, pruned). The encoder is named where the report holds several. A check
    that failed in every combination of its encoder where it ran gets one entry; otherwise one per
    failing combination, pinned to the values of the options that vary between the combinations."""
    try:
        until = dt.date.fromisoformat(expires) if expires else None
    except ValueError:
        raise UsageError(f"--expires is a date, YYYY-MM-DD (got {expires!r})") from None
    results = report_results(report)
    verdicts = judge(baseline, results)
    pruned = list(verdicts.stale)
    baseline.entries = [e for e in baseline.entries if e not in pruned]
    known = verdicts.known_keys()
    # The encoder is named only where the report holds several (a new version of the same tool
    # under another name keeps its entries).
    several = len({r.encoder for r in results}) > 1
    failing = [r for r in results if r.outcome == "failed" and (r.encoder, r.label, r.check) not in known]
    added: list[Entry] = []
    for (protocol, encoder, check) in dict.fromkeys((r.protocol, r.encoder, r.check) for r in failing):
        ran = [r for r in results if (r.protocol, r.encoder, r.check) == (protocol, encoder, check)
               and r.outcome in ("passed", "failed")]
        fails = [r for r in failing if (r.protocol, r.encoder, r.check) == (protocol, encoder, check)]
        combos = [r.options for r in results if (r.protocol, r.encoder) == (protocol, encoder)]
        varying = sorted({k for o in combos for k in o if len({c.get(k) for c in combos}) > 1})
        pins = [{}] if len(fails) == len(ran) else [{k: r.options[k] for k in varying if k in r.options} for r in fails]
        for options in pins:
            entry = Entry(check, reason, ticket, until, protocol or None, (encoder or None) if several else None,
                          options)
            if entry not in added:
                added.append(entry)
    baseline.entries += added
    return added, pruned
