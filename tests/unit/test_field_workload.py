"""`check --workload` (issue 29, part 2): a capture judged against the workload it was made from.

Two kinds of capture: a run's dump (its unit prefixes, the model's database names and ids), and a
deployment's (the export applied elsewhere: the export's `w<shard>_` databases, and ids only that
deployment knows: another server id, GTIDs further on, later binlog times; TiDB's own commit ts,
table ids and schema versions). The deployment here is the reference encoder (or a mutant) run on
the workload as that deployment would have numbered it.
"""

from __future__ import annotations

import contextlib
import io
import os
import zlib
from collections.abc import Iterator
from dataclasses import replace

import pytest

from conformance.checks.registry import Outcome
from conformance.encoders import find_encoder
from conformance.harness.capture import parse_line
from conformance.harness.check import capture_tally, check_log, unnumbered
from conformance.harness.export import Export, read, render
from conformance.harness.field import _with_tables, check_units, split, with_databases
from conformance.harness.run import RunPlan, run_in_memory
from conformance.harness.stages import ComboResult, new_tally
from conformance.infra.registry import open_registry
from conformance.model.events import CaptureStart, Ddl, Gtid, Transaction, Watermark, Workload, tso
from conformance.model.table import Table
from conformance.protocols import all_protocols, get_protocol

PROTOCOL = "maxscale-kafkacdc"
JOINED = [p.name for p in all_protocols() if p.joins_captures]
SEED = 29


def export_text(encoder: str = "reference", examples: int = 3, seed: int = SEED, protocol: str = PROTOCOL) -> str:
    """What `conformance workload --encoder ENCODER --examples N --seed S` writes."""
    suite = get_protocol(protocol)
    plan = RunPlan(protocol=suite, encoder=find_encoder(encoder, protocol), combos=[{}], examples=examples,
                   seed=seed, first_shard=0)
    return "".join(render(plan))


def export_of(encoder: str = "reference", examples: int = 3, seed: int = SEED, protocol: str = PROTOCOL) -> Export:
    return read(export_text(encoder, examples, seed, protocol))


def as_deployed(w: Workload, databases: dict[str, str], *, gaps: bool = False, after: int = 0) -> Workload:
    """The workload as another deployment numbered it: its databases, server 9, GTIDs 500 on
    (`gaps`: every other one, as on a server with other writes), commit times a day later, table ids
    1000 on and schema versions a day later; `after`: how many workloads that server took before
    (one session applies a file's workloads in turn)."""
    day = tso(86_400_000 + after * 3_600_000)
    cache: dict[int, Table] = {}

    def table(t: Table) -> Table:
        got = cache.get(id(t))
        if got is None:
            got = cache[id(t)] = replace(t, table_id=t.table_id + 1000 + 100 * after, version=t.version + day)
        return got

    def moved(e: object) -> object:
        if isinstance(e, (Transaction, Ddl)):
            g = Gtid.parse(e.position) if e.position else None
            pos = str(Gtid(g.domain, 9, g.sequence * (2 if gaps else 1) + 500 + 10_000 * after)) \
                if g is not None else e.position
            return _with_tables(replace(e, position=pos, commit_ts=e.commit_ts + day), table)
        if isinstance(e, Watermark):
            return replace(e, ts=e.ts + day)
        return _with_tables(e, table)  # type: ignore[arg-type]

    w = with_databases(w, databases)
    return replace(w, events=tuple(moved(e) for e in w.events))  # type: ignore[misc]


