"""The compatibility site's data: reports read (format 1 or 2), the runs of those that completed
grouped by encoder (name and version) and by column (protocol and option profile), and what each
group of runs says of each check.

Nothing here is a score: counts are per encoder and column, never summed across encoders.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ..compare import READABLE_VERSIONS

UNKNOWN = "unknown"
#: A check's status over several runs, worst first: what the cell and the badge show.
STATUSES = ("errored", "failed", "known", "passed", "quiet")
LEVELS = ("MUST", "SHOULD", "INFO")


def slug(text: str, *, hashed: bool = True) -> str:
    """A file name for `text`: letters, digits, dots, dashes and underscores (others become -),
    with a short hash where something was replaced (unless the caller keeps names apart itself),
    so that two texts never share one."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "x"
    if hashed and clean != text:
        clean = f"{clean[:80]}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"
    return clean


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """Version order: 3.10 after 3.9, 0.1.0 before 0.1.0.dev-anything's successors."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|[^\d.+-]+", text))


@dataclass
class Source:
    """One report file, as given to `conformance site`."""

    path: Path
    name: str  # how the site names it: the path as given, relative where it can be
    data: dict[str, Any]
    incomplete: str | None  # why it is not published as a result (None: it is)
    slug: str = ""

    @property
    def format_version(self) -> int:
        return int(self.data.get("format_version", 0))

    @property
    def started(self) -> str:
        return str(self.data.get("started") or "")

    @property
    def date(self) -> str:
        return self.started[:10] or UNKNOWN

    def tool(self) -> dict[str, Any]:
        t = self.data.get("tool")
        return t if isinstance(t, dict) else {}

    def trust(self) -> list[tuple[str, str]]:
        """What the report records for a reader to trust it, each field or "unknown"."""
        t, env = self.tool(), self.data.get("environment") or {}
        enc = self.data.get("encoder") or {}
        commit = t.get("commit")
        if commit and t.get("dirty"):
            commit += " (with uncommitted changes)"
        seed = self.data.get("seed")
        if seed is None:
            seeds = sorted({str(r.get("seed")) for r in self.data.get("runs", [])})
            seed = ", ".join(seeds) if seeds else None
        rows = [
            ("suite", f"{t.get('name', 'cdc-conformance')} {t.get('version') or UNKNOWN}"),
            ("suite commit", commit or UNKNOWN),
            ("encoder", " ".join(str(x) for x in (enc.get("implementation"), enc.get("version")) if x)
             or (f"{enc.get('name')} (version unknown)" if enc.get("name") else UNKNOWN)),
            ("encoder name in the run", str(enc.get("name") or ", ".join(sorted(
                {str(r.get("encoder")) for r in self.data.get("runs", [])})) or UNKNOWN)),
            ("seed", str(seed) if seed is not None else UNKNOWN),
            ("Python", str(env.get("python") or t.get("python") or UNKNOWN)),
            ("Java", str(env.get("java") or UNKNOWN)),
            ("Spark", str(env.get("spark") or UNKNOWN)),
            ("started", self.started or UNKNOWN),
            ("duration", f"{self.data.get('duration_s')} s" if self.data.get("duration_s") is not None else UNKNOWN),
            ("mode", str(self.data.get("mode") or UNKNOWN)),
            ("verdict", str(self.data.get("verdict") or UNKNOWN)),
            ("completed", "no: " + self.incomplete if self.incomplete else
             ("yes" if self.format_version >= 2 else "yes (format 1: no errors recorded)")),
            ("report format", str(self.format_version)),
            ("command", str(self.data.get("command") or UNKNOWN)),
        ]
        config = self.data.get("configuration")
        if isinstance(config, dict) and config:
            shown = (f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                     for k, v in sorted(config.items()))
            rows.append(("configuration", ", ".join(shown)))
        return rows


@dataclass
class Run:
    """One option combination of one report."""

    source: Source
    index: int
    protocol: str
    profile: str
    encoder: str  # the encoder's name in the run
    label: str
    options: dict[str, str]
    data: dict[str, Any]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # check id -> result

    @property
    def column(self) -> tuple[str, str]:
        return self.protocol, self.profile

    def reproduction(self, check: str) -> dict[str, Any] | None:
        return next((x for x in self.data.get("reproductions", []) if x.get("check") == check), None)


@dataclass
class Entry:
    """One encoder at one version: every run of it in the reports that completed."""

    name: str  # what the site calls it: the implementation's own name, else the run's encoder name
    version: str | None
    kind: str
    runs: list[Run] = field(default_factory=list)
    incomplete: list[Source] = field(default_factory=list)  # its reports that did not complete
    slug: str = ""

    @property
    def title(self) -> str:
        return f"{self.name} {self.version or '(version unknown)'}"

    def sources(self) -> list[Source]:
        seen: dict[str, Source] = {}
        for r in self.runs:
            seen.setdefault(r.source.name, r.source)
        return list(seen.values())

    def protocols(self) -> list[str]:
        return sorted({r.protocol for r in self.runs})

    def runs_of(self, protocol: str, profile: str | None = None) -> list[Run]:
        return [r for r in self.runs if r.protocol == protocol and (profile is None or r.profile == profile)]


def result_status(r: dict[str, Any]) -> str:
    outcome = r.get("outcome")
    if outcome == "failed":
        return "known" if r.get("known") else "failed"
    if outcome in ("errored", "passed"):
        return str(outcome)
    return "quiet"  # skipped, not applicable


def worst(statuses: Iterable[str]) -> str:
    seen = set(statuses)
    return next((s for s in STATUSES if s in seen), "quiet")


@dataclass
class Counts:
    """What one encoder's runs under one column say of the checks: per level, how many checks
    passed, failed, failed as known (a baseline's entry), errored; each check counted once, at
    its worst over the runs."""

    by_level: dict[str, dict[str, int]]
    combinations: int
    date: str

    def get(self, level: str, status: str) -> int:
        return self.by_level.get(level, {}).get(status, 0)

    @property
    def tone(self) -> str:
        """The cell's colour: error, fail (a MUST failed), should (a SHOULD failed), known, pass."""
        if any(v.get("errored") for v in self.by_level.values()):
            return "error"
        if self.get("MUST", "failed"):
            return "fail"
        if self.get("SHOULD", "failed"):
            return "should"
        if any(v.get("known") for v in self.by_level.values()):
            return "known"
        return "pass"


def check_statuses(runs: Sequence[Run]) -> dict[str, tuple[str, str]]:
    """check id -> (level, worst status over the runs)."""
    per: dict[str, list[str]] = {}
    level: dict[str, str] = {}
    for run in runs:
        for cid, r in run.results.items():
            per.setdefault(cid, []).append(result_status(r))
            level.setdefault(cid, str(r.get("level", "MUST")))
    return {cid: (level[cid], worst(s)) for cid, s in per.items()}


def counts(runs: Sequence[Run]) -> Counts:
    by_level: dict[str, dict[str, int]] = {}
    for level, status in check_statuses(runs).values():
        row = by_level.setdefault(level, {})
        row[status] = row.get(status, 0) + 1
    dates = sorted({r.source.date for r in runs})
    return Counts(by_level, len(runs), dates[-1] if dates else UNKNOWN)


# -- reading ------------------------------------------------------------------------------------------------

def is_report(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("runs"), list) and isinstance(data.get("results"), list)


def report_paths(inputs: Sequence[str | Path]) -> list[Path]:
    """The report files among `inputs`: files as given, and under each directory every `*.json`
    that is a report (baselines and other JSON beside them are passed over)."""
    out: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            for f in sorted(p.rglob("*.json")):
                try:
                    if is_report(json.loads(f.read_text(encoding="utf-8"))):
                        out.append(f)
                except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                    continue
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"{p}: no such report or directory")
    if not out:
        raise UsageError("no reports found in " + ", ".join(map(str, inputs)))
    return list(dict.fromkeys(out))


