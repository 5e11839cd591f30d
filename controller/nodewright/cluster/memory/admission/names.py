"""apimachinery's name and label syntax checks, with its messages (the `Is*` functions of
k8s.io/apimachinery/pkg/util/validation): each returns the problems, empty when valid."""

from __future__ import annotations

import re
from functools import lru_cache

DNS1123_SUBDOMAIN_MAX = 253
DNS1123_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_SUBDOMAIN = re.compile(_SUBDOMAIN_FMT)
_LABEL = re.compile(_LABEL_FMT)
_QUALIFIED = re.compile(_QUALIFIED_FMT)
_VALUE = re.compile(_VALUE_FMT)

_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric character")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character")
_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                  "end with an alphanumeric character")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_subdomain(value: str) -> list[str]:
    problems = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        problems.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN.fullmatch(value):
        problems.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return problems


def dns1123_label(value: str) -> list[str]:
    problems = []
    if len(value) > DNS1123_LABEL_MAX:
        problems.append(max_len_error(DNS1123_LABEL_MAX))
    if not _LABEL.fullmatch(value):
        problems.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return problems


def qualified_name(value: str) -> list[str]:
    """A label key, annotation key or finalizer: [DNS subdomain prefix '/'] name."""
    return list(_qualified_name(value))


def label_value(value: str) -> list[str]:
    return list(_label_value(value))


# Label keys and values repeat from object to object: each is checked once.
@lru_cache(maxsize=8192)
def _qualified_name(value: str) -> tuple[str, ...]:
    problems: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        shape = regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
        return (f"a qualified name {shape} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')",)
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend(f"prefix part {problem}" for problem in dns1123_subdomain(prefix))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        problems.append(f"name part {max_len_error(QUALIFIED_NAME_MAX)}")
    if not _QUALIFIED.fullmatch(name):
        problems.append("name part " + regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName",
                                                   "my.name", "123-abc"))
    return tuple(problems)


@lru_cache(maxsize=8192)
def _label_value(value: str) -> tuple[str, ...]:
    problems = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(max_len_error(LABEL_VALUE_MAX))
    if not _VALUE.fullmatch(value):
        problems.append(regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(problems)


def mask_trailing_dash(prefix: str) -> str:
    """What a generateName prefix is checked as: a trailing '-' stands for the suffix."""
    if len(prefix) > 1 and prefix.endswith("-"):
        return prefix[:-1] + "a"
    return prefix
