"""schemathesis against the live server's OpenAPI document: generated requests to every
operation (valid and not), each response checked against what the document promises,
and never a 500.

Each operation's cases, valid (positive) and not (negative), are drawn by Hypothesis from
schemathesis' strategies for it (its pytest plugin does not run under this pytest); every
check schemathesis has runs on every response.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.config import SchemathesisConfig

from tests.helpers.api_server import LiveServer, live_server

__all__ = ["live_server"]

EXAMPLES_PER_OPERATION = 40


# schemathesis' statuses of a rejected request, and 413: a body past MAX_REQUEST_BYTES is
# refused before it is read (the generator makes bodies of many MB).
REJECTED = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]


def _operations(live_server: LiveServer) -> list[schemathesis.APIOperation]:
    config = SchemathesisConfig.from_dict(
        {
            "checks": {"negative_data_rejection": {"expected-statuses": REJECTED}},
            # Text holding U+0000 is refused whole (api/text_guard.py), as the document
            # cannot say of every string; test_api_v1 tests that refusal itself.
            "generation": {"allow-x00": False},
        }
    )
    schema = schemathesis.openapi.from_url(f"{live_server.url}openapi.json", config=config)
    return [result.ok() for result in schema.get_all_operations()]


def _check(
    operation: schemathesis.APIOperation, mode: schemathesis.GenerationMode, ran: dict[str, int]
) -> None:
    label = f"{operation.method.upper()} {operation.path} ({mode.value})"
    ran[label] = 0

    @given(case=operation.as_strategy(mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: schemathesis.Case) -> None:
        ran[label] += 1
        case.call_and_validate(timeout=30)

    try:
        check()
    except Unsatisfiable:
        # An operation without parameters has no invalid request to make.
        assert mode is schemathesis.GenerationMode.NEGATIVE and ran[label] == 0, label


def test_every_operation_keeps_its_documented_promises(
    live_server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    operations = _operations(live_server)
    assert len(operations) >= 14
    ran: dict[str, int] = {}
    for operation in operations:
        for mode in schemathesis.GenerationMode:
            _check(operation, mode, ran)
    with capsys.disabled():
        print(f"\nschemathesis: {sum(ran.values())} cases over {len(ran)} operations")
    assert all(count > 0 for label, count in ran.items() if "positive" in label), ran
