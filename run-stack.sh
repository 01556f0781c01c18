#!/usr/bin/env bash
# The agent and its code-execution sandbox together: start both, ask one question, or check both halves.
#
# Contract:
# - `up` starts the sandbox service (python -m dra_sandbox, bubblewrap) in the background, unless one already
#   answers at LLM_SANDBOX_URL, then the agent server (./run.sh up) in the foreground, with LLM_SANDBOX_URL and
#   LLM_SANDBOX_TOKEN exported to it; Ctrl-C stops both.
# - `ask "QUESTION"` and `smoke` bring both up with the server in the background, stream one run
#   (./run.sh ask / smoke), then stop everything they started. The exit status is the run's.
# - `doctor` starts nothing: ./run.sh doctor (keys, deps, the host's isolation), then whether a sandbox answers
#   at LLM_SANDBOX_URL and accepts LLM_SANDBOX_TOKEN, and the isolation report, ending with a plain verdict.
# - A sandbox that is already running is reused and left running; one this script started is stopped on exit,
#   and `python -m dra_sandbox reap` then removes the sessions a crashed sandbox left behind.
# - LLM_SANDBOX_TOKEN is generated when unset and is never printed. A running sandbox that rejects it stops the
#   start up front: otherwise the agent's first execute would fail with a 401 deep inside a paid run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=run.sh
source ./run.sh

STACK_DIR=".run-stack"
SANDBOX_LOG="$STACK_DIR/sandbox.log"
SERVER_LOG="$STACK_DIR/server.log"
READY_FILE="$STACK_DIR/sandbox.$$.ready"
SANDBOX_PID=""
SERVER_PID=""
PY=""

stack_usage() {
  cat <<'EOF'
Usage: ./run-stack.sh [COMMAND] [ARGS...]

Commands:
  up                      start the sandbox (background) and the agent server (foreground); the default
  ask "QUESTION" [ARGS]   start both, stream one run (./run.sh ask ARGS), stop both
  smoke                   the same with ./run.sh's canned question
  doctor                  check both halves and the host's isolation (starts nothing)
  help                    show this text

Environment (also read from ./.env):
  LLM_SANDBOX_URL (http://127.0.0.1:SANDBOX_PORT; SANDBOX_PORT defaults to 8900)
  LLM_SANDBOX_TOKEN (generated for the sandbox this script starts when unset)
  SANDBOX_* settings of the sandbox service (see sandbox/README.md), and everything ./run.sh reads.
EOF
}

sandbox_url() {
  local url="${LLM_SANDBOX_URL:-http://127.0.0.1:${SANDBOX_PORT:-8900}}"
  echo "${url%/}"
}

# The project's venv python, with the sandbox package in it (an older .venv may predate it).
stack_python() {
  ensure_env
  if ! .venv/bin/python -c 'import dra_sandbox' 2>/dev/null; then
    say ".venv lacks the sandbox package"
    sync_env
  fi
  PY="$PWD/.venv/bin/python"
}

ensure_token() {
  if [[ -z "${LLM_SANDBOX_TOKEN:-}" ]]; then
    LLM_SANDBOX_TOKEN="$("$PY" -c 'import secrets; print(secrets.token_hex(24))')"
    export LLM_SANDBOX_TOKEN
    say "LLM_SANDBOX_TOKEN is not set; generated one for this run (not shown)"
  fi
}

# Polls CHECK (a shell command) until it succeeds, PID exits, or SECONDS pass.
wait_for() {
  local seconds="$1" pid="$2"
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    if ((SECONDS >= deadline)); then return 2; fi
    sleep 0.2
  done
}

start_sandbox() {
  local url status=0 host port
  url="$(sandbox_url)"
  export LLM_SANDBOX_URL="$url"
  local detail
  detail="$("$PY" -m dra_sandbox check "$url" 2>&1)" || status=$?
  case "$status" in
    0)
      say "Reusing the sandbox already running at $url"
      return 0
      ;;
    3) die "$detail" ;;
  esac
  read -r host port < <("$PY" -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(p.hostname or "", p.port or 80)' "$url")
  case "$host" in
    127.* | localhost | ::1) ;;
    *) die "no sandbox answers at $url, and run-stack.sh starts only a local one: start it there, or unset LLM_SANDBOX_URL" ;;
  esac
  say "Starting the sandbox service at $url (log: $SANDBOX_LOG)"
  SANDBOX_HOST="$host" SANDBOX_PORT="$port" setsid "$PY" -m dra_sandbox serve \
    --ready-file "$READY_FILE" >"$SANDBOX_LOG" 2>&1 </dev/null &
  SANDBOX_PID=$!
  if ! wait_for 60 "$SANDBOX_PID" test -s "$READY_FILE"; then
    tail -n 20 "$SANDBOX_LOG" >&2 || true
    die "the sandbox service did not start (log: $SANDBOX_LOG)"
  fi
  grep -E 'ISOLATION|missing:' "$SANDBOX_LOG" | sed -e 's/^.*dra_sandbox: /    /' || true
}

