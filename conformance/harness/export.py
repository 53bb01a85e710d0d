"""`conformance workload`: the workloads a run generates, as one SQL file in the source's dialect.

The file is what a user applies to their own deployment (TiDB + TiCDC, MariaDB + MaxScale,
PostgreSQL + Debezium) before checking the topic that deployment wrote. It holds the very
workloads `conformance run` generates with the same flags (protocol, the encoder's workload
shape, the upstream's dialect, seed, shards), each with databases of its own (`w<shard>_<name>`,
cut and given a short hash where the server's identifier limit needs it), so that the workloads
of one file never meet on one server.

Lines that start with `--@` carry what the SQL alone cannot, so that the file alone is the source
truth: a header (format, protocol, encoder, dialect, seed), and per workload its seed, shard,
database names, the digest of its SQL (an edit to the SQL is noticed) and the generated model
(the canonical workload JSON, zlib-compressed, base64). SQL clients read them as comments.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.dialects import dialect as dialect_named
from ..model.dialects import workload_sql
from ..model.events import Ddl, Workload
from ..model.serde import workload_from_json, workload_to_json
from .run import RunPlan
from .stages import generate

FORMAT = "cdc-conformance/workload-sql"
MARK = "--@ "
_CHUNK = 96  # base64 characters per line of the embedded model


class ExportFormatError(ValueError):
    """The file is not a workload export, or was edited where the suite reads it."""


def database_mapper(shard: int, dialect_name: str) -> Callable[[str], str]:
    """`name` → `w<shard>_<name>`, within the dialect's identifier limits (64 characters, and its
    bytes): a name too long for the prefix is cut and given a hash of the whole, so two names stay
    two names."""
    limit_bytes = dialect_named(dialect_name).max_identifier_bytes or 64 * 4
    prefix = f"w{shard}_"

    def fits(s: str) -> bool:
        return len(s) <= 64 and len(s.encode("utf-8")) <= limit_bytes

    def mapped(name: str) -> str:
        whole = prefix + name
        if fits(whole):
            return whole
        tag = "_" + hashlib.sha1(name.encode("utf-8")).hexdigest()[:6]
        cut = name
        while cut and not fits(prefix + cut + tag):
            cut = cut[:-1]
        return prefix + cut + tag

    return mapped


def _databases(w: Workload) -> list[str]:
    seen: dict[str, None] = {}
    for e in w.events:
        if isinstance(e, Ddl) and e.database:
            seen.setdefault(e.database)
        table = getattr(e, "table", None)
        if table is not None:
            seen.setdefault(table.database)
    return list(seen)


def _mark(kind: str, data: Any) -> str:
    return f"{MARK}{kind} {json.dumps(data, ensure_ascii=False, sort_keys=True)}"


def _digest(sql: str) -> str:
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()


def render(plan: RunPlan, *, command: str = "") -> Iterator[str]:
    """The export of `plan`'s workloads, a chunk of text at a time (one workload per chunk after
    the header)."""
    shape = plan.run_shape()
    name = shape.dialect
    yield "\n".join([
        f"-- cdc-conformance workloads for {plan.protocol.name} ({plan.encoder.name}), in the {name} dialect:",
        f"-- seed {plan.seed}, shards {plan.first_shard}..{plan.first_shard + plan.examples - 1}."
        + (f" Made by: {command}" if command else ""),
        "-- Apply the file in order, in one session, to the database your CDC tool reads; each workload",
        "-- uses databases of its own (w<shard>_<name>). Lines starting with --@ carry the suite's model",
        "-- of each workload: keep them, and do not edit the SQL between them.",
        _mark("header", {"format": FORMAT, "format_version": 1, "protocol": plan.protocol.name,
                         "encoder": plan.encoder.name, "dialect": name, "seed": plan.seed,
                         "shards": [plan.first_shard, plan.examples]}),
        "",
    ]) + "\n"
    for shard in plan.shards:
        w = generate(plan.seed, shard, shape)
        mapper = database_mapper(shard, name)
        names = {db: mapper(db) for db in _databases(w)}
        sql = workload_sql(w, dialect=dialect_named(name).with_databases(mapper))
        model = base64.b64encode(zlib.compress(json.dumps(workload_to_json(w), ensure_ascii=False)
                                               .encode("utf-8"), 9)).decode("ascii")
        yield "\n".join([
            f"-- workload: seed {plan.seed}, shard {shard}",
            sql.rstrip("\n"),
            _mark("workload", {"seed": plan.seed, "shard": shard, "databases": names, "sql_sha256": _digest(
                sql.rstrip("\n"))}),
            *(f"{MARK}model {model[i:i + _CHUNK]}" for i in range(0, len(model), _CHUNK)),
            "",
        ]) + "\n"


@dataclass(frozen=True)
class Exported:
    """One workload of an export: what the suite generated, the names it has on the server, the SQL."""

    seed: Any
    shard: int
    databases: dict[str, str]
    workload: Workload
    sql: str


@dataclass(frozen=True)
class Export:
    header: dict[str, Any]
    workloads: tuple[Exported, ...]


def read_file(path: str | Path) -> Export:
    """The export at `path`, read byte for byte (no newline translation: a literal may hold \r)."""
    with open(path, encoding="utf-8", newline="") as fh:
        return read(fh.read(), where=str(path))


def read(text: str, *, where: str = "the file") -> Export:
    """An export, checked: its header, each workload's model, and that its SQL is as exported."""
    header: dict[str, Any] | None = None
    out: list[Exported] = []
    sql_lines: list[str] = []
    meta: dict[str, Any] | None = None
    model: list[str] = []

    def close() -> None:
        nonlocal meta, model
        if meta is None:
            return
        try:
            w = workload_from_json(json.loads(zlib.decompress(base64.b64decode("".join(model)))))
        except (ValueError, zlib.error) as e:
            raise ExportFormatError(f"{where}: the model of workload shard {meta.get('shard')} cannot be read "
                                    f"({e})") from None
        out.append(Exported(meta.get("seed"), int(meta.get("shard", 0)), dict(meta.get("databases") or {}), w,
                            meta["_sql"]))
        meta, model = None, []

    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): literals may hold \r, U+2028…
        if not line.startswith(MARK):
            if meta is not None:
                close()
            if line.startswith("-- workload: "):
                sql_lines = []
            else:
                sql_lines.append(line)
            continue
        kind, _, rest = line[len(MARK):].partition(" ")
        if kind == "model" and meta is not None:
            model.append(rest.strip())
            continue
        close()
        try:
            data = json.loads(rest)
        except ValueError:
            raise ExportFormatError(f"{where}, line {n}: a --@ {kind} line that is not JSON") from None
        if kind == "header":
            if data.get("format") != FORMAT or data.get("format_version") != 1:
                raise ExportFormatError(f"{where}: not a workload export of this suite (format "
                                        f"{data.get('format')!r} {data.get('format_version')!r})")
            header = data
        elif kind == "workload":
            sql = "\n".join(sql_lines).strip("\n")
            if data.get("sql_sha256") != _digest(sql):
                raise ExportFormatError(f"{where}: the SQL of workload shard {data.get('shard')} was edited after "
                                        "export (its digest differs): the model no longer describes it; export "
                                        "it again (conformance workload)")
            meta = {**data, "_sql": sql}
            sql_lines = []
        else:
            raise ExportFormatError(f"{where}, line {n}: unknown --@ line {kind!r}")
    close()
    if header is None:
        raise ExportFormatError(f"{where}: no --@ header line: not a workload export (conformance workload "
                                "writes one)")
    return Export(header, tuple(out))
