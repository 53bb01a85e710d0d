"""TiCDC Simple: JSON and Avro encodings, bootstraps, watermarks (seed 002, notes §2)."""
