"""Issue 30, part 7: real upstream regressions as a catalogue (docs/regressions.md).

Each entry is a real change between two released versions of an encoder the suite implements,
reproduced by a profile switch (the older behaviour as an option value) or a mutant (the other side
of the change, on the same workloads): `conformance diff` between the two names exactly that change
(kind and path) and nothing else, and where a check judges it, `conformance compare` of two reports
names that check as a new failure. Seeds are fixed: each was picked because its few workloads hold
what the change touches (a FLOAT column, a schema name with `-`), so the module stays fast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.cli.main import main
from conformance.infra.registry import check_compatibility
from conformance.protocols import get_protocol

RUN = ["run", "--no-matrix", "--no-spark", "--kafka", "none", "--no-shrink"]
DOC = Path(__file__).resolve().parents[2] / "docs" / "regressions.md"


@dataclass(frozen=True)
class Entry:
    """One catalogued regression: how the suite reproduces each side, and what `diff` must name."""

    name: str
    upstream: str
    protocol: str
    workloads: tuple[str, ...]  # --seed/--shard/--examples: a few workloads that hold the change
    older: tuple[str, ...]  # `run` arguments giving the older behaviour
    newer: tuple[str, ...]  # ... and the newer
    groups: frozenset[tuple[str, str]]  # what diff OLD NEW must name: (kind, path), nothing else
    reproduced_by: str  # the switch or mutant, as docs/regressions.md names it
    registry: bool = False  # framed Avro: each dump is read through its own registry dump


FLOAT = Entry(
    "tiflow-8490", "https://github.com/pingcap/tiflow/issues/8490", "ticdc-avro",
    ("--seed", "1", "--examples", "4"),
    older=("--option", "float-as-double=true"), newer=(),
    groups=frozenset({("schema", "value.fields[].type")}),
    reproduced_by="float-as-double", registry=True)
TABLE_NAMES = Entry(
    "MXS-3095", "https://jira.mariadb.org/browse/MXS-3095", "maxscale-kafkacdc",
    ("--seed", "1", "--examples", "3"),
    older=("--encoder", "mutant/no-table-names"), newer=(),
    groups=frozenset({("field added", "table_name"), ("field added", "table_schema")}),
    reproduced_by="no-table-names")
SCHEMA_NAMES = Entry(
    "DBZ-5541", "https://issues.redhat.com/browse/DBZ-5541", "debezium",
    ("--seed", "2", "--shard", "5", "--examples", "1"),  # schema `shop-prod`: `-` is no Avro name character
    older=("--option", "schema.name.adjustment.mode=avro"), newer=(),
    groups=frozenset({("key", "schema.name"), ("value", "schema.name"), ("value", "schema.fields[].name")}),
    reproduced_by="schema.name.adjustment.mode=avro")
CATALOGUE = (FLOAT, TABLE_NAMES, SCHEMA_NAMES)

#: Named in the catalogue as outside what the suite implements (docs/regressions.md says why).
NOT_HERE = ("https://github.com/pingcap/tiflow/issues/11771", "https://issues.redhat.com/browse/DBZ-461",
            "https://issues.redhat.com/browse/DBZ-5497")


def _run(tmp_path: Path, entry: Entry, side: str, args: tuple[str, ...], *, passes: bool = True) -> Path:
    """One side's run: its records dump (and registry dump), its report under tmp_path/side. The
    reference passes under either side's options (a switch for an older version is a configuration
    it honours); a mutant fails."""
    out = tmp_path / side
    code = main([*RUN, "--protocol", entry.protocol, *entry.workloads, *args,
                 "--dump-records", str(tmp_path / f"{side}.jsonl"), "--report-dir", str(out)])
    assert code == (0 if passes else 1), f"{entry.name} {side}: run exited {code}"
    return out / "report.json"


def _diff(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    out = tmp_path / "diff.json"
    assert main(["diff", *args, "--json", str(out)]) == 1  # 1: they differ
    groups: list[dict[str, Any]] = json.loads(out.read_text())["groups"]
    return groups


def _dumps_diff(tmp_path: Path, entry: Entry) -> list[dict[str, Any]]:
    args = ["--input", str(tmp_path / "older.jsonl"), "--input", str(tmp_path / "newer.jsonl")]
    if entry.registry:
        args += ["--registry", str(tmp_path / "older.registry.json"), "--registry",
                 str(tmp_path / "newer.registry.json")]
    return _diff(tmp_path, *args)


def _kinds(groups: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(g["kind"], g["path"]) for g in groups}


def _new_failures(tmp_path: Path, old: Path, new: Path) -> set[str]:
    out = tmp_path / "compare.json"
    assert main(["compare", str(old), str(new), "--json", str(out)]) == 1  # a MUST check newly fails: regressed
    return {c["check"] for c in json.loads(out.read_text())["changes"] if c["kind"] == "new-failure"}


def test_tiflow_8490_float_as_double_then_float(tmp_path: Path) -> None:
    """TiCDC <= v6.5.1 wrote FLOAT as Avro double, v6.5.2 / v7.0.0 as float (tiflow#8567): the
    `float-as-double` switch against the default is a schema change at the FLOAT columns' type and
    nothing else (the values decode to the same numbers); the registry refuses the upgrade at
    BACKWARD and takes it at NONE; a run of the older behaviour judged as today's fails type.float."""
    old, new = _run(tmp_path, FLOAT, "older", FLOAT.older), _run(tmp_path, FLOAT, "newer", FLOAT.newer)
    groups = _dumps_diff(tmp_path, FLOAT)
    assert _kinds(groups) == FLOAT.groups
    assert all('"double"' in str(e["A"]) and '"float"' in str(e["B"]) for e in groups[0]["examples"])

    # What the upgrade meets at the registry: each changed value schema, registered after the old one.
    before, after = ({s["subject"]: s["schema"] for s in json.loads((tmp_path / f"{side}.registry.json")
                                                                     .read_text())["schemas"]}
                     for side in ("older", "newer"))
    changed = [s for s in before if before[s] != after.get(s, before[s])]
    assert changed and all(s.endswith("-value") for s in changed)
    for s in changed:
        assert '"double"' in before[s] and '"float"' in after[s]
        assert not check_compatibility(after[s], [before[s]], "BACKWARD").compatible  # the failed upgrade
        assert check_compatibility(after[s], [before[s]], "NONE").compatible  # the documented workaround

    # The mutant is the same older behaviour on the same workloads as the reference.
    gen = ["--protocol", FLOAT.protocol, *FLOAT.workloads]
    assert _kinds(_diff(tmp_path, *gen, "--encoder", "mutant/float-as-double", "--encoder", "reference")) \
        == FLOAT.groups
    # Judged by today's rules (the default profile), the older behaviour is one new failure: type.float.
    mutant = _run(tmp_path, FLOAT, "mutant", ("--encoder", "mutant/float-as-double"), passes=False)
    assert _new_failures(tmp_path, new, mutant) == {"ticdc-avro.type.float"}
    assert json.loads(old.read_text())["verdict"] == "pass"  # the switch itself: a version the reference models


def test_mxs_3095_table_names_in_dml_events(tmp_path: Path) -> None:
    """MaxScale 2.5.3 added table_schema / table_name to every DML event (MXS-3095): the mutant
    no-table-names (the older format) against the reference is those two fields added, nothing else;
    judged by today's rules the older format fails dml.fields, and without the names no consumer of
    the one topic can tell the tables' rows apart (delivery and event checks follow)."""
    gen = ["--protocol", TABLE_NAMES.protocol, *TABLE_NAMES.workloads]
    groups = _diff(tmp_path, *gen, "--encoder", "mutant/no-table-names", "--encoder", "reference")
    assert _kinds(groups) == TABLE_NAMES.groups
    assert all(g["examples"][0]["B"] for g in groups)  # the names the newer version writes
    old = _run(tmp_path, TABLE_NAMES, "newer", TABLE_NAMES.newer)
    new = _run(tmp_path, TABLE_NAMES, "older", TABLE_NAMES.older, passes=False)
    failures = _new_failures(tmp_path, old, new)
    assert "maxscale-kafkacdc.dml.fields" in failures
    assert failures - {"maxscale-kafkacdc.dml.fields"} <= {
        "delivery.no-loss", "delivery.no-strays", "maxscale-kafkacdc.event.filter", "maxscale-kafkacdc.event.rows"}


def test_dbz_5541_schema_names_no_longer_adjusted(tmp_path: Path) -> None:
    """Debezium 2.0 made schema.name.adjustment.mode=none the default (1.x adjusted names as avro):
    a schema named `shop-prod` gives key and value schema names with `_` before and `-` after, at the
    key's schema name, the envelope's and its row structs' names, and nothing else. Both are valid
    under the JSON converter, so no check judges the change: diff is what shows it."""
    _run(tmp_path, SCHEMA_NAMES, "older", SCHEMA_NAMES.older)
    _run(tmp_path, SCHEMA_NAMES, "newer", SCHEMA_NAMES.newer)
    groups = _dumps_diff(tmp_path, SCHEMA_NAMES)
    assert _kinds(groups) == SCHEMA_NAMES.groups
    envelope = next(g for g in groups if g["kind"] == "value" and g["path"] == "schema.name")
    assert envelope["examples"][0]["A"] == "cdc.shop_prod.events.Envelope"
    assert envelope["examples"][0]["B"] == "cdc.shop-prod.events.Envelope"


def test_the_switches_and_mutants_exist_and_the_catalogue_page_names_every_entry() -> None:
    """Every entry's reproduction is a declared option value or mutant of its protocol, and
    docs/regressions.md names its upstream link and reproduction, and the entries not reproducible here."""
    for entry in CATALOGUE:
        suite = get_protocol(entry.protocol)
        if "=" in entry.reproduced_by:
            name, value = entry.reproduced_by.split("=")
        else:
            name, value = entry.reproduced_by, None
        options = {o.name: o for o in suite.options}
        if value is not None or name in options:
            assert name in options and (value or "true") in (options[name].choices or ())
        else:
            assert name in {m.name for m in suite.mutants()}
    text = DOC.read_text(encoding="utf-8")
    for entry in CATALOGUE:
        assert entry.upstream in text and f"`{entry.reproduced_by}`" in text
    for link in NOT_HERE:
        assert link in text
