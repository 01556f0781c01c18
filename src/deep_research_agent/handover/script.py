"""Script gate: the coding sub-agent's answer is checked before it is handed over, and its script shown.

The contract of the answer: four sections, ``STATUS: ok | failed``, ``SCRIPT: <absolute path of the one
script>``, ``OUTPUT:`` the script's real output as execute printed it, ``NOTES:`` a line or two (what the
script assumes, what failed and why).

Contract of ``ScriptGateMiddleware`` (coding sub-agent only; inside the guard chain, like the findings
gate whose twin it is; both are ``answer_gate.SubAgentAnswerGate``s, which owns the one bounce):
- a reply with no tool call is the final answer; ``check_answer`` names its problems: a missing
  section, a STATUS other than ok or failed, a SCRIPT that is no absolute path or no file in the
  sandbox, no execute call in the whole task, or an OUTPUT (its first line with text) that no execute
  result of the task shows;
- the first failing answer is bounced once within the same model step, with ``status: revising``
  (reason ``script_answer``, the problems in ``detail``); after that the answer is handed over as it is;
- when the answer's script can be read, one ``script`` event carries its final code (after every edit,
  read from the sandbox, not from the conversation), its status and the head of its output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Annotated, NotRequired

from langchain.agents.middleware import AgentState, ModelRequest
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.channels import UntrackedValue

from ..domain.errors import ToolFailure
from ..domain.names import EvidenceKind, RevisionReason, ScriptStatus, ToolName
from ..protocol.events import Script, Source, emit
from ..protocol.sender import current_sender
from ..run import Run
from .answer_gate import SubAgentAnswerGate

if TYPE_CHECKING:
    from ..sandbox.connector import SandboxConnector

MAX_CODE_CHARS = 50_000
MAX_OUTPUT_CHARS = 2_000
SECTIONS = ("STATUS", "SCRIPT", "OUTPUT", "NOTES")
_SECTION = re.compile(r"^\s*\**(STATUS|SCRIPT|OUTPUT|NOTES)\**\s*:\s*", re.MULTILINE)
_STATUS_WORDS = {
    ScriptStatus.OK: {"ok", "success", "succeeded", "done", "passed"},
    ScriptStatus.FAILED: {"failed", "fail", "failure", "error"},
}
ANSWER_CONTRACT = (
    "Answer with exactly these four sections and nothing else:\n"
    "STATUS: ok | failed\n"
    "SCRIPT: the absolute path of the script in the sandbox\n"
    "OUTPUT:\n<the script's output, copied verbatim from the execute result>\n"
    "NOTES: one or two lines (assumptions; what failed and why)"
)


@dataclass(frozen=True)
class ScriptAnswer:
    status: ScriptStatus | None = None
    script: str = ""
    output: str = ""
    notes: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def parse_answer(text: str) -> dict[str, str]:
    """The answer's sections by name (STATUS, SCRIPT, OUTPUT, NOTES), each stripped; absent ones left out."""
    matches = list(_SECTION.finditer(text))
    sections: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = text[match.end() : end].strip().strip("`").strip()
        sections.setdefault(match.group(1), body)
    return sections


def check_answer(text: str, *, execute_outputs: Sequence[str], script_exists: bool | None) -> ScriptAnswer:
    """Judge a final answer; ``execute_outputs`` are the task's execute results, ``script_exists`` whether the
    SCRIPT file is in the sandbox (None when it could not be checked)."""
    sections = parse_answer(text)
    problems = [f"The {name} section is missing." for name in SECTIONS[:3] if name not in sections]
    word = sections.get("STATUS", "").split()[0].strip(".").lower() if sections.get("STATUS") else ""
    status = next((s for s, words in _STATUS_WORDS.items() if word in words), None)
    if "STATUS" in sections and status is None:
        problems.append(f"STATUS must be ok or failed, not {sections['STATUS'][:40]!r}.")
    script = sections.get("SCRIPT", "").split()[0] if sections.get("SCRIPT") else ""
    if "SCRIPT" in sections and not script.startswith("/"):
        problems.append("SCRIPT must be the absolute path of the script file, e.g. /workspace/task.py.")
    elif script and script_exists is False:
        problems.append(
            f"There is no file {script} in the sandbox: write the script with write_file, then give its path."
        )
    if not execute_outputs:
        problems.append("You never ran the script: run it with execute and report its real output.")
    output = sections.get("OUTPUT", "")
    first_line = next((line.strip() for line in output.splitlines() if line.strip()), "")
    if first_line and execute_outputs and not any(_flat(first_line) in _flat(seen) for seen in execute_outputs):
        problems.append(
            "OUTPUT must be the script's real output, copied from the execute result, not a description of it."
        )
    return ScriptAnswer(status=status, script=script, output=output, notes=sections.get("NOTES", ""), problems=problems)


