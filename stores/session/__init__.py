"""``session``: Kafka's ``SessionStore[WithHeaders]``."""
