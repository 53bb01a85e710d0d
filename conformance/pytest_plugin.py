"""The pytest plugin: an encoder's own repository gates itself with `pytest`.

Installed with the suite (entry point `pytest11`: `conformance`) and idle until a repository
sets `conformance_protocol` in its pytest configuration; then `pytest` runs the suite against
the configured encoder as **one test per check × option combination**:

    <config file>::<combination label>::<check id>      e.g. pyproject.toml::defaults::ticdc-simple.dml.keys-sorted

* The work is the suite's one pipeline (`harness.run.RunPlan` / `execute` with a `MemoryRunner`,
  or a `KafkaRunner` on a Kafka cluster), run **once per combination**, when the first selected
  test of that combination sets up (pytest's collector setup); every test of the combination
  then reports its check from that run. A combination none of whose tests is selected is not run.
* A failed check's test fails with the evidence (expected / actual / location / who must act),
  the shrunk workload's SQL and the commands that replay it. MUST findings fail; SHOULD findings
  fail with `conformance_strict = true` and are xfailed otherwise; INFO findings never fail.
  A check that does not apply is skipped, with the reason.
* Marks: `conformance` (every test), `conformance_must` / `conformance_should` /
  `conformance_info` (the check's level); `-k` matches check ids and combination labels.
* A usage or infrastructure error stops the combination: its tests error with the message.
* The reports `conformance run` writes (report.json, junit.xml, report.html, summary.md) are
  written at the end of the session to `conformance_report_dir`.

The module imports nothing of the suite at import time: in a repository that does not configure
it (this one included) it adds its ini keys and does nothing else.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .encoders.spi import EncoderInfo
    from .protocols.base import ProtocolSuite
    from .reporting.model import Section

LEVEL_MARKS = {"MUST": "conformance_must", "SHOULD": "conformance_should", "INFO": "conformance_info"}

# (key, help, type, default): every key the plugin reads, all optional but the protocol.
_INI: tuple[tuple[str, str, str, Any], ...] = (
    ("conformance_protocol", "cdc-conformance: the protocol to gate (ticdc-simple, ticdc-avro…); setting it "
                             "activates the plugin", "string", ""),
    ("conformance_encoder_cmd", "cdc-conformance: the encoder as a command line (subprocess protocol), run in the "
                                "configuration file's directory", "string", ""),
    ("conformance_encoder", "cdc-conformance: the encoder by name (an installed plug-in's entry point, a built-in, "
                            "or cmd:<command line>)", "string", ""),
    ("conformance_examples", "cdc-conformance: workloads per option combination (default 20)", "string", "20"),
    ("conformance_seed", "cdc-conformance: generation seed (default: random, printed)", "string", "random"),
    ("conformance_first_shard", "cdc-conformance: first shard to generate (replay one workload)", "string", "0"),
    ("conformance_options", "cdc-conformance: protocol options, one K=V or K=V1,V2 per line", "linelist", []),
    ("conformance_matrix", "cdc-conformance: expand every matrix option not pinned (default true)", "bool", True),
    ("conformance_kafka", "cdc-conformance: none (in-memory log, default) or a Kafka URL (embedded://, "
                          "kafka://host:port)", "string", "none"),
    ("conformance_partitions", "cdc-conformance: partitions per topic with Kafka (default 3)", "string", "3"),
    ("conformance_registry", "cdc-conformance: Schema Registry URL (default embedded://)", "string", "embedded://"),
    ("conformance_encoder_timeout", "cdc-conformance: seconds an encoder call may take (default 30)", "string",
     "30"),
    ("conformance_shrink", "cdc-conformance: shrink failing workloads (default true)", "bool", True),
    ("conformance_shrink_seconds", "cdc-conformance: time budget to shrink one finding (default 20)", "string",
     "20"),
    ("conformance_strict", "cdc-conformance: SHOULD-level findings fail too (default false)", "bool", False),
    ("conformance_baseline", "cdc-conformance: a baseline of expected failures (JSON, `conformance baseline "
                             "update`), relative to the configuration file: a failure it covers is xfailed",
     "string", ""),
    ("conformance_baseline_strict", "cdc-conformance: a baseline entry whose check passed fails its test "
                                    "(default false)", "bool", False),
    ("conformance_examples_db", "cdc-conformance: where failing examples are kept and replayed first on the next "
                                "run (relative to the configuration file; default .conformance, or "
                                "$CONFORMANCE_EXAMPLES_DB; off: none)", "string", ""),
    ("conformance_report_dir", "cdc-conformance: where to write the reports, relative to the configuration "
                               "file (default reports/conformance; empty: none)", "string", "reports/conformance"),
)


def _examples_db_dir(base: Path, value: str) -> Path | None:
    """`conformance_examples_db` (else the environment's, else `.conformance`), relative to the
    configuration file's directory; None when off."""
    from .harness.examples_db import location

    root = location(value or None)
    return None if root is None else base / root


class _HookSpecs:
    """Hooks a repository's conftest.py may implement."""

    @pytest.hookspec(firstresult=True)
    def pytest_conformance_encoder(self, config: pytest.Config, protocol: str) -> EncoderInfo | None:
        """The encoder under test, when a command line or a name in the configuration is not
        enough: an in-process encoder object, or a command with its own environment, working
        directory or start timeout (`conformance.encoders.subprocess.command_encoder`). Return an
        `EncoderInfo` (or None to defer to the configuration)."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(_HookSpecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, help_text, kind, default in _INI:
        parser.addini(name, help_text, type=kind, default=default)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    protocol = str(config.getini("conformance_protocol") or "").strip()
    if not protocol:
        return  # not configured here: nothing registered, nothing imported
    config.addinivalue_line("markers", "conformance: a cdc-conformance check under one option combination")
    for level, mark in LEVEL_MARKS.items():
        config.addinivalue_line("markers", f"{mark}: a cdc-conformance check of level {level}")
    settings = Settings.from_config(config, protocol)
    plugin = ConformancePlugin(config, settings)
    config.pluginmanager.register(plugin, "conformance-session")
    plugin.add_config_file_to_args()


# -- settings -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settings:
    """The configuration, parsed and checked (bad values are pytest usage errors)."""

    protocol: str
    encoder: str
    encoder_cmd: str
    examples: int
    seed: int | str
    seed_given: bool
    first_shard: int
    options: tuple[str, ...]
    matrix: bool
    kafka: str
    partitions: int
    registry: str
    encoder_timeout: float
    shrink: bool
    shrink_seconds: float
    strict: bool
    report_dir: Path | None
    base: Path  # the configuration file's directory: relative paths and the encoder command start here
    baseline: Any = None  # reporting.baseline.Baseline (`conformance_baseline`), read at configuration
    baseline_strict: bool = False
    examples_db: Path | None = None  # `conformance_examples_db` (None: off)

    @classmethod
    def from_config(cls, config: pytest.Config, protocol: str) -> Settings:
        def text(key: str) -> str:
            return str(config.getini(key) or "").strip()

        def number(key: str, kind: type[int] | type[float], minimum: float) -> Any:
            raw = text(key)
            try:
                value = kind(raw)
            except ValueError:
                raise pytest.UsageError(f"{key} = {raw!r}: not a number") from None
            if value < minimum:
                raise pytest.UsageError(f"{key} = {raw!r}: must be at least {minimum:g}")
            return value

        base = config.inipath.parent if config.inipath is not None else config.rootpath
        seed_text = text("conformance_seed")
        seed: int | str
        seed_given = seed_text.lower() not in ("", "random")
        if not seed_given:
            seed = random.randrange(1 << 31)
        else:
            seed = int(seed_text) if seed_text.isdigit() else seed_text
        report = text("conformance_report_dir")
        baseline = None
        if text("conformance_baseline"):
            from .errors import UsageError
            from .reporting.baseline import load

            try:
                baseline = load(base / text("conformance_baseline"))
            except UsageError as e:
                raise pytest.UsageError(f"conformance_baseline: {e}") from None
        elif config.getini("conformance_baseline_strict"):
            raise pytest.UsageError("conformance_baseline_strict needs conformance_baseline")
        return cls(
            protocol=protocol, encoder=text("conformance_encoder"), encoder_cmd=text("conformance_encoder_cmd"),
            examples=number("conformance_examples", int, 1), seed=seed, seed_given=seed_given,
            first_shard=number("conformance_first_shard", int, 0),
            options=tuple(str(x).strip() for x in config.getini("conformance_options") if str(x).strip()),
            matrix=bool(config.getini("conformance_matrix")), kafka=text("conformance_kafka") or "none",
            partitions=number("conformance_partitions", int, 1), registry=text("conformance_registry") or "embedded://",
            encoder_timeout=number("conformance_encoder_timeout", float, 0.1),
            shrink=bool(config.getini("conformance_shrink")),
            shrink_seconds=number("conformance_shrink_seconds", float, 0),
            strict=bool(config.getini("conformance_strict")),
            report_dir=(base / report) if report else None, base=base, baseline=baseline,
            baseline_strict=bool(config.getini("conformance_baseline_strict")),
            examples_db=_examples_db_dir(base, text("conformance_examples_db")))

    @property
    def in_memory(self) -> bool:
        return self.kafka.lower() == "none"

    def describe(self) -> str:
        from .infra.urls import redact

        encoder = (f"command `{self.encoder_cmd}`" if self.encoder_cmd else f"encoder {self.encoder}" if self.encoder
                   else "the encoder of pytest_conformance_encoder")
        where = "in-memory log" if self.in_memory else f"Kafka {redact(self.kafka)}"
        return (f"cdc-conformance: {self.protocol} · {encoder} · seed {self.seed}"
                f"{'' if self.seed_given else ' (random: pin it with conformance_seed)'} · "
                f"{self.examples} workload(s) per option combination · {where}")


# -- the session ----------------------------------------------------------------------------------------


class ConformancePlugin:
    """Everything the plugin does in a configured repository (registered only there)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.config_file = config.inipath
        self._resources = contextlib.ExitStack()
        self._registry: Any = None
        self._registry_url = ""
        self._cluster: Any = None
        self.protocol: ProtocolSuite | None = None
        self.encoder: EncoderInfo | None = None
        self.combos: list[dict[str, str]] = []
        self.left_out: list[str] = []
        self.sections: dict[int, Section] = {}
        self.errors: list[str] = []
        self.started = time.monotonic()
        self._findable: bool | None = None
        self._token = format(random.randrange(16 ** 4), "04x")
        self._examples_db: Any = None  # harness.examples_db.ExamplesDb, opened with the first combination

    # -- collection ---------------------------------------------------------------------------------

    def add_config_file_to_args(self) -> None:
        """A plain `pytest` (no paths given: testpaths or the current directory) collects the
        configuration file too, which holds the suite's tests; `pytest tests/x.py` does not (name
        the file to run them: `pytest pyproject.toml`)."""
        cfg = self.config_file
        if cfg is None or self.config.args_source is pytest.Config.ArgsSource.ARGS:
            return
        walked = [Path(a).resolve() for a in self.config.args if Path(a).is_dir()]
        if not any(cfg.resolve().is_relative_to(d) for d in walked):
            self.config.args.append(str(cfg))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if isinstance(item, CheckItem) and report.skipped and not hasattr(report, "wasxfail") \
                and isinstance(report.longrepr, tuple):
            # Where the test comes from is the configuration, not the plugin's line that skipped.
            report.longrepr = (str(item.path), self._config_line(), report.longrepr[2])
        return report

    def _config_line(self) -> int:
        """The line of the configuration file that sets the protocol (1-based; 1 if not found)."""
        if self.config_file is not None:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                for n, line in enumerate(self.config_file.read_text(encoding="utf-8").splitlines(), 1):
                    if line.strip().startswith("conformance_protocol"):
                        return n
        return 1

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [self.settings.describe()]

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
        if self.config_file is None or file_path != self.config_file:
            return None
        return SuiteFile.from_parent(parent, path=file_path, plugin=self)

    def plan_combos(self) -> list[tuple[int, dict[str, str], str]]:
        """(index, options, label) of every combination: the protocol, the encoder, the matrix and
        what the encoder supports (a subprocess's handshake). Raises ConfigurationProblem."""
        from .errors import UsageError
        from .harness.run import supported_combos, with_needed_options
        from .protocols import get_protocol
        from .protocols.base import describe_options, parse_option_args

        s = self.settings
        try:
            protocol = get_protocol(s.protocol)
            encoder = self._resolve_encoder(protocol)
            pinned = with_needed_options(encoder, parse_option_args(s.options))
            combos, self.left_out = supported_combos(encoder, protocol.matrix(pinned, full=s.matrix), pinned)
        except (UsageError, ValueError, LookupError) as e:  # ConfigurationError is a ValueError
            raise ConfigurationProblem(f"cdc-conformance: {_redacted(e)}") from None
        if not combos:
            raise ConfigurationProblem("cdc-conformance: no valid option combination to run")
        self.protocol, self.encoder, self.combos = protocol, encoder, combos
        return [(i, c, describe_options(c, protocol)) for i, c in enumerate(combos)]

    def _resolve_encoder(self, protocol: ProtocolSuite) -> EncoderInfo:
        from .encoders import find_encoder
        from .encoders.spi import EncoderInfo
        from .encoders.subprocess import command_encoder
        from .errors import UsageError

        s = self.settings
        hooked = self.config.hook.pytest_conformance_encoder(config=self.config, protocol=protocol.name)
        given = [what for what, there in (("conformance_encoder_cmd", s.encoder_cmd),
                                          ("conformance_encoder", s.encoder),
                                          ("pytest_conformance_encoder", hooked is not None)) if there]
        if len(given) != 1:
            raise UsageError(("name the encoder under test once: " + " and ".join(given) + " are both given")
                             if given else "no encoder: set conformance_encoder_cmd (a command line), "
                             "conformance_encoder (a name), or implement pytest_conformance_encoder in conftest.py")
        if hooked is not None:
            if not isinstance(hooked, EncoderInfo):
                raise UsageError(f"pytest_conformance_encoder returned {type(hooked).__name__}, not an EncoderInfo")
            info: EncoderInfo = hooked
        elif s.encoder_cmd:
            # The command's relative paths are the repository's: it runs where the config file is,
            # wherever pytest was started.
            info = command_encoder(s.encoder_cmd, protocol=protocol.name, cwd=str(s.base))
        else:
            info = find_encoder(s.encoder, protocol.name)
        if info.protocol != protocol.name:
            raise UsageError(f"the encoder {info.name} is a {info.protocol} encoder; conformance_protocol is "
                             f"{protocol.name}")
        return info

    # -- running --------------------------------------------------------------------------------------

    def known(self, section: dict[str, Any], result: dict[str, Any]) -> Any:
        """The baseline entry that covers this result of the combination (an unexpired one first; an
        entry narrowed to findings only where they are all its), or None."""
        baseline = self.settings.baseline
        if baseline is None:
            return None
        from .reporting.baseline import findings_of

        findings = findings_of(result)
        found = [e for e in baseline.entries
                 if e.matches(section["protocol"], section["encoder"], section["options"], result["check"])
                 and (result["outcome"] != "failed" or e.covers(findings, int(result.get("more_failures", 0))))]
        return min(found, key=lambda e: e.expired(dt.date.today()), default=None)

    def run_combination(self, index: int) -> Section:
        """Run one option combination through the pipeline (once; its tests read the section)."""
        from .harness.run import RunPlan, execute
        from .harness.runners import KafkaRunner, MemoryRunner

        assert self.protocol is not None and self.encoder is not None
        s = self.settings
        plan = RunPlan(protocol=self.protocol, encoder=self.encoder, combos=[self.combos[index]], examples=s.examples,
                       seed=s.seed, encoder_timeout=s.encoder_timeout, shrink=s.shrink,
                       shrink_seconds=s.shrink_seconds, first_shard=s.first_shard,
                       repro_dir=s.report_dir / "repro" / f"c{index}" if s.report_dir is not None else None)
        plan.examples_db = self._open_examples_db()
        registry = self._open_registry()
        # Every combination runs as a plan of its own: a prefix of its own keeps its topics and
        # registry subjects apart from the other combinations' (and from other sessions').
        run_id = f"p{index}{self._token}"
        runner: Any
        if s.in_memory:
            spec = plan.spec(run_id=run_id, registry_url=self._registry_url)
            runner = MemoryRunner(registry, encoder=self.encoder)
        else:
            cluster = self._open_kafka()
            spec = plan.spec(run_id=run_id, kafka_config=tuple(cluster.client_config().items()),
                             registry_url=self._registry_url, partitions=s.partitions)
            plan.broker_args = " ".join(["--kafka", shlex.quote(_redact_url(s.kafka)), "--partitions",
                                         str(s.partitions), "--no-spark"])
            runner = KafkaRunner(cluster, registry, encoder=self.encoder)
        (section,) = execute(plan, runner, spec, registry)
        self.sections[index] = section
        return section

    def _open_examples_db(self) -> Any:
        """The session's example database (one for every combination: each replays its own)."""
        root = self.settings.examples_db
        if self._examples_db is None and root is not None and self.encoder is not None and self.encoder.tool is None:
            from .harness.examples_db import ExamplesDb

            assert self.protocol is not None
            self._examples_db = ExamplesDb.open(root, self.protocol.name, self.encoder.name)
        return self._examples_db

    def _open_registry(self) -> Any:
        if self._registry is None:
            from .infra.registry import open_registry

            self._registry = self._resources.enter_context(open_registry(self.settings.registry))
            server = getattr(self._registry, "server", None)
            self._registry_url = str(server.url) if server is not None else self.settings.registry
        return self._registry

    def _open_kafka(self) -> Any:
        if self._cluster is None:
            from .errors import UsageError
            from .infra.kafka import open_kafka

            try:
                cluster = open_kafka(self.settings.kafka)
            except ValueError as e:  # a URL it cannot parse (KafkaUnavailable is an infrastructure error)
                raise UsageError(str(e)) from None
            self._cluster = self._resources.enter_context(cluster)
        return self._cluster

    # -- the end --------------------------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            # Ctrl-C, or -x / --maxfail stopping the session: the report then holds part of the run.
            self._write_reports(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop))
        finally:
            self._resources.close()

    def _write_reports(self, interrupted: bool = False) -> None:
        s = self.settings
        if s.report_dir is None or not (self.sections or self.errors):
            return
        from .infra.urls import redact
        from .reporting import Report, write_reports
        from .reporting.trust import configuration, encoder_identity

        report = Report("run", [self.sections[i] for i in sorted(self.sections)], command=_command_line(),
                        strict=s.strict, errors=list(self.errors), baseline=s.baseline,
                        baseline_strict=s.baseline_strict,
                        examples_db=self._examples_db.to_json() if self._examples_db is not None else None,
                        interrupted=interrupted)
        report.duration_s = time.monotonic() - self.started
        report.encoder = encoder_identity(self.encoder) if self.encoder is not None else None
        report.configuration = configuration(
            {"protocol": s.protocol, "encoder": s.encoder, "encoder_cmd": s.encoder_cmd, "examples": s.examples,
             "seed": s.seed, "first_shard": s.first_shard, "options": s.options, "matrix": s.matrix,
             "kafka": redact(s.kafka), "partitions": s.partitions, "registry": redact(s.registry),
             "encoder_timeout": s.encoder_timeout, "shrink": s.shrink, "strict": s.strict,
             "baseline_strict": s.baseline_strict, "config_file": str(self.config_file) if self.config_file else None})
        with contextlib.suppress(OSError):  # the reports are not the verdict: pytest's own outcome is
            write_reports(report, s.report_dir)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.sections or self.errors):
            return
        s = self.settings
        tr = terminalreporter
        tr.section("cdc-conformance")
        sections = [self.sections[i] for i in sorted(self.sections)]
        shared = set.intersection(*(set(sec.notes) for sec in sections)) if len(sections) > 1 else set()
        for sec in sections:
            tr.write_line(f"{sec.label}: {sec.verdict(s.strict)} — {sec.workloads} workload(s), {sec.records} "
                          f"record(s), seed {sec.seed}")
            for note in sec.notes:
                if note not in shared:
                    tr.write_line(f"  note: {note}")
        for note in sorted(shared):
            tr.write_line(f"note (every combination): {note}")
        if self.left_out:
            tr.write_line(f"left out (the encoder does not support them): {'; '.join(self.left_out)}")
        for e in self.errors:
            tr.write_line(f"error: {e}")
        if self._examples_db is not None:
            from .reporting.model import examples_db_lines

            for line in examples_db_lines({"examples_db": self._examples_db.to_json()}):
                tr.write_line(line)
        if s.report_dir is not None:
            tr.write_line(f"reports: {s.report_dir / 'report.html'}  {s.report_dir / 'junit.xml'}  "
                          f"{s.report_dir / 'summary.md'}")


