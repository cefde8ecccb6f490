"""Every activity error that no retry can fix is on the workflow's non-retryable list.

``workflows.temporal_config.ACTIVITY_NON_RETRYABLE_ERRORS`` is built from classes; these
tests work out independently what the activities treat as permanent and compare:

* every ``ApplicationError`` the activity code raises with ``non_retryable=True`` names a
  ``type`` on the list, so the workflow and the failure agree (a helper process re-raises a
  failure by its type name, and a replayed history only has the name) — except the
  classifier's (``contracts/failures.py``), whose type is the permanent error it found
  (tests/activities/test_error_classes.py checks those);
* every error class an activity can let escape (the store's, the context engine's, the
  contracts', the acquisition's) is classified: on the list, or in ``RETRIED`` below with
  the reason it is not. Temporal matches a failure's type name exactly, never a base class,
  so a subclass of a listed class is classified on its own (the worker's classifier also
  marks subclasses and wrapped errors non-retryable: contracts/failures.py). Removing a
  class from the list (or adding an error class without deciding) fails here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import activities.sources.errors
import artifacts.errors
import context
import contracts.errors
import contracts.names  # its NameRefused: found whatever other tests imported first
from artifacts.errors import StoreError
from context.errors import ContextError
from contracts.errors import JobSpecError, PathRefused, ProviderError, PublishRefused, SourceError
from workflows.temporal_config import (
    ACTIVITY_NON_RETRYABLE_ERROR_TYPES,
    ACTIVITY_NON_RETRYABLE_ERRORS,
)

ROOT = Path(__file__).resolve().parents[2]
#: builds its failures' type from the permanent error it found (not a literal)
CLASSIFIER = ROOT / "contracts" / "failures.py"
#: the code that runs inside activities and raises their failures
ACTIVITY_CODE = ("activities", "contracts")
#: roots of the error hierarchies an activity can let reach Temporal
ROOTS: tuple[type[BaseException], ...] = (
    StoreError, ContextError, SourceError, JobSpecError, PublishRefused, ProviderError,
    PathRefused,
    # permanent ApplicationErrors with no common base among the roots above
    contracts.errors.JobIdReused, contracts.errors.CarriedStateMismatch,
    contracts.errors.ReviewerNotRegistered, contracts.errors.ForkRefused)

#: error classes deliberately *not* on the list, and why
RETRIED: dict[str, str] = {
    "StoreError": "the store's base class; raised itself only for unexpected database "
                  "failures, which may pass",
    "ArtifactNotFound": "retried up to the activity's bound (a revision the job names that "
                        "is not there yet, say behind a replica); then needs_operator",
    "DatabaseUnavailable": "the database may come back",
    "AttestationKeyError": "raised only where the worker and the CLI load the attestation "
                           "keys (the worker refuses to start), never inside an activity",
    "SchemaNotReady": "migrations may be applied while the activity backs off",
    "ContextError": "the engine's base class; raised itself only for a wrong argument type",
    "InvariantViolation": "the engine caught its own bug; a fixed worker can retry the step "
                          "(needs_operator, then a signed retry)",
    "TokenizerUnavailable": "retried up to the bound (the tokenizer's files may be installed "
                            "meanwhile); not classified permanent",
    "DataBlockError": "the providers translate it into ProviderInputError (listed)",
    "SerializationError": "caught inside the context pipeline: a blocked manifest, not a "
                          "failure",
    "TransformError": "caught inside the context pipeline: a blocked manifest, not a failure",
    "PreservationFailed": "caught inside the context pipeline: a blocked manifest, not a "
                          "failure",
    "SourceError": "the source errors' base class; never raised itself",
    "RetrievalFailed": "caught by open_source: a source_unavailable refusal the model sees",
    "TooManyDocuments": "caught by the document kind: a source_unavailable refusal",
    "ProviderError": "the providers' base class; never raised itself",
    "ProviderCallError": "each instance says whether it is retryable (HTTP 429/5xx are)",
    "WebFetchRefused": "the live-page errors' base class; each instance says whether it is "
                       "retryable (the rule refusals, its subclasses, are listed)",
    "WebFetchFailed": "each instance says whether it is retryable (a network failure is, a "
                      "404 is not)",
}


def _subclasses(cls: type[BaseException]) -> Iterator[type[BaseException]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def _activity_error_classes() -> set[type[BaseException]]:
    # the modules that define them are imported above (context imports all of its own)
    assert context and artifacts.errors and contracts.errors and activities.sources.errors
    ours = ("artifacts.", "context.", "contracts.", "activities.")
    return {cls for root in ROOTS for cls in _subclasses(root)
            if cls.__module__.startswith(ours)}


def _flagged_types(path: Path) -> Iterator[tuple[int, str]]:
    """``type`` of each ``ApplicationError(...)``/``super().__init__(...)`` call in ``path``
    passing ``non_retryable=True`` (a literal, or ``SomeClass.__name__``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        flag, kind = keywords.get("non_retryable"), keywords.get("type")
        if not (isinstance(flag, ast.Constant) and flag.value is True) or kind is None:
            continue
        if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
            yield node.lineno, kind.value
        elif (isinstance(kind, ast.Attribute) and kind.attr == "__name__"
              and isinstance(kind.value, ast.Name)):
            yield node.lineno, kind.value.id
        else:
            raise AssertionError(f"{path}:{node.lineno}: cannot read the failure type")


def test_the_list_is_the_class_names_without_duplicates() -> None:
    assert list(ACTIVITY_NON_RETRYABLE_ERROR_TYPES) == [
        cls.__name__ for cls in ACTIVITY_NON_RETRYABLE_ERRORS]
    assert len(set(ACTIVITY_NON_RETRYABLE_ERROR_TYPES)) == len(ACTIVITY_NON_RETRYABLE_ERRORS)


def test_every_failure_raised_non_retryable_is_listed() -> None:
    found = [
        (f"{path.relative_to(ROOT)}:{line}", kind)
        for package in ACTIVITY_CODE
        for path in sorted((ROOT / package).rglob("*.py")) if path != CLASSIFIER
        for line, kind in _flagged_types(path)
    ]
    assert found, "the scan found no non-retryable failure at all"
    missing = [(where, kind) for where, kind in found
               if kind not in ACTIVITY_NON_RETRYABLE_ERROR_TYPES]
    assert missing == []


def test_every_error_class_an_activity_can_raise_is_classified() -> None:
    classes = _activity_error_classes()
    listed = set(ACTIVITY_NON_RETRYABLE_ERROR_TYPES)
    unclassified = sorted(cls.__name__ for cls in classes
                          if cls.__name__ not in listed and cls.__name__ not in RETRIED)
    assert unclassified == []
    assert listed.isdisjoint(RETRIED)
    # no stale names: everything classified exists
    names = {cls.__name__ for cls in classes}
    assert set(RETRIED) <= names
    ours = {cls.__name__ for cls in ACTIVITY_NON_RETRYABLE_ERRORS
            if cls.__module__.startswith(("artifacts.", "context.", "contracts.", "activities."))}
    assert ours <= names | {"SignatureError"}  # contracts.signing's, outside these roots


def test_the_scan_reads_both_spellings(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "raise ApplicationError('a', type='Foo', non_retryable=True)\n"
        "raise ApplicationError('b', type=Bar.__name__, non_retryable=True)\n"
        "raise ApplicationError('c', type='Baz')\n", encoding="utf-8")
    assert list(_flagged_types(module)) == [(1, "Foo"), (2, "Bar")]
