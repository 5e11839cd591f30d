"""MIME multi-part user data, as cloud-init and nodeadm read it.

Written by hand (not with `email.mime`) so the output is byte-for-byte stable: the boundary
is fixed and there are no generated headers. The bytes are those of Karpenter's archive
(pkg/providers/amifamily/bootstrap/mime, Go's multipart writer without its carriage
returns): each part's Content-Type as written, its body unchanged, the line break before a
boundary the boundary's own."""

from __future__ import annotations

import email
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from typing import Final

BOUNDARY: Final = "//"
# Karpenter's ContentTypeShellScript: what a user's script that is not MIME, and our AL2
# bootstrap script, are sent as.
SHELL_SCRIPT: Final = 'text/x-shellscript; charset="us-ascii"'
NODE_CONFIG: Final = "application/node.eks.aws"


@dataclass(frozen=True)
class Part:
    """One part: its Content-Type header as written (parameters too) and its body."""

    content_type: str
    body: str

    @property
    def media_type(self) -> str:
        """The content type without its parameters, lower case ("text/x-shellscript")."""
        return self.content_type.split(";", 1)[0].strip().lower()


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
        written = item.get("Content-Type")
        parts.append(Part(str(written) if written else item.get_content_type(), body))
    return parts


def render(parts: list[Part]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for part in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {part.content_type}", "", part.body]
    lines += [f"--{BOUNDARY}--", ""]
    return "\n".join(lines)
