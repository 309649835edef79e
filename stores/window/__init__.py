"""``window``: Kafka's ``[Timestamped]WindowStore[WithHeaders]``."""
