"""Deterministic names and uids: generateName suffixes and object uids from a seeded
random source, so the same run always gives the same names."""

from __future__ import annotations

import random
import uuid

from nodewright.cluster.names import generated_name


class NameSource:
    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)

    def name(self, prefix: str) -> str:
        """A name for `generateName: prefix`, drawn as the API server draws it."""
        return generated_name(prefix, self._random.choice)

    def uid(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))
