"""Kafka clusters for the suite, chosen by URL (reading them back is `harness.kafka_source`).

:func:`open_kafka` turns a ``--kafka`` argument into a :class:`KafkaCluster`:

``embedded://[?brokers=3&partitions=3]`` (the default)
    librdkafka's mock cluster (:mod:`conformance.infra.mockcluster`) in this process. It speaks
    the real Kafka protocol on 127.0.0.1, so any client in any process can connect to
    :attr:`KafkaCluster.bootstrap`; it is the only kind that supports fault injection
    (:mod:`conformance.infra.faults`). ``partitions`` is the partition count of the topics the
    harness creates (topics that clients auto-create get the mock's own default of 4). Each
    partition keeps only its newest ~5 MiB (see the mockcluster module for the limits).
``container://[?image=confluentinc/cp-kafka:7.6.1&partitions=3&timeout=180]``
    a single-node KRaft Kafka in Docker via testcontainers (needs a Docker engine).
``kafka://[user:password@]host:port[,host:port...][?key=value&...]``
    an existing cluster. Query parameters are librdkafka client properties passed to every
    client (``security.protocol=SASL_SSL&sasl.mechanism=PLAIN&ssl.ca.location=/path``...),
    except ``partitions`` (topics the harness creates) and ``timeout`` (seconds allowed for each
    metadata request, default 10). URL userinfo becomes ``sasl.username``/``sasl.password``
    (percent-decoded); without an explicit ``security.protocol`` it then implies ``SASL_SSL``
    with ``sasl.mechanism=PLAIN``.

Credentials never reach a message or a repr: :attr:`KafkaCluster.url` drops the userinfo and
masks secret-looking query values (``*password*``, ``*secret*``, ``sasl.jaas.config``...), and
error text coming from librdkafka is scrubbed of those values too.

Every network wait is bounded: opening probes the cluster with one metadata request
(``timeout``), and metadata and watermark queries use the same bound.
"""

from __future__ import annotations

import importlib
import re
import socket
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from ..errors import InfrastructureError
from .closing import ClosesOnExit
from .mockcluster import MockCluster, MockClusterError
from .urls import REDACTED, redact, redact_text

__all__ = [
    "DEFAULT_CONTAINER_IMAGE",
    "ContainerKafka",
    "EmbeddedKafka",
    "ExternalKafka",
    "KafkaCluster",
    "KafkaUnavailable",
    "open_kafka",
    "serve_kafka",
]

#: Confluent's image: testcontainers' KafkaContainer drives its /etc/confluent/docker scripts
#: (the apache/kafka image has none), and .with_kraft() needs 7.0.0 or later.
DEFAULT_CONTAINER_IMAGE: Final = "confluentinc/cp-kafka:7.6.1"

_ACCEPTED_FORMS: Final = (
    "Accepted forms: embedded://[?brokers=3&partitions=3] (the default, an in-process cluster on 127.0.0.1), "
    "container://[?image=...&partitions=3&timeout=180] (Kafka in Docker, needs a Docker engine), "
    "kafka://[user:password@]host:port[,host:port...][?librdkafka.property=value&...] (an existing cluster)."
)

Kind = Literal["embedded", "container", "external"]


class KafkaUnavailable(InfrastructureError):
    """The Kafka cluster cannot be started or does not answer; the message says why and what to do."""


# --------------------------------------------------------------------------------------------
# Secrets
# --------------------------------------------------------------------------------------------

# librdkafka properties whose values are credentials (or embed them).
_SECRET_KEY = re.compile(r"password|secret|jaas|token|ssl\.key\.pem|credentials", re.IGNORECASE)


def _is_secret(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """Remove URL userinfo and every known secret value from ``text``."""
    out = redact_text(text)
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        out = out.replace(secret, REDACTED)
    return out


# --------------------------------------------------------------------------------------------
# Clusters
# --------------------------------------------------------------------------------------------


def _error_of(exc: KafkaException) -> KafkaError | None:
    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, KafkaError) else None


