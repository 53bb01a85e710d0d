#!/usr/bin/env python
"""Scaling of the Spark pipeline: `run` and `check` records/s with local[1] and local[2], and the
driver's peak memory for a small and a large workload.

    python benchmarks/pipeline_scaling.py [--records 1000000] [--small 100000]
        [--masters local[1],local[2]] [--only run|check|rss] [--json PATH]

1. **run** (generate -> encode -> produce -> read back -> check, `conformance.harness.spark_runner
   .SparkRunner`) on ~N records of the TiCDC Avro reference encoder, once per master, in this
   process, against one embedded Kafka cluster (librdkafka's mock, in this process) and one
   embedded Schema Registry; each run has its own run id, hence its own topics. The Spark session
   is started before the clock starts (its start-up is reported on its own) and stopped between
   masters (a JVM hosts one SparkContext). With CONFORMANCE_TRACE=1 the pipeline prints its
   stage timings (stage A = produce, stage B = judge); they are captured and reported.
2. **check** (`conformance.harness.check.check_live_spark`: record and stream checks on every
   record) of the topics produced by the *first* run, once per master (in the same session as
   that master's run, right after it), plus once in-process (`check_live_local`) as a baseline: the
   same records are checked by every configuration.
3. **ceiling** (with check, or `--only ceiling`): what this machine gives two processes at once.
   The same check (`check_log` of ~`--ceiling-records` in-memory records of the shape below, a
   fresh checker each round, as a task makes one) runs in one forked process, then in two at
   once; the ratio (2 × one process's time / the pair's time) is the most two cores of this
   machine can give this work, whatever Spark does: a virtual machine's two vCPUs may share a
   physical core, or its memory bandwidth. `local[2]`/`local[1]` is to be read against it.
4. **rss**: for the small and the large size, a fresh driver subprocess runs `run_spark`
   (`--rss-master`) against Kafka and a registry hosted by *another* subprocess (the mock
   cluster keeps every record it is sent in the memory of the process that hosts it, which
   would otherwise be counted as the driver's). Reported: the driver's Python peak RSS
   (`VmHWM` of the process), the driver JVM's peak (`VmHWM`, and the largest `VmRSS` seen by a
   0.5 s poller) and its heap in use after a full GC at the end, the Spark Python workers' peaks,
   and the infrastructure process's peak; with the ratio large/small.

Prints a table and writes `reports/bench/pipeline_scaling.json` (records, units, seconds,
records/s, ratios local[2]/local[1], stage timings, RSS, load averages before and after every
measurement, the code version measured). Not part of CI: it takes an hour or more for 1M
records on two cores; compare ratios within one run, not rates across machines.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import faulthandler
import io
import json
import os
import platform
import re
import resource
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

DEFAULT_JSON = REPO / "reports" / "bench" / "pipeline_scaling.json"
PROTOCOL = "ticdc-avro"
ENCODER = "ticdc-avro/reference"
OPTIONS = {"enable-tidb-extension": "true"}
# Measured on seed `bench`: 97,169 records from shards 0..122 of the shape below (~400 events each).
RECORDS_PER_UNIT = 790
POLL_S = 0.5


# -- what is measured -------------------------------------------------------------------------


def shape() -> Any:
    from conformance.strategies import DEFAULT_SHAPE

    # Few long-lived tables (as a real capture has), ~810 records per unit.
    return dataclasses.replace(DEFAULT_SHAPE, tables=(1, 2), transactions=(300, 300), ddl_rate=0.01,
                               max_rows_per_table=400)


def resolved_options() -> dict[str, str]:
    from conformance.protocols import get_protocol

    return dict(get_protocol(PROTOCOL).resolve_options(dict(OPTIONS)))


def units_for(records: int) -> int:
    return max(1, round(records / RECORDS_PER_UNIT))


def make_spec(kafka_config: dict[str, str], registry_url: str, run_id: str, seed: str) -> Any:
    from conformance.harness.stages import RunSpec

    return RunSpec(protocol=PROTOCOL, encoder=ENCODER, seed=seed, shape=shape(),
                   combos=(tuple(sorted(resolved_options().items())),), kafka_config=tuple(kafka_config.items()),
                   registry_url=registry_url, partitions=1, run_id=run_id)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of pid (its reaped children included), in clock ticks."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = stat[stat.rfind(")") + 2:].split()
    return sum(int(x) for x in fields[11:15])


def _system_busy_ticks() -> int:
    with open("/proc/stat", encoding="ascii") as fh:
        cpu = [int(x) for x in fh.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (cpu + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal


class CpuMeter:
    """CPU used by this process and its descendants (the JVM, Spark's Python workers), against the
    whole machine's, over one measurement: how many cores we got, and how many others took."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.ours0 = self._ours()
        self.busy0 = _system_busy_ticks()

    @staticmethod
    def _ours() -> int:
        return sum(_proc_cpu_ticks(p) for p in [os.getpid(), *descendants(os.getpid())])

    def stop(self) -> dict[str, float]:
        wall = time.perf_counter() - self.t0
        ours = (self._ours() - self.ours0) / _TICK
        busy = (_system_busy_ticks() - self.busy0) / _TICK
        return {"cpu_s": round(ours, 1), "cores_used": round(ours / wall, 2),
                "others_cores": round(max(0.0, busy - ours) / wall, 2)}


def machine() -> dict[str, Any]:
    import pyarrow
    import pyspark
    from confluent_kafka import libversion

    from conformance.harness.spark import check_java

    try:
        java = check_java().splitlines()[0]
    except Exception as e:  # noqa: BLE001 - reported, the measurement then fails on its own
        java = f"unavailable: {e}"
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "pyspark": pyspark.__version__, "pyarrow": pyarrow.__version__, "librdkafka": libversion()[0],
            "java": java}


# -- stage timings printed by the pipeline ------------------------------------------------------

_STAGE_A = re.compile(r"encode stage ([\d.]+) s")
_STAGE_B = re.compile(r"judge stage ([\d.]+) s over (\d+) readable partitions")


class _Tee(io.TextIOBase):
    def __init__(self, out: Any) -> None:
        self.out = out
        self.lines: list[str] = []
        self.times: list[float] = []  # time.time() when each line was complete
        self._buf = ""

    def write(self, s: str) -> int:
        self.out.write(s)
        self._buf += s
        *done, self._buf = self._buf.split("\n")
        self.lines.extend(done)
        self.times.extend([time.time()] * len(done))
        return len(s)

    def time_of(self, pattern: re.Pattern[str]) -> float | None:
        for t, ln in zip(self.times, self.lines, strict=True):
            if pattern.search(ln):
                return t
        return None

    def flush(self) -> None:
        self.out.flush()


