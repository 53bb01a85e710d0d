"""The terminal summary of a report: a table of runs, the failures with their evidence and
reproductions, the notes, and the verdict. Rendered from the report's JSON, like every other
rendering (`model.Report.to_json`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .model import (
    Report,
    baseline_lines,
    examples_db_lines,
    finding_details,
    grouped_notes,
    known_text,
    runs_with_results,
)

#: Failures printed at most (the reports hold them all).
MAX_SHOWN = 25


def print_summary(report: Report, paths: dict[str, Path] | None, console: Console, err: Console) -> None:
    data = report.to_json()
    t = Table(title=None, show_lines=False, pad_edge=False)
    numeric = ("workloads", "records", "passed", "failed", "errored", "n/a·skip")
    for col in ("encoder", "options", *numeric, "verdict"):
        t.add_column(col, justify="right" if col in numeric else "left")
    runs = runs_with_results(data)
    for run in runs:
        oc = [r["outcome"] for r in run["results"]]
        colour = {"pass": "green", "fail": "red", "error": "magenta"}[run["verdict"]]
        t.add_row(run["encoder"], run["label"], str(run["workloads"]), str(run["records"]), str(oc.count("passed")),
                  str(oc.count("failed")), str(oc.count("errored")),
                  str(oc.count("not-applicable") + oc.count("skipped")), f"[{colour}]{run['verdict']}[/]")
    console.print(t)
    shown = 0
    for run in runs:
        repro = {x["check"]: x for x in run.get("reproductions", [])}
        for r in run["results"]:
            if r["outcome"] not in ("failed", "errored") or shown >= MAX_SHOWN:
                continue
            shown += 1
            _print_result(console, run, r, repro.get(r["check"]))
    # A note that every combination shares (the same workloads, the same fault schedule) is
    # printed once; the report keeps each section's own.
    for note, who in grouped_notes(runs):
        console.print(f"note ({who}): {note}", style="dim", markup=False)
    for line in [*baseline_lines(data), *examples_db_lines(data)]:
        console.print(line, markup=False)
    for e in data["errors"]:
        err.print(f"[bold magenta]error:[/] {e}")
    timings: dict[str, float] = {}
    for run in runs:
        for stage, seconds in run.get("timings", {}).items():
            # Driver-side stages are the run's own (the same in every section); the others add up.
            timings[stage] = seconds if "driver" in stage else timings.get(stage, 0.0) + seconds
    if timings:
        console.print("time: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
                      + f" · total {data['duration_s']:.1f} s", style="dim", markup=False)
    if paths:
        console.print(f"\nreports: {paths['html']}  {paths['json']}  {paths['junit']}")
    v = data["verdict"]
    colour = {"pass": "green", "fail": "red", "error": "magenta"}[v]
    console.print(f"[bold {colour}]VERDICT: {v.upper()}[/]")


def _print_result(console: Console, run: dict[str, Any], r: dict[str, Any], rp: dict[str, Any] | None) -> None:
    if r.get("known"):
        console.print(Text.assemble("\n", ("≈ known ", "bold cyan"), (r["check"], "bold cyan"),
                                    f" [{r['level']}] ({run['label']}) — {known_text(r['known'])}"))
        return
    colour = "yellow" if r["level"] == "SHOULD" else "red"
    console.print(f"\n[bold {colour}]✗ {r['check']}[/] [{r['level']}] ({run['label']}) — {r['title']}")
    console.print(f"  [dim]{r['clause']}[/]")
    for f in r.get("failures", [])[:2]:
        console.print(Text.assemble(f"  {f['message']}  ", (f"(×{f.get('count', 1)})", "dim")))
        for line in finding_details(f, 300):
            console.print(f"    {line}", markup=False)
    for tb in r.get("errors", [])[:1]:
        console.print(f"[magenta]{tb}[/]")
    if rp:
        shrunk = rp.get("shrunk", True)
        what = "shrunk workload" if shrunk else f"workload ({rp.get('note', 'not shrunk')})"
        console.print(f"  [bold]{what}[/] (seed {rp['seed']}, shard {rp['shard']}, {rp['events']} events):")
        lines = str(rp["sql"]).rstrip().splitlines()
        limit = len(lines) if shrunk else 30
        for line in lines[:limit]:
            console.print(f"    {line}", markup=False)
        if len(lines) > limit:
            console.print(f"    … {len(lines) - limit} more lines"
                          + (f" (all of them in {rp['file']})" if rp.get("file") else ""), markup=False)
        console.print(Text.assemble("  replay: ", (str(rp["command"]), "cyan")))