class KafkaCluster(ClosesOnExit):
    """A Kafka cluster the suite writes to and reads from; one subclass per provider.

    Thread-safe: the metadata and watermark clients are shared and created on first use.
    """

    kind: Kind = "external"

    def __init__(
        self,
        *,
        url: str,
        bootstrap: str,
        config: Mapping[str, str] | None = None,
        default_partitions: int = 3,
        timeout: float = 10.0,
    ) -> None:
        self._config = {"bootstrap.servers": bootstrap, **dict(config or {})}
        self._secrets = tuple(v for k, v in self._config.items() if _is_secret(k))
        self._url = _scrub(redact(url), self._secrets)
        self.bootstrap = bootstrap
        self.default_partitions = default_partitions
        self.timeout = timeout
        self._lock = threading.Lock()
        self._admin: AdminClient | None = None
        self._reader: Consumer | None = None
        self._closed = False
        self._no_controller: bool | None = None  # learnt on the first create_topic

    # -- identity ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The URL this cluster was opened with, without credentials (safe for reports)."""
        return self._url

    @property
    def mock(self) -> MockCluster | None:
        """The mock cluster behind an embedded cluster (fault injection), else None."""
        return None

    @property
    def supports_faults(self) -> bool:
        return self.mock is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, bootstrap={self.bootstrap!r})"

    def scrub(self, text: str) -> str:
        """``text`` without this cluster's credentials (for messages that quote librdkafka)."""
        return _scrub(text, self._secrets)

    # -- clients -----------------------------------------------------------------------------

    def client_config(self) -> dict[str, str]:
        """What every producer, consumer and admin client of the suite starts from (a copy)."""
        return dict(self._config)

    def _quiet_config(self) -> dict[str, Any]:
        # The suite's own helper clients report failures through exceptions; librdkafka's
        # stderr log lines (connection refused...) would only be noise. A log_level or debug
        # property given in the URL still wins.
        return {"log_level": 0, **self._config}

    def _admin_client(self) -> AdminClient:
        with self._lock:
            if self._closed:
                raise KafkaUnavailable(f"The Kafka cluster {self.url} is closed; open it again.")
            if self._admin is None:
                self._admin = AdminClient(self._quiet_config())
            return self._admin

    def _reader_client(self) -> Consumer:
        with self._lock:
            if self._closed:
                raise KafkaUnavailable(f"The Kafka cluster {self.url} is closed; open it again.")
            if self._reader is None:
                # The Python client insists on a group.id even though this consumer never joins
                # a group (it only asks for watermarks); a unique one keeps it from touching any
                # real group's offsets.
                self._reader = Consumer(
                    {
                        **self._quiet_config(),
                        "group.id": f"conformance-watermarks-{uuid.uuid4().hex}",
                        "enable.auto.commit": False,
                    }
                )
            return self._reader

    def _unavailable(self, what: str, exc: KafkaException | None, waited: float) -> KafkaUnavailable:
        err = _error_of(exc) if exc is not None else None
        why = f"{err.name()}: {self.scrub(err.str())}" if err is not None else "no answer"
        return KafkaUnavailable(
            f"{what} failed: the Kafka cluster at {self.bootstrap} gave no usable answer within {waited:g} s "
            f"({why}). Check that it is running and reachable from here, and the security settings in the "
            "URL (security.protocol, sasl.*, ssl.*); or use embedded:// for the built-in cluster."
        )

    # -- metadata ----------------------------------------------------------------------------

    def _topic_metadata(self, topic: str) -> Any:
        """Metadata of one existing topic (one bounded request; `_await_topics` waits for new ones)."""
        try:
            # All topics, not just this one: asking for a named topic can auto-create it.
            md = self._admin_client().list_topics(timeout=self.timeout)
        except KafkaException as e:
            raise self._unavailable(f"Reading metadata of topic {topic!r}", e, self.timeout) from None
        tmd = md.topics.get(topic)
        if _usable(tmd):
            return tmd
        if tmd is None:
            raise ValueError(
                f"Topic {topic!r} does not exist on the Kafka cluster {self.url}; create it first "
                "(KafkaCluster.create_topic)."
            )
        problem = tmd.error.name() if tmd.error is not None else "no partitions"
        raise KafkaUnavailable(
            f"Topic {topic!r} on {self.url} is not usable ({problem}) after {self.timeout:g} s; "
            "check the cluster's health."
        )

    def topics(self) -> list[str]:
        """Names of the topics on the cluster (bounded metadata request)."""
        try:
            md = self._admin_client().list_topics(timeout=self.timeout)
        except KafkaException as e:
            raise self._unavailable("Listing topics", e, self.timeout) from None
        return sorted(md.topics)

    def partitions(self, topic: str) -> int:
        """How many partitions ``topic`` has (ValueError if it does not exist)."""
        return len(self._topic_metadata(topic).partitions)

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition -> leader broker id, as the metadata says now (-1 while leaderless)."""
        tmd = self._topic_metadata(topic)
        return {int(p): int(pm.leader) for p, pm in sorted(tmd.partitions.items())}

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(low, high) offsets of one partition, asked of the leader (not cached).

        On the embedded cluster low > 0 means retention dropped the oldest messages.
        """
        started = time.monotonic()
        try:
            low, high = self._reader_client().get_watermark_offsets(
                TopicPartition(topic, partition), timeout=self.timeout, cached=False
            )
        except KafkaException as e:
            err = _error_of(e)
            if err is not None and err.code() in (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART):
                raise ValueError(f"No partition {topic} [{partition}] on the Kafka cluster {self.url}.") from None
            raise self._unavailable(
                f"Reading watermarks of {topic} [{partition}]", e, round(time.monotonic() - started, 1)
            ) from None
        return int(low), int(high)

    # -- topics ------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int | None = None, replication: int = 1) -> None:
        """Create ``name`` (``default_partitions`` unless given); nothing happens if it exists."""
        self.create_topics([name], partitions, replication)

    def create_topics(self, names: Sequence[str], partitions: int | None = None, replication: int = 1) -> None:
        """Create every topic of ``names`` that does not exist yet: CreateTopics requests of up to
        ``CREATE_BATCH`` topics each (a run makes hundreds of small topics: one request and one
        metadata wait per topic cost a real cluster a round trip to its controller each), then one
        bounded wait until the metadata shows them all."""
        count = self.default_partitions if partitions is None else partitions
        names = list(dict.fromkeys(names))
        for name in names:
            _check_topic(name, count, replication)
        if not names:
            return
        if self._no_controller is None:
            self._no_controller = self._without_controller()
        if self._no_controller:
            self._auto_create(names, count)
            return
        admin = self._admin_client()
        for i in range(0, len(names), CREATE_BATCH):
            batch = names[i:i + CREATE_BATCH]
            futures = admin.create_topics(
                [NewTopic(name, num_partitions=count, replication_factor=replication) for name in batch],
                request_timeout=self.timeout,
                operation_timeout=self.timeout,
            )
            for name in batch:
                self._created(name, futures[name], count)
        # Creation is asynchronous on real brokers: wait (bounded) until the metadata shows them.
        self._await_topics(names)

    def _created(self, name: str, future: Any, count: int) -> None:
        """The outcome of one topic's CreateTopics: fine if it was made or already existed."""
        try:
            future.result(timeout=self.timeout * 2)
        except KafkaException as e:
            err = _error_of(e)
            if err is None or err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                if err is not None and err.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
                    raise self._unavailable(f"Creating topic {name!r}", e, self.timeout) from None
                why = f"{err.name()}: {self.scrub(err.str())}" if err is not None else self.scrub(str(e))
                raise KafkaUnavailable(
                    f"Creating topic {name!r} with {count} partition(s) on {self.url} failed ({why}). "
                    "Check the permissions of the configured user (CREATE on the topic) and the "
                    "replication factor against the number of brokers."
                ) from None
        except TimeoutError:
            raise self._unavailable(f"Creating topic {name!r}", None, self.timeout * 2) from None

    def _await_topics(self, names: Sequence[str]) -> None:
        """Wait (bounded) until the metadata shows every topic of ``names`` with its partitions;
        one metadata request per round for all of them."""
        deadline = time.monotonic() + self.timeout
        waiting = list(names)
        while True:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                # All topics, not just these: asking for named topics can auto-create them.
                md = self._admin_client().list_topics(timeout=remaining)
            except KafkaException as e:
                raise self._unavailable(f"Reading metadata of topic {waiting[0]!r}", e, self.timeout) from None
            waiting = [n for n in waiting if not _usable(md.topics.get(n))]
            if not waiting:
                return
            if time.monotonic() >= deadline:
                tmd = md.topics.get(waiting[0])
                problem = "it does not exist" if tmd is None else \
                    tmd.error.name() if tmd.error is not None else "no partitions"
                more = f" (and {len(waiting) - 1} more)" if len(waiting) > 1 else ""
                raise KafkaUnavailable(
                    f"Topic {waiting[0]!r}{more} on {self.url} is not usable ({problem}) {self.timeout:g} s after "
                    "it was created; check the cluster's health."
                )
            time.sleep(0.1)

    def _without_controller(self) -> bool:
        """True if the metadata names no usable controller, so that CreateTopics cannot be sent
        (librdkafka's mock cluster reached through kafka://, e.g. `conformance serve kafka`,
        names controller 0, which is none of its brokers)."""
        try:
            md = self._admin_client().list_topics(timeout=self.timeout)
        except KafkaException:
            return False
        return int(md.controller_id) not in md.brokers

    def _auto_create(self, names: Sequence[str], count: int) -> None:
        """Create topics the way a cluster without a controller allows: a metadata request per
        topic that may auto-create it (with the cluster's own partition count, which must be
        enough), all from one client (a client per topic cost most of the time)."""
        asker = Consumer({**self._quiet_config(), "group.id": f"conformance-create-{uuid.uuid4().hex}",
                          "allow.auto.create.topics": True})
        try:
            for name in names:
                try:
                    tmd = asker.list_topics(name, timeout=self.timeout).topics.get(name)
                except KafkaException as e:
                    raise self._unavailable(f"Auto-creating topic {name!r}", e, self.timeout) from None
                have = len(tmd.partitions) if tmd is not None and tmd.error is None else 0
                if have < count:
                    raise KafkaUnavailable(
                        f"The Kafka cluster at {self.bootstrap} names no controller, so topic {name!r} cannot be "
                        f"created with {count} partition(s); auto-creation gave it {have}. Create the topics "
                        f"yourself, or run with --partitions {have} or fewer." if have else
                        f"The Kafka cluster at {self.bootstrap} names no controller and did not auto-create topic "
                        f"{name!r}; create the topics yourself."
                    )
        finally:
            asker.close()

    # -- lifecycle ---------------------------------------------------------------------------

    def probe(self) -> None:
        """One bounded metadata request; KafkaUnavailable if nothing answers.

        A KafkaException escapes only when librdkafka refuses the client configuration.
        """
        admin = self._admin_client()
        self._probe_sockets()
        try:
            admin.list_topics(timeout=self.timeout)
        except KafkaException as e:
            raise self._unavailable("Connecting", e, self.timeout) from None

    def _probe_sockets(self) -> None:
        # librdkafka keeps retrying refused connections until the metadata timeout; a plain TCP
        # connect tells "nothing listens there" within milliseconds. Only when no bootstrap
        # address accepts a connection is that the verdict; otherwise the metadata request decides.
        problems: list[str] = []
        for hostport in self.bootstrap.split(","):
            host, _, port = hostport.rpartition(":")
            try:
                with socket.create_connection((host.strip("[]"), int(port)), timeout=min(self.timeout, 3.0)):
                    return
            except OSError as e:
                problems.append(f"{hostport}: {e.strerror or type(e).__name__}")
        raise KafkaUnavailable(
            f"Connecting failed: no broker of the Kafka cluster at {self.bootstrap} accepts connections "
            f"({'; '.join(problems)}). Check the host names and ports, and that the cluster is running; "
            "or use embedded:// for the built-in cluster."
        )

    def close(self) -> None:
        """Release the helper clients (and the cluster itself for embedded/container). Idempotent."""
        with self._lock:
            self._closed = True
            reader, self._reader = self._reader, None
            self._admin = None  # AdminClient has no close(); dropping it destroys the handle.
        if reader is not None:
            try:
                reader.close()
            except RuntimeError:  # already closed
                pass