def _display(p: Path) -> str:
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def read_source(p: Path) -> Source:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"{p} is not a report.json (cannot read it as JSON: {e})") from None
    if not is_report(data):
        raise UsageError(f"{p} is not a report.json (no \"runs\" and \"results\" lists)")
    if data.get("format_version") not in READABLE_VERSIONS:
        raise UsageError(f"{p} has report format_version {data.get('format_version')!r}; this suite reads "
                         f"{' and '.join(map(str, READABLE_VERSIONS))}")
    return Source(p, _display(p), data, incomplete_reason(data))


def incomplete_reason(data: dict[str, Any]) -> str | None:
    """Why a report is not a result: it says so (format 2), infrastructure errors stopped it, or
    it holds no runs. A format 1 report was written only at the end of a run, or with the errors
    that stopped it."""
    if data.get("complete") is False:
        return str(data.get("incomplete") or "the run did not complete")
    if data.get("errors"):
        return f"stopped by an error: {data['errors'][0]}"
    if not data.get("runs"):
        return "no results: nothing was checked"
    return None


def _profiles(protocol: str) -> tuple[str, ...]:
    """The protocol's option profiles, the default first (empty where it is not installed here)."""
    from ...protocols import all_protocols

    for p in all_protocols():
        if p.name == protocol:
            return tuple(pr.name for pr in p.profiles)
    return ()


def protocol_order() -> list[str]:
    from ...protocols import protocol_names

    return list(protocol_names())


def profile_of(protocol: str, options: dict[str, Any]) -> str:
    """A run's column: the profile it names, else its protocol's default profile."""
    named = options.get("profile")
    if named:
        return str(named)
    profiles = _profiles(protocol)
    return profiles[0] if profiles else "default"


