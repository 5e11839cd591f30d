"""The Node controllers: termination (drain, terminate, release) and health (auto-repair)."""