@contextlib.contextmanager
def traced() -> Iterator[_Tee]:
    """CONFORMANCE_TRACE=1 while inside; the pipeline's trace lines are kept (and still printed)."""
    old = os.environ.get("CONFORMANCE_TRACE")
    os.environ["CONFORMANCE_TRACE"] = "1"
    tee = _Tee(sys.stdout)
    try:
        with contextlib.redirect_stdout(tee):
            yield tee
    finally:
        if old is None:
            os.environ.pop("CONFORMANCE_TRACE", None)
        else:
            os.environ["CONFORMANCE_TRACE"] = old


def stage_timings(lines: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"trace": [ln for ln in lines if ln.startswith("[spark]")]}
    for ln in lines:
        if m := _STAGE_A.search(ln):
            out["stage_a_s"] = float(m.group(1))
        if m := _STAGE_B.search(ln):
            out["stage_b_s"] = float(m.group(1))
            out["readable_partitions"] = int(m.group(2))
    return out


# -- where the time goes, from Spark's own status store ---------------------------------------------

# The status store keeps 1000 jobs and stages by default; a check runs one job per topic-partition.
STATUS_CONF = {"spark.ui.retainedJobs": "100000", "spark.ui.retainedStages": "100000"}


def _opt_ms(opt: Any) -> int | None:
    return int(opt.get().getTime()) if opt.isDefined() else None


def spark_jobs(since: float) -> list[dict[str, Any]]:
    """Every Spark job submitted since `since` (time.time()), with its stages: tasks, wall time,
    summed executor run time and CPU time (from the session's status store)."""
    from pyspark.sql import SparkSession

    # The session conformance.harness.spark started (getOrCreate hands back the running one).
    sc = (SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()).sparkContext
    jvm: Any = sc._jvm
    gw: Any = sc._gateway
    store = sc._jsc.sc().statusStore()
    stages: dict[int, dict[str, Any]] = {}
    it = store.stageList(jvm.java.util.ArrayList(), False, False, gw.new_array(jvm.double, 0),
                         jvm.java.util.ArrayList()).iterator()
    while it.hasNext():
        st = it.next()
        sub, comp = _opt_ms(st.submissionTime()), _opt_ms(st.completionTime())
        stages[int(st.stageId())] = {
            "stage": int(st.stageId()), "tasks": int(st.numTasks()), "status": str(st.status().toString()),
            "wall_s": round((comp - sub) / 1000, 3) if sub is not None and comp is not None else None,
            "run_s": round(st.executorRunTime() / 1000, 3), "cpu_s": round(st.executorCpuTime() / 1e9, 3),
            "shuffle_read_mb": round(st.shuffleReadBytes() / 1e6, 2),
            "shuffle_write_mb": round(st.shuffleWriteBytes() / 1e6, 2)}
    jobs: list[dict[str, Any]] = []
    it = store.jobsList(jvm.java.util.ArrayList()).iterator()
    while it.hasNext():
        j = it.next()
        sub, comp = _opt_ms(j.submissionTime()), _opt_ms(j.completionTime())
        if sub is None or sub < since * 1000:
            continue
        # A Scala Seq; skipped stages (their output already computed) stay "PENDING".
        ids = [int(x) for x in str(j.stageIds().mkString(",")).split(",") if x]
        jobs.append({"job": int(j.jobId()), "name": str(j.name()).split(" at ")[0], "submitted": sub / 1000,
                     "wall_s": round((comp - sub) / 1000, 3) if comp is not None else None,
                     "tasks": int(j.numTasks()) - int(j.numSkippedTasks()),
                     "stages": [stages[i] for i in ids if i in stages and stages[i]["status"] != "PENDING"]})
    jobs.sort(key=lambda j: j["job"])
    return jobs