def _identity(data: dict[str, Any], run: dict[str, Any]) -> tuple[str, str | None, str]:
    """(site name, version, kind) of a run's encoder."""
    enc = data.get("encoder") if isinstance(data.get("encoder"), dict) else None
    kind = str(run.get("encoder_kind") or UNKNOWN)
    if enc is not None and enc.get("name") == run.get("encoder"):
        kind = str(enc.get("kind") or kind)
        impl, version = enc.get("implementation"), enc.get("version")
        name = str(impl) if kind == "external" and impl else str(run.get("encoder"))
        return name, (str(version) if version else None), kind
    return str(run.get("encoder")), None, kind


def runs_of(source: Source) -> list[tuple[tuple[str, str | None, str], Run]]:
    data = source.data
    out = []
    for i, raw in enumerate(data["runs"]):
        options = {str(k): str(v) for k, v in (raw.get("options") or {}).items()}
        protocol = str(raw.get("protocol", UNKNOWN))
        run = Run(source, i, protocol, profile_of(protocol, options), str(raw.get("encoder")),
                  str(raw.get("label") or "defaults"), options, raw)
        out.append((_identity(data, raw), run))
    for r in data["results"]:
        i = r.get("run", 0)
        if isinstance(i, int) and 0 <= i < len(out) and isinstance(r.get("check"), str):
            held = out[i][1].results.get(r["check"])
            if held is None or STATUSES.index(result_status(r)) < STATUSES.index(result_status(held)):
                out[i][1].results[r["check"]] = r
    return out


@dataclass
class Site:
    sources: list[Source]
    entries: list[Entry]
    columns: list[tuple[str, str]]

    def published(self) -> list[Source]:
        return [s for s in self.sources if s.incomplete is None]

    def unpublished(self) -> list[Source]:
        return [s for s in self.sources if s.incomplete is not None]

    def checks(self) -> dict[str, dict[str, Any]]:
        """Every check any published run has, id -> one of its results (level, clause, title)."""
        out: dict[str, dict[str, Any]] = {}
        for e in self.entries:
            for run in e.runs:
                for cid, r in run.results.items():
                    out.setdefault(cid, r)
        return dict(sorted(out.items()))

    def versions(self, name: str) -> list[Entry]:
        """The entries of one encoder name, oldest version first (unknown versions left out)."""
        return sorted((e for e in self.entries if e.name == name and e.version and e.runs),
                      key=lambda e: natural(e.version or ""))


def load(inputs: Sequence[str | Path]) -> Site:
    sources = [read_source(p) for p in report_paths(inputs)]
    used: set[str] = set()
    for s in sources:
        base = slug(re.sub(r"\.json$", "", s.name), hashed=False)
        s.slug = base
        n = 2
        while s.slug in used:
            s.slug, n = f"{base}-{n}", n + 1
        used.add(s.slug)
    entries: dict[tuple[str, str | None], Entry] = {}
    for s in sources:
        for (name, version, kind), run in runs_of(s):
            e = entries.setdefault((name, version), Entry(name, version, kind))
            if s.incomplete is None:
                e.runs.append(run)
            elif s not in e.incomplete:
                e.incomplete.append(s)
    order = {p: i for i, p in enumerate(protocol_order())}
    columns: set[tuple[str, str]] = {r.column for e in entries.values() for r in e.runs}
    for e in entries.values():
        for s in e.incomplete:
            columns |= {run.column for ident, run in runs_of(s) if (ident[0], ident[1]) == (e.name, e.version)}

    def col_key(c: tuple[str, str]) -> tuple[int, str, int, str]:
        profiles = _profiles(c[0])
        return (order.get(c[0], len(order)), c[0], profiles.index(c[1]) if c[1] in profiles else len(profiles), c[1])

    ordered = sorted(entries.values(), key=lambda e: (e.name, natural(e.version or "")))
    taken: set[str] = set()
    for e in ordered:
        e.slug = slug(f"{e.name}-{e.version or 'unknown'}", hashed=False)
        while e.slug in taken:
            e.slug += "-x"
        taken.add(e.slug)
    return Site(sources, ordered, sorted(columns, key=col_key))


def merged_report(entry: Entry, protocol: str) -> dict[str, Any]:
    """An entry's runs of one protocol as one report, the encoder named as the site names it (so
    that `compare` meets the same combinations across versions)."""
    runs, results = [], []
    for i, run in enumerate(entry.runs_of(protocol)):
        runs.append({**{k: v for k, v in run.data.items() if k != "results"}, "encoder": entry.name, "run": i})
        results += [{**r, "run": i, "encoder": entry.name} for r in run.results.values()]
    dates = sorted(s.started for s in entry.sources())
    return {"format_version": 2, "verdict": None, "strict": False, "runs": runs, "results": results,
            "command": entry.title, "started": dates[-1] if dates else None, "tool": {}}
