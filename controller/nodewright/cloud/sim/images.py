"""The AMIs a node class resolves to in the simulation, and their upgrades.

A node class with `id` terms runs the first id it names. One with an alias resolves, per
architecture, to the image set for that exact alias, else (for `@latest`) to the image set
for its family, else to a stable made-up id. Other terms resolve through the family the
same way. `set_image` is how a test or a scenario publishes a new AMI, which is what makes
running instances AMIDrift.
"""

from __future__ import annotations

from nodewright.api.ec2nodeclass import ALIAS_FAMILIES, EC2NodeClass
from nodewright.cloud.sim.identity import fake_image_id

ARCHITECTURES = ("amd64", "arm64")


class ImageCatalog:
    def __init__(self) -> None:
        self._published: dict[tuple[str, str], str] = {}

    def set_image(self, alias_or_family: str, arch: str, ami_id: str) -> None:
        """Publish `ami_id` as the current image of an alias (`al2023@latest`,
        `bottlerocket@v1.20.1`) or of a family (`AL2023`, `al2023`), for one architecture."""
        if arch not in ARCHITECTURES:
            raise ValueError(f"arch {arch!r}: expected one of {', '.join(ARCHITECTURES)}")
        if not ami_id.startswith("ami-"):
            raise ValueError(f"ami_id {ami_id!r}: expected an id such as ami-0123456789abcdef0")
        self._published[(_normal(alias_or_family), arch)] = ami_id

    def image_for(self, node_class: EC2NodeClass, arch: str) -> str:
        terms = node_class.spec.ami_selector_terms
        explicit = [term.id for term in terms if term.id]
        if explicit:
            return explicit[0]
        family = node_class.resolved_ami_family()
        alias = next((term.alias for term in terms if term.alias), None)
        if alias is not None:
            published = self._published.get((_normal(alias), arch))
            if published is not None:
                return published
            name, _, version = alias.partition("@")
            if version != "latest":
                return fake_image_id(f"{_normal(alias)}/{arch}")
            family = ALIAS_FAMILIES.get(name.lower(), family)
        return self._published.get((_normal(family), arch)) or fake_image_id(
            f"{_normal(family)}/{arch}"
        )


def _normal(alias_or_family: str) -> str:
    """`AL2023` and `al2023` name the same family; `al2023@latest` stays an alias."""
    return alias_or_family.lower()
