"""Hardcoded float32 (DTL1xx): one rule a file, found by the registry."""
