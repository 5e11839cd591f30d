"""HTTP/1.1 on a socket, as the fault proxy speaks it: a request read (Content-Length or
chunked body), sent on over an http.client connection, and an answer written back: the
server's streamed as it comes (chunked when it has no length), or one of the proxy's own."""

from __future__ import annotations

import http.client
import socket
from typing import BinaryIO

# Headers that belong to one hop (RFC 9110 7.6.1), and the framing the proxy sets itself.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                        "proxy-authorization", "te", "trailer", "transfer-encoding",
                        "upgrade", "content-length"})
CHUNK = 65536

Request = tuple[str, str, list[tuple[str, str]], bytes]



def read_request(reader: BinaryIO) -> Request | None:
    """(method, target, headers, body) of the next request; None when the client closed."""
    line = reader.readline(65537)
    while line in (b"\r\n", b"\n"):  # tolerated between requests (RFC 9112 2.2)
        line = reader.readline(65537)
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        raise ValueError(f"not an HTTP request line: {line[:80]!r}")
    method, target, _ = parts
    message = http.client.parse_headers(reader)
    headers = list(message.items())
    length = message.get("Content-Length")
    if "chunked" in (message.get("Transfer-Encoding") or "").lower():
        body = _read_chunked(reader)
    else:
        body = reader.read(int(length)) if length else b""
    return method.upper(), target, headers, body


def _read_chunked(reader: BinaryIO) -> bytes:
    body = b""
    while True:
        size = int(reader.readline(1024).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while reader.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return body
        body += reader.read(size)
        reader.readline(8)


def forward(upstream: http.client.HTTPConnection, method: str, target: str,
             headers: list[tuple[str, str]], body: bytes) -> http.client.HTTPResponse:
    upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    host_sent = False
    for key, value in headers:
        if key.lower() in HOP_BY_HOP:
            continue
        if key.lower() == "host":
            host_sent = True
        upstream.putheader(key, value)
    if not host_sent:
        upstream.putheader("Host", f"{upstream.host}:{upstream.port}")
    if body or method in ("POST", "PUT", "PATCH"):
        upstream.putheader("Content-Length", str(len(body)))
    upstream.endheaders(body or None)
    return upstream.getresponse()


def answer(client: socket.socket, status: int, body: bytes, content_type: str,
            retry_after: float | None) -> None:
    reason = http.client.responses.get(status, "Fault")
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}"]
    if retry_after is not None:
        head.append(f"Retry-After: {retry_after:g}")
    client.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)


def _head(lines: list[str]) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def relay_response(client: socket.socket, response: http.client.HTTPResponse, *,
                    head_only: bool) -> None:
    head = [f"HTTP/1.1 {response.status} {response.reason}"]
    head += [f"{k}: {v}" for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
    no_body = head_only or response.status in (204, 304) or 100 <= response.status < 200
    if no_body:
        client.sendall(_head([*head, "Content-Length: 0"]))
        response.read()
        return
    if response.length is not None:
        client.sendall(_head([*head, f"Content-Length: {response.length}"]))
        while data := response.read(CHUNK):
            client.sendall(data)
        return
    client.sendall(_head([*head, "Transfer-Encoding: chunked"]))
    while data := response.read1(CHUNK):
        client.sendall(b"%x\r\n%s\r\n" % (len(data), data))
    client.sendall(b"0\r\n\r\n")
