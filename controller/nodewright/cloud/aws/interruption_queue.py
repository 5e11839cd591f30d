"""The interruption queue consumer: long-poll SQS, parse, hand events on, then delete.

A message is deleted only after its handler returned, so a crash mid-handling redelivers it
after the visibility timeout. Malformed and ignorable messages are logged and deleted: they
can never succeed, and leaving them would block nothing but waste every poll."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.interruption_events import (
    IgnoredMessage,
    InterruptionEvent,
    MalformedMessage,
    parse_message,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

LONG_POLL_SECONDS: Final = 20
BATCH_SIZE: Final = 10

log = logging.getLogger(__name__)

EventHandler = Callable[[Sequence[InterruptionEvent]], None]


@dataclass(frozen=True)
class PollResult:
    received: int
    handled_events: int
    malformed: int
    ignored: int
    deleted: int
    failed: int  # handler raised; message left on the queue for redelivery


@dataclass
class InterruptionQueue:
    sqs: SQSClient
    queue_url: str
    wait_seconds: int = LONG_POLL_SECONDS

    @classmethod
    def by_name(cls, sqs: SQSClient, queue_name: str) -> InterruptionQueue:
        with aws_call("sqs:GetQueueUrl", f"queue {queue_name}"):
            url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        return cls(sqs, url)

    def poll_once(self, handle: EventHandler) -> PollResult:
        """Receive up to one batch, hand each message's events to `handle`, delete what is
        done. A handler failure for one message does not affect the others."""
        with aws_call("sqs:ReceiveMessage", f"queue {self.queue_url}"):
            response = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=BATCH_SIZE,
                WaitTimeSeconds=self.wait_seconds,
            )
        messages = response.get("Messages", [])
        handled = malformed = ignored = deleted = failed = 0
        for message in messages:
            parsed = parse_message(message.get("Body", ""))
            if isinstance(parsed, MalformedMessage):
                malformed += 1
                log.warning(
                    "deleting malformed interruption message %s: %s",
                    message.get("MessageId"),
                    parsed.reason,
                )
            elif isinstance(parsed, IgnoredMessage):
                ignored += 1
                log.debug("ignoring interruption message: %s", parsed.reason)
            else:
                try:
                    handle(parsed)
                except Exception:
                    failed += 1
                    log.exception(
                        "interruption handler failed for message %s; it will be redelivered",
                        message.get("MessageId"),
                    )
                    continue
                handled += len(parsed)
            self._delete(message["ReceiptHandle"])
            deleted += 1
        return PollResult(len(messages), handled, malformed, ignored, deleted, failed)

    def _delete(self, receipt_handle: str) -> None:
        with aws_call("sqs:DeleteMessage", f"queue {self.queue_url}"):
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle)
