"""``keyvalue``: Kafka's ``KeyValueStore``."""