class _Deployed:
    """A registry as a deployment's tool writes to it: subjects under its own topics (the run's
    unit prefix, which the simulated deployment's records lose, taken off)."""

    def __init__(self, registry: object) -> None:
        self.registry = registry

    def register(self, subject: str, schema: str) -> int:
        return self.registry.register(subject.split("-", 1)[1], schema)  # type: ignore[attr-defined]

    def set_compatibility(self, level: str, subject: str) -> object:  # the run's level, on the tool's subjects
        return self.registry.set_compatibility(level, subject.split("-", 1)[1])  # type: ignore[attr-defined]

    def get_compatibility(self, subject: str) -> object:
        return self.registry.get_compatibility(subject.split("-", 1)[1])  # type: ignore[attr-defined]

    def versions(self, subject: str) -> object:
        return self.registry.versions(subject.split("-", 1)[1])  # type: ignore[attr-defined]

    def version(self, subject: str, version: object = "latest") -> object:
        return self.registry.version(subject.split("-", 1)[1], version)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.registry, name)


@contextlib.contextmanager
def registry_for(protocol: str, options: dict[str, str] | None = None) -> Iterator[object]:
    """A registry of its own where the protocol's records need one (framed Avro), else None."""
    suite = get_protocol(protocol)
    if not suite.needs_registry(suite.resolve_options(options or {})):
        yield None
        return
    with open_registry("embedded://") as registry:
        yield registry


def records_of(encoder: str, export: Export, *, deployed: bool, gaps: bool = False, protocol: str = PROTOCOL,
               registry: object = None, options: dict[str, str] | None = None) -> list:
    """What `encoder` writes for each workload of the export (under `options`, else those it
    needs): a run's dump, or a deployment's capture (no unit prefix, its own names and ids; its
    schemas under its own topics)."""
    suite = get_protocol(protocol)
    info = find_encoder(encoder, protocol)
    options = suite.resolve_options(dict(info.needs_options) if options is None else options)
    buf = io.StringIO()
    writes_to = _Deployed(registry) if deployed and registry is not None else registry
    for n, x in enumerate(export.workloads):
        w = as_deployed(x.workload, x.databases, gaps=gaps, after=n) if deployed else x.workload
        run_in_memory(suite, info, options, writes_to, w, shard=x.shard, run_id="r", dump=buf)
    out = [parse_line(line) for line in buf.getvalue().splitlines() if line.strip()]
    if deployed:
        out = [replace(r, topic=r.topic.split("-", 1)[1]) for r in out]
    return out


def judged(records: list, export: Export, options: dict[str, str] | None = None, protocol: str = PROTOCOL,
           registry: object = None) -> ComboResult:
    suite = get_protocol(protocol)
    opts = suite.resolve_options(options or {})
    units, loose = split(suite, opts, registry, records, export)
    assert not loose
    assert {u.exported.shard for u in units} == {x.shard for x in export.workloads}
    result = ComboResult(new_tally(suite))
    check_units(suite, opts, registry, units, result)
    return result


def failed(result: ComboResult) -> set[str]:
    return {t.id for t in result.tally if t.outcome is Outcome.FAILED}


@pytest.mark.parametrize("protocol", JOINED)
@pytest.mark.parametrize(("deployed", "gaps", "by_partition"),
                         [(False, False, False), (True, False, False), (True, True, False), (False, False, True),
                          (True, False, True)],
                         ids=["run-dump", "deployment", "deployment-with-other-writes", "run-dump-read-back",
                              "deployment-read-back"])
def test_reference_passes_against_its_workload(protocol: str, deployed: bool, gaps: bool, by_partition: bool) -> None:
    # (The simulated deployment numbers Debezium's transactions and LSNs from the same start in
    # each workload, as no server would: one workload there.) `by_partition`: the capture as
    # read back from Kafka, each topic-partition in turn (a real Debezium run's dump failed so).
    export = export_of(examples=1 if deployed and protocol == "debezium" else 4, protocol=protocol)
    with registry_for(protocol) as registry:
        records = records_of("reference", export, deployed=deployed, gaps=gaps, protocol=protocol, registry=registry)
        if by_partition:
            if protocol == "debezium":  # Kafka Connect's producer places each record by its key
                records = [replace(r, partition=zlib.crc32(r.key or b"") % 3) for r in records]
            records = sorted(records, key=lambda r: (r.topic, r.partition or 0))
        result = judged(records, export, protocol=protocol, registry=registry)
    assert failed(result) == set()
    # Everything was joined and judged as a run judges it: the workload's checks ran.
    passed = {t.id for t in result.tally if t.outcome is Outcome.PASSED}
    assert {"delivery.no-loss", "delivery.no-strays"} <= passed
    assert {c for c in passed if ".event." in c or ".value." in c}
    assert result.workloads == len(export.workloads)