class ConfigurationProblem(Exception):
    """The configuration names something the suite cannot run (a protocol, an encoder, an option)."""


# -- the nodes ------------------------------------------------------------------------------------------


class SuiteFile(pytest.File):
    """The configuration file, which holds the suite's tests: one collector per combination."""

    def __init__(self, *, plugin: ConformancePlugin, **kw: Any) -> None:
        super().__init__(**kw)
        self.plugin = plugin

    def collect(self) -> Iterator[Combination]:
        try:
            combos = self.plugin.plan_combos()
        except ConfigurationProblem as e:
            # A collection error that shows its message only (no traceback), like a test file
            # that does not import: the run stops and says what to fix.
            raise self.CollectError(f"{e}\n(who must act: you, on the pytest configuration)") from None
        for index, options, label in combos:
            yield Combination.from_parent(self, name=label, index=index, options=options)


class Combination(pytest.Collector):
    """One option combination: its run happens in `setup`, once, before its first test."""

    def __init__(self, *, index: int, options: dict[str, str], **kw: Any) -> None:
        super().__init__(**kw)
        self.index, self.options = index, options
        self.section: dict[str, Any] = {}

    @property
    def plugin(self) -> ConformancePlugin:
        assert isinstance(self.parent, SuiteFile)
        return self.parent.plugin

    def collect(self) -> Iterator[CheckItem]:
        from .protocols import all_checks

        for spec in all_checks(self.plugin.settings.protocol):
            item = CheckItem.from_parent(self, name=spec.id, level=spec.level.value, title=spec.title)
            item.add_marker("conformance")
            item.add_marker(LEVEL_MARKS.get(spec.level.value, "conformance"))
            yield item

    def setup(self) -> None:
        from .encoders.spi import ConfigurationError
        from .errors import InfrastructureError, UsageError

        plugin = self.plugin
        try:
            section = plugin.run_combination(self.index)
        except (UsageError, ConfigurationError) as e:
            message = f"usage error: {_redacted(e)}"
        except (InfrastructureError, OSError) as e:
            message = f"infrastructure error: {_redacted(e)}"
        else:
            data = section.to_json(plugin.settings.strict)
            self.section = {**data, "by_check": {r["check"]: r for r in data["results"]},
                            "repro": {x["check"]: x for x in data.get("reproductions", [])}}
            return
        plugin.errors.append(f"{self.name}: {message}")
        pytest.fail(f"{message}\n(who must act: you, on the configuration or the infrastructure — not a finding "
                    "against the encoder)", pytrace=False)