def summarize_jobs(jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    stages = [st for j in jobs for st in j["stages"]]
    walls = [j["wall_s"] or 0.0 for j in jobs]
    return {"jobs": len(jobs), "stages": len(stages), "tasks": sum(st["tasks"] for st in stages),
            "jobs_wall_s": round(sum(walls), 1), "executor_run_s": round(sum(st["run_s"] for st in stages), 1),
            "executor_cpu_s": round(sum(st["cpu_s"] for st in stages), 1),
            "max_tasks_per_stage": max((st["tasks"] for st in stages), default=0)}


def run_breakdown(jobs: Sequence[dict[str, Any]], t0: float, tee: _Tee) -> dict[str, Any]:
    """Split a run's Spark jobs by pipeline stage (the trace lines' times) and stage B's stages into
    the Kafka read + shuffle map side and the judge (post-shuffle) side."""
    a_end = tee.time_of(_STAGE_A) or float("inf")
    a_jobs = [j for j in jobs if j["submitted"] < a_end]
    b_jobs = [j for j in jobs if j["submitted"] >= a_end]
    out: dict[str, Any] = {"before_first_job_s": round(jobs[0]["submitted"] - t0, 1) if jobs else None,
                           "stage_a": summarize_jobs(a_jobs), "after_stage_a": summarize_jobs(b_jobs)}
    stages = [st for j in b_jobs for st in j["stages"]]
    maps = [st for st in stages if st["shuffle_write_mb"] > 0]
    judge = [st for st in stages if st["shuffle_read_mb"] > 0 and st["shuffle_write_mb"] == 0]
    for name, group in (("stage_b_shuffle_map", maps), ("stage_b_judge", judge)):
        out[name] = {"stages": len(group), "tasks": sum(st["tasks"] for st in group),
                     "wall_s": round(sum(st["wall_s"] or 0 for st in group), 1),
                     "run_s": round(sum(st["run_s"] for st in group), 1),
                     "cpu_s": round(sum(st["cpu_s"] for st in group), 1),
                     "shuffle_mb": round(sum(st["shuffle_write_mb"] + st["shuffle_read_mb"] for st in group), 1)}
    return out


# -- run and check in this process --------------------------------------------------------------


def wait_quiet(limit: float | None, most: float) -> dict[str, Any] | None:
    """Wait (at most `most` seconds) until the 1-minute load average is at or under `limit`, so
    that a timed measurement does not share the cores with other work (None: do not wait)."""
    if limit is None:
        return None
    t0 = time.monotonic()
    while os.getloadavg()[0] > limit and time.monotonic() - t0 < most:
        time.sleep(10)
    got = {"waited_s": round(time.monotonic() - t0, 1), "load_1m": round(os.getloadavg()[0], 2), "limit": limit}
    print(f"waited {got['waited_s']} s for a quiet machine: load {got['load_1m']} (limit {limit})", flush=True)
    return got


def start_session(master: str) -> dict[str, Any]:
    """Start (afresh) the session for master; its start-up time and what Spark says it got."""
    from conformance.harness.spark import spark_session, stop_spark_session

    stop_spark_session()
    t0 = time.perf_counter()
    sc = spark_session(master, extra_conf=STATUS_CONF).sparkContext
    return {"seconds": round(time.perf_counter() - t0, 2), "master": sc.master,
            "default_parallelism": sc.defaultParallelism}


def jvm_heap(spark: Any) -> dict[str, int]:
    """The driver JVM's heap: used after a full GC (what it retains), committed, and max, in KiB."""
    rt = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    spark.sparkContext._jvm.java.lang.System.gc()
    return {"jvm_heap_used_after_gc_kib": (rt.totalMemory() - rt.freeMemory()) // 1024,
            "jvm_heap_committed_kib": rt.totalMemory() // 1024, "jvm_heap_max_kib": rt.maxMemory() // 1024}


def measure_run(kafka: Any, registry_url: str, master: str, units: int, run_id: str, seed: str) -> dict[str, Any]:
    from conformance.harness.spark_runner import SparkRunner

    spec = make_spec(kafka.client_config(), registry_url, run_id, seed)
    before = load()
    print(f"run {master}: {units} units (run id {run_id}), load {before} …", flush=True)
    with traced() as tee:
        cpu = CpuMeter()
        wall0 = time.time()
        t0 = time.perf_counter()
        sections = SparkRunner(kafka, master=master).run(spec, range(units))
        seconds = time.perf_counter() - t0
        used = cpu.stop()
    jobs = spark_jobs(wall0)
    sec = sections[0]
    res: dict[str, Any] = {"master": master, "run_id": run_id, "units": units, "workloads": sec.workloads,
                           "records": sec.records, "verdict": sec.verdict(), "seconds": round(seconds, 3),
                           "records_per_s": round(sec.records / seconds, 1), "load_before": before,
                           "load_after": load(), **used}
    res |= stage_timings(tee.lines)
    if "stage_a_s" in res and "stage_b_s" in res:
        # Topic creation, collecting stage A's tallies, planning the read, building the report.
        res["other_s"] = round(seconds - res["stage_a_s"] - res["stage_b_s"], 1)
    res["topics"] = len(run_topics(kafka, run_id))
    res["spark"] = run_breakdown(jobs, wall0, tee)
    res["spark_jobs"] = jobs
    print(f"  {res['records']} records, verdict {res['verdict']}, {seconds:.1f} s, "
          f"{res['records_per_s']:,.0f} records/s, load after {res['load_after']}; cores used by us "
          f"{used['cores_used']}, by others {used['others_cores']}", flush=True)
    if res["verdict"] != "pass":
        failed = sorted(sec.tally.failed_ids())
        raise SystemExit(f"run {master}: verdict {res['verdict']!r}, failed checks {failed}: the reference must pass\n"
                         + describe_failures(sec.tally))
    return res


def run_topics(kafka: Any, run_id: str) -> list[str]:
    return sorted(t for t in kafka.topics() if t.startswith(f"{run_id}c0w"))


def measure_check(kafka: Any, registry_url: str, topics: Sequence[str], master: str | None) -> dict[str, Any]:
    """check_live_spark on `master`, or check_live_local when master is None."""
    from conformance.harness.check import LiveSpec, check_live_local, check_live_spark
    from conformance.harness.kafka_source import plan_ranges

    config = kafka.client_config()
    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    spec = LiveSpec(PROTOCOL, tuple(sorted(resolved_options().items())), registry_url)
    label = master or "in-process"
    before = load()
    print(f"check {label}: {len(topics)} topics, load {before} …", flush=True)
    cpu = CpuMeter()
    wall0 = time.time()
    t0 = time.perf_counter()
    ranges = plan_ranges(config["bootstrap.servers"], list(topics), rest)
    plan_s = time.perf_counter() - t0
    if master is None:
        tally, n, _ = check_live_local(spec, config, ranges)
    else:
        tally, n, _ = check_live_spark(spec, config, ranges, master)
    seconds = time.perf_counter() - t0
    used = cpu.stop()
    failed = sorted(tally.failed_ids())
    errored = sorted(t.id for t in tally if t.errored)
    res = {"master": label, "records": n, "seconds": round(seconds, 3), "plan_s": round(plan_s, 3),
           "records_per_s": round(n / seconds, 1), "partitions": sum(not r.empty for r in ranges),
           "retention_gaps": sum(r.low > 0 for r in ranges), "failed": failed, "errored": errored,
           "load_before": before, "load_after": load(), **used}
    if master is not None:
        jobs = spark_jobs(wall0)
        res["spark"] = summarize_jobs(jobs)
        res["spark_jobs"] = jobs  # per stage: tasks, wall, executor run and CPU time
    print(f"  {n} records, {seconds:.1f} s, {res['records_per_s']:,.0f} records/s, load after {res['load_after']}; "
          f"cores used by us {used['cores_used']}, by others {used['others_cores']}", flush=True)
    if failed or errored:
        raise SystemExit(f"check {label}: failed {failed}, errored {errored}: the reference must pass\n"
                         + describe_failures(tally))
    return res


def describe_failures(tally: Any, per_check: int = 3) -> str:
    """The first findings of every failed or errored check: what a failed measurement must show."""
    lines = []
    for t in tally:
        if not (t.failed or t.errored):
            continue
        lines.append(f"  {t.id}: {t.failed} failed, {t.errored} errored")
        for rec in list(t.failures.values())[:per_check]:
            seed_shard = f" (seed {rec.workload[0]!r}, shard {rec.workload[1]})" if rec.workload else ""
            lines.append(f"    x{rec.count} {rec.message}{seed_shard}; "
                         f"expected {rec.expected!r}, actual {rec.actual!r}")
        lines.extend(f"    error: {e}" for e in t.errors[:per_check])
    return "\n".join(lines)


def ratio(results: dict[str, dict[str, Any]], a: str, b: str) -> float | None:
    if a in results and b in results:
        return round(float(results[b]["records_per_s"]) / float(results[a]["records_per_s"]), 3)
    return None


def run_and_check(args: argparse.Namespace, masters: list[str], units: int, out: dict[str, Any]) -> None:
    from conformance.harness.spark import stop_spark_session
    from conformance.infra.kafka import open_kafka
    from conformance.infra.registry import EmbeddedSchemaRegistry

    do_run, do_check = "run" in args.only, "check" in args.only
    runs: dict[str, dict[str, Any]] = {}
    checks: dict[str, dict[str, Any]] = {}
    starts: dict[str, dict[str, Any]] = {}
    out["session_start_s"] = starts
    warmups: dict[str, dict[str, Any]] = {}
    out["warmup"] = warmups
    tag = secrets.token_hex(2)
    with contextlib.ExitStack() as stack:

        def new_infra() -> tuple[Any, Any]:
            # Every run gets its own cluster and registry: a later run must not find the schemas
            # (or the topic count) an earlier one left, or the order of the masters would matter.
            return (stack.enter_context(open_kafka("embedded://?brokers=1&partitions=1")),
                    stack.enter_context(EmbeddedSchemaRegistry()))

        check_infra: tuple[Any, Any] | None = None
        check_topics: list[str] = []
        if do_check and not do_run:
            # Produce the records to check (no timing): with the in-process pipeline, or a Spark run
            # on --produce-master (the same records, in a fraction of the time on two cores).
            kafka, reg = check_infra = new_infra()
            run_id = f"s{tag}"
            t_produce = time.perf_counter()
            if args.produce_master:
                print(f"producing {units} units for the check on Spark {args.produce_master} (not timed) …",
                      flush=True)
                start_session(args.produce_master)
                produced = measure_run(kafka, reg.url, args.produce_master, units, run_id, args.seed)
                stop_spark_session()
                records = produced["records"]
            else:
                from conformance.harness.runners import KafkaRunner
                from conformance.infra.registry import RegistryClient

                print(f"producing {units} units for the check in-process (not timed) …", flush=True)
                sections = KafkaRunner(kafka, RegistryClient(reg.url)).run(
                    make_spec(kafka.client_config(), reg.url, run_id, args.seed), range(units))
                if sections[0].verdict() != "pass":
                    raise SystemExit("the in-process run producing the records to check did not pass")
                records = sections[0].records
            check_topics = run_topics(kafka, run_id)
            out["check_input"] = {"run_id": run_id, "records": records, "topics": len(check_topics),
                                  "produced_by": args.produce_master or "in-process",
                                  "produce_s": round(time.perf_counter() - t_produce, 1)}
        try:
            for i, master in enumerate(masters):
                out.setdefault("quiet_wait", {})[master] = wait_quiet(args.wait_quiet, args.wait_quiet_max)
                starts[master] = start_session(master)
                print(f"Spark session {master} started in {starts[master]['seconds']:.1f} s "
                      f"(master {starts[master]['master']}, default parallelism "
                      f"{starts[master]['default_parallelism']})", flush=True)
                kafka, reg = new_infra() if do_run or check_infra is None else check_infra
                if args.warmup_units:
                    # The first jobs of a session start Python workers and import everything there
                    # (~10 s on this machine): a small run first, so that the timed run is steady
                    # state. Another seed, so that it registers none of the timed run's schemas.
                    print(f"warm-up ({args.warmup_units} units, not timed):", flush=True)
                    warmups[master] = measure_run(kafka, reg.url, master, args.warmup_units, f"w{tag}m{i}",
                                                  f"{args.seed}-warmup")
                if do_run:
                    runs[master] = measure_run(kafka, reg.url, master, units, f"r{tag}m{i}", args.seed)
                    if check_infra is None:
                        check_infra = (kafka, reg)
                        check_topics = run_topics(kafka, runs[master]["run_id"])
                        out["check_input"] = {"run_id": runs[master]["run_id"], "records": runs[master]["records"],
                                              "topics": len(check_topics)}
                    _write(args.json, out | {"run": {"measurements": runs}}, quiet=True)
                if do_check:
                    assert check_infra is not None
                    checks[master] = measure_check(check_infra[0], check_infra[1].url, check_topics, master)
                    _write(args.json, out | {"run": {"measurements": runs}, "check": {"measurements": checks}},
                           quiet=True)
            stop_spark_session()
            if do_check and args.inprocess_check:
                assert check_infra is not None
                out.setdefault("quiet_wait", {})["in-process"] = wait_quiet(args.wait_quiet, args.wait_quiet_max)
                checks["in-process"] = measure_check(check_infra[0], check_infra[1].url, check_topics, None)
        finally:
            stop_spark_session()
        # This process hosts the embedded Kafka clusters too, which keep every record they are sent.
        out["this_process_peak_rss_kib_with_embedded_kafka"] = self_hwm_kib()
    if runs:
        out["run"] = {"units": units, "measurements": runs}
        if len(masters) >= 2:
            out["run"][f"ratio {masters[1]}/{masters[0]}"] = ratio(runs, masters[0], masters[1])
    if checks:
        out["check"] = {"measurements": checks}
        if len(masters) >= 2:
            out["check"][f"ratio {masters[1]}/{masters[0]}"] = ratio(checks, masters[0], masters[1])
        if "in-process" in checks:
            for m in masters:
                out["check"][f"ratio {m}/in-process"] = ratio(checks, "in-process", m)


# -- the machine's own ceiling for two processes ----------------------------------------------------


def ceiling_records(n: int, seed: str) -> tuple[list[Any], Any]:
    """~n reference records of the benchmark's shape, in memory, and their registry."""
    from conformance.encoders.spi import EncoderContext
    from conformance.infra.inprocess import InProcessRegistry
    from conformance.protocols import get_protocol
    from conformance.strategies import sample_workload

    registry = InProcessRegistry()
    suite = get_protocol(PROTOCOL)
    out: list[Any] = []
    shard = 0
    while len(out) < n:
        enc = suite.reference().factory()
        enc.open(EncoderContext(resolved_options(), registry, topic_prefix=f"c{shard}-"))
        for ev in sample_workload(seed, shard, shape()).events:
            out.extend(enc.encode(ev))
        enc.close()
        shard += 1
    return out, registry


def _ceiling_rounds(records: Sequence[Any], registry: Any, rounds: int) -> None:
    from conformance.harness.capture import DeliveryLogs
    from conformance.harness.check import capture_tally, check_log, unnumbered
    from conformance.protocols import get_protocol

    suite = get_protocol(PROTOCOL)
    options = resolved_options()
    for _ in range(rounds):
        tally = capture_tally(suite, "the ceiling measurement")
        logs = DeliveryLogs(suite.name, options, registry)
        check_log(suite, options, registry, unnumbered(records), tally, delivery=logs)
        logs.judge(tally)


def _forked(n: int, records: Sequence[Any], registry: Any, rounds: int) -> float:
    """Wall time of n forked children, each running `rounds` checks, started together."""
    t0 = time.perf_counter()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _ceiling_rounds(records, registry, rounds)
            except BaseException:  # noqa: BLE001 - reported by the exit status
                code = 1
            os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("a ceiling child failed")
    return time.perf_counter() - t0


def measure_ceiling(args: argparse.Namespace) -> dict[str, Any]:
    """One process's check against two at once (see the module's docstring), best of
    `--ceiling-repeat` pairs of measurements."""
    records, registry = ceiling_records(args.ceiling_records, args.seed)
    _ceiling_rounds(records, registry, 1)  # the registry's answers, before forking
    t0 = time.perf_counter()
    _forked(1, records, registry, 1)
    rounds = max(1, round(args.ceiling_seconds / max(1e-3, time.perf_counter() - t0)))
    out: dict[str, Any] = {"records": len(records), "rounds": rounds, "pairs": []}
    for _ in range(args.ceiling_repeat):
        before = load()
        one = _forked(1, records, registry, rounds)
        two = _forked(2, records, registry, rounds)
        out["pairs"].append({"one_s": round(one, 3), "two_s": round(two, 3), "ratio": round(2 * one / two, 3),
                             "load_before": before, "load_after": load()})
    out["ratio"] = max(p["ratio"] for p in out["pairs"])
    print(f"ceiling: {len(records)} records × {rounds} rounds: two processes at once give ×{out['ratio']} "
          f"one process's throughput ({', '.join(str(p['ratio']) for p in out['pairs'])})", flush=True)
    return out


# -- driver peak RSS in fresh processes ---------------------------------------------------------


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def _kib(status: dict[str, str], key: str) -> int:
    v = status.get(key, "0 kB").split()
    return int(v[0]) if v else 0


def descendants(root: int) -> dict[int, str]:
    """pid -> comm of every descendant of root (from /proc)."""
    parent: dict[int, int] = {}
    comm: dict[int, str] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid …; comm may hold spaces and parentheses.
        rp = stat.rfind(")")
        parent[int(d.name)] = int(stat[rp + 2:].split()[1])
        comm[int(d.name)] = stat[stat.find("(") + 1:rp]
    out: dict[int, str] = {}
    frontier = [root]
    while frontier:
        p = frontier.pop()
        for c, pp in parent.items():
            if pp == p and c not in out:
                out[c] = comm[c]
                frontier.append(c)
    return out


def self_hwm_kib() -> int:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries the parent's RSS at fork over
    into the child's ru_maxrss across exec, so a subprocess of a big parent would report the
    parent's size as its own peak."""
    return _kib(_status(os.getpid()), "VmHWM")


class ChildPoller:
    """Polls the driver's descendants: the JVM(s) and, below them, Spark's Python workers."""

    def __init__(self) -> None:
        self.jvm_max_rss: dict[int, int] = {}
        self.jvm_hwm: dict[int, int] = {}
        self.workers_max_rss: dict[int, int] = {}
        self.workers_sum_max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def sample(self) -> None:
        total = 0
        for pid, comm in descendants(os.getpid()).items():
            st = _status(pid)
            if not st:
                continue
            rss = _kib(st, "VmRSS")
            if comm == "java":
                self.jvm_max_rss[pid] = max(self.jvm_max_rss.get(pid, 0), rss)
                self.jvm_hwm[pid] = max(self.jvm_hwm.get(pid, 0), _kib(st, "VmHWM"))
            elif comm.startswith("python"):
                self.workers_max_rss[pid] = max(self.workers_max_rss.get(pid, 0), rss)
                total += rss
        self.workers_sum_max = max(self.workers_sum_max, total)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.sample()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(10)
        self.sample()
        return {"jvm_pids": sorted(self.jvm_hwm), "jvm_vmhwm_kib": max(self.jvm_hwm.values(), default=0),
                "jvm_max_vmrss_kib": max(self.jvm_max_rss.values(), default=0),
                "python_workers": len(self.workers_max_rss),
                "python_worker_max_vmrss_kib": max(self.workers_max_rss.values(), default=0),
                "python_workers_sum_max_vmrss_kib": self.workers_sum_max}


def serve_infra() -> int:
    """Hidden mode: host an embedded Kafka cluster and registry for one driver subprocess.

    Prints one JSON line (bootstrap, registry url, control address and key), then creates topics
    on request over a multiprocessing connection; exits when stdin closes or on "stop"."""
    from multiprocessing.connection import Listener

    from conformance.infra.kafka import EmbeddedKafka
    from conformance.infra.registry import EmbeddedSchemaRegistry

    key = secrets.token_bytes(16)
    with EmbeddedKafka(1, 1) as kafka, EmbeddedSchemaRegistry() as reg, \
            Listener(("127.0.0.1", 0), authkey=key) as listener:

        def watch_stdin() -> None:
            sys.stdin.read()  # EOF: the parent is gone or done
            os._exit(0)

        threading.Thread(target=watch_stdin, daemon=True).start()
        print(json.dumps({"bootstrap": kafka.bootstrap, "registry": reg.url, "control": list(listener.address),
                          "key": key.hex()}), flush=True)
        while True:
            with listener.accept() as conn:
                while True:
                    try:
                        msg = conn.recv()
                    except EOFError:
                        break
                    if msg[0] == "create":
                        kafka.create_topic(msg[1], msg[2])
                        conn.send("ok")
                    elif msg[0] == "rss":
                        conn.send(self_hwm_kib())
                    elif msg[0] == "stop":
                        conn.send("ok")
                        return 0


class RemoteTopics:
    """What run_spark needs of a cluster (create_topic), done by the infra process: the mock cluster
    does not implement the CreateTopics API, so a plain client cannot create topics on it."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.created: list[str] = []

    def create_topic(self, name: str, partitions: int | None = None, replication: int = 1) -> None:
        self.conn.send(("create", name, partitions or 1))
        if self.conn.recv() != "ok":
            raise RuntimeError(f"the infra process did not create {name}")
        self.created.append(name)

    def topics(self) -> list[str]:
        return list(self.created)


def rss_driver(args: argparse.Namespace) -> int:
    """Hidden mode: one run_spark of --units units against the infra process; prints RESULT <json>."""
    from multiprocessing.connection import Client

    from conformance.harness.spark import spark_session, stop_spark_session
    from conformance.harness.spark_runner import SparkRunner

    infra = json.loads(args.rss_driver)
    rss: dict[str, Any] = {"python_after_imports_kib": self_hwm_kib()}
    if not args.units:
        raise SystemExit("--rss-driver needs --units")
    poller = ChildPoller()
    poller.start()
    t0 = time.perf_counter()
    spark = spark_session(args.rss_master)
    start_s = time.perf_counter() - t0
    poller.sample()
    rss["python_after_session_start_kib"] = self_hwm_kib()
    rss["jvm_after_session_start_kib"] = max(poller.jvm_hwm.values(), default=0)
    before = load()
    with Client(tuple(infra["control"]), authkey=bytes.fromhex(infra["key"])) as conn:
        topics = RemoteTopics(conn)
        spec = make_spec({"bootstrap.servers": infra["bootstrap"]}, infra["registry"], "m0", args.seed)
        with traced() as tee:
            t0 = time.perf_counter()
            sections = SparkRunner(topics, master=args.rss_master).run(spec, range(args.units))
            seconds = time.perf_counter() - t0
        rss["python_peak_kib"] = self_hwm_kib()
        rss["python_ru_maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rss |= poller.stop()
        rss |= jvm_heap(spark)
        conn.send(("rss",))
        rss["infra_process_peak_kib"] = conn.recv()
    stop_spark_session()
    sec = sections[0]
    res = {"units": args.units, "records": sec.records, "workloads": sec.workloads, "verdict": sec.verdict(),
           "master": args.rss_master, "seconds": round(seconds, 3), "records_per_s": round(sec.records / seconds, 1),
           "session_start_s": round(start_s, 2), "topics": len(topics.created), "load_before": before,
           "load_after": load(), **stage_timings(tee.lines), "rss": rss}
    print("RESULT " + json.dumps(res), flush=True)
    return 0


def measure_rss(args: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    me = [sys.executable, str(Path(__file__).resolve())]
    results: dict[str, Any] = {}
    for size in sizes:
        units = units_for(size)
        print(f"rss: {size} records ({units} units) in a fresh driver, master {args.rss_master}, "
              f"load {load()} …", flush=True)
        infra = subprocess.Popen([*me, "--serve-infra"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert infra.stdout is not None
            line = _readline(infra, 120)
            proc = subprocess.Popen([*me, "--rss-driver", line, "--units", str(units), "--rss-master", args.rss_master,
                                     "--seed", args.seed, "--timeout", str(args.timeout)],
                                    stdout=subprocess.PIPE, text=True)
            try:
                stdout, _ = proc.communicate(timeout=args.timeout + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate(timeout=60)
                raise SystemExit(f"the rss driver for {size} records did not finish within {args.timeout} s") from None
            for ln in stdout.splitlines():
                if not ln.startswith("RESULT "):
                    print(f"  | {ln}", flush=True)
            found = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not found:
                raise SystemExit(f"the rss driver for {size} records exited {proc.returncode} without a result")
            res = json.loads(found[-1][len("RESULT "):])
        finally:
            assert infra.stdin is not None
            infra.stdin.close()  # the infra process exits on EOF
            try:
                infra.wait(30)
            except subprocess.TimeoutExpired:
                infra.kill()
                infra.wait(30)
        if res["verdict"] != "pass":
            raise SystemExit(f"rss run of {size} records: verdict {res['verdict']!r}")
        r = res["rss"]
        print(f"  {res['records']} records in {res['seconds']:.1f} s: driver python peak "
              f"{r['python_peak_kib'] / 1024:.0f} MiB, JVM VmHWM {r['jvm_vmhwm_kib'] / 1024:.0f} MiB, JVM heap "
              f"used after GC {r['jvm_heap_used_after_gc_kib'] / 1024:.0f} MiB, infra process "
              f"{r['infra_process_peak_kib'] / 1024:.0f} MiB", flush=True)
        results[str(size)] = res
    out: dict[str, Any] = {"master": args.rss_master, "sizes": results}
    if len(sizes) == 2:
        small, large = (results[str(s)]["rss"] for s in sizes)
        out[f"ratio {sizes[1]}/{sizes[0]}"] = {
            k: round(large[k] / small[k], 3) for k in ("python_peak_kib", "jvm_vmhwm_kib", "jvm_max_vmrss_kib",
                                                       "jvm_heap_used_after_gc_kib", "python_worker_max_vmrss_kib",
                                                       "infra_process_peak_kib")
            if small.get(k)}
    return out


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    box: list[str] = []
    assert proc.stdout is not None
    stdout = proc.stdout
    t = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not box or not box[0].strip():
        proc.kill()
        raise SystemExit(f"the infra process did not start within {timeout:g} s")
    return box[0].strip()


# -- profile of stage B's judge, in-process -------------------------------------------------------


def profile_judge(args: argparse.Namespace) -> dict[str, Any]:
    """The judge stage as a Spark executor runs it (`spark_runner._judge`: the topic's log read with the data
    source's reader, the ledger from stage A, `judge_topic`), in this process over the topics of
    --profile-units units: timed once, then once under cProfile."""
    import cProfile
    import pstats

    from conformance.checks.delivery import Sent
    from conformance.encoders.sink import KafkaTransport
    from conformance.harness.encode import LogRecord
    from conformance.harness.kafka_source import plan_ranges, read_range
    from conformance.harness.stages import HangLatch, encode_unit, generate, judge_topic
    from conformance.infra.kafka import open_kafka
    from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient

    n = args.profile_units
    with open_kafka("embedded://?brokers=1&partitions=1") as kafka, EmbeddedSchemaRegistry() as reg:
        spec = make_spec(kafka.client_config(), reg.url, "p0", args.seed)
        print(f"profile: producing {n} units in-process …", flush=True)

        def create(topics: Sequence[str]) -> None:
            for t in topics:
                kafka.create_topic(t, 1)

        registry = RegistryClient(reg.url)
        transport, latch = KafkaTransport(dict(spec.kafka_config)), HangLatch()
        t0 = time.perf_counter()
        units = [encode_unit(spec, 0, s, transport, registry, latch, prepare=create) for s in range(n)]
        produce_s = time.perf_counter() - t0
        ledger: dict[str, list[Sent]] = {}
        for u in units:
            for row in u.sent:
                ledger.setdefault(row.topic, []).append(row)
        config = kafka.client_config()
        bootstrap = config.pop("bootstrap.servers")
        ranges = [r for r in plan_ranges(bootstrap, run_topics(kafka, "p0"), config) if not r.empty]
        lows = {(r.topic, r.partition): r.low for r in ranges if r.low > 0}

        def judge_all() -> int:
            # A Spark worker regenerates most units' workloads in stage B (its cache holds 64).
            generate.cache_clear()
            n_records = 0
            for r in ranges:
                log = [LogRecord(r.topic, r.partition, o, k, v) for b in read_range(bootstrap, r, config)
                       for o, k, v in zip(b.column("offset").to_pylist(), b.column("key").to_pylist(),
                                          b.column("value").to_pylist(), strict=True)]
                n_records += len(log)
                tally = judge_topic(spec, r.topic, log, ledger.get(r.topic, []), lows, registry).tally
                if tally.failed_ids():
                    raise SystemExit(f"profile: {r.topic} fails {sorted(tally.failed_ids())}")
            return n_records

        t0 = time.perf_counter()
        records = judge_all()
        judge_s = time.perf_counter() - t0
        prof = cProfile.Profile()
        prof.enable()
        judge_all()
        prof.disable()
    prof_path = Path(args.json).with_suffix(".judge.prof")
    prof_path.parent.mkdir(parents=True, exist_ok=True)
    prof.dump_stats(str(prof_path))
    print(f"profile: {records} records in {len(ranges)} topics: stage A in-process {produce_s:.1f} s "
          f"({records / produce_s:,.0f} records/s), stage B judge in-process {judge_s:.1f} s "
          f"({records / judge_s:,.0f} records/s); cProfile (overhead included) saved to {prof_path}:")
    for key in ("cumulative", "tottime"):
        pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats(key).print_stats(args.top)
    rows = []
    for (file, line, name), (_cc, nc, tt, ct, _callers) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({name})", "ncalls": nc, "tottime_s": round(tt, 3),
                     "cumtime_s": round(ct, 3)})
    rows.sort(key=lambda r: -float(r["cumtime_s"]))
    return {"units": n, "records": records, "topics": len(ranges), "produce_inprocess_s": round(produce_s, 2),
            "judge_inprocess_s": round(judge_s, 2), "judge_records_per_s": round(records / judge_s, 1),
            "top_cumulative": rows[:args.top], "prof": str(prof_path)}


# -- output -------------------------------------------------------------------------------------


def _write(path: str, data: dict[str, Any], quiet: bool = False) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if not quiet:
        print(f"\nwrote {p}")


def _fmt_load(x: dict[str, Any]) -> str:
    return f"{x['load_before'][0]:.1f}→{x['load_after'][0]:.1f}"


def _fmt_cores(x: dict[str, Any]) -> str:
    return f"{x['cores_used']:.2f}/{x['others_cores']:.2f}" if "cores_used" in x else "-"


def table(out: dict[str, Any], masters: list[str]) -> str:
    lines: list[str] = []
    hdr = (f"{'measurement':<12}{'master':<12}{'records':>11}{'seconds':>10}{'records/s':>11}{'ratio':>8}"
           f"{'stage A s':>11}{'stage B s':>11}{'other s':>9}{'cores us/others':>17}  load 1m")
    rows = []
    for kind in ("run", "check"):
        block = out.get(kind)
        if not block:
            continue
        ms = block["measurements"]
        base = ms.get(masters[0])
        for m, r in ms.items():
            rat = f"{r['records_per_s'] / base['records_per_s']:.3f}" if base else "-"
            a = f"{r['stage_a_s']:.1f}" if "stage_a_s" in r else "-"
            b = f"{r['stage_b_s']:.1f}" if "stage_b_s" in r else "-"
            o = f"{r['other_s']:.1f}" if "other_s" in r else "-"
            rows.append(f"{kind:<12}{m:<12}{r['records']:>11,}{r['seconds']:>10.1f}{r['records_per_s']:>11,.0f}"
                        f"{rat:>8}{a:>11}{b:>11}{o:>9}{_fmt_cores(r):>17}  {_fmt_load(r)}")
    if rows:
        lines += [f"ratio = records/s / records/s of {masters[0]} (same process, same cluster); cores us/others "
                  "= CPU seconds per second used by this process tree / by the rest of the machine", "", hdr,
                  "-" * len(hdr), *rows]
        if out.get("ceiling"):
            c = out["ceiling"]
            lines.append(f"machine ceiling: two processes checking at once give ×{c['ratio']} one process's "
                         f"throughput ({c['records']:,} records × {c['rounds']} rounds each; pairs "
                         + ", ".join(str(x["ratio"]) for x in c["pairs"]) + ")")
        if out.get("session_start_s"):
            lines.append("Spark session start-up (not in the timings): "
                         + ", ".join(f"{m} {s['seconds']:.1f} s" for m, s in out["session_start_s"].items()))
    notes = []
    for kind in ("run", "check"):
        for m, r in (out.get(kind) or {}).get("measurements", {}).items():
            sp = r.get("spark")
            if not sp:
                continue
            if kind == "run":
                a, mp, jd = sp["stage_a"], sp["stage_b_shuffle_map"], sp["stage_b_judge"]
                notes.append(f"run {m}: driver before the first job {sp['before_first_job_s']} s; stage A "
                             f"{a['jobs']} jobs, {a['tasks']} tasks, {a['jobs_wall_s']} s of jobs; stage B Kafka "
                             f"read + shuffle map {mp['tasks']} tasks in {mp['wall_s']} s (executors "
                             f"{mp['run_s']} s), judge {jd['tasks']} task(s) in {jd['wall_s']} s (executors "
                             f"{jd['run_s']} s, {jd['shuffle_mb']} MB shuffled)")
            else:
                notes.append(f"check {m}: {sp['jobs']} jobs ({sp['tasks']} tasks, at most {sp['max_tasks_per_stage']}"
                             f" per stage), {sp['jobs_wall_s']} s of jobs, executors {sp['executor_run_s']} s")
    if notes:
        lines += ["", "where the time goes (Spark's status store):", *notes]
    rss = out.get("rss")
    if rss:
        hdr2 = (f"{'records':>11}{'units':>7}{'seconds':>9}{'py driver MiB':>15}{'JVM HWM MiB':>13}"
                f"{'JVM heap MiB':>14}{'py worker MiB':>15}{'infra MiB':>11}  load 1m")
        lines += ["", f"driver peak RSS (fresh driver per size, master {rss['master']}, Kafka and registry in "
                  "another process; JVM heap = used after a full GC at the end of the run; py worker = largest "
                  "Spark Python worker)", "", hdr2, "-" * len(hdr2)]
        for _size, r in rss["sizes"].items():
            m = r["rss"]
            lines.append(f"{r['records']:>11,}{r['units']:>7}{r['seconds']:>9.1f}{m['python_peak_kib'] / 1024:>15.0f}"
                         f"{m['jvm_vmhwm_kib'] / 1024:>13.0f}{m['jvm_heap_used_after_gc_kib'] / 1024:>14.0f}"
                         f"{m['python_worker_max_vmrss_kib'] / 1024:>15.0f}{m['infra_process_peak_kib'] / 1024:>11.0f}"
                         f"  {_fmt_load(r)}")
        for k, v in rss.items():
            if k.startswith("ratio"):
                lines.append(f"{k}: " + ", ".join(f"{n} ×{x}" for n, x in v.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--records", type=int, default=1_000_000, help="records of the large size (default 1000000)")
    ap.add_argument("--small", type=int, default=100_000, help="records of the small size, for rss (default 100000)")
    ap.add_argument("--masters", default="local[1],local[2]", help="Spark masters to compare, in this order")
    ap.add_argument("--only", action="append", choices=("run", "check", "rss", "profile", "ceiling"),
                    help="measure only this (repeatable; default: run, check, ceiling and rss; profile: cProfile "
                         "stage B's judge in-process; ceiling: one process's check against two at once)")
    ap.add_argument("--ceiling-records", type=int, default=20_000,
                    help="records each ceiling process checks per round (default 20000)")
    ap.add_argument("--ceiling-seconds", type=float, default=10.0,
                    help="about how long one ceiling process runs (default 10)")
    ap.add_argument("--ceiling-repeat", type=int, default=3, help="ceiling measurement pairs (default 3)")
    ap.add_argument("--profile-units", type=int, default=60, help="units for --only profile (default 60)")
    ap.add_argument("--top", type=int, default=20, help="profile rows printed (default 20)")
    ap.add_argument("--rss-master", default="local[2]", help="master of the rss driver subprocesses")
    ap.add_argument("--warmup-units", type=int, default=4,
                    help="units of an untimed run at the start of every Spark session (default 4; 0: none)")
    ap.add_argument("--no-inprocess-check", dest="inprocess_check", action="store_false",
                    help="skip the in-process check baseline (check_live_local)")
    ap.add_argument("--produce-master", default=None, metavar="MASTER",
                    help="with --only check: produce the records to check with a Spark run on MASTER (untimed; "
                         "default: the in-process pipeline, which takes about an hour for 1M records)")
    ap.add_argument("--wait-quiet", type=float, default=None, metavar="LOAD",
                    help="before each timed master, wait until the 1-minute load average is at most LOAD "
                         "(the untimed production of records may share the machine; default: do not wait)")
    ap.add_argument("--wait-quiet-max", type=float, default=3 * 3600.0,
                    help="the longest such wait, in seconds (default 10800)")
    ap.add_argument("--seed", default="bench", help="workload seed (default 'bench')")
    ap.add_argument("--timeout", type=float, default=4 * 3600.0,
                    help="bound on the whole benchmark / on each rss subprocess, in seconds (default 14400)")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help=f"result file (default {DEFAULT_JSON})")
    ap.add_argument("--commit", default=None,
                    help="the commit the measured sources were exported from (recorded; for PYTHONPATH=export runs)")
    ap.add_argument("--serve-infra", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rss-driver", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--units", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    # Every wait is bounded: past the deadline, dump every thread's stack and exit.
    faulthandler.dump_traceback_later(args.timeout + (120 if (args.serve_infra or args.rss_driver) else 0),
                                      exit=True)
    if args.serve_infra:
        return serve_infra()
    if args.rss_driver:
        return rss_driver(args)
    if args.records < 1 or args.small < 1:
        ap.error("--records and --small must be positive")
    args.only = args.only or ["run", "check", "ceiling", "rss"]
    masters = [m.strip() for m in args.masters.split(",") if m.strip()]

    src = source_state()
    if args.commit:
        src["exported_from_commit"] = args.commit
    out: dict[str, Any] = {
        "benchmark": "pipeline_scaling", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:], "source": src, "machine": machine(), "protocol": PROTOCOL, "encoder": ENCODER,
        "options": OPTIONS, "shape": dataclasses.asdict(shape()), "seed": args.seed,
        "records_target": args.records, "load_at_start": load()}
    print(f"measuring {src['package_dir']} (sources sha1 {src['sources_sha1'][:12]}"
          + (f", commit {src['commit'][:12]}" if src.get("commit") else "")
          + (f", uncommitted changes to {', '.join(src['modified'])}" if src.get("modified") else "")
          + f"), load {out['load_at_start']}", flush=True)
    units = units_for(args.records)
    if "run" in args.only or "check" in args.only:
        run_and_check(args, masters, units, out)
        _write(args.json, out, quiet=True)
    if "ceiling" in args.only or "check" in args.only:
        out["ceiling"] = measure_ceiling(args)
        _write(args.json, out, quiet=True)
    if "rss" in args.only:
        out["rss"] = measure_rss(args, [args.small, args.records])
    if "profile" in args.only:
        out["profile_judge"] = profile_judge(args)
    out["load_at_end"] = load()
    if source_state()["sources_sha1"] != src["sources_sha1"]:
        out["warning"] = "the conformance sources changed during the run: measure again"
        print(f"\nWARNING: {out['warning']}")
    print()
    print(table(out, masters))
    _write(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
