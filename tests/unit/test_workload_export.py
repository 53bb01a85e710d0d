"""`conformance workload`: the workloads a run generates, as SQL with the suite's model inside."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.encoders import find_encoder
from conformance.harness.export import ExportFormatError, database_mapper, read, read_file, render
from conformance.harness.run import RunPlan
from conformance.harness.stages import generate
from conformance.protocols import get_protocol


def plan(protocol: str, encoder: str = "reference", examples: int = 3) -> RunPlan:
    suite = get_protocol(protocol)
    return RunPlan(protocol=suite, encoder=find_encoder(encoder, protocol), combos=[{}], examples=examples,
                   seed="export", first_shard=5)


@pytest.mark.parametrize("protocol", ["ticdc-simple", "maxscale-kafkacdc", "debezium"])
def test_the_file_holds_the_very_workloads_run_generates(protocol: str) -> None:
    p = plan(protocol)
    text = "".join(render(p, command="conformance workload …"))
    export = read(text)
    assert export.header["protocol"] == protocol and export.header["dialect"] == p.run_shape().dialect
    assert [w.shard for w in export.workloads] == [5, 6, 7]
    for x in export.workloads:
        assert x.workload == generate("export", x.shard, p.run_shape())  # what run would generate
        assert x.databases and all(v.startswith(f"w{x.shard}_") for v in x.databases.values())
        assert all(server_name in x.sql for server_name in x.databases.values())
        assert "--@" not in x.sql


def test_a_mutants_workload_shape_is_the_mutants() -> None:
    mutant = plan("ticdc-simple", "ticdc-simple/mutant/hang-on-ddl", examples=1)
    assert read("".join(render(mutant))).workloads[0].workload == generate("export", 5, mutant.run_shape())
    assert mutant.run_shape() != plan("ticdc-simple", examples=1).run_shape()


def test_an_edited_or_foreign_file_is_refused_with_what_to_do() -> None:
    text = "".join(render(plan("ticdc-simple", examples=2)))
    edited = text.replace("INSERT INTO", "INSERT IGNORE INTO", 1)
    with pytest.raises(ExportFormatError, match="was edited after export"):
        read(edited)
    with pytest.raises(ExportFormatError, match="no --@ header"):
        read("SELECT 1;\n")
    cut = "\n".join(line for line in text.splitlines() if not line.startswith("--@ model"))
    with pytest.raises(ExportFormatError, match="cannot be read"):
        read(cut)


def test_long_database_names_are_cut_with_a_hash_within_the_servers_limits() -> None:
    long = "long_database_" * 5
    for dialect, limit in (("mariadb", 64), ("postgresql", 63), ("tidb", 64)):
        m = database_mapper(123, dialect)
        a, b = m(long[:64]), m(long[:63] + "x")
        assert a != b and a.startswith("w123_") and len(a.encode()) <= limit and len(a) <= 64
        assert m("db1") == "w123_db1"
    wide = "数据库" * 21  # 63 characters, 189 bytes
    assert len(database_mapper(1, "postgresql")(wide).encode()) <= 63


def test_the_command_writes_a_file_or_standard_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w.sql"
    assert main(["workload", "--protocol", "debezium", "--seed", "7", "--examples", "2", "--out", str(out)]) == 0
    assert [x.shard for x in read_file(out).workloads] == [0, 1]
    assert main(["workload", "--protocol", "ticdc-simple", "--seed", "7", "--examples", "1",
                 "--upstream", "embedded-mariadb"]) == 0
    printed = read(capsys.readouterr().out)
    assert printed.header["dialect"] == "mariadb"  # the upstream's dialect, as `run --upstream` would use
    assert main(["workload", "--protocol", "ticdc-simple", "--option", "no-such-option=1"]) == 2
