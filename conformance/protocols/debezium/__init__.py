"""Debezium (PostgreSQL connector, Kafka Connect JSON converter)."""
