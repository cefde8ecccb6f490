"""The agent eval's questions: a YAML file of typed records, refused whole if one is bad.

A question names its corpus (``stdlib`` or ``package``: which sources its job declares),
the research question, its topics with their search terms, its key lines — the file a
line is in and a regular expression its quoted text must match — and, optionally, its own
ceilings on research turns and tokens. A file that cannot be used
is an ``AgentDatasetError`` naming the file and the field, never a partial run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Corpus = Literal["stdlib", "package"]
BUNDLED_QUESTIONS = Path(__file__).resolve().parents[1] / "agent" / "questions.yaml"


class AgentDatasetError(Exception):
    """The questions file cannot be used; the message names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Topic(_Model):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    terms: tuple[str, ...] = Field(min_length=1)


class KeyLine(_Model):
    """A line an answer must cite: in the file ``path`` (of any source of the corpus), its
    quoted text matching ``match``."""

    path: str = Field(min_length=1)
    match: str = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value

    def found_in(self, path: str, quote: str) -> bool:
        return path == self.path and re.search(self.match, quote) is not None


class Question(_Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    corpus: Corpus
    question: str = Field(min_length=1)
    topics: tuple[Topic, ...] = Field(min_length=1)
    key_lines: tuple[KeyLine, ...] = Field(min_length=1)
    #: this question's own ceilings on research turns and tokens (the gate's defaults
    #: otherwise): what the agent needs with a margin, so an agent that wastes turns or
    #: tokens on it fails the gate
    max_turns: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)


class QuestionSet(_Model):
    questions: tuple[Question, ...] = Field(min_length=1)


def load_questions(path: Path) -> tuple[Question, ...]:
    """The questions of ``path``; ``AgentDatasetError`` for anything unusable."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentDatasetError(f"{path}: cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise AgentDatasetError(f"{path}:{where} is not YAML") from None
    try:
        loaded = QuestionSet.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise AgentDatasetError(f"{path}: field {field}: {first['msg']}") from None
    ids = [q.id for q in loaded.questions]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise AgentDatasetError(f"{path}: duplicate question id {duplicates[0]!r}")
    return loaded.questions
