"""Canned EC2 answers at the boto client seam: `fake_response` builds one, `FleetInjector`
(the `injector` fixture of conftest.py) hands them to the next CreateFleet calls instead of
moto."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.awsrequest import AWSResponse

if TYPE_CHECKING:
    from tests.aws.conftest import CallRecorder


def fake_response(status: int, parsed: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    return AWSResponse("https://ec2.amazonaws.com", status, {}, None), parsed  # type: ignore[arg-type]


class FleetInjector:
    """Answers the next CreateFleet calls with canned responses instead of moto. A callable
    answer is given the request's API parameters."""

    def __init__(self, recorder: CallRecorder) -> None:
        self.recorder = recorder
        self.pending: list[Any] = []

    def __call__(self, **_: Any) -> Any:
        if not self.pending:
            return None
        answer = self.pending.pop(0)
        if callable(answer):
            return answer(self.recorder.calls_of("ec2:CreateFleet")[-1])
        return answer
