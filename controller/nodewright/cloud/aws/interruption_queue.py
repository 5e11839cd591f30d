"""The interruption queue consumer: long-poll SQS, parse, hand events on, then delete.

A message is deleted only after its handler returned, so a crash mid-handling redelivers it
after the visibility timeout. Malformed and ignorable messages are logged and deleted: they
can never succeed, and leaving them would block nothing but waste every poll.

Each message is handled and deleted on its own: a handler failure or a DeleteMessage error
for one message is logged and the rest of the batch goes on. A message whose delete failed
comes back after the visibility timeout and is handled again, so handlers must be idempotent
(cordoning and draining a node twice is harmless).

DeleteMessageBatch would save up to nine calls per batch, but it would delay every delete
until the whole batch is handled, and it is a separate API name that the action list
(`actions.py`) does not carry; one DeleteMessage per message is what we call."""

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
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster.fencing import FencedError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

LONG_POLL_SECONDS: Final = 20
BATCH_SIZE: Final = 10
# How long a received message stays hidden from the next receive (Karpenter's
# GetSQSMessages, pkg/providers/sqs/sqs.go): one whose handler failed comes back after
# 20 s, whatever the queue's own default (30 s unless set).
VISIBILITY_TIMEOUT_SECONDS: Final = 20

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
    delete_failed: int = 0  # done, but DeleteMessage failed; it will be redelivered


@dataclass
class InterruptionQueue:
    sqs: SQSClient
    queue_url: str
    wait_seconds: int = LONG_POLL_SECONDS
    visibility_timeout: int = VISIBILITY_TIMEOUT_SECONDS

    @classmethod
    def by_name(cls, sqs: SQSClient, queue_name: str) -> InterruptionQueue:
        with aws_call("sqs:GetQueueUrl", f"queue {queue_name}"):
            url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        return cls(sqs, url)

    def poll_once(self, handle: EventHandler) -> PollResult:
        """Receive up to one batch, hand each message's events to `handle`, delete what is
        done. A handler failure for one message does not affect the others."""
        with aws_call("sqs:ReceiveMessage", f"queue {self.queue_url}"):
            # As Karpenter asks: the same batch, wait and visibility timeout, and the sent
            # timestamp and every message attribute along (the events' own times are what
            # the queue-duration metric reads).
            response = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=BATCH_SIZE,
                VisibilityTimeout=self.visibility_timeout,
                WaitTimeSeconds=self.wait_seconds,
                AttributeNames=["SentTimestamp"],
                MessageAttributeNames=["All"],
            )
        messages = response.get("Messages", [])
        handled = malformed = ignored = deleted = failed = delete_failed = 0
        for message in messages:
            message_id = message.get("MessageId", "")
            parsed = parse_message(message.get("Body", ""))
            if isinstance(parsed, MalformedMessage):
                malformed += 1
                log.warning(
                    "deleting malformed interruption message %s: %s", message_id, parsed.reason
                )
            elif isinstance(parsed, IgnoredMessage):
                ignored += 1
                log.debug("ignoring interruption message %s: %s", message_id, parsed.reason)
            else:
                try:
                    handle(parsed)
                except FencedError as error:
                    # Not sure it still leads: left for the leader (the fence logged it).
                    failed += 1
                    log.debug("interruption message %s left for redelivery: %s", message_id,
                              error)
                    continue
                except Exception:
                    failed += 1
                    log.exception(
                        "interruption handler failed for message %s; it will be redelivered",
                        message_id,
                    )
                    continue
                handled += len(parsed)
            if self._delete(message_id, message.get("ReceiptHandle", "")):
                deleted += 1
            else:
                delete_failed += 1
        return PollResult(
            len(messages), handled, malformed, ignored, deleted, failed, delete_failed
        )

    def _delete(self, message_id: str, receipt_handle: str) -> bool:
        """Delete one message; False (logged) when SQS refused, so the batch goes on."""
        try:
            with aws_call("sqs:DeleteMessage", f"queue {self.queue_url}"):
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle)
        except CloudProviderError as error:
            log.warning(
                "could not delete interruption message %s; it will be redelivered and "
                "handled again: %s",
                message_id,
                error,
            )
            return False
        return True
