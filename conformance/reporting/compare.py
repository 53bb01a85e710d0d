"""`conformance compare OLD.json NEW.json`: what changed between two reports.

Per protocol × encoder × option combination × check: new failures, fixed, still failing, newly
skipped or not applicable, checks only in one report (a suite upgrade) and combinations only in
one. Combinations are matched by their options (every option of the run, as the report records
them), never by their labels. Where each report holds one encoder of a protocol and the names
differ (two versions of one tool, `--encoder-cmd` with another path), the two are compared with each
other and the pairing is said.

A *new failure* gates (exit 1) when it is one the newer report's verdict counts: a MUST check, a
SHOULD check under `--strict`, or a check that errored. Others (SHOULD, INFO) are listed.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError

FORMAT = "cdc-conformance/compare"
FAILING = frozenset({"failed", "errored"})
QUIET = frozenset({"skipped", "not-applicable"})
#: The report format versions this suite reads (`model.FORMAT_VERSION` writes the newest): version 1
#: lacks the trust fields of 2, which readers then treat as unknown.
READABLE_VERSIONS = (1, 2)
# When a report holds the same check of the same combination twice, the worst outcome stands.
_RANK = {"errored": 4, "failed": 3, "passed": 2, "not-applicable": 1, "skipped": 0}


class Kind(enum.StrEnum):
    NEW_FAILURE = "new-failure"
    FIXED = "fixed"
    STILL_FAILING = "still-failing"
    NEWLY_QUIET = "newly-skipped"  # ran (passed or failed) before; skipped or not applicable now
    NEW_CHECK = "new-check"  # only in the newer report, not failing there
    GONE_CHECK = "removed-check"
    NEW_COMBINATION = "new-combination"  # only in the newer report, nothing failing there
    GONE_COMBINATION = "removed-combination"


TITLES = {
    Kind.NEW_FAILURE: "New failures", Kind.FIXED: "Fixed", Kind.STILL_FAILING: "Still failing",
    Kind.NEWLY_QUIET: "Newly skipped or not applicable", Kind.NEW_CHECK: "Checks only in the new report",
    Kind.GONE_CHECK: "Checks only in the old report", Kind.NEW_COMBINATION: "Combinations only in the new report",
    Kind.GONE_COMBINATION: "Combinations only in the old report",
}


@dataclass(frozen=True)
class Result:
    """One check of one combination, as a report states it."""

    check: str
    level: str
    outcome: str
    message: str = ""  # the first failure's message, where it failed


@dataclass
class Combination:
    protocol: str
    encoder: str
    label: str
    options: dict[str, str]
    strict: bool
    results: dict[str, Result] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, frozenset[tuple[str, str]]]:
        return self.protocol, self.encoder, frozenset(self.options.items())


@dataclass(frozen=True)
class Change:
    kind: Kind
    protocol: str
    encoder: str  # the newer report's name where both have the combination
    label: str
    options: dict[str, str]
    check: str | None  # None for a whole combination
    level: str | None
    old: str | None  # outcome in the older report
    new: str | None
    message: str = ""
    gates: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "protocol": self.protocol, "encoder": self.encoder, "label": self.label,
                "options": self.options, "check": self.check, "level": self.level, "old": self.old,
                "new": self.new, "message": self.message, "gates": self.gates}


@dataclass
class Comparison:
    old: dict[str, Any]
    new: dict[str, Any]
    changes: list[Change]
    pairings: list[str]  # "old-name → new-name (protocol)" where encoders were matched across names
    unchanged: int  # checks of matched combinations with the same outcome (passing, or quiet)

    def of(self, kind: Kind) -> list[Change]:
        return [c for c in self.changes if c.kind is kind]

    @property
    def regressed(self) -> bool:
        return any(c.gates for c in self.changes)

    def exit_code(self) -> int:
        return 1 if self.regressed else 0

    def counts(self) -> dict[str, int]:
        return {str(k): len(self.of(k)) for k in Kind}

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": 1, "old": self.old, "new": self.new,
                "regressed": self.regressed, "counts": self.counts(), "unchanged": self.unchanged,
                "pairings": self.pairings, "changes": [c.to_json() for c in self.changes]}


def load(path: str | Path) -> dict[str, Any]:
    """A report as `conformance run` / `check` write it, or a usage error saying what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{p}: no such report") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"{p} is not a report.json (cannot read it as JSON: {e})") from None
    if not (isinstance(data, dict) and isinstance(data.get("runs"), list) and isinstance(data.get("results"), list)):
        raise UsageError(f"{p} is not a report.json (no \"runs\" and \"results\" lists)")
    if data.get("format_version") not in READABLE_VERSIONS:
        raise UsageError(f"{p} has report format_version {data.get('format_version')!r}; this suite reads "
                         f"{' and '.join(map(str, READABLE_VERSIONS))}")
    return data


