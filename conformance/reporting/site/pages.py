"""The site's HTML pages, each a function of the site's data returning the page's text.

Every page is plain HTML with one relative stylesheet: no script, no font, no address outside
the site, so that it reads the same from `file://` and from any static host.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from ..compare import TITLES, Comparison, Kind
from ..model import known_text
from .data import UNKNOWN, Counts, Entry, Run, Site, Source, check_statuses, counts, result_status, slug

_SYMBOL = {"passed": "✓", "failed": "✗", "known": "✗", "errored": "!", "quiet": "–"}
_TONE_TEXT = {"pass": "passes", "fail": "MUST failing", "should": "SHOULD failing", "known": "known failures only",
              "error": "errored", "incomplete": "incomplete: not published"}


def e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def enc_page(entry: Entry, protocol: str) -> str:
    return f"enc/{entry.slug}--{slug(protocol)}.html"


def check_page(cid: str) -> str:
    return f"check/{slug(cid)}.html"


def trend_page(name: str) -> str:
    return f"trend/{slug(name)}.html"


def badge_base(entry: Entry, protocol: str) -> str:
    return f"badges/{entry.slug}--{slug(protocol)}"


def page(title: str, body: str, depth: int) -> str:
    up = "../" * depth
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<title>{e(title)} · cdc-conformance</title><link rel=icon href='data:,'>"
            f"<link rel=stylesheet href='{up}style.css'></head><body>"
            f"<header class=top><b>cdc-conformance compatibility</b><a href='{up}index.html'>Encoders × protocols</a>"
            f"<a href='{up}checks.html'>Checks</a><a href='{up}reports.html'>Reports</a></header>"
            f"<main>{body}</main></body></html>\n")


def _kind_tag(kind: str) -> str:
    what = {"mutant": "mutant: deliberately broken", "reference": "the suite's reference", "external": "under test"}
    return f"<span class='tag {e(kind)}'>{e(what.get(kind, kind))}</span>"


def _short(name: str) -> str:
    """A report's short name in a column header: its directory, or its file where that says more."""
    parts = name.split("/")
    stem = parts[-1].removesuffix(".json")
    return stem if stem != "report" or len(parts) < 2 else parts[-2]


def _configuration(entry: Entry) -> str:
    """What the entry's runs ran with, in one line: the settings its reports share or differ in
    (each report's full configuration and command are on the Reports page)."""
    values: dict[str, list[str]] = {}
    for s in entry.sources():
        for k, v in settings_of(s).items():
            if v not in values.setdefault(k, []):
                values[k].append(v)
    parts = [f"{k} {', '.join(vs[:3])}{' …' if len(vs) > 3 else ''}" for k, vs in values.items()]
    return " · ".join(parts)


#: The settings the index shows per encoder: (configuration key, command flag, shown as).
_SHOWN = (("upstream", "--upstream", "upstream"), ("kafka", "--kafka", "kafka"), ("no_spark", "--no-spark", "no Spark"),
          ("examples", "--examples", "workloads"), ("seed", "--seed", "seed"), ("baseline", "--baseline", "baseline"),
          ("input", "--input", "capture"), ("faults", "--faults", "faults"))


def settings_of(s: Source) -> dict[str, str]:
    """The few settings that tell runs apart, from the report's configuration (format 2) or, for
    older reports, from the command line it recorded."""
    import shlex

    conf = s.data.get("configuration")
    out: dict[str, str] = {}
    if isinstance(conf, dict) and conf:
        for key, _, shown in _SHOWN:
            v = conf.get(key)
            if v not in (None, False, "", "none") or (key == "kafka" and v == "none"):
                out[shown] = "yes" if v is True else str(v)
        return out
    try:
        argv = shlex.split(str(s.data.get("command") or ""))
    except ValueError:
        return out
    for key, flag, shown in _SHOWN:
        if flag in argv:
            i = argv.index(flag)
            out[shown] = "yes" if key == "no_spark" else (argv[i + 1] if i + 1 < len(argv) else "")
    return out


