"""The wire contract: the reference llm-sandbox sidecar's request and response shapes, field for field.

Every field is caller input; the bounds here are the floor, and the service clamps to its configured
ceilings (``SANDBOX_MAX_*``) instead of refusing, as the reference does.
"""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Encoding = Literal["utf-8", "base64"]
SESSION_ID_PATTERN = r"^[0-9a-f]{16}$"


def _no_nul(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


class CreateSessionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    image: str | None = Field(None, min_length=1, max_length=512)
    timeout_seconds: int = Field(900, ge=1)
    network: bool = False
    memory_mb: int = Field(512, ge=1)
    cpus: float = Field(1.0, gt=0, allow_inf_nan=False)


class Session(BaseModel):
    session_id: str
    provider: str


class ExecRequest(BaseModel):
    command: str = Field(min_length=1)
    timeout_seconds: int = Field(60, ge=1)
    workdir: str | None = Field(None, min_length=1)

    _nul = field_validator("command", "workdir")(_no_nul)


class RunRequest(BaseModel):
    language: Literal["python"]
    code: str
    timeout_seconds: int = Field(60, ge=1)

    _nul = field_validator("code")(_no_nul)


class ExecResult(BaseModel):
    stdout: str
    stderr: str
    exit_code: int  # 124 = timed out; 137 = killed (out of memory, or a signal)
    truncated: bool = False
    duration_ms: int | None = None


class WriteFileRequest(BaseModel):
    path: str = Field(min_length=1)
    content: str
    encoding: Encoding = "utf-8"

    _nul = field_validator("path")(_no_nul)

    @model_validator(mode="after")
    def _base64_is_well_formed(self) -> WriteFileRequest:
        if self.encoding == "base64":
            try:
                base64.b64decode("".join(self.content.split()), validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("content is not valid base64") from None
        return self

    def payload(self) -> bytes:
        if self.encoding == "base64":
            return base64.b64decode("".join(self.content.split()), validate=True)
        return self.content.encode("utf-8")


class ReadFileResponse(BaseModel):
    path: str
    content: str
    encoding: Encoding = "utf-8"
    truncated: bool = False


class FileEntry(BaseModel):
    name: str
    path: str
    is_dir: bool
    size: int = 0


class ListFilesResponse(BaseModel):
    path: str
    entries: list[FileEntry]
    truncated: bool = False