class CheckItem(pytest.Item):
    """One check under one option combination."""

    def __init__(self, *, level: str, title: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.level, self.title = level, title
        self.user_properties.extend([("check", self.name), ("level", level), ("combination", self.parent.name
                                                                                if self.parent else "")])

    @property
    def combination(self) -> Combination:
        assert isinstance(self.parent, Combination)
        return self.parent

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.name} [{self.combination.name}]"

    def runtest(self) -> None:
        combo = self.combination
        plugin = combo.plugin
        section = combo.section
        r = section["by_check"].get(self.name)
        if r is None:
            pytest.skip("not evaluated in this run")
        outcome = r["outcome"]
        entry = plugin.known(section, r)
        if outcome == "passed":
            if entry is not None and plugin.settings.baseline_strict:
                pytest.fail(f"stale baseline entry: {entry.describe()} — the check passed; remove the entry "
                            "(conformance baseline update prunes it)", pytrace=False)
            return
        if outcome == "skipped":
            pytest.skip(f"{self.name}: skipped: {r.get('skipped')}")
        if outcome == "not-applicable":
            reasons = "; ".join(r.get("not_applicable_reasons", {})) or "nothing in the workloads to judge"
            pytest.skip(f"{self.name}: not applicable: {reasons}")
        text = evidence(section, r, section["repro"].get(self.name), rerun=self._rerun_command(r),
                        cwd=plugin.settings.base, replayable=_findable(plugin))
        if outcome == "errored":
            pytest.fail(text, pytrace=False)
        if entry is not None and not entry.expired(dt.date.today()):
            pytest.xfail(f"known failure (baseline): {entry.describe()}")
        if r["level"] == "INFO":
            pytest.xfail(f"INFO-level finding (reported, never fails): {_first_message(r)}")
        if r["level"] == "SHOULD" and not plugin.settings.strict:
            pytest.xfail(f"SHOULD-level finding (fails with conformance_strict = true): {_first_message(r)}")
        pytest.fail(text, pytrace=False)

    def _rerun_command(self, r: dict[str, Any]) -> str:
        """This test alone, on the workload that failed first (pytest, from the repository)."""
        s = self.combination.plugin.settings
        shards = [f["shard"] for f in r.get("failures", []) if "shard" in f]
        args = ["pytest", self.nodeid, "-o", f"conformance_seed={s.seed}"]
        if shards:
            args += ["-o", f"conformance_first_shard={min(shards)}", "-o", "conformance_examples=1"]
        return shlex.join(args)