def _cell(c: Counts, href: str) -> str:
    def line(level: str) -> str:
        p, f, k, x = (c.get(level, s) for s in ("passed", "failed", "known", "errored"))
        if not (p or f or k or x):
            return ""
        parts = [f"{p} pass", f"{f} fail"] + ([f"{k} known"] if k else []) + ([f"{x} errored"] if x else [])
        return f"<div class=line><b>{level}</b> {' · '.join(parts)}</div>"

    must_total = sum(c.get("MUST", s) for s in ("passed", "failed", "known", "errored"))
    big = f"{c.get('MUST', 'passed')}/{must_total} MUST pass"
    return (f"<td class='cell {c.tone}' title='{e(_TONE_TEXT[c.tone])}'><a href='{e(href)}'>"
            f"<div class=big>{e(big)}</div>{line('MUST')}{line('SHOULD')}"
            f"<div class=date>{c.combinations} combination{'s' if c.combinations != 1 else ''} · {e(c.date)}</div>"
            "</a></td>")


def index(site: Site) -> str:
    out = ["<h1>Encoders × protocols</h1>",
           "<p class=sub>Each cell: one encoder's runs of one protocol under one option profile. Each check is counted "
           "once, at its worst over the option combinations run; <i>known</i> failures are covered by the vendor's "
           "baseline (a reason, a ticket). There is no score across encoders: each row stands alone.</p>",
           "<p class=legend>" + "".join(f"<span class={k}>{e(v)}</span>" for k, v in _TONE_TEXT.items()) + "</p>"]
    protocols: dict[str, list[str]] = {}
    for proto, profile in site.columns:
        protocols.setdefault(proto, []).append(profile)
    out.append("<table class=grid id=matrix><thead><tr><th rowspan=2>encoder</th>")
    out += [f"<th class=proto colspan={len(ps)}>{e(p)}</th>" for p, ps in protocols.items()]
    out.append("</tr><tr>")
    out += [f"<th data-column='{e(p)}/{e(pr)}'>profile {e(pr)}</th>" for p, prs in protocols.items() for pr in prs]
    out.append("</tr></thead><tbody>")
    for entry in site.entries:
        trend = (f"<div><a href='{e(trend_page(entry.name))}'>trend across versions</a></div>"
                 if len(site.versions(entry.name)) > 1 else "")
        out.append(f"<tr data-encoder='{e(entry.title)}'><th class=enc><span class=name>{e(entry.name)}</span> "
                   f"<span class=ver>{e(entry.version or 'version unknown')}</span>{_kind_tag(entry.kind)}"
                   f"<div class=conf>{e(_configuration(entry))}</div>{trend}</th>")
        for proto, profile in site.columns:
            runs = entry.runs_of(proto, profile)
            if runs:
                out.append(_cell(counts(runs), f"{enc_page(entry, proto)}#profile-{slug(profile)}"))
            elif any((proto, profile) in _columns_of(s, entry) for s in entry.incomplete):
                out.append("<td class='cell incomplete'><a href='reports.html#unpublished'><div class=big>incomplete"
                           "</div><div class=line>not published as a result</div></a></td>")
            else:
                out.append("<td class='cell none'></td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    unpublished = site.unpublished()
    if unpublished:
        out.append(f"<p class=sub>{len(unpublished)} report(s) did not complete and are not published as results: "
                   "<a href='reports.html#unpublished'>see why</a>.</p>")
    out.append(f"<p class=sub>Built from {len(site.sources)} report(s); each report's suite version and commit, "
               "machine, seed and command are on <a href='reports.html'>Reports</a>, with the raw JSON.</p>")
    return page("Encoders × protocols", "".join(out), 0)


def _columns_of(s: Source, entry: Entry) -> set[tuple[str, str]]:
    from .data import runs_of

    return {run.column for ident, run in runs_of(s) if (ident[0], ident[1]) == (entry.name, entry.version)}


def _outcome_cell(r: dict[str, Any] | None, href: str) -> str:
    if r is None:
        return "<td class='o quiet'></td>"
    st = result_status(r)
    cls = "should" if st == "failed" and r.get("level") == "SHOULD" else st
    tip = f"{r.get('check')}: {r.get('outcome')}" + (f" — {r['skipped']}" if r.get("skipped") else "") + (
        " (known: baseline)" if st == "known" else "")
    sym = _SYMBOL[st]
    inner = f"<a href='{e(href)}'>{sym}</a>" if st in ("failed", "known", "errored") else sym
    return f"<td class='o {cls}' title='{e(tip)}'>{inner}</td>"


def _json_text(v: Any) -> str:
    return v[:3000] if isinstance(v, str) else json.dumps(v, ensure_ascii=False, indent=1, default=str)[:3000]


def _findings(runs: Sequence[Run], prefix: str) -> list[str]:
    """One section per check that failed, errored or failed as known in any of the runs: where,
    its clause, the first distinct findings, the shrunk SQL and the replay command."""
    out: list[str] = []
    cids = sorted({cid for r in runs for cid, res in r.results.items()
                   if result_status(res) in ("failed", "known", "errored")})
    for cid in cids:
        hits = [(r, r.results[cid]) for r in runs if result_status(r.results.get(cid, {})) in
                ("failed", "known", "errored")]
        run, res = hits[0]
        st = worst_of(hits)
        cls = "should" if st == "failed" and res.get("level") == "SHOULD" else st
        where = ", ".join(f"{r.label} ({r.source.name})" for r, _ in hits[:6]) + (
            f" and {len(hits) - 6} more" if len(hits) > 6 else "")
        out.append(f"<section class='finding {cls}' id='{e(prefix)}{e(slug(cid))}'>"
                   f"<h3><a href='../{e(check_page(cid))}' class=mono>{e(cid)}</a>"
                   f"<span class=lv>{e(res.get('level'))} · {e(st)}</span></h3><div>{e(res.get('title', ''))}</div>"
                   f"<div class=clause>clause: {e(res.get('clause', UNKNOWN))}</div>"
                   f"<div class=clause>{e(st)} in {len(hits)} of {len(runs)} combination(s): {e(where)}</div>")
        if res.get("known"):
            out.append(f"<div class=clause><b>{e(known_text(res['known']))}</b></div>")
        seen: set[str] = set()
        for f in (x for _, r in hits for x in r.get("failures", [])):
            if f.get("message") in seen or len(seen) >= 3:
                continue
            seen.add(str(f.get("message")))
            loc = ", ".join(f"{k} {v}" for k, v in (f.get("location") or {}).items())
            out.append("<div class=kv>"
                       f"<div>finding</div><div>{e(f.get('message'))} <b>×{e(f.get('count', 1))}</b></div>"
                       f"<div>expected</div><div><pre>{e(_json_text(f.get('expected')))}</pre></div>"
                       f"<div>actual</div><div><pre>{e(_json_text(f.get('actual')))}</pre></div>"
                       f"<div>where</div><div>{e(loc or '—')}</div>"
                       f"<div>who acts</div><div>{e(f.get('actor', 'encoder'))}</div>"
                       + (f"<div>workload</div><div>seed {e(f['seed'])}, shard {e(f.get('shard'))}</div>"
                          if "seed" in f else "")
                       + (f"<div>hint</div><div>{e(f['hint'])}</div>" if f.get("hint") else "") + "</div>")
        for tb in res.get("errors", [])[:1]:
            out.append(f"<pre>{e(tb)}</pre>")
        rp = next((x for r, _ in hits if (x := r.reproduction(cid)) is not None), None)
        if rp is not None:
            out.append(f"<details open><summary>shrunk reproduction: {e(rp.get('events', '?'))} event(s)</summary>"
                       f"<div class=kv><div>replay</div><div><code>{e(rp.get('replay') or rp.get('command'))}</code>"
                       "</div>" + (f"<div>or, with the report's files</div><div><code>{e(rp['command'])}</code></div>"
                                   if rp.get("replay") and rp.get("command") not in (None, rp["replay"]) else "")
                       + f"</div><pre>{e(rp.get('sql', ''))}</pre></details>")
        else:
            replays = [f.get("replay") for _, r in hits for f in r.get("failures", []) if f.get("replay")]
            if replays:
                out.append(f"<div class=kv><div>replay</div><div><code>{e(replays[0])}</code></div></div>")
        out.append("</section>")
    return out


def worst_of(hits: Sequence[tuple[Run, dict[str, Any]]]) -> str:
    from .data import worst

    return worst(result_status(r) for _, r in hits)


def encoder_page(site: Site, entry: Entry, protocol: str, raw_name: dict[str, str]) -> str:
    runs = entry.runs_of(protocol)
    profiles = [pr for p, pr in site.columns if p == protocol and entry.runs_of(protocol, pr)]
    out = [f"<h1>{e(entry.name)} <span class=ver>{e(entry.version or 'version unknown')}</span>"
           f"{_kind_tag(entry.kind)} · {e(protocol)}</h1>",
           f"<p class=sub>{len(runs)} option combination(s) from {len(entry.sources())} report(s). "
           "Rows: the protocol's checks; columns: the combinations run, grouped by report.</p>"]
    b = badge_base(entry, protocol)
    out.append(f"<p class=badges><img src='../{e(b)}.svg' alt='badge'> <a href='../{e(b)}.json'>shields.io endpoint "
               f"JSON</a> · <a href='../{e(b)}.svg'>SVG badge</a></p>")
    if len(site.versions(entry.name)) > 1:
        out.append(f"<p><a href='../{e(trend_page(entry.name))}'>What changed across versions</a></p>")
    for profile in profiles:
        pruns = entry.runs_of(protocol, profile)
        c = counts(pruns)
        statuses = check_statuses(pruns)
        prefix = f"p-{slug(profile)}-"
        out.append(f"<h2 id='profile-{e(slug(profile))}'>profile {e(profile)} <span class='tag {c.tone}'>"
                   f"{e(_TONE_TEXT[c.tone])}</span></h2>")
        out.append("<p>" + " · ".join(
            f"<b>{lv}</b> {c.get(lv, 'passed')} pass, {c.get(lv, 'failed')} fail, {c.get(lv, 'known')} known"
            + (f", {c.get(lv, 'errored')} errored" if c.get(lv, "errored") else "")
            + (f", {c.get(lv, 'quiet')} not applicable here" if c.get(lv, "quiet") else "")
            for lv in ("MUST", "SHOULD", "INFO") if lv in c.by_level) + "</p>")
        groups: dict[str, list[Run]] = {}
        for r in pruns:
            groups.setdefault(r.source.name, []).append(r)
        out.append("<table class=matrix><thead><tr><th></th>")
        out += [f"<th class=src colspan={len(rs)} title='{e(name)}'><a href='../reports.html#{e(rs[0].source.slug)}'>"
                f"{e(_short(name))}</a></th>" for name, rs in groups.items()]
        out.append("</tr><tr><th></th>")
        out += [f"<th class=run title='{e(r.label)} — {e(json.dumps(r.options, ensure_ascii=False))}'>"
                f"{e(r.label if len(r.label) <= 34 else r.label[:33] + '…')}</th>"
                for rs in groups.values() for r in rs]
        out.append("</tr></thead><tbody>")
        ordered = [r for rs in groups.values() for r in rs]
        for cid in sorted(statuses):
            level, st = statuses[cid]
            out.append(f"<tr><th class='check'><a href='../{e(check_page(cid))}' class=mono>{e(cid)}</a>"
                       f"<span class=lv>{e(level)}</span></th>")
            out += [_outcome_cell(r.results.get(cid), f"#{prefix}{slug(cid)}") for r in ordered]
            out.append("</tr>")
        out.append("</tbody></table>")
        findings = _findings(pruns, prefix)
        out.append(f"<h2>Findings, profile {e(profile)}</h2>" if findings else "<p>No findings.</p>")
        out += findings
    out.append("<h2>Reports</h2><ul class=plain>")
    for s in entry.sources():
        if any(r.source is s for r in runs):
            out.append(f"<li><a href='../reports.html#{e(s.slug)}'>{e(s.name)}</a> — {e(s.date)}, "
                       f"<a href='../{e(raw_name[s.name])}' download>raw report</a></li>")
    out.append("</ul>")
    return page(f"{entry.title} · {protocol}", "".join(out), 1)


def checks_index(site: Site) -> str:
    out = ["<h1>Checks</h1><p class=sub>Every check the published reports ran; each page shows who passes it.</p>",
           "<table class=grid><thead><tr><th>check</th><th>level</th><th>what it enforces</th></tr></thead><tbody>"]
    for cid, r in site.checks().items():
        out.append(f"<tr><td><a href='{e(check_page(cid))}' class=mono>{e(cid)}</a></td><td>{e(r.get('level'))}</td>"
                   f"<td>{e(r.get('title', ''))}</td></tr>")
    out.append("</tbody></table>")
    return page("Checks", "".join(out), 0)


def check_detail(site: Site, cid: str, meta: dict[str, Any]) -> str:
    out = [f"<h1 class=mono>{e(cid)}</h1><p>{e(meta.get('title', ''))}</p>",
           f"<div class=kv><div>level</div><div>{e(meta.get('level'))}</div><div>clause</div>"
           f"<div>{e(meta.get('clause', UNKNOWN))}</div><div>scope</div><div>{e(meta.get('scope', UNKNOWN))}</div>"
           "</div>",
           "<h2>Who passes it</h2><table class=grid><thead><tr><th>encoder</th><th>protocol · profile</th>"
           "<th>outcome</th><th>combinations</th></tr></thead><tbody>"]
    for entry in site.entries:
        for proto, profile in site.columns:
            runs = [r for r in entry.runs_of(proto, profile) if cid in r.results]
            if not runs:
                continue
            sts = [result_status(r.results[cid]) for r in runs]
            from .data import worst

            st = worst(sts)
            tone = {"passed": "pass", "failed": "fail" if meta.get("level") == "MUST" else "should", "known": "known",
                    "errored": "error", "quiet": "none"}[st]
            detail = ", ".join(f"{sts.count(s)} {s if s != 'quiet' else 'not applicable / skipped'}"
                               for s in ("passed", "failed", "known", "errored", "quiet") if sts.count(s))
            anchor = f"#p-{slug(profile)}-{slug(cid)}" if st in ("failed", "known", "errored") else \
                f"#profile-{slug(profile)}"
            out.append(f"<tr><td><a href='../{e(enc_page(entry, proto))}{e(anchor)}'>{e(entry.title)}</a>"
                       f"{_kind_tag(entry.kind)}</td><td>{e(proto)} · {e(profile)}</td>"
                       f"<td class='{tone}'>{e(st if st != 'quiet' else 'not applicable')}</td><td>{e(detail)}</td>"
                       "</tr>")
    out.append("</tbody></table>")
    return page(cid, "".join(out), 1)


def reports_page(site: Site, raw_name: dict[str, str]) -> str:
    out = ["<h1>Reports</h1><p class=sub>Every report the site was built from, with what it records for a reader "
           "to trust it. Fields a report does not record (reports in format 1 predate them) say "
           "<i>unknown</i>.</p>"]
    for title, sources, anchor in (("Published", site.published(), "published"),
                                   ("Not published: the run did not complete", site.unpublished(), "unpublished")):
        out.append(f"<h2 id={anchor}>{e(title)} ({len(sources)})</h2>")
        if not sources:
            out.append("<p>None.</p>")
        for s in sources:
            out.append(f"<h3 id='{e(s.slug)}' class=mono>{e(s.name)}</h3><div class=kv>"
                       + "".join(f"<div>{e(k)}</div><div>{e(v)}</div>" for k, v in s.trust())
                       + f"<div>raw report</div><div><a href='{e(raw_name[s.name])}' download>{e(raw_name[s.name])}"
                       "</a></div></div>")
    return page("Reports", "".join(out), 0)


def trend(site: Site, name: str, steps: list[tuple[Entry, Entry, str, Comparison]]) -> str:
    out = [f"<h1>{e(name)}: across versions</h1>",
           "<p class=sub>Between consecutive versions (oldest first), per protocol: what newly fails, what is fixed, "
           "what still fails (from <code>conformance compare</code>; combinations matched by their options).</p>"]
    for old, new, protocol, cmp in steps:
        out.append(f"<h2>{e(old.version)} → {e(new.version)} · {e(protocol)} "
                   f"<span class='tag {'fail' if cmp.regressed else 'pass'}'>"
                   f"{'regressed' if cmp.regressed else 'no new failures'}</span></h2>")
        out.append("<p>" + " · ".join(f"{e(TITLES[k])}: <b>{len(cmp.of(k))}</b>" for k in
                                       (Kind.NEW_FAILURE, Kind.FIXED, Kind.STILL_FAILING, Kind.NEWLY_QUIET))
                   + f" · unchanged: {cmp.unchanged} · <a href='../{e(enc_page(old, protocol))}'>{e(old.version)}</a>"
                   f" · <a href='../{e(enc_page(new, protocol))}'>{e(new.version)}</a></p>")
        rows = [c for c in cmp.changes if c.kind in (Kind.NEW_FAILURE, Kind.FIXED, Kind.STILL_FAILING,
                                                       Kind.NEWLY_QUIET, Kind.NEW_CHECK, Kind.GONE_CHECK)]
        if rows:
            out.append("<table class=grid><thead><tr><th>change</th><th>check</th><th>combination</th>"
                       "<th>outcome</th><th>message</th></tr></thead><tbody>")
            tone = {Kind.NEW_FAILURE: "fail", Kind.FIXED: "pass", Kind.STILL_FAILING: "should"}
            for c in rows[:200]:
                check = (f"<a href='../{e(check_page(c.check))}' class=mono>{e(c.check)}</a>" if c.check else "—")
                out.append(f"<tr><td class='{tone.get(c.kind, 'none')}'>{e(c.kind)}</td><td>{check}</td>"
                           f"<td>{e(c.label)}</td><td>{e(c.old or '—')} → {e(c.new or '—')}</td>"
                           f"<td>{e(c.message[:200])}</td></tr>")
            out.append("</tbody></table>")
    return page(f"{name}: across versions", "".join(out), 1)
