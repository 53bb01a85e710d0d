"""JUnit XML from the canonical JSON report: one testsuite per run, one testcase per check."""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

from .model import known_text, runs_with_results, who_acts


def _text(r: dict[str, Any]) -> str:
    lines = []
    for f in r.get("failures", []):
        lines.append(f"- {f['message']} (x{f.get('count', 1)})")
        lines.append(f"  expected: {json.dumps(f.get('expected'), ensure_ascii=False)[:500]}")
        lines.append(f"  actual:   {json.dumps(f.get('actual'), ensure_ascii=False)[:500]}")
        if f.get("location"):
            lines.append(f"  at: {json.dumps(f['location'], ensure_ascii=False)}")
        lines.append(f"  {who_acts(f)}")
        if "seed" in f:
            lines.append(f"  workload: seed {f['seed']} shard {f['shard']}")
    if r.get("more_failures"):
        lines.append(f"… and {r['more_failures']} more")
    return "\n".join(lines)


def render(report: dict[str, Any]) -> str:
    root = ET.Element("testsuites", name="cdc-conformance", tests="0", failures="0", errors="0", skipped="0")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for run in runs_with_results(report):
        name = f"{run['encoder']} [{run['label']}]"
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        suite = ET.SubElement(root, "testsuite", name=name, time=str(run.get("duration_s", 0)))
        props = ET.SubElement(suite, "properties")
        for k, v in sorted(run.get("options", {}).items()):
            ET.SubElement(props, "property", name=f"option.{k}", value=str(v))
        ET.SubElement(props, "property", name="seed", value=str(run.get("seed")))
        for r in run["results"]:
            counts["tests"] += 1
            tc = ET.SubElement(suite, "testcase", classname=name, name=r["check"])
            c = r["counts"]
            tc.set("assertions", str(c["passed"] + c["failed"]))
            if r["outcome"] == "failed" and r.get("known"):
                counts["skipped"] += 1
                ET.SubElement(tc, "skipped", message=known_text(r["known"]))
            elif r["outcome"] == "failed":
                counts["failures"] += 1
                el = ET.SubElement(tc, "failure", message=f"[{r['level']}] {r['title']}", type=r["level"])
                el.text = _text(r)
            elif r["outcome"] == "errored":
                counts["errors"] += 1
                el = ET.SubElement(tc, "error", message="the check itself raised (a cdc-conformance bug)")
                el.text = "\n\n".join(r.get("errors", []))
            elif r["outcome"] in ("skipped", "not-applicable"):
                counts["skipped"] += 1
                reason = r.get("skipped") or "; ".join(r.get("not_applicable_reasons", {})) or "not applicable"
                ET.SubElement(tc, "skipped", message=f"{r['outcome']}: {reason}")
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    if report.get("errors"):
        # Errors that stopped the work (usage, broker, registry): one test case that says why,
        # so that a CI page shows the reason instead of an empty suite.
        suite = ET.SubElement(root, "testsuite", name="cdc-conformance", tests="1", failures="0", errors="1",
                              skipped="0")
        tc = ET.SubElement(suite, "testcase", classname="cdc-conformance", name=str(report.get("mode", "run")))
        el = ET.SubElement(tc, "error", message=str(report["errors"][0])[:300])
        el.text = "\n".join(str(e) for e in report["errors"])
        totals["tests"] += 1
        totals["errors"] += 1
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
