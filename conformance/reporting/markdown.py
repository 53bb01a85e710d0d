"""A short Markdown summary (GitHub step summaries, PR comments)."""

from __future__ import annotations

from typing import Any

from .model import baseline_lines, compatibility_table, examples_db_lines, grouped_notes, known_text, runs_with_results

ICON = {"passed": "✅", "failed": "❌", "errored": "💥", "skipped": "⏭", "not-applicable": "➖"}


def render(report: dict[str, Any]) -> str:
    v = report["verdict"]
    out = [f"## cdc-conformance: **{v.upper()}** {ICON['passed'] if v == 'pass' else ICON['failed']}", ""]
    out.append("| encoder | options | workloads | records | passed | failed | errored | verdict |")
    out.append("|---|---|---:|---:|---:|---:|---:|---|")
    runs = runs_with_results(report)
    for run in runs:
        oc = [r["outcome"] for r in run["results"]]
        out.append(f"| `{run['encoder']}` | {run['label']} | {run['workloads']} | {run['records']} | "
                   f"{oc.count('passed')} | {oc.count('failed')} | {oc.count('errored')} | {run['verdict']} |")
    failed = [(run, r) for run in runs for r in run["results"] if r["outcome"] in ("failed", "errored")]
    if failed:
        out += ["", "### Findings", ""]
        for run, r in failed[:50]:
            first = r["failures"][0]["message"] if r.get("failures") else "(errored)"
            if r.get("known"):
                out.append(f"- 🔖 `{r['check']}` [{r['level']}] ({run['label']}): {first} — {known_text(r['known'])}")
            else:
                out.append(f"- {ICON[r['outcome']]} `{r['check']}` [{r['level']}] ({run['label']}): {first}")
    for e in report.get("errors", []):
        out.append(f"- 💥 {e}")
    lines = baseline_lines(report)
    if lines:
        out += ["", "### Baseline", "", *(f"- {x.strip()}" for x in lines)]
    lines = examples_db_lines(report)
    if lines:
        out += ["", "### Example database", "", *(f"- {x.strip()}" for x in lines)]
    levels, rows = compatibility_table(runs)
    if rows:
        out += ["", "### Schema changes × registry compatibility level", "",
                "| schema change | " + " | ".join(levels) + " |", "|---|" + "---|" * len(levels)]
        for key, cells in rows:
            out.append(f"| {key} | " + " | ".join(("❌ " if tone == "bad" else "") + (text or "–")
                                                  for text, tone in cells) + " |")
    notes = grouped_notes(runs)
    if notes:
        out += ["", "### Notes", ""]
        out += [f"- ({who}) {note}" for note, who in notes]
    return "\n".join(out) + "\n"