def test_a_deployment_that_ran_all_along_streamed_what_the_lab_snapshots() -> None:
    """The file marks where the lab starts its tool; a connector that ran before the file was
    applied streamed every change: judged so, when its capture holds no snapshot."""
    protocol = "debezium"
    for seed in range(SEED, SEED + 20):
        export = export_of(examples=1, seed=seed, protocol=protocol)
        w = export.workloads[0].workload
        if any(isinstance(e, CaptureStart) for e in w.events[1:]):
            break
    else:
        pytest.fail("no workload with a capture start")
    streamed = replace(w, events=tuple(e for e in w.events if not isinstance(e, CaptureStart)))
    ran_along = replace(export, workloads=(replace(export.workloads[0], workload=streamed),))
    records = records_of("reference", ran_along, deployed=True, protocol=protocol)
    assert not any(b'"op":"r"' in (r.value or b"") for r in records)
    assert failed(judged(records, export, protocol=protocol)) == set()


VALUE_MUTANTS = [("maxscale-kafkacdc", m) for m in ("bit-zero", "decimal-as-double", "enum-set-hex", "empty-blob-nul")] + \
    [("ticdc-simple", m) for m in ("bit-as-base64", "decimal-normalized", "enum-as-name", "set-as-names",
                                   "text-as-base64", "int-as-number")] + \
    [("debezium", m) for m in ("date-as-text", "timetz-local-clock", "hstore-as-text", "varbit-big-endian",
                               "toasted-value-written")] + \
    [("ticdc-avro", m) for m in ("bigint-unsigned-clamped", "decimal-string-normalized", "set-reversed",
                                 "time-hours-mod-24", "binary-padding-stripped")]


@pytest.mark.parametrize(("protocol", "mutant"), VALUE_MUTANTS)
def test_value_defects_are_caught_in_a_deployments_capture(protocol: str, mutant: str) -> None:
    info = find_encoder(f"mutant/{mutant}", protocol)
    suite = get_protocol(protocol)
    options = suite.resolve_options(dict(info.needs_options))
    # A workload whose run shows the defect (Debezium: one per capture, see above), then its capture.
    for seed in range(SEED, SEED + 10):
        export = export_of(f"mutant/{mutant}", examples=1 if protocol == "debezium" else 4, seed=seed,
                           protocol=protocol)
        run = ComboResult(new_tally(suite))
        with registry_for(protocol, options) as registry:
            for x in export.workloads:
                run_in_memory(suite, info, options, registry, x.workload, shard=x.shard, run_id="r", into=run)
        if info.catches in failed(run):
            break
    else:
        pytest.fail(f"no run of {mutant} showed its defect")
    with registry_for(protocol, options) as registry:
        records = records_of(f"mutant/{mutant}", export, deployed=True, protocol=protocol, registry=registry)
        assert info.catches in failed(judged(records, export, dict(info.needs_options), protocol=protocol,
                                             registry=registry))


