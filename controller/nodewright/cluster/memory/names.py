"""Deterministic names and uids: generateName suffixes and object uids from a seeded
random source, so the same run always gives the same names."""

from __future__ import annotations

import random
import uuid

# Kubernetes' suffix alphabet: lower-case letters and digits without vowels and the
# characters easily confused with them (0, 1, 3), so no words appear by accident.
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX_LENGTH = 5


class NameSource:
    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)

    def suffix(self, length: int = SUFFIX_LENGTH) -> str:
        return "".join(self._random.choice(SUFFIX_ALPHABET) for _ in range(length))

    def uid(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))
