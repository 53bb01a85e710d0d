"""The result model every report is rendered from.

The canonical JSON report (`report.json`, `format_version` 2, documented by
`docs/report.schema.json`) is `Report.to_json()`; JUnit XML, the HTML matrix, the Markdown
summary and the compatibility site are rendered from that JSON, never from live objects, so
that `conformance` can re-render old reports and other tools can read them.

Version 2 added what a reader needs to trust a report (`tool.commit`, `environment`, `encoder`,
`configuration`, `seed`) and whether the run completed (`complete`, `incomplete`); readers take
version 1 too, its missing fields unknown (`compare.READABLE_VERSIONS`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..checks.registry import Level, Outcome
from ..checks.results import Tally
from . import trust
from .baseline import Baseline, Finding, Judged, Verdicts, judge

FORMAT_VERSION = 2


def tool_version() -> str:
    return trust.suite_version()


@dataclass
class Section:
    """One encoder under one option combination."""

    protocol: str
    encoder: str
    encoder_kind: str
    options: dict[str, str]
    label: str
    tally: Tally
    workloads: int = 0
    records: int = 0
    seed: Any = None
    duration_s: float = 0.0
    reproductions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Where the time went, per stage, in seconds summed over the workers (CPU-bound stages add
    # up beyond the wall time on several cores): what the next optimisation should look at.
    timings: dict[str, float] = field(default_factory=dict)
    # At the section's registry level: schema change -> outcome -> registrations (see
    # `harness/compatibility.py`: accepted, refused with the encoder stopped or going on…).
    compatibility: dict[str, dict[str, int]] = field(default_factory=dict)

    def verdict(self, strict: bool = False, known: Collection[str] = ()) -> str:
        """pass / fail / error; failures of the checks in `known` (a baseline's) do not fail it."""
        failed = [t for t in self.tally if t.outcome is Outcome.FAILED and t.id not in known
                  and (t.level is Level.MUST or (strict and t.level is Level.SHOULD))]
        if failed:
            return "fail"
        if any(t.outcome is Outcome.ERRORED for t in self.tally):
            return "error"
        return "pass"

    def to_json(self, strict: bool = False, known: Collection[str] = ()) -> dict[str, Any]:
        """The run's metadata and, under "results", its check results (the report moves them
        to its flat top-level list)."""
        return {
            "protocol": self.protocol, "encoder": self.encoder, "encoder_kind": self.encoder_kind,
            "options": self.options, "label": self.label, "verdict": self.verdict(strict, known),
            "workloads": self.workloads, "records": self.records, "seed": self.seed,
            "duration_s": round(self.duration_s, 3),
            "results": [t.to_json() for t in self.tally],
            "reproductions": self.reproductions, "notes": self.notes,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            **({"compatibility": self.compatibility} if self.compatibility else {}),
        }


def _findings(t: Any) -> tuple[Finding, ...]:
    """A check tally's distinct failures, as a baseline entry narrows them."""
    return tuple(Finding(f.message, None if f.workload is None else str(f.workload[0]),
                         None if f.workload is None else f.workload[1]) for f in t.failures.values())


@dataclass
class Report:
    mode: str  # "run" | "check" | "reproduce"
    sections: list[Section] = field(default_factory=list)
    command: str = ""
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    duration_s: float = 0.0
    strict: bool = False
    errors: list[str] = field(default_factory=list)  # infrastructure errors that stopped work
    baseline: Baseline | None = None  # expected failures (`--baseline`)
    baseline_strict: bool = False  # a stale baseline entry fails the verdict
    examples_db: dict[str, Any] | None = None  # what the example database did (`ExamplesDb.to_json`)
    # The encoder under test (`trust.encoder_identity`; None: a capture's unknown writer) and how
    # the run was configured (`trust.configuration`), for the reader who must trust the report.
    encoder: dict[str, Any] | None = None
    configuration: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # stopped before the end (Ctrl-C, a pytest session interrupted)

    def incomplete(self) -> str | None:
        """Why the run did not complete (None: it did): such a report is never published as a
        result (`conformance site`)."""
        if self.interrupted:
            return "interrupted before the end"
        if self.errors:
            return f"stopped by an error: {self.errors[0]}"
        if not self.sections:
            return "no results: nothing was checked"
        return None

    def seed(self) -> Any:
        """The run's seed where its combinations share one (null otherwise: each run has its own)."""
        seeds = {json.dumps(s.seed, default=str) for s in self.sections}
        return self.sections[0].seed if len(seeds) == 1 else None

    def judged(self) -> Verdicts | None:
        """What the baseline says of this report's results (None without a baseline)."""
        if self.baseline is None:
            return None
        return judge(self.baseline, (Judged(s.protocol, s.encoder, s.label, s.options, t.id, t.outcome.value,
                                            _findings(t), t.more_failures)
                                     for s in self.sections for t in s.tally))

    def _known(self, verdicts: Verdicts | None) -> dict[int, set[str]]:
        """Per section, the ids of its known failures."""
        keys = verdicts.known_keys() if verdicts is not None else set()
        return {i: {t.id for t in s.tally if (s.encoder, s.label, t.id) in keys} for i, s in enumerate(self.sections)}

    def verdict(self) -> str:
        verdicts = self.judged()
        known = self._known(verdicts)
        vs = [s.verdict(self.strict, known[i]) for i, s in enumerate(self.sections)]
        if "fail" in vs or (self.baseline_strict and verdicts is not None and verdicts.stale):
            return "fail"
        if self.errors or "error" in vs:
            return "error"
        return "pass"

    def exit_code(self) -> int:
        return {"pass": 0, "fail": 1}.get(self.verdict(), 2)

    def to_json(self) -> dict[str, Any]:
        verdicts = self.judged()
        known = self._known(verdicts)
        sections = [s.to_json(self.strict, known[i]) for i, s in enumerate(self.sections)]
        entries = {(j.encoder, j.label, j.check): e for j, e in (verdicts.known if verdicts else [])}
        flat = []
        for i, s in enumerate(sections):
            s["run"] = i
            for r in s.pop("results"):
                entry = entries.get((s["encoder"], s["label"], r["check"]))
                flat.append({**r, "run": i, "encoder": s["encoder"], "options": s["options"], "label": s["label"],
                             **({"known": entry.to_json()} if entry is not None else {})})
        extra = {"baseline": verdicts.to_json(self.baseline)} if verdicts is not None and self.baseline else {}
        incomplete = self.incomplete()
        return {
            "format_version": FORMAT_VERSION,
            "verdict": self.verdict(),
            "complete": incomplete is None,
            "incomplete": incomplete,
            "mode": self.mode,
            "tool": trust.tool(),
            "environment": trust.environment(),
            "encoder": self.encoder,
            "configuration": self.configuration,
            "seed": self.seed(),
            "command": self.command,
            "started": self.started.isoformat(timespec="seconds"),
            "duration_s": round(self.duration_s, 3),
            "strict": self.strict,
            "errors": self.errors,
            "runs": sections,
            "results": flat,
            **extra,
            **({"examples_db": self.examples_db} if self.examples_db is not None else {}),
        }


def runs_with_results(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's runs, each with its own results (grouped from the flat list)."""
    by_run: dict[int, list[dict[str, Any]]] = {}
    for r in report.get("results", []):
        by_run.setdefault(r.get("run", 0), []).append(r)
    return [{**run, "results": by_run.get(run.get("run", i), [])} for i, run in enumerate(report.get("runs", []))]


def grouped_notes(runs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each distinct note of the runs once, with where it was made: a note every combination
    shares (the same workloads, the same fault schedule) says "all N combinations"."""
    labels: dict[str, list[str]] = {}
    for run in runs:
        for note in run.get("notes", []):
            labels.setdefault(note, []).append(run["label"])
    out = []
    for note, where in labels.items():
        who = where[0] if len(where) == 1 else (
            f"all {len(where)} combinations" if len(where) == len(runs) else ", ".join(where))
        out.append((note, who))
    return out


#: Outcome -> the short cell text of the compatibility table.
_COMPAT_CELL = {"accepted": "accepted", "refused: encoder stopped": "refused, stopped",
                "refused: encoder went on": "refused, WENT ON", "refused by the rules, accepted by the registry":
                "registry accepted (forbidden)"}


def compatibility_table(runs: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, list[tuple[str, str]]]]]:
    """Per protocol and encoder, schema change × registry level: the levels (columns) and each
    change's cells (text, tone: "ok" accepted or refused as it must be, "bad" the encoder went
    on or the registry accepted what it must refuse, "" none seen). Rows are the changes, prefixed
    with the encoder where the report has several."""
    from ..infra.registry.compat import COMPATIBILITY_LEVELS

    counts: dict[str, dict[str, dict[str, int]]] = {}
    several = len({run["encoder"] for run in runs if run.get("compatibility")}) > 1
    for run in runs:
        level = str(run.get("options", {}).get("registry-compatibility", "")).upper()
        for change, outcomes in (run.get("compatibility") or {}).items():
            row = counts.setdefault(f"{run['encoder']}: {change}" if several else change, {})
            cell = row.setdefault(level, {})
            for outcome, n in outcomes.items():
                cell[outcome] = cell.get(outcome, 0) + n
    levels = [lv for lv in COMPATIBILITY_LEVELS if any(lv in row for row in counts.values())]
    rows = []
    for key in sorted(counts):
        cells = []
        for lv in levels:
            cell = counts[key].get(lv, {})
            text = ", ".join(f"{_COMPAT_CELL.get(o, o)} {n}" for o, n in sorted(cell.items()))
            bad = any(o in ("refused: encoder went on", "refused by the rules, accepted by the registry") for o in cell)
            cells.append((text, "bad" if bad else ("ok" if cell else "")))
        rows.append((key, cells))
    return levels, rows


_ACTORS = {"encoder": "the encoder under test", "capture": "whoever wrote the captured input",
           "suite": "cdc-conformance (a bug in the suite: please report it)",
           "infrastructure": "the broker / registry / environment"}


def known_text(entry: dict[str, Any]) -> str:
    """A baseline entry that covers a failure, in one line: why it is known, its ticket, expiry."""
    return ("known failure (baseline): " + (entry.get("reason") or "no reason given")
            + (f" — {entry['ticket']}" if entry.get("ticket") else "")
            + (f", until {entry['expires']}" if entry.get("expires") else ""))


def baseline_lines(report: dict[str, Any]) -> list[str]:
    """What the report's baseline found: known, expired, stale and unobserved entries."""
    b = report.get("baseline")
    if not b:
        return []
    out = [f"baseline {b['file']}: {len(b['known'])} known failure(s) (not failing the run), "
           f"{len(b['expired'])} expired, {len(b['stale'])} stale entr{'y' if len(b['stale']) == 1 else 'ies'}, "
           f"{len(b['unobserved'])} unobserved"]
    for x in b["expired"]:
        out.append(f"  expired (fails again): {x['check']} ({x['label']}) — expired {x['entry'].get('expires')}")
    for e in b["stale"]:
        out.append(f"  stale (its check ran and passed): {e['check']}"
                   + "".join(f" {k}={v}" for k, v in e.get("options", {}).items()) + f" — {e.get('reason', '')}")
    return out


def examples_db_lines(report: dict[str, Any]) -> list[str]:
    """What the example database did in this run (`harness/examples_db.py`): examples replayed
    first, still failing, retired, newly kept."""
    db = report.get("examples_db")
    if not db or not (db["replayed"] or db["saved"] or db["unreadable"] or db["not_in_this_run"]):
        return []
    out = [f"example database {db['path']}: {db['replayed']} kept example(s) replayed first, "
           f"{len(db['still_failing'])} still failing, {len(db['retired'])} retired (passed {db['retire_after']} "
           f"runs in a row), {len(db['saved'])} newly kept"
           + (f", {db['not_in_this_run']} waiting for a run with their options" if db["not_in_this_run"] else "")]
    out += [f"  still failing: {x['check']} ({x['file']})" for x in db["still_failing"]]
    out += [f"  unreadable, left alone: {x}" for x in db["unreadable"]]
    return out


def finding_details(f: dict[str, Any], width: int) -> list[str]:
    """What follows a finding's message wherever it is printed: expected and actual (cut to
    `width` characters of JSON), where, who must act, and the workload it came from."""
    out = [f"expected: {json.dumps(f.get('expected'), ensure_ascii=False, default=str)[:width]}",
           f"actual:   {json.dumps(f.get('actual'), ensure_ascii=False, default=str)[:width]}"]
    loc = ", ".join(f"{k} {v}" for k, v in f.get("location", {}).items())
    if loc:
        out.append(f"at: {loc}")
    out.append(who_acts(f))
    if "seed" in f:
        out.append(f"workload: seed {f['seed']}, shard {f['shard']}")
    return out


def who_acts(failure: dict[str, Any]) -> str:
    """One line saying who must act on a finding, and the finding's hint if it has one."""
    actor = _ACTORS.get(failure.get("actor", "encoder"), failure.get("actor", "encoder"))
    hint = failure.get("hint")
    return f"who must act: {actor}" + (f" — {hint}" if hint else "")
