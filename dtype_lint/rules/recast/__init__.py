"""Parameter-tree recasting (DTL3xx): one rule a file, found by the registry."""
