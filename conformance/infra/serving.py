"""Keeping embedded infrastructure up until the user stops it (`conformance serve …`)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")


def serve_until_stopped(start: Callable[[], AbstractContextManager[T]], address: Callable[[T], str],
                        ready: Callable[[str], None] | None = None) -> None:
    """Enter `start()`, report `address(it)` to `ready`, and block until KeyboardInterrupt or
    SIGTERM; then leave the context (a clean stop). SIGTERM is handled only from the main thread
    (Python's signal rule); the previous handler is restored on return."""
    stop = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    previous: Any = None
    if in_main:

        def on_term(signum: int, frame: FrameType | None) -> None:
            stop.set()

        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        with start() as it:
            if ready is not None:
                ready(address(it))
            # Short waits keep the main thread responsive to Ctrl-C on every platform.
            while not stop.wait(0.2):
                pass
    except KeyboardInterrupt:
        pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
