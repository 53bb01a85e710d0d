"""TiCDC Avro: Confluent wire format + Schema Registry (seeds 000/001/003, notes §1)."""
