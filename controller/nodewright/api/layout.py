"""Finding the layout mistakes of a broken YAML file, all of them, not just the first.

A YAML parser stops at its first error and what it says after that is noise.
When a file does not parse, this pass looks at the text line by line for the
usual hand-editing mistakes: tabs used for indentation, a key written twice on
one line (`key: key: value`), and lines whose indentation does not line up with
any enclosing block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INDENT_STEP = 2
_DOUBLED_KEY = re.compile(r"^\s*(?:-\s+)?([^\s:#'\"]+):\s+\1:(\s|$)")
_BLOCK_SCALAR = re.compile(r":\s*[|>][-+0-9]*\s*(#.*)?$")


@dataclass(frozen=True)
class LayoutMistake:
    line: int
    column: int
    message: str


def find_layout_mistakes(text: str) -> list[LayoutMistake]:
    mistakes: list[LayoutMistake] = []
    levels: list[int] = [0]
    opens_block = False
    previous_indent = 0
    scalar_indent: int | None = None
    for number, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if raw.startswith(("---", "...")):
            levels, opens_block, scalar_indent = [0], False, None
            continue
        leading = raw[: len(raw) - len(raw.lstrip(" \t"))]
        if scalar_indent is not None:
            if "\t" not in leading and len(leading) > scalar_indent:
                continue
            scalar_indent = None
        if "\t" in leading:
            mistakes.append(LayoutMistake(
                number, leading.index("\t") + 1,
                "a tab character is used for indentation; YAML allows only spaces",
            ))
            # Assume the author meant the indentation the structure asks for.
            indent = previous_indent + INDENT_STEP if opens_block else previous_indent
        else:
            indent = len(leading)
        is_item = stripped.startswith("- ") or stripped == "-"
        if opens_block and (indent > levels[-1] or (is_item and indent == levels[-1])):
            levels.append(indent)
        elif indent > levels[-1] and "\t" not in leading:
            mistakes.append(LayoutMistake(
                number, indent + 1,
                f"indented {indent} spaces, deeper than the line before, which does not "
                "open a block",
            ))
            levels.append(indent)
        elif indent not in levels:
            if "\t" not in leading:
                expected = ", ".join(str(level) for level in levels if level < indent)
                mistakes.append(LayoutMistake(
                    number, indent + 1,
                    f"indented {indent} spaces, which lines up with no enclosing block "
                    f"(expected one of: {expected})",
                ))
            while levels and levels[-1] > indent:
                levels.pop()
            levels.append(indent)
        else:
            while levels[-1] > indent:
                levels.pop()
        match = _DOUBLED_KEY.match(raw)
        if match:
            mistakes.append(LayoutMistake(
                number, raw.index(match.group(1)) + 1,
                f"the key {match.group(1)!r} is written twice on one line",
            ))
        content_indent = indent
        if is_item:
            content_indent = indent + 2
            if len(levels) and levels[-1] != content_indent and stripped != "-":
                levels.append(content_indent)
        opens_block = stripped.endswith(":") or stripped == "-"
        previous_indent = content_indent if is_item and not opens_block else indent
        if is_item and opens_block:
            previous_indent = content_indent
        if _BLOCK_SCALAR.search(stripped):
            scalar_indent = indent
            opens_block = False
    return mistakes