def test_a_lost_transaction_is_loss_not_a_false_value() -> None:
    export = export_of(examples=2)
    records = records_of("reference", export, deployed=True)
    dml = [r for r in records if r.key is not None and b":" in r.key]
    gone = dml[len(dml) // 2].key.split(b":")[0]
    kept = [r for r in records if r.key is None or r.key.split(b":")[0] != gone]
    assert "delivery.no-loss" in failed(judged(kept, export))


def test_records_of_no_workload_are_reported_not_dropped() -> None:
    export = export_of(examples=1)
    records = records_of("reference", export, deployed=True)
    last = next(r for r in reversed(records) if r.key is not None and b":" in r.key)  # a DML event
    assert b'"table_schema":"w0_' in last.value
    stranger = replace(last, value=last.value.replace(b'"table_schema":"w0_', b'"table_schema":"zz_'))
    suite = get_protocol(PROTOCOL)
    units, loose = split(suite, suite.resolve_options({}), None, [*records, stranger], export)
    assert len(loose) == 1 and sum(len(u.records) for u in units) == len(records)


def _mutants() -> list:
    return [e for p in JOINED for e in get_protocol(p).encoders()
            if e.catches is not None and e.faults is None and e.registry_fault is None and not e.needs_server]


#: Mutants whose defect only the run can place: known gaps, each saying why (strict: when the join
#: learns to place them, the test says so). None now: the last one, a non-transactional message
#: given the next transaction's id, is placed by its prefix (`field._with_its_message`).
LAB_ONLY: dict[str, str] = {}


@pytest.mark.parametrize("mutant", [
    pytest.param(e.name, marks=pytest.mark.xfail(strict=True, reason=LAB_ONLY[e.name])) if e.name in LAB_ONLY
    else e.name for e in _mutants()])
def test_lab_and_field_agree(mutant: str) -> None:
    """Part 4: `check --workload` on a mutant run's dump fails every check its run fails (the
    checks about the encoder process itself aside: a capture has none)."""
    protocol = mutant.split("/", 1)[0]
    suite = get_protocol(protocol)
    info = find_encoder(mutant, protocol)
    options = suite.resolve_options(dict(info.needs_options))
    export = export_of(mutant, examples=3, protocol=protocol)
    buf = io.StringIO()
    run = ComboResult(new_tally(suite))
    timeout = 1.0 if info.catches == "encoder.responsive" else 10.0  # a hang: the run's own bound, short
    with registry_for(protocol, options) as registry:
        for x in export.workloads:
            run_in_memory(suite, info, options, registry, x.workload, shard=x.shard, run_id="r", dump=buf, into=run,
                          timeout=timeout)
        lab = {c for c in failed(run) if not c.startswith("encoder.")}
        records = [parse_line(line) for line in buf.getvalue().splitlines() if line.strip()]
        # What `check --input DUMP --complete --workload FILE` reports: the capture judged alone,
        # and against its workload.
        alone = capture_tally(suite, "no encoder")
        check_log(suite, options, registry, unnumbered(records), alone, complete=True)
        field = {t.id for t in alone if t.outcome is Outcome.FAILED}
        field |= failed(judged(records, export, options, protocol=protocol, registry=registry))
    assert lab - field == set(), f"the run failed {sorted(lab - field)}; check --workload on its dump did not"


def test_cli_check_with_workload(tmp_path, capsys, monkeypatch) -> None:
    """The commands a user types: export, run (its dump), check the dump against the export; a
    mutant's dump fails the check that names its defect; a protocol without the join says so."""
    from helpers import cli, report_results

    monkeypatch.chdir(tmp_path)
    common = ("--protocol", PROTOCOL, "--seed", "5", "--examples", "3")
    for enc, name in (("reference", "good"), ("mutant/bit-zero", "bad")):
        # The workloads `run` generates for that encoder (a mutant's shape makes its defect likely).
        code, out = cli(capsys, "workload", *common, "--encoder", enc, "--out", f"{name}.sql")
        assert code == 0, out
        code, out = cli(capsys, "run", *common, "--encoder", enc, "--no-matrix", "--no-shrink", "--dump", name,
                        "--report-dir", f"r-{name}")
        assert code == (0 if name == "good" else 1), out
    code, out = cli(capsys, "check", "--protocol", PROTOCOL, "--input", "good", "--complete", "--workload",
                    "good.sql", "--report-dir", "c-good")
    assert code == 0, out
    assert "capture:good + workload:good.sql" in out
    code, out = cli(capsys, "check", "--protocol", PROTOCOL, "--input", "bad", "--complete", "--workload", "bad.sql",
                    "--report-dir", "c-bad")
    assert code == 1, out
    assert report_results(tmp_path / "c-bad")["maxscale-kafkacdc.value.bit"]["outcome"] == "failed"
    # The workload must be the capture's: the good dump against the mutant's workloads is not.
    code, out = cli(capsys, "check", "--protocol", PROTOCOL, "--input", "good", "--complete", "--workload", "bad.sql")
    assert code == 1 and "delivery.no-loss" in out
    # Without the workload the same dump passes: BIT 0 is a value only the source knows.
    code, out = cli(capsys, "check", "--protocol", PROTOCOL, "--input", "bad", "--complete")
    assert code == 0, out
    code, out = cli(capsys, "check", "--protocol", PROTOCOL, "--input", "bad", "--upstream", "embedded-mariadb")
    assert code == 2 and "--upstream goes with --workload" in out
    code, out = cli(capsys, "workload", "--protocol", "ticdc-avro", "--seed", "5", "--examples", "1", "--out", "a.sql")
    assert code == 0, out
    code, out = cli(capsys, "check", "--protocol", "ticdc-avro", "--input", "bad", "--workload", "a.sql",
                    "--registry", "embedded://", "--option", "enable-tidb-extension=true",
                    "--option", "avro-enable-watermark=true")
    assert code == 2 and "--workload cannot judge ticdc-avro under these options: avro-enable-watermark" in out


@pytest.mark.parametrize("deployed", [False, True], ids=["run-dump", "deployment"])
def test_avro_captures_are_judged_through_their_registry(deployed: bool) -> None:
    """Framed Avro against its workload, read through the registry it was written to: the replay's
    topics carry a prefix of their own, and its subjects are the capture's (a run's under that run's
    prefix, a deployment's under its topics); the registry's answers to the encoder are the lab's."""
    protocol = "debezium"
    suite = get_protocol(protocol)
    options = suite.resolve_options({"profile": "avro"})
    # (One workload for a deployment: the simulation numbers each from the same LSN, as no server would.)
    plan = RunPlan(protocol=suite, encoder=find_encoder("reference", protocol), combos=[options],
                   examples=1 if deployed else 3, seed=SEED, first_shard=0)
    export = read("".join(render(plan)))
    with open_registry("embedded://") as registry:
        records = records_of("reference", export, deployed=deployed, protocol=protocol, registry=registry,
                             options=options)
        units, loose = split(suite, options, registry, records, export)
        assert not loose
        result = ComboResult(new_tally(suite))
        check_units(suite, options, registry, units, result)
    assert failed(result) == set()
    outcomes = {t.id: t.outcome for t in result.tally}
    assert outcomes["debezium.avro.subject"] is Outcome.PASSED
    assert {"delivery.no-loss", "delivery.no-strays"} <= {c for c, o in outcomes.items() if o is Outcome.PASSED}


#: Options besides the defaults whose records the joins place otherwise (a sweep over every
#: matrix combination and these, 100 seeds, found each of the false rejections named below).
OTHER_OPTIONS = {
    "debezium": [{"provide.transaction.metadata": "true"}, {"snapshot.mode": "no_data"}],
    "ticdc-avro": [{"enable-tidb-extension": "true"}, {"registry-compatibility": "NONE"}],
    "ticdc-simple": [{"encoding-format": "avro"}, {"send-bootstrap-in-msg-count": "3"}],
    "maxscale-kafkacdc": [{"profile": "maxscale-24.02"}],
}


#: The seeds that showed each false rejection, and one more.
REGRESSION_SEEDS = {"ticdc-simple": (11, 300), "debezium": (202, 211, 303), "ticdc-avro": (11, 300),
                    "maxscale-kafkacdc": (11, 300)}


@pytest.mark.parametrize(("protocol", "opts"), [(p, {}) for p in JOINED] + [
    (p, o) for p in JOINED for o in OTHER_OPTIONS[p]], ids=lambda v: v if isinstance(v, str) else
    ",".join(f"{k}={x}" for k, x in v.items()) or "defaults")
@pytest.mark.parametrize("deployed", [False, True], ids=["run-dump", "deployment"])
def test_the_reference_passes_over_many_seeds(protocol: str, opts: dict[str, str], deployed: bool) -> None:
    """More workloads than the cases above. Seed 11 of TiCDC Simple: a BOOTSTRAP sent to every
    partition, each copy placed by what followed it in its partition, pushed a watermark of the
    partitions the table's rows never reach to a later event (and with send-bootstrap-in-msg-count,
    seed 300: a BOOTSTRAP before a watermark went with the DDL after both). Seeds 202 and 211 of
    Debezium with transaction metadata: a TRUNCATE's empty BEGIN/END names no table, so nothing
    placed it. Seed 303 of Debezium with snapshot.mode=no_data: the deployment's connector started
    at the file's mark and took no snapshot, which was read as a connector that ran all along."""
    suite = get_protocol(protocol)
    options = suite.resolve_options(opts)
    examples = 1 if deployed and protocol == "debezium" else 3
    for seed in REGRESSION_SEEDS[protocol]:
        plan = RunPlan(protocol=suite, encoder=find_encoder("reference", protocol), combos=[options],
                       examples=examples, seed=seed, first_shard=0)
        export = read("".join(render(plan)))
        with registry_for(protocol, opts) as registry:
            records = records_of("reference", export, deployed=deployed, protocol=protocol, registry=registry,
                                 options=opts)
            result = judged(records, export, opts, protocol=protocol, registry=registry)
        assert failed(result) == set(), f"seed {seed}"


#: Options beyond each protocol's matrix that the sweep below runs too.
SWEEP_EXTRA = {
    "debezium": [{"tombstones.on.delete": "false"}, {"time.precision.mode": "connect"}, {"binary.handling.mode": "hex"},
                 {"snapshot.mode": "no_data"}, {"interval.handling.mode": "string"}, {"hstore.handling.mode": "map"},
                 {"time.precision.mode": "isostring"}, {"value.converter.schemas.enable": "false"}],
    "ticdc-simple": [{"large-message-handle-option": "handle-key-only"}, {"send-bootstrap-in-msg-count": "3"}],
    "ticdc-avro": [{"registry-compatibility": "NONE"}, {"output-raw-change-event": "true"}],
    "maxscale-kafkacdc": [],
}


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CONFORMANCE_FIELD_SWEEP"),
                    reason="a soak: CONFORMANCE_FIELD_SWEEP=SEEDS runs it (30 seeds: ~6 min for the four protocols)")
