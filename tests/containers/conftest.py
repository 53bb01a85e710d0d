"""Container tests need a Docker engine; where none answers they skip with a clear message."""

from __future__ import annotations

import pytest
from helpers import docker_problem


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
