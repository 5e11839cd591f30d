"""Go's standard library, where Karpenter's user data and the messages of Kubernetes and
Karpenter depend on it: strconv.Quote (fmt's `%q`), the time package's own quoting,
strings.TrimSpace, net.ParseIP(...).To4(). time.Duration's String is in
nodewright.api.formats."""

from __future__ import annotations

import ipaddress
from typing import Final

# unicode.IsSpace: Python's str.isspace() less the four separators U+001C..U+001F.
GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_SHORT_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                         "\t": "\\t", "\v": "\\v"}


def trim_space(text: str) -> str:
    """strings.TrimSpace."""
    return text.strip(GO_SPACE)


def quote(text: str) -> str:
    """strconv.Quote (fmt's %q of a string): double quotes, `"` and `\\` escaped, printable
    characters kept as they are, others escaped as Go escapes them."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif char < " " or char == "\x7f":
            out.append(f"\\x{ord(char):02x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:  # not a rune Go can hold: U+FFFD
            out.append("\\ufffd")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def time_quote(text: str) -> str:
    """The time package's quote (time/format.go), which ParseDuration's errors use: only `"`
    and `\\` escaped; every byte of a non-ASCII or control character's UTF-8 written as
    `\\xNN`, where strconv.Quote would keep a printable one."""
    out = ['"']
    for char in text:
        if char < " " or ord(char) >= 0x80:
            encoded = char.encode("utf-8", errors="replace")
            out.extend(f"\\x{byte:02x}" for byte in encoded)
        else:
            if char in '"\\':
                out.append("\\")
            out.append(char)
    out.append('"')
    return "".join(out)


def is_ipv4(address: str) -> bool:
    """net.ParseIP(address).To4() != nil: an IPv4 address, or an IPv4-mapped IPv6 one (Go's
    ParseIP knows no zones, so an address with one is no address at all)."""
    if "%" in address:
        return False
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return parsed.version == 4 or (
        isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None)