def combinations(report: Mapping[str, Any], *, name: str = "report") -> list[Combination]:
    """The report's combinations with their results (a flat result names its run by index)."""
    strict = bool(report.get("strict"))
    combos: list[Combination] = []
    for i, run in enumerate(report["runs"]):
        if not isinstance(run, dict) or not isinstance(run.get("options", {}), dict):
            raise UsageError(f"{name}: run {i} is not an object with options")
        options = {str(k): str(v) for k, v in run.get("options", {}).items()}
        combos.append(Combination(str(run.get("protocol", "")), str(run.get("encoder", "")),
                                  str(run.get("label", "")), options, strict))
    for j, r in enumerate(report["results"]):
        if not isinstance(r, dict) or not isinstance(r.get("check"), str) or r.get("outcome") not in _RANK:
            raise UsageError(f"{name}: result {j} has no check id or no known outcome")
        run = r.get("run", 0)
        if not isinstance(run, int) or not 0 <= run < len(combos):
            raise UsageError(f"{name}: result {j} names run {run!r}, which the report does not have")
        failures = r.get("failures") or []
        message = str(failures[0].get("message", "")) if failures and isinstance(failures[0], dict) else ""
        res = Result(r["check"], str(r.get("level", "")), r["outcome"], message)
        held = combos[run].results.get(res.check)
        if held is None or _RANK[res.outcome] > _RANK[held.outcome]:
            combos[run].results[res.check] = res
    return combos


def _summary(report: Mapping[str, Any], path: str) -> dict[str, Any]:
    tool = report.get("tool") or {}
    return {"path": path, "verdict": report.get("verdict"), "command": report.get("command"),
            "started": report.get("started"), "tool_version": tool.get("version") if isinstance(tool, dict) else None}


def _pair_renamed(old: list[Combination], new: list[Combination]) -> list[str]:
    """Where a protocol has exactly one encoder in each report under two names, the older report's
    combinations take the newer name (so that versions of one tool meet); returns the pairings."""
    said = []
    for protocol in sorted({c.protocol for c in old} & {c.protocol for c in new}):
        olds = {c.encoder for c in old if c.protocol == protocol}
        news = {c.encoder for c in new if c.protocol == protocol}
        if len(olds) == 1 and len(news) == 1 and olds != news:
            (was,), (now,) = olds, news
            for c in old:
                if c.protocol == protocol:
                    c.encoder = now
            said.append(f"{was} → {now} ({protocol})")
    return said


def _gates(res: Result, strict: bool) -> bool:
    return res.outcome == "errored" or (res.outcome == "failed" and (
        res.level == "MUST" or (strict and res.level == "SHOULD")))


def compare(old_report: Mapping[str, Any], new_report: Mapping[str, Any], *, old_name: str = "OLD",
            new_name: str = "NEW", strict: bool = False) -> Comparison:
    """Every difference between the two reports; `strict` gates on SHOULD checks as `--strict` runs do
    (a newer report that was itself strict gates on them anyway)."""
    old = combinations(old_report, name=old_name)
    new = combinations(new_report, name=new_name)
    pairings = _pair_renamed(old, new)
    olds = {c.key: c for c in old}
    changes: list[Change] = []
    unchanged = 0
    matched = set()
    for nc in new:
        gate_should = strict or nc.strict
        oc = olds.get(nc.key)
        if oc is None:
            changes += _only_new(nc, gate_should)
            continue
        matched.add(nc.key)
        for check in sorted(nc.results.keys() | oc.results.keys()):
            change = _change(nc, oc.results.get(check), nc.results.get(check), gate_should)
            if change is None:
                unchanged += 1
            else:
                changes.append(change)
    for oc in old:
        if oc.key not in matched:
            failing = sum(r.outcome in FAILING for r in oc.results.values())
            changes.append(Change(Kind.GONE_COMBINATION, oc.protocol, oc.encoder, oc.label, oc.options, None, None,
                                  None, None, f"{len(oc.results)} checks, {failing} failing then"))
    order = list(Kind)
    changes.sort(key=lambda c: (order.index(c.kind), c.protocol, c.encoder, c.label, c.check or ""))
    return Comparison(_summary(old_report, old_name), _summary(new_report, new_name), changes, pairings, unchanged)


