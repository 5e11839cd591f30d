"""MIME multi-part user data, read and written as Karpenter v1.14.1 does.

Karpenter reads a user's archive with Go's net/mail (the top-level headers), mime
(ParseMediaType) and mime/multipart (the parts), and writes its own with multipart.Writer
after a fixed `MIME-Version` / `Content-Type` head, removing every carriage return at the
end. Both are reproduced here byte for byte (pkg/providers/amifamily/bootstrap/mime and
eksbootstrap.go): a part's body is what lies between its header block and the line break
before the next boundary line; its headers are written sorted by name, one line per value;
the closing boundary is preceded by a line break and followed by one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from nodewright.api import golang
from nodewright.cloud.aws.userdata.bootstrap import UserDataError

BOUNDARY: Final = "//"
# Karpenter's ContentTypeShellScript: what a user's script that is not MIME, and our AL2
# bootstrap script, are sent as.
SHELL_SCRIPT: Final = 'text/x-shellscript; charset="us-ascii"'
NODE_CONFIG: Final = "application/node.eks.aws"
CONTENT_TYPE: Final = "Content-Type"
_TRANSFER_ENCODING: Final = "Content-Transfer-Encoding"
# RFC 7230 token characters: what a header name may hold (textproto's validHeaderFieldByte).
_TOKEN: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# mime's isTSpecial: characters a media type token cannot hold.
_TSPECIALS: Final = frozenset('()<>@,;:\\"/[]?=')
_HEX: Final = re.compile(r"[0-9A-Fa-f]{2}")


@dataclass(frozen=True)
class Part:
    """One part: its Content-Type as written (parameters too), its body, and, for a part
    read from the user's archive, every header it had (canonical names, in order)."""

    content_type: str
    body: str
    headers: tuple[tuple[str, str], ...] | None = None

    @property
    def media_type(self) -> str:
        """The content type without its parameters, lower case ("text/x-shellscript")."""
        return self.content_type.split(";", 1)[0].strip().lower()

    def header_lines(self) -> list[str]:
        """The header lines multipart.Writer writes: sorted by name, each value in order.
        Without `headers`, the Content-Type alone (Karpenter's mime.Entry)."""
        headers = self.headers if self.headers is not None else ((CONTENT_TYPE,
                                                                   self.content_type),)
        return [f"{name}: {value}" for name, value in sorted(headers, key=lambda h: h[0])]

    def content_type_only(self) -> Part:
        """The part as Karpenter's mime.NewArchive keeps it: Content-Type and body."""
        return Part(self.content_type, self.body)


def is_mime(text: str) -> bool:
    """Karpenter's test: the user data, less its leading and trailing white space, starts
    with `MIME-Version:` or `Content-Type:` (exactly so: a header written otherwise, or a
    script that prints one later, is not MIME)."""
    return golang.trim_space(text).startswith(("MIME-Version:", "Content-Type:"))


def split_parts(user_data: str | None) -> list[Part]:
    """The user's own parts as Karpenter's AL2 merge takes them (mimeify): each part of a
    MIME document, every header kept; any other text one shell-script part."""
    if not user_data:
        return []
    if not is_mime(user_data):
        return [Part(SHELL_SCRIPT, user_data, ((CONTENT_TYPE, SHELL_SCRIPT),))]
    return read_archive(user_data)