stop_group() {
  local pid="$1" seconds="$2"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  local deadline=$((SECONDS + seconds))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n "$SERVER_PID" ]]; then
    say "Stopping the agent server"
    stop_group "$SERVER_PID" 30
  fi
  if [[ -n "$SANDBOX_PID" ]]; then
    say "Stopping the sandbox service"
    stop_group "$SANDBOX_PID" 20
    rm -f "$READY_FILE"
  fi
  if [[ -n "$PY" ]]; then
    "$PY" -m dra_sandbox reap 2>/dev/null | sed -e 's/^/==> /' || true
  fi
  exit "$status"
}

server_ok() { "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$(server_url)/ok"; }

cmd_stack_up() {
  stack_python
  ensure_token
  start_sandbox
  say "Starting the agent server with LLM_SANDBOX_URL=$LLM_SANDBOX_URL (Ctrl-C stops both)"
  bash ./run.sh up
}

cmd_stack_run() {
  stack_python
  ensure_token
  start_sandbox
  say "Starting the agent server in the background (log: $SERVER_LOG)"
  setsid bash ./run.sh up >"$SERVER_LOG" 2>&1 </dev/null &
  SERVER_PID=$!
  local status=0
  wait_for 180 "$SERVER_PID" server_ok || status=$?
  if [[ "$status" != 0 ]]; then
    tail -n 20 "$SERVER_LOG" >&2 || true
    die "the agent server did not come up at $(server_url) (log: $SERVER_LOG)"
  fi
  bash ./run.sh "$@"
}

cmd_stack_doctor() {
  local failed=() agent=0 sandbox=0 isolation=0 url
  say "Agent half (./run.sh doctor)"
  bash ./run.sh doctor || agent=$?
  [[ "$agent" == 0 ]] || failed+=("the agent half (see above)")
  stack_python
  url="$(sandbox_url)"
  say "Sandbox half ($url)"
  if [[ -z "${LLM_SANDBOX_TOKEN:-}" ]]; then
    echo "  ! LLM_SANDBOX_TOKEN is not set: ./run-stack.sh up generates one for the sandbox it starts;"
    echo "    a sandbox started elsewhere needs its token in .env"
  fi
  local detail
  detail="$("$PY" -m dra_sandbox check "$url" 2>&1)" || sandbox=$?
  case "$sandbox" in
    0) echo "  ✔ sandbox: $detail" ;;
    3)
      echo "  ✖ sandbox: $detail"
      failed+=("the sandbox token")
      ;;
    *) echo "  ! sandbox: $detail — ./run-stack.sh up starts one" ;;
  esac
  say "Isolation this host gives a sandbox session"
  "$PY" -m dra_sandbox probe | sed -e 's/^/  /' || isolation=$?
  if [[ "$isolation" != 0 && "$sandbox" != 0 ]]; then
    failed+=("isolation (no sandbox can run here)")
  fi
  if [[ ${#failed[@]} -gt 0 ]]; then
    local IFS=", "
    echo "Verdict: NOT READY — fix ${failed[*]}."
    return 1
  fi
  if [[ "$sandbox" == 0 ]]; then
    echo "Verdict: ready — the agent and the running sandbox at $url work together."
  else
    echo "Verdict: ready — ./run-stack.sh up will start a sandbox here."
  fi
}

stack_main() {
  local command="${1:-up}"
  if [[ "$command" == help || "$command" == -h || "$command" == --help ]]; then
    stack_usage
    return 0
  fi
  if [[ $# -gt 0 ]]; then shift; fi

  prepare_environment
  export DRA_HOST DRA_PORT DRA_JOBS
  mkdir -p "$STACK_DIR"

  case "$command" in
    up)
      trap cleanup EXIT INT TERM
      cmd_stack_up
      ;;
    ask)
      [[ $# -gt 0 ]] || die 'ask needs a question: ./run-stack.sh ask "QUESTION"'
      trap cleanup EXIT INT TERM
      cmd_stack_run ask "$@"
      ;;
    smoke)
      trap cleanup EXIT INT TERM
      cmd_stack_run smoke "$@"
      ;;
    doctor) cmd_stack_doctor ;;
    *)
      stack_usage >&2
      die "unknown command: $command"
      ;;
  esac
}

stack_main "$@"
