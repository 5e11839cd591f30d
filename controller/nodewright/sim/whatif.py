"""The what-if variant of a scenario: the same steps, with some manifests replaced."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from nodewright.api.manifests import Document, load_documents
from nodewright.api.problems import Problem
from nodewright.sim import manifests
from nodewright.sim.scenario import Scenario


def load_replacements(paths: Sequence[str]) -> tuple[list[Document], list[Problem]]:
    """The `--compare` manifests, checked as scenario manifests are."""
    try:
        documents, problems = load_documents(paths)
    except ValueError as error:  # YAML refusing an impossible timestamp
        return [], [Problem(", ".join(paths), 0, "", "", "", f"cannot read: {error}")]
    problems.extend(manifests.check_all(documents))
    problems.extend(manifests.duplicates(documents))
    if not documents and not problems:
        problems.append(Problem(", ".join(paths), 0, "", "", "", "no manifests found"))
    return list(manifests.simulated(documents)), problems


def with_replacements(
    scenario: Scenario, replacements: Sequence[Document]
) -> tuple[Scenario, list[str]]:
    """The scenario with each replacement taking the place of the object of the same kind,
    namespace and name in its manifests (objects not found are added, with a note)."""
    by_ref = {manifests.object_ref(document): document for document in replacements}
    used: set[object] = set()
    documents: list[Document] = []
    for document in scenario.manifests:
        ref = manifests.object_ref(document)
        if ref in by_ref:
            documents.append(by_ref[ref])
            used.add(ref)
        else:
            documents.append(document)
    notes = []
    for ref, document in by_ref.items():
        if ref not in used:
            documents.append(document)
            notes.append(f"{ref} is not in the scenario's manifests; the what-if adds it")
    return dataclasses.replace(scenario, manifests=tuple(documents)), notes


def reference_problems(scenario: Scenario, replacements: Sequence[Document]) -> list[Problem]:
    """Replacement NodePools must name an EC2NodeClass of the varied scenario (its own or
    one the replacements add)."""
    classes = {d.name for d in (*scenario.manifests, *replacements)
               if d.kind == "EC2NodeClass"}
    return manifests.node_class_references(list(replacements), classes)
