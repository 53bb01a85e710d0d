"""The example database: failing examples kept between runs and replayed first (as Hypothesis
keeps its failing examples in `.hypothesis/`).

Where a run finds a failure it can replay in memory (the shrunk workload of its reproduction, or
the workload as generated under `--no-shrink`), the example is kept in
`<db>/examples/<protocol>/<encoder>/`, one file per option combination and check: a reproduction
file (format v1, so `conformance reproduce FILE` replays it) with what the database adds — the
seed and shard it came from and how many runs in a row it has passed. The next run of the same
protocol and encoder replays every kept example whose options are among its combinations before
the generated workloads, in memory; what they find is that combination's result like any other
(a replayed example that still fails fails the run, its reproduction is the example's file). An
example that passes `RETIRE_AFTER` runs in a row is removed; a new failure of the same check and
options replaces a kept one only when it is smaller.

Not kept: findings that need the broker and its faults, a whole tool, the source server (their
replay is a run of their own, not an in-memory one), and hangs (a replay would wait out the
timeout each run).

The database is `.conformance/` in the working directory unless `--examples-db DIR` or the
environment variable `CONFORMANCE_EXAMPLES_DB` says otherwise; `off` (or `--no-examples-db`) turns
it off. A file that cannot be read is left alone and counted, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.events import Workload
from ..model.serde import WorkloadFormatError, workload_from_json, workload_to_json
from ..protocols.base import ProtocolSuite

DEFAULT_DIR = ".conformance"
ENV = "CONFORMANCE_EXAMPLES_DB"
RETIRE_AFTER = 3
_OFF = {"", "off", "none", "no", "false", "0"}
_UNSAFE = re.compile(r"[^\w.-]+")


def location(flag: str | None = None, *, disabled: bool = False) -> Path | None:
    """Where the database is: `flag` (`--examples-db`), else the environment's, else
    `.conformance`; None when turned off."""
    if disabled:
        return None
    value = flag if flag is not None else os.environ.get(ENV, DEFAULT_DIR)
    return None if value.strip().lower() in _OFF else Path(value)


def _safe(name: str) -> str:
    """A file-name part without spaces or shell characters (a cmd: encoder's name is a command)."""
    return _UNSAFE.sub("_", name).strip("_")[:80] or "_"


def _options_key(options: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(sorted(options.items())).encode()).hexdigest()[:10]


@dataclass
class Example:
    path: Path
    data: dict[str, Any]
    workload: Workload

    @property
    def check(self) -> str:
        return str(self.data["check"])

    @property
    def options(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.data["options"].items()}

    @property
    def origin(self) -> tuple[Any, int]:
        ex = self.data.get("example", {})
        return ex.get("seed", 0), int(ex.get("shard", 0))


@dataclass
class ExamplesDb:
    """One protocol's and encoder's kept examples, and what this run did with them."""

    root: Path
    protocol: str
    encoder: str
    examples: list[Example] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    replayed: list[tuple[Example, bool]] = field(default_factory=list)  # (example, still fails)
    saved: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    _loaded: list[Example] = field(default_factory=list)
    _counted: set[int] = field(default_factory=set)  # replays whose passes are written (`finish`)

    @property
    def dir(self) -> Path:
        return self.root / "examples" / _safe(self.protocol) / _safe(self.encoder)

    @classmethod
    def open(cls, root: Path, protocol: str, encoder: str) -> ExamplesDb:
        db = cls(root, protocol, encoder)
        if db.dir.is_dir():
            for path in sorted(db.dir.glob("*.json")):
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                    if data.get("format") != "cdc-conformance/reproduction" or data.get("format_version") != 1:
                        raise ValueError("not a reproduction file of format version 1")
                    if not isinstance(data.get("check"), str) or not isinstance(data.get("options"), dict):
                        raise ValueError("no check or options")
                    db.examples.append(Example(path, data, workload_from_json(data["workload"])))
                except (OSError, ValueError, KeyError, TypeError, WorkloadFormatError) as e:
                    db.unreadable.append(f"{path}: {e}")
        db._loaded = list(db.examples)
        return db

    @property
    def not_in_run(self) -> int:
        """Kept examples no combination of this run had the options of (they wait for one)."""
        done = {id(ex) for ex, _ in self.replayed}
        return sum(1 for ex in self._loaded if id(ex) not in done and str(ex.path) not in self.saved)

    # -- replay --------------------------------------------------------------------------------

    def replay(self, combos: list[dict[str, str]], run: Callable[[int, Example], set[str]]) -> None:
        """Replay every example not replayed yet whose options are one of `combos` (`run(combo,
        example)` runs it and answers the checks that failed); the others wait for a run with their
        options (the pytest plugin replays a combination at a time)."""
        index = {_options_key(c): i for i, c in enumerate(combos)}
        done = {id(ex) for ex, _ in self.replayed}
        for ex in list(self._loaded):
            combo = index.get(_options_key(ex.options))
            if combo is None or id(ex) in done:
                continue
            still = ex.check in run(combo, ex)
            self.replayed.append((ex, still))

    def still_failing(self, options: dict[str, str]) -> list[Example]:
        key = _options_key(options)
        return [ex for ex, still in self.replayed if still and _options_key(ex.options) == key]

    # -- keep ----------------------------------------------------------------------------------

    def keep(self, suite: ProtocolSuite, options: dict[str, str], check: str, workload: Workload, *,
             seed: Any, shard: int) -> Path | None:
        """Keep a new failing example (one per option combination and check: the smaller one)."""
        path = self.dir / f"{_safe(check)}__{_options_key(options)}.json"
        old = next((ex for ex in self.examples if ex.path == path), None)
        if old is not None and len(old.workload.events) <= len(workload.events) and \
                not any(ex is old and not still for ex, still in self.replayed):
            return None  # the kept one is as small, and it still fails (or was not replayed)
        data = {"format": "cdc-conformance/reproduction", "format_version": 1, "protocol": suite.name,
                "encoder": self.encoder, "options": options, "check": check,
                "example": {"seed": seed, "shard": shard, "passes_in_a_row": 0},
                "workload": workload_to_json(workload)}
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
        except OSError as e:
            self.unreadable.append(f"{path}: not written: {e}")
            return None
        if old is not None:
            self.examples.remove(old)
        self.examples.append(Example(path, data, workload))
        self.saved.append(str(path))
        return path

    def finish(self) -> None:
        """Count this run's passes: an example that passed `RETIRE_AFTER` runs in a row goes."""
        for ex, still in self.replayed:
            if id(ex) in self._counted or str(ex.path) in self.saved:
                continue  # counted already, or replaced by a smaller example this run
            self._counted.add(id(ex))
            meta = ex.data.setdefault("example", {})
            passes = 0 if still else int(meta.get("passes_in_a_row", 0)) + 1
            try:
                if passes >= RETIRE_AFTER:
                    ex.path.unlink(missing_ok=True)
                    self.retired.append(str(ex.path))
                    continue
                meta["passes_in_a_row"] = passes
                ex.path.write_text(json.dumps(ex.data, ensure_ascii=False, indent=1, default=str) + "\n",
                                   encoding="utf-8")
            except OSError as e:
                self.unreadable.append(f"{ex.path}: not updated: {e}")

    def to_json(self) -> dict[str, Any]:
        """What the report says (`examples_db`)."""
        return {
            "path": str(self.root), "retire_after": RETIRE_AFTER, "replayed": len(self.replayed),
            "still_failing": [{"check": ex.check, "options": ex.options, "file": str(ex.path)}
                              for ex, still in self.replayed if still],
            "passed": [{"check": ex.check, "file": str(ex.path),
                        "passes_in_a_row": ex.data.get("example", {}).get("passes_in_a_row", 0)}
                       for ex, still in self.replayed if not still and str(ex.path) not in self.retired],
            "retired": self.retired, "saved": self.saved, "not_in_this_run": self.not_in_run,
            "unreadable": self.unreadable,
        }

