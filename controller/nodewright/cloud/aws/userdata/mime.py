"""MIME multi-part user data, as cloud-init and nodeadm read it.

Written by hand (not with `email.mime`) so the output is byte-for-byte stable: the boundary
is fixed and there are no generated headers."""

from __future__ import annotations

import email
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from typing import Final

BOUNDARY: Final = "//"
SHELL_SCRIPT: Final = "text/x-shellscript"
NODE_CONFIG: Final = "application/node.eks.aws"


@dataclass(frozen=True)
class Part:
    content_type: str
    body: str


def is_mime(text: str) -> bool:
    head = text.lstrip()[:1024].lower()
    return head.startswith("mime-version:") or "content-type: multipart/" in head


def split_parts(user_data: str | None) -> list[Part]:
    """The user's own parts: each part of a MIME document, or the whole text as one part
    (a shell script when it starts with #!, a NodeConfig otherwise)."""
    if not user_data or not user_data.strip():
        return []
    if not is_mime(user_data):
        kind = SHELL_SCRIPT if user_data.lstrip().startswith("#!") else NODE_CONFIG
        return [Part(kind, user_data)]
    message = email.message_from_string(user_data, policy=policy.default)
    if not isinstance(message, EmailMessage) or not message.is_multipart():
        raise ValueError("spec.userData: a MIME document must be multipart/mixed")
    parts: list[Part] = []
    for item in message.iter_parts():
        if not isinstance(item, EmailMessage):
            continue
        content = item.get_content()
        body = content.decode() if isinstance(content, bytes) else str(content)
        parts.append(Part(item.get_content_type(), body))
    return parts


def render(parts: list[Part]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for part in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {part.content_type}", "", part.body.rstrip("\n")]
    lines += [f"--{BOUNDARY}--", ""]
    return "\n".join(lines)
