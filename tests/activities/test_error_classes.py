"""Which activity errors are permanent, wherever they were raised (contracts/failures.py).

Pure: no worker. The real worker's interceptor chain, helper processes and every activity's
bound are in tests/workflows/test_needs_operator.py and tests/workflows/test_non_retryable.py.
"""

from __future__ import annotations

import errno

import pytest
from temporalio.exceptions import ApplicationError

from activities.fail_hook import FAILURES, PERMANENT_KINDS, RETRYABLE_KINDS
from activities.offload import _call
from artifacts.errors import DatabaseUnavailable, InvalidArtifact
from contracts.errors import ProviderCallError
from contracts.failures import MAX_MESSAGE_CHARS, PERMANENT_ERRORS, classify, permanent_cause
from workflows.temporal_config import ACTIVITY_NON_RETRYABLE_ERROR_TYPES

#: the failure type each permanent kind of the test hook is classified as
EXPECTED_TYPE = {
    "ValidationError": "ValidationError", "InvalidArtifact": "InvalidArtifact",
    "IntegrityError": "IntegrityError", "ScopeDenied": "ScopeDenied",
    "PathRefused": "PathRefused", "PermissionError": "PermissionError",
    "IsADirectoryError": "IsADirectoryError", "NotADirectoryError": "NotADirectoryError",
    "ReadOnlyFileSystem": "OSError", "NoSpaceLeft": "OSError",
    "UnicodeEncodeError": "UnicodeEncodeError", "WrappedPermissionError": "PermissionError",
    "ProviderRejected": "ProviderCallError",
}


def _raised(make: type[BaseException] | BaseException, *, cause: BaseException | None = None,
            context: BaseException | None = None, suppress: bool = False) -> BaseException:
    """An exception as if raised: with ``raise ... from cause`` or inside ``except``."""
    exc = make() if isinstance(make, type) else make
    exc.__cause__ = cause
    exc.__context__ = context
    exc.__suppress_context__ = suppress or cause is not None
    return exc


def test_every_kind_of_the_hook_is_classified_as_expected() -> None:
    assert set(EXPECTED_TYPE) == set(PERMANENT_KINDS)
    for kind in PERMANENT_KINDS:
        failure = classify(FAILURES[kind]())
        if kind in ("ProviderRejected", "PathRefused"):
            # already a non-retryable ApplicationError: passed on untouched
            assert failure is None and permanent_cause(FAILURES[kind]()) is not None
            continue
        assert failure is not None, kind
        assert failure.non_retryable and failure.type == EXPECTED_TYPE[kind], (kind, failure)
    for kind in RETRYABLE_KINDS:
        assert classify(FAILURES[kind]()) is None, kind


def test_a_permanent_error_is_found_when_wrapped() -> None:
    denied = PermissionError(errno.EACCES, "Permission denied", "/out/a.md")
    explicit = _raised(RuntimeError("publish failed"), cause=denied)
    implicit = _raised(RuntimeError("publish failed"), context=denied)
    deep = _raised(ValueError("step failed"), cause=explicit)
    for exc in (explicit, implicit, deep):
        failure = classify(exc)
        assert failure is not None and failure.non_retryable
        assert failure.type == "PermissionError"
        assert "Permission denied" in failure.message and "failed" in failure.message
    # ``raise ... from None`` says the context is not the cause: not followed
    assert classify(_raised(RuntimeError("x"), context=denied, suppress=True)) is None
    group = ExceptionGroup("tool calls", [ConnectionError("reset"), denied])
    assert (failure := classify(group)) is not None and failure.type == "PermissionError"


def test_an_invalid_artifact_inside_pydantic_validation_is_permanent() -> None:
    exc = FAILURES["ValidationError"]()
    found = permanent_cause(exc)
    assert found is exc  # ValidationError is permanent itself ...
    failure = classify(exc)
    assert failure is not None and failure.type == "ValidationError"
    # ... and what it wraps is the store's refusal, named in the one-line message
    assert "path separator" in failure.message and "\n" not in failure.message
    assert isinstance(InvalidArtifact("x"), PERMANENT_ERRORS)


def test_oserrors_are_classified_by_errno() -> None:
    for number in (errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EISDIR, errno.ENOTDIR,
                   errno.EDQUOT, errno.ENAMETOOLONG):
        exc = OSError(number, "x", "/p")  # Python picks a subclass for some numbers
        failure = classify(exc)
        assert failure is not None and failure.non_retryable
        assert failure.type == type(exc).__name__
    for number in (errno.EIO, errno.EAGAIN, errno.ETIMEDOUT, errno.ECONNRESET):
        assert classify(OSError(number, "x")) is None, number
    assert classify(ConnectionResetError(errno.ECONNRESET, "reset")) is None
    assert classify(TimeoutError("slow")) is None


def test_the_store_the_engine_and_a_provider_keep_their_own_answers() -> None:
    assert classify(DatabaseUnavailable("down")) is None
    busy = _raised(ProviderCallError("HTTP 503", retryable=True),
                   context=UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad byte"))
    assert classify(busy) is None  # the provider said a retry may help
    rejected = ProviderCallError("HTTP 400", retryable=False)
    assert classify(rejected) is None and rejected.non_retryable  # already permanent


def test_messages_are_one_bounded_line_without_validation_inputs() -> None:
    failure = classify(PermissionError(errno.EACCES, "denied\n" + "x" * 5000, "/p"))
    assert failure is not None
    assert "\n" not in failure.message and len(failure.message) <= MAX_MESSAGE_CHARS
    from pydantic import BaseModel, ValidationError

    class Model(BaseModel):
        n: int

    with pytest.raises(ValidationError) as err:
        Model.model_validate({"n": "sk-secret-input-value"})
    failure = classify(err.value)
    assert failure is not None and "sk-secret-input-value" not in failure.message


def test_every_type_the_classifier_gives_is_on_the_workflows_list_or_an_errno() -> None:
    """A failure reaching the workflow without its flag (an older worker) is still matched."""
    for kind in PERMANENT_KINDS:
        failure = classify(FAILURES[kind]())
        if failure is not None:
            assert failure.type in (*ACTIVITY_NON_RETRYABLE_ERROR_TYPES, "OSError"), kind


def test_a_helper_process_classifies_before_the_chain_is_lost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``offload._call`` returns type, message and flag; the worker re-raises them."""
    import activities.offload as offload

    def body(_runtime: object, _inp: object) -> object:
        raise FAILURES["WrappedPermissionError"]()

    class Input:
        @staticmethod
        def model_validate_json(_payload: str) -> object:
            return None

    class Runner:
        @staticmethod
        def run(_coro: object) -> object:
            raise FAILURES["WrappedPermissionError"]()

    monkeypatch.setattr(offload, "_body", lambda _name: (body, Input))
    monkeypatch.setattr(offload, "_runner", Runner())
    ok, out = _call("publish", "{}")
    assert not ok and isinstance(out, dict)
    assert out["type"] == "PermissionError" and out["non_retryable"] is True
    assert isinstance(ApplicationError(out["message"]), ApplicationError)
