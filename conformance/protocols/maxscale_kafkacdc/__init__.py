"""MariaDB MaxScale KafkaCDC: MariaDB binlog row events as JSON (seed 004, spec/notes/maxscale.md)."""
