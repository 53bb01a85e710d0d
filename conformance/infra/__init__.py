"""Infrastructure the suite runs against: Schema Registry (embedded, remote or dumped), URL hygiene."""
