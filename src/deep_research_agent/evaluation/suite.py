"""Question suites: JSON Lines of questions, this project's format or DeepResearch Bench's ``query.jsonl``.

Contract:
- a line is ``{id, question, language?, reference?, rubric?, facts?}``, or DeepResearch Bench's
  ``{id, topic, language, prompt}`` (``prompt`` is the question, ``topic`` is kept);
- ``load_suite(NAME_OR_FILE)`` reads a shipped suite by name (``suites/NAME.jsonl``) or any file; a line
  that is not such an object is skipped with a problem naming its line number, so one bad line never
  loses the rest; a suite with no usable line, or a file that is missing, raises ``SuiteError``;
- ids are unique within a suite (a repeated id is a problem, its later line skipped).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SHIPPED = "suites"


class SuiteError(ValueError):
    """A suite that cannot be run at all: missing, unreadable, or without one usable question."""


class Question(BaseModel):
    """One question of a suite."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    language: str = "en"
    topic: str | None = None
    reference: str | None = Field(default=None, description="A reference report the judge compares against.")
    rubric: list[str] = Field(default_factory=list, description="Criteria the judge applies.")
    facts: list[str] = Field(default_factory=list, description="Facts or answers the report should state and cite.")

    @model_validator(mode="before")
    @classmethod
    def _deep_research_bench(cls, data: object) -> object:
        # DeepResearch Bench's query.jsonl: the question is ``prompt`` and ids are integers.
        if isinstance(data, dict) and "question" not in data and "prompt" in data:
            data = {**data, "question": data["prompt"]}
        if isinstance(data, dict) and isinstance(data.get("id"), int):
            data = {**data, "id": str(data["id"])}
        return data

    @field_validator("rubric", "facts", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class Suite(BaseModel):
    """A loaded suite: its questions, where it came from, and the lines that could not be used."""

    name: str
    path: str
    sha256: str
    questions: list[Question]
    problems: list[str] = Field(default_factory=list)


def shipped_suites() -> list[str]:
    """The names of the suites that ship with the package."""
    folder = resources.files(__package__).joinpath(SHIPPED)
    return sorted(entry.name.removesuffix(".jsonl") for entry in folder.iterdir() if entry.name.endswith(".jsonl"))


def _locate(name_or_file: str) -> Path:
    path = Path(name_or_file).expanduser()
    if path.is_file():
        return path
    shipped = Path(str(resources.files(__package__).joinpath(SHIPPED, f"{name_or_file}.jsonl")))
    if shipped.is_file():
        return shipped
    raise SuiteError(f"No suite {name_or_file!r}: not a file, and not a shipped suite ({', '.join(shipped_suites())}).")


def parse_suite(text: str, *, name: str, path: str) -> Suite:
    questions: list[Question] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            question = Question.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(f"{name} line {number}: not JSON ({exc.msg}); skipped.")
            continue
        except ValidationError as exc:
            fields = ", ".join(".".join(str(p) for p in e["loc"]) or "line" for e in exc.errors())
            problems.append(f"{name} line {number}: not a question (check {fields}); skipped.")
            continue
        if question.id in seen:
            problems.append(f"{name} line {number}: id {question.id!r} repeats an earlier line; skipped.")
            continue
        seen.add(question.id)
        questions.append(question)
    if not questions:
        raise SuiteError(f"Suite {name!r} has no usable question. " + " ".join(problems))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Suite(name=name, path=path, sha256=digest, questions=questions, problems=problems)


def load_suite(name_or_file: str, *, only: list[str] | None = None) -> Suite:
    """The suite by shipped name or path; ``only`` keeps those question ids (an unknown id is an error)."""
    path = _locate(name_or_file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"Cannot read suite {str(path)!r}: {exc}") from exc
    suite = parse_suite(text, name=path.stem, path=str(path))
    if only:
        unknown = sorted(set(only) - {q.id for q in suite.questions})
        if unknown:
            raise SuiteError(f"Suite {suite.name!r} has no question {', '.join(unknown)}.")
        suite = suite.model_copy(update={"questions": [q for q in suite.questions if q.id in set(only)]})
    return suite
