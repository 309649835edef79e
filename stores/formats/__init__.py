"""Byte layouts more than one kind shares: a value and its timestamp (KIP-258), and a value
with its record headers (KIP-1271)."""
