"""Pickling hazards (DTL2xx): one rule a file, found by the registry."""