#: Topics per CreateTopics request (the broker handles a batch in one controller operation).
CREATE_BATCH = 100


def _usable(tmd: Any) -> bool:
    """A topic's metadata shows it ready: no error, and partitions."""
    return tmd is not None and tmd.error is None and bool(tmd.partitions)


def _check_topic(name: str, partitions: int, replication: int) -> None:
    if not name or len(name) > 249 or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"Invalid topic name {name!r}: 1 to 249 characters from A-Z a-z 0-9 . _ -.")
    if partitions < 1:
        raise ValueError(f"Topic {name!r} needs at least one partition, not {partitions}.")
    if replication < 1:
        raise ValueError(f"Topic {name!r} needs a replication factor of at least 1, not {replication}.")


class EmbeddedKafka(KafkaCluster):
    """librdkafka's mock cluster in this process, reachable by any client on 127.0.0.1."""

    kind: Kind = "embedded"

    def __init__(self, brokers: int = 3, partitions: int = 3, *, timeout: float = 10.0) -> None:
        self._mock = MockCluster(brokers)
        super().__init__(
            url=f"embedded://?brokers={brokers}&partitions={partitions}",
            bootstrap=self._mock.bootstraps,
            default_partitions=partitions,
            timeout=timeout,
        )
        self.brokers = brokers

    @property
    def mock(self) -> MockCluster:
        return self._mock

    def create_topic(self, name: str, partitions: int | None = None, replication: int = 1) -> None:
        # The mock does not implement the CreateTopics API; its own call is synchronous.
        count = self.default_partitions if partitions is None else partitions
        _check_topic(name, count, replication)
        try:
            self._mock.create_topic(name, count, min(replication, self.brokers))
        except MockClusterError as e:
            if e.code != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

    def create_topics(self, names: Sequence[str], partitions: int | None = None, replication: int = 1) -> None:
        count = self.default_partitions if partitions is None else partitions
        for name in names:  # every name first, as on a real cluster
            _check_topic(name, count, replication)
        for name in dict.fromkeys(names):
            self.create_topic(name, partitions, replication)

    def close(self) -> None:
        super().close()
        self._mock.close()


