"""The HTML matrix: checks down, runs (encoder × options) across, one coloured cell each.

Self-contained (inline CSS, no scripts needed, no network): a verdict banner, the matrix
grouped by area, then every finding with expected / actual / location and, where the run
shrank a failure, the SQL that reproduces it.
"""

from __future__ import annotations

import html
import json
from collections import OrderedDict
from typing import Any

from .model import baseline_lines, compatibility_table, examples_db_lines, grouped_notes, known_text, runs_with_results

_SYMBOL = {"passed": "✓", "failed": "✗", "errored": "!", "skipped": "·", "not-applicable": "–"}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{padding:18px 28px;color:#fff}
header.pass{background:#1a7f37}header.fail{background:#cf222e}header.error{background:#8250df}
header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.9}
main{padding:20px 28px}
.summary{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:18px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;min-width:110px}
.card b{display:block;font-size:20px}
table.matrix{border-collapse:collapse;background:#fff;border:1px solid #d0d7de}
.matrix th,.matrix td{border:1px solid #eaeef2;padding:3px 6px}
.matrix thead th{position:sticky;top:0;background:#fff;font-weight:600;font-size:12px;max-width:130px;
 writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;white-space:nowrap}
.matrix th.check{text-align:left;font-weight:normal;font-family:ui-monospace,monospace;font-size:12px;
 white-space:nowrap}
.matrix th.check.bad{color:#cf222e;font-weight:700}
.matrix tr.area th{background:#f6f8fa;text-align:left;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.cell{text-align:center;width:26px;font-weight:700}
.cell a{color:inherit;text-decoration:none;display:block}
.passed{background:#dafbe1;color:#1a7f37}.failed{background:#ffebe9;color:#cf222e}
.failed.should{background:#fff8c5;color:#9a6700}.failed.known{background:#ddf4ff;color:#0969da}.errored{background:#fbefff;color:#8250df}
.skipped{background:#f6f8fa;color:#8c959f}
table.compat{border-collapse:collapse;background:#fff;border:1px solid #d0d7de;font-size:13px}
.compat th,.compat td{border:1px solid #eaeef2;padding:3px 8px;text-align:left}.compat th{font-weight:normal}
.compat td.refused{background:#fff8c5;color:#6e4b00}.not-applicable{background:#fff;color:#afb8c1}
.level{font-size:11px;color:#57606a;margin-left:4px}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:4px}
section.finding{background:#fff;border:1px solid #d0d7de;border-left:4px solid #cf222e;border-radius:6px;
 padding:10px 14px;margin:12px 0}
section.finding.should{border-left-color:#bf8700}
section.finding.known{border-left-color:#0969da}
section.finding h3{margin:0 0 4px;font-size:15px;font-family:ui-monospace,monospace}
.clause{color:#57606a;font-size:12px}
pre{background:#f6f8fa;padding:6px 8px;border-radius:4px;overflow:auto;max-height:260px;margin:4px 0}
.kv{display:grid;grid-template-columns:90px 1fr;gap:2px 8px;margin:6px 0}
.kv div:nth-child(odd){color:#57606a}
details summary{cursor:pointer;color:#0969da}
"""


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _area(check_id: str) -> str:
    parts = check_id.split(".")
    return parts[1] if len(parts) > 2 else parts[0]


def _json(v: Any) -> str:
    """Strings as they are (no JSON escaping to read through); other values as JSON."""
    if isinstance(v, str):
        return v[:3000]
    return json.dumps(v, ensure_ascii=False, indent=1)[:3000]


def _compat_class(text: str, tone: str) -> str:
    if tone == "bad":
        return "failed"
    if not tone:
        return ""
    return "refused" if "refused" in text else "passed"


def render(report: dict[str, Any]) -> str:
    runs = runs_with_results(report)
    verdict = report["verdict"]
    checks: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for run in runs:
        for r in run["results"]:
            checks.setdefault(r["check"], r)
    areas: OrderedDict[str, list[str]] = OrderedDict()
    for cid in checks:
        areas.setdefault(_area(cid), []).append(cid)

    cells: dict[tuple[int, str], dict[str, Any]] = {}
    for i, run in enumerate(runs):
        for r in run["results"]:
            cells[(i, r["check"])] = r

    totals = dict.fromkeys(_SYMBOL, 0)
    for r in cells.values():
        totals[r["outcome"]] += 1

    out = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
           "<meta name=viewport content='width=device-width,initial-scale=1'>",
           f"<title>cdc-conformance: {_e(verdict)}</title><style>{_CSS}</style></head><body>"]
    first = runs[0] if runs else {}
    encoders = sorted({r["encoder"] for r in runs})
    one_encoder = len(encoders) == 1
    out.append(f"<header class={_e(verdict)}><h1>{_e(verdict.upper())} — {_e(', '.join(encoders))}"
               f" · {len(runs)} option combination{'s' if len(runs) != 1 else ''}</h1>"
               f"<p>{_e(report.get('mode'))} · seed {_e(first.get('seed'))} · "
               f"{sum(r.get('workloads', 0) for r in runs)} workloads · "
               f"{sum(r.get('records', 0) for r in runs)} records"
               f" · {_e(report.get('duration_s'))} s · cdc-conformance {_e(report['tool']['version'])}"
               "</p></header><main>")
    out.append("<div class=summary>")
    for k in ("passed", "failed", "errored", "skipped", "not-applicable"):
        out.append(f"<div class=card><b class={k}>{totals[k]}</b>{_e(k)}</div>")
    out.append("</div>")
    for e in report.get("errors", []):
        out.append(f"<section class=finding><h3>infrastructure error</h3><pre>{_e(e)}</pre></section>")
    out.append("<p class=legend>" + "".join(f"<span class='{k}'>{_SYMBOL[k]} {k}</span>" for k in _SYMBOL)
               + "<span class='failed should'>✗ failed (SHOULD)</span>"
               + ("<span class='failed known'>✗ known (baseline)</span>" if report.get("baseline") else "") + "</p>")
    out += [f"<p class=clause>{_e(line)}</p>" for line in [*baseline_lines(report), *examples_db_lines(report)]]

    out.append("<table class=matrix><thead><tr><th></th>")
    for run in runs:
        head = run["label"] if one_encoder else f"{run['encoder'].split('/')[-1]} · {run['label']}"
        out.append(f"<th title='{_e(json.dumps(run['options']))}'>{_e(head)}</th>")
    out.append("</tr></thead><tbody>")
    for area, cids in areas.items():
        out.append(f"<tr class=area><th colspan={len(runs) + 1}>{_e(area)}</th></tr>")
        for cid in cids:
            meta = checks[cid]
            bad = any(cells.get((i, cid), {}).get("outcome") in ("failed", "errored") for i in range(len(runs)))
            out.append(f"<tr><th class='check{' bad' if bad else ''}' title='{_e(meta['title'])}'>{_e(cid)}"
                       f"<span class=level>{_e(meta['level'])}</span></th>")
            for i in range(len(runs)):
                r = cells.get((i, cid))
                if r is None:
                    out.append("<td class=cell></td>")
                    continue
                oc = r["outcome"]
                cls = oc + (" known" if r.get("known") else " should" if oc == "failed" and r["level"] == "SHOULD"
                            else "")
                c = r["counts"]
                tip = (f"{cid}: {oc} — passed {c['passed']}, failed {c['failed']}, errored {c['errored']}, "
                       f"n/a {c['not_applicable']}" + (f" — {r['skipped']}" if r.get("skipped") else ""))
                sym = _SYMBOL[oc]
                inner = f"<a href='#f{i}-{_e(cid)}'>{sym}</a>" if oc in ("failed", "errored") else sym
                out.append(f"<td class='cell {cls}' title='{_e(tip)}'>{inner}</td>")
            out.append("</tr>")
    out.append("</tbody></table>")

    # One section per failing check: where it failed, the first run's findings, its reproduction.
    by_check: OrderedDict[str, list[int]] = OrderedDict()
    for cid in checks:
        for i in range(len(runs)):
            if cells.get((i, cid), {}).get("outcome") in ("failed", "errored"):
                by_check.setdefault(cid, []).append(i)
    any_finding = bool(by_check)
    if any_finding:
        out.append("<h2>Findings</h2>")
    for cid, idx in by_check.items():
        i = idx[0]
        run, r = runs[i], cells[(i, cid)]
        cls = "known" if r.get("known") else "should" if r["level"] == "SHOULD" else ""
        where = ", ".join(runs[k]["label"] if one_encoder else f"{runs[k]['encoder']} · {runs[k]['label']}"
                          for k in idx)
        anchors = "".join(f"<a id='f{k}-{_e(cid)}'></a>" for k in idx)
        out.append(f"<section class='finding {cls}'>{anchors}<h3>{_e(cid)} "
                   f"<span class=level>{_e(r['level'])} · {_e(r['outcome'])}</span></h3>"
                   f"<div>{_e(r['title'])}</div><div class=clause>{_e(r['clause'])}</div>"
                   + (f"<div class=clause><b>{_e(known_text(r['known']))}</b></div>" if r.get("known") else "")
                   + f"<div class=clause>{'failed' if r['outcome'] == 'failed' else 'errored'} in "
                   f"{len(idx)} of {len(runs)} combination(s): {_e(where)}; details from the first</div>")
        for f in r.get("failures", [])[:10]:
            loc = ", ".join(f"{k} {v}" for k, v in f.get("location", {}).items())
            out.append("<div class=kv>"
                       f"<div>finding</div><div>{_e(f['message'])} <b>×{f.get('count', 1)}</b></div>"
                       f"<div>expected</div><div><pre>{_e(_json(f.get('expected')))}</pre></div>"
                       f"<div>actual</div><div><pre>{_e(_json(f.get('actual')))}</pre></div>"
                       f"<div>where</div><div>{_e(loc or '—')}</div>"
                       f"<div>who acts</div><div>{_e(f.get('actor', 'encoder'))}</div>"
                       + (f"<div>workload</div><div>seed {_e(f['seed'])}, shard {_e(f['shard'])}</div>"
                          if "seed" in f else "")
                       + (f"<div>hint</div><div>{_e(f['hint'])}</div>" if f.get("hint") else "")
                       + "</div>")
        if r.get("more_failures"):
            out.append(f"<p>… and {r['more_failures']} more distinct findings</p>")
        for tb in r.get("errors", [])[:2]:
            out.append(f"<pre>{_e(tb)}</pre>")
        rp = next((x for x in run.get("reproductions", []) if x["check"] == cid), None)
        if rp:
            out.append(f"<details open><summary>shrunk reproduction: {_e(rp.get('events', '?'))} events — "
                       f"<code>{_e(rp['command'])}</code></summary><pre>{_e(rp['sql'])}</pre></details>")
        out.append("</section>")
    if not any_finding:
        out.append("<p>No findings.</p>")
    levels, changes = compatibility_table(runs)
    if changes:
        # Which schema changes a deployment survives at its registry's level, and whether the
        # encoder stopped where the registry refused one.
        out.append("<h2>Schema changes × registry compatibility level</h2><table class=compat><thead><tr>"
                   "<th>schema change</th>" + "".join(f"<th>{_e(lv)}</th>" for lv in levels) + "</tr></thead><tbody>")
        for key, row in changes:
            out.append(f"<tr><th>{_e(key)}</th>" + "".join(
                f"<td class='{_compat_class(text, tone)}'>{_e(text or '–')}</td>" for text, tone in row) + "</tr>")
        out.append("</tbody></table>")
    notes = grouped_notes(runs)
    if notes:
        # What the run observed without judging: delivery counts, sink restarts, the registry's
        # verdict on each schema change.
        out.append("<h2>Notes</h2><ul class=notes>")
        out += [f"<li><span class=clause>{_e(who)}</span> {_e(note)}</li>" for note, who in notes]
        out.append("</ul>")
    out.append("</main></body></html>")
    return "".join(out)
