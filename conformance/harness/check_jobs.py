"""A capture checked by several processes at once (`conformance check --input FILE --jobs N`).

A capture's topics are independent of each other for every check the suite makes of a log
alone: a checker keeps its state per topic (kinds, schemas, streams), the stream checks judge
a topic's partitions, the delivery analysis judges each topic apart. The Spark check of live
topics relies on the same fact (whole topics per task, `check._per_topic`). So the topics are
dealt out to N workers, each a fork of this process: it reads the whole file, checks the lines
of its own topics (`capture.read_records(mine=...)`: another worker's line is skipped once
orjson has read its topic, before its bytes are decoded) with its own checker and delivery
log, and sends back its tally, its delivery summary and its count, which are merged here in
worker order. Lines that are not records and name no topic are the first worker's. The counts,
outcomes and findings are those of one process; where a check keeps only its first
`MAX_DISTINCT_FAILURES` distinct findings, which ones may differ.

Topics are dealt largest first to the least loaded worker, by their sizes in the file's first
lines (a first reading, topics only); a topic first met later goes where a hash of its name
says. Only where `os.fork` exists and the process runs no other thread (a fork copies one
thread: a lock another thread held stays held in the child); elsewhere, and for an in-process
embedded registry, one process checks the capture as before.
"""

from __future__ import annotations

import itertools
import os
import pickle
import sys
import threading
import traceback
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from typing import Any, cast

import orjson

from ..checks.results import Tally
from ..encoders.spi import Record
from ..protocols.base import ProtocolSuite
from .capture import DeliveryLogs, DeliverySummary, read_records
from .check import check_log

#: `--jobs auto` checks a capture smaller than this in one process: forking, reading the file
#: once more and merging cost more than a second core saves (~20k records of a realistic shape).
AUTO_MIN_BYTES = 4 << 20
#: Topics are dealt by their sizes in the first this many lines (a second reading of a whole
#: large capture would cost more than a better deal saves; later topics are dealt by a hash).
SIZES_FROM_LINES = 250_000
#: `--jobs auto` forks at most this many: every worker reads every line's topic, so past a few
#: workers that reading costs more than another worker's share saves.
AUTO_MAX_JOBS = 8
#: How often (in lines read) a worker says how far it got.
PROGRESS_EVERY = 8192


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity (where the OS says, else all cores),
    within a cgroup's CPU quota (a container limited to 2 CPUs on a 64-core host has 2)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    return max(1, min(cores, quota)) if quota is not None else cores