# -- rendering ------------------------------------------------------------------------------------------


def evidence(section: dict[str, Any], r: dict[str, Any], repro: dict[str, Any] | None, *, rerun: str, cwd: Path,
             replayable: bool) -> str:
    """A failed check's assertion message: what was expected and found, where, who must act, the
    shrunk workload and the commands that replay it."""

    from .reporting.model import finding_details

    c = r["counts"]
    out = [f"{r['check']} [{r['level']}] {r['outcome']} — {r['title']}",
           f"clause: {r['clause']}",
           f"encoder {section['encoder']} · options {section['label']} · seed {section['seed']} · "
           f"{c['failed']} failed, {c['passed']} passed evaluation(s) over {section['workloads']} workload(s)"]
    for f in r.get("failures", [])[:3]:
        out.append("")
        out.append(f"finding: {f['message']} (×{f.get('count', 1)})")
        out += [f"  {line}" for line in finding_details(f, 600)]
    more = max(0, len(r.get("failures", [])) - 3) + int(r.get("more_failures", 0))
    if more:
        out.append(f"… and {more} more distinct finding(s) (report.html has them all)")
    for tb in r.get("errors", [])[:1]:
        out += ["", "the check itself raised (a bug in cdc-conformance: please report it):", tb.rstrip()]
    if repro:
        shrunk = repro.get("shrunk", True)
        what = "shrunk workload" if shrunk else f"workload ({repro.get('note', 'not shrunk')})"
        out += ["", f"{what} (seed {repro['seed']}, shard {repro['shard']}, {repro['events']} events):"]
        lines = str(repro["sql"]).rstrip().splitlines()
        limit = len(lines) if shrunk else 40
        out += [f"  {line}" for line in lines[:limit]]
        if len(lines) > limit:
            out.append(f"  … {len(lines) - limit} more lines" + (f" (all in {repro['file']})" if repro.get("file")
                                                                   else ""))
    out.append("")
    if repro and replayable:
        out.append(f"replay (from {cwd}): {repro['command']}")
        if repro.get("replay") and repro["replay"] != repro["command"]:
            out.append(f"   or: {repro['replay']}")
    out.append(f"rerun this test: {rerun}")
    return "\n".join(out)


def _first_message(r: dict[str, Any]) -> str:
    failures = r.get("failures", [])
    return str(failures[0]["message"]) if failures else r["title"]


def _findable(plugin: ConformancePlugin) -> bool:
    """Whether `conformance run --encoder NAME` finds the encoder (a conftest's object is not)."""
    from .encoders import find_encoder

    if plugin._findable is None:
        assert plugin.encoder is not None
        try:
            find_encoder(plugin.encoder.name, plugin.encoder.protocol)
            plugin._findable = True
        except LookupError:
            plugin._findable = False
    return plugin._findable


def _redacted(e: BaseException) -> str:
    from .infra.urls import redact_text

    return redact_text(str(e))


def _redact_url(url: str) -> str:
    from .infra.urls import redact

    return redact(url)


def _command_line() -> str:
    from .infra.urls import redact_text

    return redact_text(shlex.join(["pytest", *sys.argv[1:]]))