class ContainerKafka(KafkaCluster):
    """A single-node KRaft Kafka in Docker, started (and removed) through testcontainers."""

    kind: Kind = "container"

    def __init__(self, container: Any, url: str, partitions: int, timeout: float) -> None:
        self._container = container
        super().__init__(
            url=url, bootstrap=str(container.get_bootstrap_server()), default_partitions=partitions, timeout=timeout
        )

    def close(self) -> None:
        super().close()
        container, self._container = self._container, None
        if container is not None:
            container.stop()


class ExternalKafka(KafkaCluster):
    """A cluster someone else runs; the suite only creates the topics it needs."""

    kind: Kind = "external"


# --------------------------------------------------------------------------------------------
# URL parsing
# --------------------------------------------------------------------------------------------


def _query(raw: str, shown: str) -> dict[str, str]:
    pairs = urllib.parse.parse_qsl(raw, keep_blank_values=True)
    out: dict[str, str] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"Kafka URL {shown!r} sets {key!r} twice; give each parameter once.")
        out[key] = value
    return out


def _int_param(params: dict[str, str], key: str, default: int, low: int, high: int, shown: str) -> int:
    raw = params.pop(key, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ValueError(f"Kafka URL {shown!r}: {key} must be a whole number from {low} to {high}, not {raw!r}.")
    return value


def _float_param(params: dict[str, str], key: str, default: float, shown: str) -> float:
    raw = params.pop(key, None)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise ValueError(f"Kafka URL {shown!r}: {key} must be a number of seconds from 0 to 3600, not {raw!r}.")
    return value


def _reject_extra(params: Mapping[str, str], allowed: str, shown: str) -> None:
    if params:
        raise ValueError(
            f"Kafka URL {shown!r} has unknown parameter(s) {', '.join(sorted(params))}; it accepts {allowed}."
        )


_HOSTPORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")


def _split_external(url: str, shown: str) -> tuple[str, dict[str, str], str, str | None, str | None]:
    """kafka://[user:pass@]hosts[?query] -> (bootstrap, query params, display url, user, password)."""
    rest = url[len("kafka://") :]
    query = ""
    for sep in ("?", "#"):
        if sep in rest:
            rest, tail = rest.split(sep, 1)
            if sep == "?":
                query = tail.split("#", 1)[0]
            break
    user = password = None
    if "@" in rest:
        # The last '@' ends the userinfo: users type unencoded '@' in passwords.
        userinfo, rest = rest.rsplit("@", 1)
        raw_user, _, raw_password = userinfo.partition(":")
        user = urllib.parse.unquote(raw_user)
        password = urllib.parse.unquote(raw_password) if raw_password else None
    hosts = rest.rstrip("/")
    if not hosts:
        raise ValueError(f"Kafka URL {shown!r} names no broker. Give host:port[,host:port...]. {_ACCEPTED_FORMS}")
    for hostport in hosts.split(","):
        m = _HOSTPORT.match(hostport.strip())
        if m is None or not 1 <= int(m.group(2)) <= 65535:
            raise ValueError(
                f"Kafka URL {shown!r}: {hostport!r} is not host:port (a port from 1 to 65535 is required). "
                f"{_ACCEPTED_FORMS}"
            )
    bootstrap = ",".join(h.strip() for h in hosts.split(","))
    return bootstrap, _query(query, shown), hosts, user, password


def _display_query(params: Mapping[str, str]) -> str:
    shown = {k: (REDACTED if _is_secret(k) else v) for k, v in params.items()}
    return ("?" + urllib.parse.urlencode(shown, safe="*/:,")) if shown else ""


def open_kafka(url: str | None = None) -> KafkaCluster:
    """Open the Kafka cluster ``url`` names (None or "" means embedded://). Use it in a ``with`` block.

    Raises ValueError for a malformed URL and KafkaUnavailable if the cluster cannot be started
    or reached; neither message contains credentials.
    """
    text = (url or "embedded://").strip()
    shown = _scrub(redact(text), _query_secrets(text))
    scheme = text.split("://", 1)[0].lower() if "://" in text else text.lower().rstrip(":")
    if scheme == "embedded":
        params = _query(urllib.parse.urlsplit(text).query, shown) if "://" in text else {}
        brokers = _int_param(params, "brokers", 3, 1, 64, shown)
        partitions = _int_param(params, "partitions", 3, 1, 10000, shown)
        timeout = _float_param(params, "timeout", 10.0, shown)
        _reject_extra(params, "brokers, partitions and timeout", shown)
        return EmbeddedKafka(brokers, partitions, timeout=timeout)
    if scheme == "container":
        params = _query(urllib.parse.urlsplit(text).query, shown) if "://" in text else {}
        image = params.pop("image", DEFAULT_CONTAINER_IMAGE)
        partitions = _int_param(params, "partitions", 3, 1, 10000, shown)
        startup = _float_param(params, "timeout", 180.0, shown)
        _reject_extra(params, "image, partitions and timeout", shown)
        return _open_container(image, partitions, startup)
    if scheme == "kafka" and "://" in text:
        bootstrap, params, hosts, user, password = _split_external(text, shown)
        partitions = _int_param(params, "partitions", 3, 1, 10000, shown)
        timeout = _float_param(params, "timeout", 10.0, shown)
        if "bootstrap.servers" in params:
            raise ValueError(f"Kafka URL {shown!r} sets bootstrap.servers; the brokers go in host:port instead.")
        config = dict(params)
        if user is not None:
            config.setdefault("sasl.username", user)
            if password is not None:
                config.setdefault("sasl.password", password)
            config.setdefault("security.protocol", "SASL_SSL")
            config.setdefault("sasl.mechanism", "PLAIN")
        display = f"kafka://{REDACTED + '@' if user is not None else ''}{hosts}{_display_query(params)}"
        cluster = ExternalKafka(url=display, bootstrap=bootstrap, config=config, default_partitions=partitions,
                                timeout=timeout)
        try:
            cluster.probe()
        except KafkaException as e:  # invalid client configuration, raised when the client is built
            cluster.close()
            err = _error_of(e)
            why = cluster.scrub(err.str() if err is not None else str(e))
            raise ValueError(
                f"Kafka URL {cluster.url!r}: librdkafka refused the client configuration ({why}). Query "
                "parameters are librdkafka properties (see librdkafka's CONFIGURATION.md), plus partitions "
                "and timeout."
            ) from None
        except BaseException:
            cluster.close()
            raise
        return cluster
    raise ValueError(f"Unknown Kafka URL {shown!r}. {_ACCEPTED_FORMS}")


def _query_secrets(text: str) -> tuple[str, ...]:
    # Secrets that may sit in the query of a URL that fails to parse; scrubbed from messages.
    query = text.split("?", 1)[1] if "?" in text else ""
    try:
        pairs = urllib.parse.parse_qsl(query.split("#", 1)[0], keep_blank_values=True)
    except ValueError:
        return ()
    return tuple(v for k, v in pairs if _is_secret(k) and v)


def _open_container(image: str, partitions: int, startup: float) -> ContainerKafka:
    url = f"container://?image={image}&partitions={partitions}"
    try:
        # Through importlib: the docker package ships no type information.
        docker_exception: type[Exception] = importlib.import_module("docker.errors").DockerException
        from .containers import kafka_container_class

        KafkaContainer = kafka_container_class()  # noqa: N806 - a class
    except ImportError as e:
        raise KafkaUnavailable(
            f"container:// needs the testcontainers and docker packages ({e}). Install them "
            "(pip install 'testcontainers>=4.8'), or use embedded:// or kafka://host:port."
        ) from None
    try:
        container = KafkaContainer(image).with_kraft()
    except docker_exception as e:
        raise KafkaUnavailable(
            f"container:// needs a Docker engine; none answers here ({type(e).__name__}: {redact_text(str(e))}). "
            "Start Docker (or set DOCKER_HOST), or use embedded:// or kafka://host:port."
        ) from None
    except ValueError as e:  # with_kraft() on an image older than 7.0.0
        raise ValueError(f"container:// image {image!r} cannot run Kafka in KRaft mode: {e}") from None
    try:
        container.start(timeout=int(startup))
    except Exception as e:  # noqa: BLE001 - docker, timeout or image errors all mean: no cluster
        try:
            container.stop()
        except Exception:  # noqa: BLE001 - best effort cleanup of a half-started container
            pass
        raise KafkaUnavailable(
            f"container:// could not start {image} within {startup:g} s ({type(e).__name__}: "
            f"{redact_text(str(e))[:300]}). Check `docker pull {image}` works here, or use embedded://."
        ) from None
    try:
        cluster = ContainerKafka(container, url, partitions, timeout=30.0)
        cluster.probe()
    except BaseException:
        container.stop()
        raise
    return cluster


# --------------------------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------------------------


def serve_kafka(brokers: int, partitions: int, ready: Callable[[str], None] | None = None) -> None:
    """Run an embedded cluster until KeyboardInterrupt or SIGTERM, then close it cleanly.

    ``ready`` is called with the bootstrap string once clients can connect. SIGTERM is only
    handled when called from the main thread (Python's signal rule); the previous handler is
    restored on return.
    """
    from .serving import serve_until_stopped

    serve_until_stopped(lambda: EmbeddedKafka(brokers, partitions), lambda cluster: cluster.bootstrap, ready)