def _cgroup_cpus(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The CPUs a cgroup quota allows this process (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), rounded
    up; None where there is none or it cannot be read."""
    try:
        quota, _, period = (root / "cpu.max").read_text().partition(" ")
        if quota == "max":
            return None
        return -(-int(quota) // int(period))
    except (OSError, ValueError):
        pass
    try:
        q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return -(-q // p) if q > 0 and p > 0 else None


def why_one_process(registry_spec: str | None) -> str | None:
    """Why a capture cannot be checked by forked workers here (None: it can)."""
    if not hasattr(os, "fork") or sys.platform in ("win32", "emscripten", "wasi"):
        return "no fork() on this platform"
    if threading.active_count() > 1:
        return "this process runs other threads (a fork would copy their locks held)"
    if registry_spec is not None and registry_spec.startswith("embedded://"):
        return "an embedded registry runs in this process"
    return None


def resolve_jobs(requested: int | None, path: Path, registry_spec: str | None) -> int:
    """The workers for `--jobs`: N as asked (None: auto, the usable cores up to `AUTO_MAX_JOBS`
    for a capture of at least `AUTO_MIN_BYTES`, on Linux), one where forking is not possible here."""
    if why_one_process(registry_spec) is not None:
        return 1
    if requested is not None:
        return max(1, requested)
    if not sys.platform.startswith("linux"):
        return 1  # macOS's system libraries are not all safe across fork(): there, only when asked
    try:
        big = path.stat().st_size >= AUTO_MIN_BYTES
    except OSError:
        big = False
    return min(usable_cores(), AUTO_MAX_JOBS) if big else 1


def topic_sizes(path: Path, limit: int | None = None) -> tuple[Counter[str], bool]:
    """Lines per topic, for the lines orjson reads as an object with a string `topic` (the
    lines `read_records(mine=...)` deals by topic before reading anything else of them), in the
    first `limit` lines (all by default); and whether those were all the file's lines."""
    sizes: Counter[str] = Counter()
    loads, error = orjson.loads, orjson.JSONDecodeError
    read = 0
    with path.open("rb") as fh:
        for raw in itertools.islice(fh, limit):
            read += 1
            try:
                obj = loads(raw)
            except error:
                continue
            if obj.__class__ is dict:
                topic = obj.get("topic")
                if topic.__class__ is str:
                    sizes[topic] += 1
        whole = limit is None or read < limit or not fh.readline()
    return sizes, whole


def owner_of(dealt: Mapping[str, int], workers: int) -> Callable[[str], int]:
    """Each topic's worker: as dealt, and for a topic the first reading did not meet (beyond
    `SIZES_FROM_LINES`), one picked by a hash of its name that every worker computes alike."""
    def owner(topic: str) -> int:
        w = dealt.get(topic)
        return w if w is not None else zlib.crc32(topic.encode("utf-8", "surrogatepass")) % workers

    return owner


def deal(sizes: Mapping[str, int], workers: int) -> dict[str, int]:
    """Each topic's worker: largest topics first, each to the least loaded worker so far (ties
    to the lowest index; topics of equal size by name), so the workers end at about the same time."""
    load = [0] * workers
    out: dict[str, int] = {}
    for topic, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        w = min(range(workers), key=load.__getitem__)
        out[topic] = w
        load[w] += n
    return out


def check_file_jobs(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, path: Path, tally: Tally,
                    jobs: int, *, progress: Callable[[int], None] | None = None, complete: bool = False,
                    keep: Callable[[str], bool] | None = None) -> tuple[int, DeliverySummary, int]:
    """`check.check_file` by up to `jobs` forked workers, whole topics each (see the module's
    docstring); the merged tally goes into `tally`. `progress` gets the lines every worker has
    read past. One worker (or one topic) is `check_file` itself. Returns the records checked,
    the delivery summary and how many processes checked them."""
    from .check import check_file

    if jobs > 1:
        sizes, whole = topic_sizes(path, SIZES_FROM_LINES)
        dealt = deal({t: n for t, n in sizes.items() if keep is None or keep(t)}, jobs)
        if whole:  # no topic left to meet: no more workers than topics
            jobs = min(jobs, len(set(dealt.values())))
    if jobs <= 1:
        n, summary = check_file(suite, options, registry, path, tally, progress=progress, complete=complete, keep=keep)
        return n, summary, 1
    owner = owner_of(dealt, jobs)
    conns: dict[Connection, int] = {}
    pids: list[int] = []
    for i in range(jobs):
        recv, send = Pipe(duplex=False)
        pid = os.fork()
        if pid == 0:  # the worker: check its share, send the outcome, leave without the parent's cleanup
            recv.close()
            code = 0
            try:
                send.send(("done", _work(suite, options, registry, path, tally, i, owner, complete, keep, send)))
            except BaseException as e:  # noqa: BLE001 - the parent raises it
                code = 1
                try:
                    send.send(("error", (_portable(e), traceback.format_exc())))
                except BaseException:  # noqa: BLE001, S110 - the parent sees the pipe close
                    pass
            finally:
                os._exit(code)
        send.close()
        conns[recv] = i
        pids.append(pid)
    return (*_gather(conns, pids, tally, progress), jobs)


def _work(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, path: Path, tally: Tally, i: int,
          owner: Callable[[str], int], complete: bool, keep: Callable[[str], bool] | None,
          send: Connection) -> tuple[int, bytes, DeliverySummary]:
    """Worker `i`'s share: its topics' lines (and, for the first, the lines that name none)
    checked into a fresh tally of the same set-up (the parent's, as it was when forked)."""

    from ..infra.registry.client import RegistryClient

    if isinstance(registry, RegistryClient):
        registry.close()  # its pooled connections are the parent's sockets: this worker opens its own

    def mine(topic: str) -> bool:
        return owner(topic) == i

    logs = DeliveryLogs(suite.name, options, registry)
    mark = [PROGRESS_EVERY]

    def lines() -> Any:
        for n, item in read_records(path, mine=mine, bad_lines=i == 0):
            if n >= mark[0]:
                send.send(("progress", n))
                mark[0] = n + PROGRESS_EVERY
            # `keep` leaves out records, as `check_file` does; a line that is no record stays.
            if keep is not None and isinstance(item, Record) and not keep(item.topic):
                continue
            yield n, item

    n = check_log(suite, options, registry, lines(), tally, delivery=logs, complete=complete)
    summary = logs.judge(tally)
    return n, pickle.dumps(tally, protocol=pickle.HIGHEST_PROTOCOL), summary


def _gather(conns: dict[Connection, int], pids: list[int], tally: Tally,
            progress: Callable[[int], None] | None) -> tuple[int, DeliverySummary]:
    """The workers' outcomes merged in worker order; an error in one is raised here, with its
    traceback, after every worker has ended."""
    at = dict.fromkeys(conns.values(), 0)
    done: dict[int, tuple[int, bytes, DeliverySummary]] = {}
    errors: list[str] = []
    raised: BaseException | None = None  # the first worker's exception, as one process would raise it
    open_conns = list(conns)
    while open_conns:
        for c in cast(list[Connection], wait(open_conns)):
            i = conns[c]
            try:
                kind, body = c.recv()
            except EOFError:
                if i not in done:
                    errors.append(f"check worker {i} ended without an answer (killed, or out of memory?)")
                open_conns.remove(c)
                continue
            if kind == "progress":
                at[i] = body
                if progress is not None:
                    progress(min(at.values()))
            elif kind == "done":
                done[i] = body
                at[i] = sys.maxsize  # the bar follows the workers still reading
            else:
                exc, text = body
                errors.append(f"check worker {i} failed:\n{text}")
                if raised is None and exc is not None:
                    raised = exc
    for pid in pids:
        os.waitpid(pid, 0)
    if raised is not None:
        raised.add_note("\n".join(errors))  # where, in the worker
        raise raised
    if errors:
        raise RuntimeError("\n".join(errors))
    total = 0
    summary = DeliverySummary()
    partial: list[str] = []
    for i in sorted(done):
        n, blob, part = done[i]
        tally.merge(pickle.loads(blob))  # noqa: S301 - our own forked worker's tally
        partial += part.partial  # each worker's first ones in topic order: together, the first overall
        part.partial = []
        summary.merge(part)
        total += n
    summary.partial = sorted(partial, key=_topic_partition)[:summary.PARTIAL_LIMIT]
    return total, summary


def _portable(e: BaseException) -> BaseException | None:
    """`e` if it survives pickling (the parent raises it as one process would have: an
    unreachable registry is the same infrastructure error), else None."""
    try:
        pickle.loads(pickle.dumps(e))  # noqa: S301 - our own bytes, just made
    except Exception:  # noqa: BLE001 - an exception that cannot travel: its traceback text does
        return None
    return e


def _topic_partition(note: str) -> tuple[str, int]:
    """`topic[p] from offset N` (a `DeliverySummary.partial` note) as (topic, p), the order one
    process writes them in."""
    head = note.rsplit(" from offset ", 1)[0]
    topic, _, p = head.rpartition("[")
    return topic, int(p.rstrip("]") or 0)
