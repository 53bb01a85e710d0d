"""Baselines of expected failures: known, expired, stale, unobserved; `baseline update`."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.errors import UsageError
from conformance.reporting.baseline import Baseline, Entry, Judged, judge, load, update

TODAY = dt.date(2026, 11, 26)
RUN = ["run", "--protocol", "ticdc-simple", "--examples", "4", "--seed", "bl", "--no-matrix", "--no-spark",
       "--kafka", "none", "--no-shrink"]
MUTANT = "ticdc-simple/mutant/dml-type-lowercase"  # fails ticdc-simple.message.type (and what follows from it)


def judged(check: str, outcome: str, **options: str) -> Judged:
    return Judged("p", "enc", " ".join(f"{k}={v}" for k, v in options.items()) or "defaults", options, check, outcome)


def test_known_expired_stale_unobserved() -> None:
    entries = [Entry("a.*", "why", "https://t/1", dt.date(2026, 12, 31)),  # covers a.one
               Entry("b.one", "old", expires=dt.date(2026, 11, 25)),  # expired: b.one fails again
               Entry("c.one", "gone"),  # ran and passed: stale
               Entry("d.one", "never ran"),  # unobserved
               Entry("e.one", options={"mode": "x"})]  # only under mode=x
    results = [judged("a.one", "failed"), judged("b.one", "failed"), judged("c.one", "passed"),
               judged("d.one", "not-applicable"), judged("e.one", "failed", mode="y")]
    v = judge(Baseline(entries), results, today=TODAY)
    assert [(j.check, e.reason) for j, e in v.known] == [("a.one", "why")]
    assert [(j.check, e.reason) for j, e in v.expired] == [("b.one", "old")]
    assert [e.check for e in v.stale] == ["c.one"]
    assert [e.check for e in v.unobserved] == ["d.one", "e.one"]  # e.one's failure is under mode=y: not covered


def test_an_unexpired_entry_wins_over_an_expired_one() -> None:
    entries = [Entry("a.one", "old", expires=dt.date(2020, 1, 1)), Entry("a.one", "renewed")]
    v = judge(Baseline(entries), [judged("a.one", "failed")], today=TODAY)
    assert [e.reason for _, e in v.known] == ["renewed"] and v.expired == []


def _report(runs: list[tuple[dict[str, str], dict[str, str]]]) -> dict[str, Any]:
    out: dict[str, Any] = {"format_version": 1, "runs": [], "results": []}
    for i, (options, checks) in enumerate(runs):
        label = " ".join(f"{k}={v}" for k, v in options.items())
        out["runs"].append({"protocol": "p", "encoder": "enc", "options": options, "label": label})
        out["results"] += [{"check": c, "outcome": o, "run": i, "encoder": "enc", "options": options, "label": label}
                           for c, o in checks.items()]
    return out


def test_update_adds_one_entry_per_check_or_per_failing_combination_and_prunes_stale_ones() -> None:
    report = _report([({"mode": "a", "tx": "false"}, {"everywhere": "failed", "somewhere": "passed"}),
                      ({"mode": "b", "tx": "false"}, {"everywhere": "failed", "somewhere": "failed"}),
                      ({"mode": "b", "tx": "true"}, {"everywhere": "failed", "somewhere": "not-applicable"})])
    baseline = Baseline([Entry("fixed.one", "was broken")])
    report["results"].append({"check": "fixed.one", "outcome": "passed", "run": 0, "encoder": "enc",
                              "options": {"mode": "a", "tx": "false"}, "label": "mode=a tx=false"})
    added, pruned = update(baseline, report, reason="r", ticket="https://t/2", expires="2027-01-31")
    assert [e.check for e in pruned] == ["fixed.one"]
    assert [(e.check, dict(e.options)) for e in added] == [("everywhere", {}),
                                                           ("somewhere", {"mode": "b", "tx": "false"})]
    assert all(e.protocol == "p" and e.encoder is None and e.expires == dt.date(2027, 1, 31) for e in added)
    assert update(baseline, report) == ([], [])  # everything is covered now
    with pytest.raises(UsageError, match="YYYY-MM-DD"):
        update(baseline, report, expires="next week")


@pytest.mark.parametrize("content, says", [
    ("{", "not a JSON baseline"),
    ('{"format": "x", "entries": []}', "not a baseline"),
    ('{"format": "cdc-conformance/baseline", "format_version": 1, "entries": [{"check": "a", "typo": 1}]}',
     "unknown key"),
    ('{"format": "cdc-conformance/baseline", "format_version": 1, "entries": [{"check": "a", "expires": "soon"}]}',
     "YYYY-MM-DD"),
    ('{"format": "cdc-conformance/baseline", "format_version": 1, "entries": [{"options": {}}]}', "names a check"),
])
def test_a_bad_baseline_is_a_usage_error_before_any_work(tmp_path: Path, content: str, says: str) -> None:
    p = tmp_path / "b.json"
    p.write_text(content)
    with pytest.raises(UsageError, match=says):
        load(p)
    assert main([*RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(p)]) == 2
    assert main([*RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(tmp_path / "missing.json")]) == 2
    assert main([*RUN, "--report-dir", str(tmp_path / "r"), "--baseline-strict"]) == 2


def test_a_baselined_mutant_passes_then_the_fixed_encoder_shows_the_entries_stale(tmp_path: Path) -> None:
    assert main([*RUN, "--encoder", MUTANT, "--report-dir", str(tmp_path / "m1")]) == 1
    b = tmp_path / "baseline.json"
    assert main(["baseline", "update", "--report", str(tmp_path / "m1/report.json"), "--baseline", str(b),
                 "--reason", "lower-case type names", "--ticket", "https://example.com/T-1"]) == 0
    entries = json.loads(b.read_text())["entries"]
    assert "ticdc-simple.message.type" in {e["check"] for e in entries}

    assert main([*RUN, "--encoder", MUTANT, "--report-dir", str(tmp_path / "m2"), "--baseline", str(b)]) == 0
    report = json.loads((tmp_path / "m2/report.json").read_text())
    assert report["verdict"] == "pass" and report["baseline"]["stale"] == []
    known = [r for r in report["results"] if r.get("known")]
    assert {r["check"] for r in known} == {e["check"] for e in entries}
    assert known[0]["known"]["ticket"] == "https://example.com/T-1"
    junit = ET.parse(tmp_path / "m2/junit.xml").getroot()
    assert junit.get("failures") == "0"
    assert any("known failure (baseline): lower-case type names" in (s.get("message") or "")
               for s in junit.iter("skipped"))
    assert "known failure (baseline)" in (tmp_path / "m2/summary.md").read_text()
    assert "known (baseline)" in (tmp_path / "m2/report.html").read_text()

    # The fixed encoder: the entries are stale; reported, and failing only with --baseline-strict.
    assert main([*RUN, "--report-dir", str(tmp_path / "r1"), "--baseline", str(b)]) == 0
    stale = json.loads((tmp_path / "r1/report.json").read_text())["baseline"]["stale"]
    assert {e["check"] for e in stale} == {e["check"] for e in entries}
    assert main([*RUN, "--report-dir", str(tmp_path / "r2"), "--baseline", str(b), "--baseline-strict"]) == 1
    assert main(["baseline", "update", "--report", str(tmp_path / "r1/report.json"), "--baseline", str(b)]) == 0
    assert json.loads(b.read_text())["entries"] == []


def test_an_expired_entry_fails_again(tmp_path: Path) -> None:
    b = tmp_path / "baseline.json"
    b.write_text(json.dumps({"format": "cdc-conformance/baseline", "format_version": 1, "entries": [
        {"check": "*", "reason": "was fine until last year", "expires": "2020-01-01"}]}))
    assert main([*RUN, "--encoder", MUTANT, "--report-dir", str(tmp_path / "m"), "--baseline", str(b)]) == 1
    report = json.loads((tmp_path / "m/report.json").read_text())
    assert report["baseline"]["known"] == [] and report["baseline"]["expired"]


def test_an_entry_narrowed_to_workloads_or_messages_covers_only_those_findings() -> None:
    from conformance.reporting.baseline import Finding

    entry = Entry("row.values", "Julian calendar", seed="s", shards=(2,), message="* (ARRAY) *")
    ours = (Finding("a (ARRAY) b", "s", 2),)
    assert entry.covers(ours) and not entry.covers(ours, beyond=1)  # findings the report did not keep
    assert not entry.covers((*ours, Finding("a (ARRAY) b", "s", 3)))  # another workload: a defect of its own
    assert not entry.covers((Finding("a (TEXT) b", "s", 2),))
    failed = Judged("p", "enc", "defaults", {}, "row.values", "failed", ours)
    other = Judged("p", "enc", "x=1", {"x": "1"}, "row.values", "failed", (Finding("m", "s", 9),))
    v = judge(Baseline([entry]), [failed, other], today=TODAY)
    assert [j.label for j, _ in v.known] == ["defaults"] and v.stale == [] and v.unobserved == []
    data = json.dumps({"format": "cdc-conformance/baseline", "format_version": 1, "entries": [
        {"check": "c", "seed": 7, "shards": [1, 2], "message": "*x*"}]})
    assert load_text(data).entries[0] == Entry("c", seed="7", shards=(1, 2), message="*x*")


def load_text(text: str) -> Baseline:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "b.json"
        p.write_text(text)
        return load(p)