def render(parts: list[Part]) -> str:
    """The archive as Karpenter writes it: multipart.Writer's framing, no carriage returns."""
    out = ["MIME-Version: 1.0\n", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n']
    for number, part in enumerate(parts):
        out.append(f"\r\n--{BOUNDARY}\r\n" if number else f"--{BOUNDARY}\r\n")
        out.extend(f"{line}\r\n" for line in part.header_lines())
        out.append("\r\n")
        out.append(part.body)
    out.append(f"\r\n--{BOUNDARY}--\r\n")
    return "".join(out).replace("\r", "")


# --- reading: Go's net/mail, net/textproto, mime and mime/multipart --------------------------


class _Reader:
    """A position in the text, read line by line as Go's bufio.Reader.ReadSlice('\\n')."""

    def __init__(self, text: str, position: int = 0) -> None:
        self.text = text
        self.position = position

    def at_end(self) -> bool:
        return self.position >= len(self.text)

    def read_slice(self) -> tuple[str, bool]:
        """The next line with its line break, and whether the input ended before one."""
        end = self.text.find("\n", self.position)
        if end < 0:
            line, self.position = self.text[self.position:], len(self.text)
            return line, True
        line, self.position = self.text[self.position:end + 1], end + 1
        return line, False

    def read_line(self) -> str | None:
        """bufio.Reader.ReadLine: the next line without "\\n" or "\\r\\n"; None at the end."""
        if self.at_end():
            return None
        line, _ = self.read_slice()
        if line.endswith("\r\n"):
            return line[:-2]
        return line.removesuffix("\n")

    def peek(self) -> str:
        return self.text[self.position:self.position + 1]


def _trim(value: str) -> str:
    return value.strip(" \t\r\n")


def _canonical_key(key: str) -> tuple[str, bool]:
    """textproto's canonicalMIMEHeaderKey: (the key, whether it is a valid header name)."""
    if any(char not in _TOKEN and char != " " for char in key):
        return key, False
    if " " in key:  # accepted, but not canonicalised (Go issue 34540)
        return key, True
    out, upper = [], True
    for char in key:
        out.append(char.upper() if upper else char.lower())
        upper = char == "-"
    return "".join(out), True


def _read_headers(reader: _Reader, where: str) -> tuple[list[tuple[str, str]], bool]:
    """textproto.Reader.ReadMIMEHeader: the headers up to the blank line, and whether the
    input ended first (Go's io.EOF). Raises UserDataError when a line is malformed."""
    headers: list[tuple[str, str]] = []
    if reader.peek() in (" ", "\t"):
        raise UserDataError(f"{where}: malformed MIME header initial line: "
                            f"{reader.read_line()!r}")
    while True:
        line = reader.read_line()
        if line is None:
            return headers, True
        if not line:
            return headers, False
        if ":" not in line:
            raise UserDataError(f"{where}: malformed MIME header: missing colon: {line!r}")
        joined = _trim(line)
        while reader.peek() in (" ", "\t"):  # continuation lines
            while reader.peek() in (" ", "\t"):
                reader.position += 1
            continued = reader.read_line()
            joined += " " + _trim(continued or "")
        name, value = joined.split(":", 1)
        key, valid = _canonical_key(name)
        if not valid or any((char < " " and char != "\t") or char == "\x7f" for char in value):
            raise UserDataError(f"{where}: malformed MIME header line: {joined!r}")
        if key:
            headers.append((key, value.lstrip(" \t")))


def _get(headers: list[tuple[str, str]], key: str) -> str:
    return next((value for name, value in headers if name == key), "")


def _consume_token(text: str) -> tuple[str, str]:
    end = 0
    while end < len(text) and " " < text[end] < "\x7f" and text[end] not in _TSPECIALS:
        end += 1
    return text[:end], text[end:]


def _consume_value(text: str) -> tuple[str, str]:
    if not text.startswith('"'):
        return _consume_token(text)
    value: list[str] = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(value), text[index + 1:]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in _TSPECIALS:
            value.append(text[index + 1])
            index += 2
            continue
        if char in "\r\n":
            return "", text
        value.append(char)
        index += 1
    return "", text


def _consume_media_param(text: str) -> tuple[str, str, str]:
    """mime's consumeMediaParam: (name, value, the rest), or ("", "", text) when none."""
    rest = text.lstrip(golang.GO_SPACE)
    if not rest.startswith(";"):
        return "", "", text
    name, rest = _consume_token(rest[1:].lstrip(golang.GO_SPACE))
    rest = rest.lstrip(golang.GO_SPACE)
    if not name or not rest.startswith("="):
        return "", "", text
    rest = rest[1:].lstrip(golang.GO_SPACE)
    value, after = _consume_value(rest)
    if not value and after == rest:
        return "", "", text
    return name.lower(), value, after


def parse_media_type(value: str, where: str) -> tuple[str, dict[str, str]]:
    """mime.ParseMediaType: the lower-case media type and its parameters."""
    base = value.split(";", 1)[0]
    media_type = golang.trim_space(base.lower())
    main, rest = _consume_token(media_type)
    if not main:
        raise UserDataError(f"{where}: mime: no media type")
    if rest:
        sub, rest = _consume_token(rest[1:]) if rest.startswith("/") else ("", rest)
        if not sub or rest:
            raise UserDataError(f"{where}: mime: invalid media type {media_type!r}")
    params: dict[str, str] = {}
    rest = value[len(base):]
    while rest := rest.lstrip(golang.GO_SPACE):
        name, parameter, remainder = _consume_media_param(rest)
        if not name:
            if golang.trim_space(rest) == ";":  # a trailing semicolon is allowed
                break
            raise UserDataError(f"{where}: mime: invalid media parameter")
        if params.get(name, parameter) != parameter:
            raise UserDataError(f"{where}: mime: duplicate parameter name")
        params[name] = parameter
        rest = remainder
    return media_type, params


def _decode_quoted_printable(body: str, where: str) -> str:
    """mime/quotedprintable.Reader: soft line breaks `=\\n` (or `=\\r\\n`) joined, `=XX`
    decoded, a `=` not followed by two hex digits (and not ending its line) kept, trailing
    white space of each line dropped."""
    out = bytearray()
    lines = [line + "\n" for line in body.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    for number, whole in enumerate(lines):
        line = whole.rstrip(" \t\r\n")
        stripped = whole[len(line):]
        if line.endswith("="):
            line = line[:-1]
            last = number == len(lines) - 1
            if not (stripped.startswith(("\n", "\r\n")) or (not stripped and line and last)):
                raise UserDataError(f"{where}: quotedprintable: invalid bytes after =: "
                                    f"{stripped!r}")
        elif whole.endswith("\r\n"):
            line += "\r\n"
        elif whole.endswith("\n"):
            line += "\n"
        index = 0
        while index < len(line):
            char = line[index]
            if char == "=":
                if _HEX.fullmatch(line[index + 1:index + 3]):
                    out.append(int(line[index + 1:index + 3], 16))
                    index += 3
                    continue
                if index + 1 >= len(line) or line[index + 1] in "\r\n":
                    raise UserDataError(f"{where}: quotedprintable: invalid hex byte")
            elif char not in "\t\r\n" and ord(char) < 0x80 and not " " <= char <= "~":
                raise UserDataError(f"{where}: quotedprintable: invalid unescaped byte "
                                    f"0x{ord(char):02x} in body")
            out.extend(char.encode())
            index += 1
    return out.decode(errors="replace")


def _after_boundary(text: str, at: int) -> int:
    """multipart's matchAfterPrefix at the end of the input: +1 when what follows a boundary
    makes it one (white space, a line break, `--`, or the end), -1 when not."""
    if at >= len(text):
        return 1
    if text[at] in " \t\r\n":
        return 1
    if text[at] == "-" and at + 1 < len(text) and text[at + 1] == "-":
        return 1
    return -1


class _Multipart:
    """multipart.Reader over the body of the user's message."""

    def __init__(self, text: str, position: int, boundary: str, where: str) -> None:
        self.reader = _Reader(text, position)
        self.where = where
        self.nl = "\r\n"
        self.dash_boundary = f"--{boundary}"
        self.parts_read = 0

    def _is_delimiter(self, line: str) -> bool:
        if not line.startswith(self.dash_boundary):
            return False
        rest = line[len(self.dash_boundary):].lstrip(" \t")
        if self.parts_read == 0 and rest == "\n":  # lines end in \n alone: read them so
            self.nl = "\n"
        return rest == self.nl

    def _is_final(self, line: str) -> bool:
        if not line.startswith(self.dash_boundary + "--"):
            return False
        rest = line[len(self.dash_boundary) + 2:].lstrip(" \t")
        return rest in ("", self.nl)

    def _body(self) -> str:
        """The part's body: up to the line break before the next boundary."""
        text, start = self.reader.text, self.reader.position
        search = start
        if text.startswith(self.dash_boundary, start):  # an empty body: the boundary next
            if _after_boundary(text, start + len(self.dash_boundary)) > 0:
                return ""
            search = start + len(self.dash_boundary)
        delimiter = self.nl + self.dash_boundary
        while (found := text.find(delimiter, search)) >= 0:
            if _after_boundary(text, found + len(delimiter)) > 0:
                self.reader.position = found
                return text[start:found]
            search = found + len(delimiter)
        raise UserDataError(f"{self.where}: multipart: unexpected EOF (a part without its "
                            "closing boundary)")

    def parts(self) -> list[Part]:
        found: list[Part] = []
        if self.dash_boundary == "--":
            raise UserDataError(f"{self.where}: multipart: boundary is empty")
        expect_new_part = False
        while True:
            line, ended = self.reader.read_slice()
            if ended:  # io.EOF, final boundary or not: the archive ends here
                return found
            if self._is_delimiter(line):
                self.parts_read += 1
                expect_new_part = False
                headers, ended = _read_headers(self.reader, self.where)
                if ended:  # io.EOF before the part's blank line: the archive ends here
                    return found
                found.append(self._part(headers))
                continue
            if self._is_final(line):
                return found
            if expect_new_part:
                raise UserDataError(f"{self.where}: multipart: expecting a new Part; got "
                                    f"line {line!r}")
            if self.parts_read == 0:
                continue  # the preamble
            if line == self.nl:
                expect_new_part = True
                continue
            raise UserDataError(f"{self.where}: multipart: unexpected line in Next(): "
                                f"{line!r}")

    def _part(self, headers: list[tuple[str, str]]) -> Part:
        body = self._body()
        if _get(headers, _TRANSFER_ENCODING).lower() == "quoted-printable":
            headers = [(name, value) for name, value in headers if name != _TRANSFER_ENCODING]
            body = _decode_quoted_printable(body, self.where)
        return Part(_get(headers, CONTENT_TYPE), body, tuple(headers))


def read_archive(text: str, where: str = "spec.userData") -> list[Part]:
    """Karpenter's mime.NewArchive (and eksbootstrap's copyCustomUserDataParts): the
    message's headers, its multipart Content-Type, then each part with every header it
    has and its body as written (a quoted-printable one decoded, as Go's reader does)."""
    if not text:
        return []
    reader = _Reader(text)
    headers, ended = _read_headers(reader, where)
    if ended and not headers:
        raise UserDataError(f"{where}: unreadable user data: EOF")
    media_type, params = parse_media_type(_get(headers, CONTENT_TYPE), where)
    if not media_type.startswith("multipart/"):
        raise UserDataError(f"{where}: a MIME document must be multipart (its Content-Type "
                            f"is {media_type})")
    return _Multipart(text, reader.position, params.get("boundary", ""), where).parts()