@pytest.mark.parametrize("protocol", JOINED)
def test_sweep_the_reference_through_check_workload(protocol: str) -> None:
    """No false rejection over many seeds: every matrix combination and the options above, as a
    run's dump and as a deployment's capture (how the five fixed cases of
    `test_the_reference_passes_over_many_seeds` were found)."""
    suite = get_protocol(protocol)
    combos = [dict(c) for c in suite.matrix({}, full=True) if suite.generation_fits(c) is None] + SWEEP_EXTRA[protocol]
    bad = []
    for opts in combos:
        for deployed in (False, True):
            for seed in range(1000, 1000 + int(os.environ["CONFORMANCE_FIELD_SWEEP"])):
                plan = RunPlan(protocol=suite, encoder=find_encoder("reference", protocol),
                               combos=[suite.resolve_options(opts)], seed=seed, first_shard=0,
                               examples=1 if deployed and protocol == "debezium" else 3)
                export = read("".join(render(plan)))
                with registry_for(protocol, opts) as registry:
                    records = records_of("reference", export, deployed=deployed, protocol=protocol,
                                         registry=registry, options=opts)
                    problems = failed(judged(records, export, opts, protocol=protocol, registry=registry))
                if problems:
                    bad.append((suite.non_default(suite.resolve_options(opts)), deployed, seed, sorted(problems)))
    assert bad == []