def _only_new(nc: Combination, gate_should: bool) -> list[Change]:
    failing = [r for r in nc.results.values() if r.outcome in FAILING]
    if not failing:
        return [Change(Kind.NEW_COMBINATION, nc.protocol, nc.encoder, nc.label, nc.options, None, None, None, None,
                       f"{len(nc.results)} checks, none failing")]
    return [Change(Kind.NEW_FAILURE, nc.protocol, nc.encoder, nc.label, nc.options, r.check, r.level, None, r.outcome,
                   r.message or "(errored)", _gates(r, gate_should)) for r in sorted(failing, key=lambda r: r.check)]


def _change(nc: Combination, was: Result | None, now: Result | None, gate_should: bool) -> Change | None:
    either = now or was
    assert either is not None

    def made(kind: Kind, message: str = "", gates: bool = False) -> Change:
        return Change(kind, nc.protocol, nc.encoder, nc.label, nc.options, either.check, either.level,
                      was.outcome if was else None, now.outcome if now else None, message, gates)

    if now is None:
        return made(Kind.GONE_CHECK)
    if now.outcome in FAILING:
        if was is not None and was.outcome in FAILING:
            return made(Kind.STILL_FAILING, now.message)
        return made(Kind.NEW_FAILURE, now.message or "(errored)", _gates(now, gate_should))
    if was is None:
        return made(Kind.NEW_CHECK)
    if was.outcome in FAILING:
        return made(Kind.FIXED, was.message) if now.outcome == "passed" else made(Kind.NEWLY_QUIET, was.message)
    if now.outcome in QUIET and was.outcome == "passed":
        return made(Kind.NEWLY_QUIET)
    return None


# -- renderings ------------------------------------------------------------------------------------

def _grouped(changes: list[Change]) -> list[tuple[str, str, list[str]]]:
    """(check, first message, combinations) — one line per check across the combinations it hits;
    a combination is named by its label, with the encoder where the changes name several."""
    encoders = len({c.encoder for c in changes}) > 1
    groups: dict[str, tuple[str, list[str]]] = {}
    for c in changes:
        key = c.check or "(whole combination)"
        message, where = groups.setdefault(key, (c.message, []))
        label = c.label or "defaults"
        where.append(f"{c.encoder} ({label})" if encoders else label)
    return [(k, m, w) for k, (m, w) in groups.items()]


def markdown(cmp: Comparison, *, limit: int = 50) -> str:
    head = "regressed ❌" if cmp.regressed else "no new failures ✅"
    out = [f"## cdc-conformance compare: **{head}**", "",
           f"`{cmp.old['path']}` ({cmp.old['verdict']}) → `{cmp.new['path']}` ({cmp.new['verdict']})", ""]
    if cmp.pairings:
        out += ["Encoders compared across names: " + ", ".join(f"`{p}`" for p in cmp.pairings), ""]
    out += ["| | checks |", "|---|---:|"]
    out += [f"| {TITLES[k]} | {len(cmp.of(k))} |" for k in Kind if cmp.of(k)]
    out.append(f"| Unchanged | {cmp.unchanged} |")
    for kind in Kind:
        rows = cmp.of(kind)
        if not rows:
            continue
        out += ["", f"### {TITLES[kind]}", ""]
        for check, message, where in _grouped(rows)[:limit]:
            gate = " (does not gate)" if kind is Kind.NEW_FAILURE and not any(
                c.gates for c in rows if (c.check or "(whole combination)") == check) else ""
            text = f"- `{check}`{gate} in {_list(where)}"
            out.append(text + (f": {message}" if message else ""))
    return "\n".join(out) + "\n"


def _list(where: list[str], most: int = 4) -> str:
    shown = ", ".join(where[:most])
    return shown + (f" and {len(where) - most} more" if len(where) > most else "")


def print_terminal(cmp: Comparison, console: Any) -> None:
    from rich.table import Table

    old, new = cmp.old, cmp.new
    console.print(f"[bold]{old['path']}[/] ({old['verdict']}) → [bold]{new['path']}[/] ({new['verdict']})")
    for p in cmp.pairings:
        console.print(f"encoders compared across names: {p}")
    t = Table(show_header=True, pad_edge=False)
    for col in ("change", "check", "combinations", "first message"):
        t.add_column(col)
    colour = {Kind.NEW_FAILURE: "red", Kind.FIXED: "green", Kind.STILL_FAILING: "yellow"}
    for kind in Kind:
        for check, message, where in _grouped(cmp.of(kind)):
            t.add_row(f"[{colour.get(kind, 'cyan')}]{kind}[/]", check, _list(where, 3), message[:100])
    if t.row_count:
        console.print(t)
    counts = ", ".join(f"{n} {k}" for k, n in cmp.counts().items() if n)
    console.print(f"{counts or 'no changes'}; {cmp.unchanged} unchanged")
    console.print("[bold red]REGRESSED[/]: new failures" if cmp.regressed else "[bold green]NO NEW FAILURES[/]")
