"""`conformance compare OLD.json NEW.json`: per encoder × combination × check, what changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.errors import UsageError
from conformance.reporting.compare import Kind, compare, load

OPTS = {"decimal.handling.mode": "precise", "tx": "false"}


def report(*runs: tuple[str, dict[str, str], dict[str, tuple[str, str]]], strict: bool = False,
           label: str = "defaults") -> dict[str, Any]:
    """A report.json as the suite writes it: runs, and results that name their run by index.
    Each run is (encoder, options, {check: (level, outcome)})."""
    out: dict[str, Any] = {"format_version": 1, "verdict": "pass", "mode": "run", "strict": strict,
                           "tool": {"version": "test"}, "runs": [], "results": []}
    for i, (encoder, options, checks) in enumerate(runs):
        out["runs"].append({"protocol": "p", "encoder": encoder, "options": options, "label": label, "run": i})
        for check, (level, outcome) in checks.items():
            failures = [{"message": f"{check} broke"}] if outcome == "failed" else []
            out["results"].append({"check": check, "level": level, "outcome": outcome, "failures": failures,
                                   "run": i, "encoder": encoder, "options": options})
    return out


def kinds(old: dict[str, Any], new: dict[str, Any], **kw: Any) -> dict[str, str]:
    return {f"{c.check}": str(c.kind) for c in compare(old, new, **kw).changes}


def test_every_kind_of_change_per_check() -> None:
    old = report(("e", OPTS, {"a": ("MUST", "passed"), "b": ("MUST", "failed"), "c": ("MUST", "failed"),
                              "d": ("MUST", "passed"), "gone": ("MUST", "passed"), "same": ("MUST", "passed")}))
    new = report(("e", OPTS, {"a": ("MUST", "failed"), "b": ("MUST", "passed"), "c": ("MUST", "failed"),
                              "d": ("MUST", "not-applicable"), "added": ("MUST", "passed"),
                              "same": ("MUST", "passed")}))
    assert kinds(old, new) == {"a": "new-failure", "b": "fixed", "c": "still-failing", "d": "newly-skipped",
                               "added": "new-check", "gone": "removed-check"}
    cmp = compare(old, new)
    assert cmp.unchanged == 1 and cmp.regressed and cmp.exit_code() == 1
    assert cmp.of(Kind.NEW_FAILURE)[0].message == "a broke"


def test_combinations_meet_by_their_options_not_their_labels() -> None:
    other = {**OPTS, "tx": "true"}
    old = report(("e", OPTS, {"a": ("MUST", "passed")}), ("e", other, {"a": ("MUST", "failed")}), label="one")
    new = report(("e", other, {"a": ("MUST", "failed")}), ("e", OPTS, {"a": ("MUST", "passed")}), label="two")
    assert [(c.kind, c.options) for c in compare(old, new).changes] == [(Kind.STILL_FAILING, other)]
    only_new = report(("e", OPTS, {"a": ("MUST", "passed")}), ("e", {"x": "1"}, {"a": ("MUST", "failed")}))
    got = compare(report(("e", OPTS, {"a": ("MUST", "passed")})), only_new).changes
    assert [(c.kind, c.options) for c in got] == [(Kind.NEW_FAILURE, {"x": "1"})]  # a new combination that fails
    got = compare(only_new, report(("e", OPTS, {"a": ("MUST", "passed")}))).changes
    assert [(c.kind, c.options) for c in got] == [(Kind.GONE_COMBINATION, {"x": "1"})]


def test_two_versions_of_one_encoder_are_compared_with_each_other() -> None:
    cmp = compare(report(("tool-1.0", OPTS, {"a": ("MUST", "passed")})),
                  report(("tool-1.1", OPTS, {"a": ("MUST", "failed")})))
    assert cmp.pairings == ["tool-1.0 → tool-1.1 (p)"]
    assert [(c.kind, c.encoder) for c in cmp.changes] == [(Kind.NEW_FAILURE, "tool-1.1")]


def test_what_gates_is_what_the_verdict_counts() -> None:
    old = report(("e", OPTS, {"should": ("SHOULD", "passed"), "info": ("INFO", "passed"), "err": ("MUST", "passed")}))
    soft = report(("e", OPTS, {"should": ("SHOULD", "failed"), "info": ("INFO", "failed"), "err": ("MUST", "passed")}))
    assert kinds(old, soft) == {"should": "new-failure", "info": "new-failure"}
    assert not compare(old, soft).regressed  # listed, but the newer run's verdict does not count them
    assert compare(old, soft, strict=True).regressed  # --strict: SHOULD gates, INFO never
    assert [c.check for c in compare(old, soft, strict=True).changes if c.gates] == ["should"]
    errored = report(("e", OPTS, {"should": ("SHOULD", "passed"), "info": ("INFO", "passed"),
                                  "err": ("MUST", "errored")}))
    assert compare(old, errored).regressed


@pytest.mark.parametrize("content, says", [
    ("not json at all", "cannot read it as JSON"),
    ('{"format_version": 3, "runs": [], "results": []}', "format_version 3"),
    ('{"format_version": 1}', 'no "runs" and "results"'),
    ('{"format_version": 1, "runs": [], "results": [{"check": "a", "outcome": "passed", "run": 3}]}',
     "names run 3"),
    ('{"format_version": 1, "runs": [{}], "results": [{"check": "a", "outcome": "sort of"}]}',
     "no known outcome"),
])
def test_unusable_input_is_a_usage_error(tmp_path: Path, content: str, says: str) -> None:
    p = tmp_path / "r.json"
    p.write_text(content)
    with pytest.raises(UsageError, match=says):
        compare(load(p), report())
    assert main(["compare", str(p), str(p)]) == 2


def _run(tmp_path: Path, encoder: str) -> Path:
    out = tmp_path / encoder.replace("/", "_")
    code = main(["run", "--protocol", "ticdc-simple", "--encoder", encoder, "--examples", "4", "--seed", "cmp",
                 "--no-matrix", "--no-spark", "--kafka", "none", "--no-shrink", "--report-dir", str(out)])
    assert code in (0, 1) and (out / "report.json").exists()
    return out / "report.json"


def test_a_mutant_after_the_reference_regresses_and_back_is_fixed(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ref = _run(tmp_path, "ticdc-simple/reference")
    mutant = _run(tmp_path, "ticdc-simple/mutant/dml-type-lowercase")
    capsys.readouterr()
    md = tmp_path / "cmp.md"
    assert main(["compare", str(ref), str(mutant), "--markdown", str(md), "--json", str(tmp_path / "c.json")]) == 1
    assert "REGRESSED" in capsys.readouterr().out
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["regressed"] and data["pairings"] == ["ticdc-simple/reference → ticdc-simple/mutant/dml-type-lowercase"
                                                      " (ticdc-simple)"]
    assert "ticdc-simple.message.type" in {c["check"] for c in data["changes"] if c["kind"] == "new-failure"}
    assert "**regressed ❌**" in md.read_text() and "`ticdc-simple.message.type`" in md.read_text()
    assert main(["compare", str(mutant), str(ref), "--json", "-"]) == 0
    back = json.loads(capsys.readouterr().out)
    assert "ticdc-simple.message.type" in {c["check"] for c in back["changes"] if c["kind"] == "fixed"}
    assert main(["compare", str(ref), str(ref)]) == 0
    assert "no changes" in capsys.readouterr().out
