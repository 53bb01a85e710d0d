"""What the `conformance` commands share: the consoles, the exit codes and how a command names
its protocol, its encoder and a reproduction file."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from ..encoders import find_encoder
from ..encoders.spi import EncoderInfo
from ..errors import UsageError
from ..infra.urls import redact, redact_text
from ..protocols import get_protocol, protocol_names
from ..protocols.base import ProtocolSuite

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2

console = Console(highlight=False, soft_wrap=False)
if not console.is_terminal and (console.width or 0) < 120:
    # Logs and CI: a width that keeps the summary table readable.
    console = Console(highlight=False, soft_wrap=False, width=120)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _command_line() -> str:
    return redact_text(" ".join(shlex.quote(a) for a in ["conformance", *sys.argv[1:]]))


def _protocol(name: str | None) -> ProtocolSuite:
    if name is None:
        raise UsageError(f"name a protocol with --protocol (installed: {', '.join(protocol_names())})")
    return get_protocol(name)


def _encoder(name: str, protocol: ProtocolSuite) -> EncoderInfo:
    try:
        return find_encoder(name, protocol.name)
    except LookupError as e:
        raise UsageError(str(e)) from None


def _reproduction(path: Path) -> tuple[dict[str, Any], Any]:
    """A reproduction file's data and workload, or a usage error saying what is wrong with it."""
    from ..model.serde import WorkloadFormatError, workload_from_json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != "cdc-conformance/reproduction":
            raise UsageError(f"{path} is not a cdc-conformance reproduction file")
        if data.get("format_version") != 1:
            raise UsageError(f"{path} has format_version {data.get('format_version')!r}; this suite reads 1")
        return data, workload_from_json(data["workload"])
    except (OSError, ValueError, KeyError, WorkloadFormatError) as e:
        raise UsageError(f"cannot read reproduction {path}: {e}") from None


@contextlib.contextmanager
def _upstream(url: str, plan: Any) -> Iterator[str]:
    """Start the upstream server (if any) for the run, and stop it after; yields the URL workers
    open (empty without an upstream)."""
    if url.strip().lower() in ("", "none"):
        yield ""
        return
    from ..upstream import open_upstream

    up = open_upstream(url)
    with console.status(f"starting the upstream {redact(url)}…"):
        up.start()
    try:
        plan.upstream = up
        plan.upstream_args = f"--upstream {shlex.quote(redact(url))}"
        console.print(f"[dim]upstream: {redact(up.describe())}[/]")
        yield up.shareable_url()
    finally:
        up.close()


def _progress() -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True,
                    disable=not console.is_terminal)
