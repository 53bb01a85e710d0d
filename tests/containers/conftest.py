"""Container tests need a Docker engine; where none answers they skip with a clear message."""

from __future__ import annotations

import pytest


def docker_problem() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
        return None
    except Exception as e:  # noqa: BLE001 - any failure means: no usable engine here
        return f"no Docker engine answers ({type(e).__name__}); container tests run in the GitHub workflow"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problem = None
    checked = False
    for item in items:
        if "containers" in str(item.fspath):
            item.add_marker(pytest.mark.containers)
            if not checked:
                problem, checked = docker_problem(), True
            if problem:
                item.add_marker(pytest.mark.skip(reason=problem))
