"""YAML as sigs.k8s.io/yaml.Marshal writes it (Karpenter's NodeConfig): the JSON of a value
read back by go-yaml v2 and written again. Mappings are written in go-yaml's key order (its
"natural" sort: runs of digits compared as numbers, non-letters before letters); a string
that would read back as something else (a number, a boolean, null, a timestamp, a base-60
float) is double-quoted, a string with a line break is a literal block, any other string
plain where YAML allows it and single-quoted where not. The emitter is PyYAML's, which
shares go-yaml's libyaml lineage (two-space indent, sequences not indented under their key,
80 columns)."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import yaml

_STR: Final = "tag:yaml.org,2002:str"
_OTHER: Final = "tag:yaml.org,2002:other"
# go-yaml v2's resolve table: plain words that are not strings.
_WORDS: Final = frozenset({
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
    "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
    "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<",
})
_YAML_FLOAT: Final = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_BASE60_FLOAT: Final = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_GO_DOT_FLOAT: Final = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")
_GO_INT: Final = re.compile(
    r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_TIMESTAMPS: Final = (
    re.compile(r"^\d{4}-\d{1,2}-\d{1,2}[Tt]\d{1,2}:\d{1,2}:\d{1,2}(\.\d+)?"
               r"(Z|[-+]\d{2}:\d{2})$"),
    re.compile(r"^\d{4}-\d{1,2}-\d{1,2} \d{1,2}:\d{1,2}:\d{1,2}(\.\d+)?$"),
    re.compile(r"^\d{4}-\d{1,2}-\d{1,2}$"),
)


def _is_go_timestamp(text: str) -> bool:
    """go-yaml's parseTimestamp: one of its four layouts, and a real date and time."""
    if not any(pattern.match(text) for pattern in _TIMESTAMPS):
        return False
    numbers = [int(n) for n in re.findall(r"\d+", text.split(".", 1)[0])][:6]
    year, month, day, hour, minute, second = numbers + [0] * (6 - len(numbers))
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _is_go_number(text: str) -> bool:
    """go-yaml's ParseInt(base 0) / ParseUint / float pattern / 0b forms, underscores
    removed first (overflowing hexadecimal aside, which go-yaml leaves a string)."""
    plain = text.replace("_", "")
    return bool(_GO_INT.match(plain) or _YAML_FLOAT.match(plain))


def reads_as_string(text: str) -> bool:
    """Whether go-yaml writes `text` plain: it would read it back as the same string
    (encode.go's stringv: resolve gives !!str and it is no base-60 float)."""
    if text in _WORDS:
        return False
    if _BASE60_FLOAT.match(text):
        return False
    first = text[0]
    if first == ".":
        return not _GO_DOT_FLOAT.match(text)
    if first in "+-0123456789":
        return not (_is_go_timestamp(text) or _is_go_number(text))
    return True


def _letter(char: str) -> bool:
    return char.isalpha()


def _digit(char: str) -> bool:
    return unicodedata.category(char) == "Nd"


def _key_less(a: str, b: str) -> bool:
    """go-yaml v2's keyList.Less for two string keys."""
    for i, (ca, cb) in enumerate(zip(a, b, strict=False)):
        if ca == cb:
            continue
        al, bl = _letter(ca), _letter(cb)
        if al and bl:
            return ca < cb
        if al or bl:
            return bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and _digit(a[j]):
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and _digit(a[ai]):
            an = an * 10 + ord(a[ai]) - 48
            ai += 1
        bi = i
        while bi < len(b) and _digit(b[bi]):
            bn = bn * 10 + ord(b[bi]) - 48
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _compare(a: str, b: str) -> int:
    return -1 if _key_less(a, b) else (1 if _key_less(b, a) else 0)


def sorted_keys(keys: Sequence[str]) -> list[str]:
    return sorted(keys, key=functools.cmp_to_key(_compare))


class _Dumper(yaml.SafeDumper):
    """PyYAML's emitter with go-yaml's idea of which plain scalars are strings."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # go-yaml writes every value where it is, no anchors

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return _STR if reads_as_string(value) else _OTHER
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        style: str | None = "|"
    elif not reads_as_string(value):
        style = '"'
    else:
        style = None
    return dumper.represent_scalar(_STR, value, style=style)


def _represent_bool(dumper: yaml.SafeDumper, value: bool) -> yaml.ScalarNode:
    return dumper.represent_scalar(_OTHER, "true" if value else "false")


def _represent_int(dumper: yaml.SafeDumper, value: int) -> yaml.ScalarNode:
    return dumper.represent_scalar(_OTHER, str(value))


def _represent_none(dumper: yaml.SafeDumper, _: None) -> yaml.ScalarNode:
    return dumper.represent_scalar(_OTHER, "null")


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(bool, _represent_bool)
_Dumper.add_representer(int, _represent_int)
_Dumper.add_representer(type(None), _represent_none)


def _ordered(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _ordered(value[key]) for key in sorted_keys(list(value))}
    if isinstance(value, list | tuple):
        return [_ordered(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("JSON has no NaN or infinity")
    return value


def dump(document: Mapping[str, Any]) -> str:
    """sigs.k8s.io/yaml.Marshal of a JSON-shaped document (str, int, bool, None, lists and
    string-keyed mappings)."""
    text: str = yaml.dump(_ordered(document), Dumper=_Dumper, sort_keys=False,
                          default_flow_style=False, allow_unicode=True, width=80)
    return text