def bounce_message(problems: Sequence[str]) -> str:
    listed = "\n".join(f"- {problem}" for problem in problems)
    return (
        f"Your answer was not accepted:\n{listed}\n\n{ANSWER_CONTRACT}\n"
        "This is your one chance to fix it; after it, your answer is handed over as it is."
    )


@dataclass(frozen=True)
class JudgedScript:
    """The script gate's verdict: the answer as judged, and the script's code when it could be read."""

    answer: ScriptAnswer
    code: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.answer.ok

    @property
    def problems(self) -> list[str]:
        return self.answer.problems


class ScriptGateState(AgentState):
    script_gate_bounces: NotRequired[Annotated[dict[str, int], PrivateStateAttr, UntrackedValue]]


class ScriptGateMiddleware(SubAgentAnswerGate[JudgedScript]):
    """Bounces a coding answer that breaks the contract once, and shows the final script."""

    label = "ScriptGate"
    state_schema = ScriptGateState
    gate_key = "script_gate"
    reason = RevisionReason.SCRIPT_ANSWER

    def __init__(self, *, role: str, sandbox: SandboxConnector) -> None:
        super().__init__(role=role)
        self.sandbox = sandbox

    async def judge(self, run: Run, text: str, request: ModelRequest, added: Sequence[AnyMessage]) -> JudgedScript:
        """Judged on the whole conversation, the bounce included; the SCRIPT file is read from the sandbox."""
        messages = [*request.messages, *added]
        sections = parse_answer(text)
        script = sections.get("SCRIPT", "").split()[0] if sections.get("SCRIPT") else ""
        code: bytes | None = None
        exists: bool | None = None
        if script.startswith("/"):
            try:
                [got] = await self.sandbox.session(run.attachments).download([script])
            except ToolFailure:
                exists = None
            else:
                exists = got.error is None and got.content is not None
                code = got.content if exists else None
        return JudgedScript(check_answer(text, execute_outputs=_execute_outputs(messages), script_exists=exists), code)

    def bounce_text(self, problems: Sequence[str]) -> str:
        return bounce_message(problems)

    def settle(self, run: Run, verdict: JudgedScript) -> None:
        """The ``script`` event, and the script's output as evidence under ``script_label``: a computed
        figure is in no page, so the report cites the script too and the claim check finds it there."""
        answer, code = verdict.answer, verdict.code
        if code is None:
            return
        text = code.decode("utf-8", errors="replace")
        label = script_label(answer.script)
        run.evidence.add_evidence(
            url=label,
            title=f"Script {answer.script}",
            kind=EvidenceKind.SCRIPT,
            text=f"{answer.output}\n\n{text}",
            agent=current_sender.get().role,
        )
        if record := run.evidence.add_source(label, f"Script {answer.script}"):
            emit(Source(title=record.title, url=record.url, domain=record.domain))
        emit(
            Script(
                path=answer.script,
                code=text[:MAX_CODE_CHARS],
                status=answer.status or ScriptStatus.FAILED,
                output=answer.output[:MAX_OUTPUT_CHARS],
                bytes=len(code),
                truncated=len(text) > MAX_CODE_CHARS,
            )
        )


def script_label(path: str) -> str:
    """How the report cites what a script computed: its file name, never the sandbox path."""
    return f"Script: {PurePosixPath(path).name}"


def _execute_outputs(messages: Sequence[AnyMessage]) -> list[str]:
    return [
        m.text for m in messages if isinstance(m, ToolMessage) and m.name == ToolName.EXECUTE and m.status != "error"
    ]


def _flat(text: str) -> str:
    return " ".join(text.split())
