#!/usr/bin/env bash
# One entry point for the deep research agent: install, serve, ask, check, test.
#
# Contract:
# - installs uv with pip when it is missing, and says so;
# - loads ./.env (KEY=VALUE lines; comments and blank lines ignored) without echoing values; variables
#   already set in the environment win, so `DRA_PORT=2100 ./run.sh` works whatever .env says;
# - `up` refuses to start when the port is taken, because `langgraph dev` would silently move to a random
#   port and clients would talk to whatever holds the configured one;
# - exit status is non-zero on any failure;
# - sourcing it (as run-stack.sh does) defines its functions and runs nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

SMOKE_QUESTION="What are the main differences between HTTP/2 and HTTP/3? Keep it short."

say() { printf '==> %s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
  cat <<'EOF'
Usage: ./run.sh [--sync] [COMMAND] [ARGS...]

Commands:
  up                      start the agent server (langgraph dev) and its web UI at /ui (built first when its
                          bundle is missing or stale); the default command. Corpora declared in DRA_CORPORA
                          are reindexed first (only changed files are read)
  serve [--ephemeral]     start the agent on Aegra with Postgres and Redis (DATABASE_URL, REDIS_URL; each one
                          unset gets a server whose data is kept in DRA_DATA_DIR/serve, or a throwaway one with
                          --ephemeral), DRA_INSTANCES supervised instances from DRA_PORT up; creates the
                          Aegra environment deploy/.venv (Python >= 3.12) from deploy/uv.lock
  serve delete-data [--yes]
                          delete the data serve keeps (asks first)
  --sync                  force `uv sync --extra dev --compile-bytecode`, then `up` (or the command that
                          follows); otherwise .venv is synced only when missing or when uv.lock or a
                          pyproject.toml changed since its last sync
  ask "QUESTION" [--no-clarify] [--review-plan] [--evidence FILE] [--out FILE] [--config JSON] [--task NAME] [--user USER]
                          research a question against the running server and watch the run; --task
                          continues (or starts) a named task; "-" instead of QUESTION reads it from
                          stdin, --question-file FILE from a file
  steer THREAD "MESSAGE"  steer the run in progress on a thread ("also cover X", "drop Y", "finish now")
  tasks [--user USER]     list a user's tasks: name, last run, status, outcome, cost so far
  schedule add NAME "QUESTION" --cron "0 8 * * MON" [--timezone TZ] [--webhook URL] [--config JSON] [--user USER]
                          research that keeps watch: each run of the cron continues the task NAME and opens
                          its report with what changed (docs/scheduled-research.md)
  schedule list|pause|resume|remove [NAME] [--user USER]
                          the user's schedules (next run, last outcome, cost, digests), or change one
  smoke                   ask a canned question with --no-clarify
  doctor                  check the local setup (starts nothing)
  corpus add NAME DIR [--title T] [--description D] [--html docs|web] [--background]
                          index a directory of documents as a named corpus, then embed it
  corpus reindex [NAME...] [--background] | corpus embed [NAME...]
                          read changed files again, drop deleted ones (every corpus by default)
  corpus search NAME "QUERY" [--k 10] [--json]
                          search a corpus (--json: one object per hit and line)
  corpus list | corpus remove NAME
                          show the corpora, or delete an index
  kb list|export|delete [--user U] [--dataset D] [--out FILE] [--yes]
                          list, export (JSON lines) or delete a user's knowledge-base dataset on the running server
  test [PYTEST ARGS...]   sync from the lock, check the lock, install node, chromium, bubblewrap, postgresql and
                          redis-server when missing, the JS client's packages (npm ci in tests/js), build the
                          web UI from a clean install (npm ci and npm run build in ui), the Aegra environment
                          (deploy/.venv from deploy/uv.lock), run the offline test suite
  eval --suite NAME|FILE [--url URL] [--tier T] [--config JSON] [--out DIR] [--concurrency N]
                          run a question suite against the running server and write scorecard.json and
                          scorecard.md (docs/evaluation.md); eval compare A B compares two scorecards
  help                    show this text

Environment (also read from ./.env):
  DRA_HOST (127.0.0.1)  DRA_PORT (2024; PORT is used when DRA_PORT is unset)  DRA_JOBS (10)
  DRA_RELOAD=1 (reload on code changes)  DRA_URL (client target; default http://DRA_HOST:DRA_PORT)
  serve: DATABASE_URL  REDIS_URL  DRA_INSTANCES (1)  WORKER_COUNT (3)  N_JOBS_PER_WORKER (10)
         DRA_MAX_RUNS_PER_USER (3)  DRA_AUTH_TOKENS  DRA_AEGRA_PYTHON (a Python >= 3.12 for deploy/.venv)
         DRA_SERVE_GRACE_S (30)  DRA_SERVE_MAX_RESTARTS (5 a minute)  DRA_SERVE_EPHEMERAL (0)
EOF
}

load_dotenv() {
  local file=".env" line key value count=0
  [[ -f "$file" ]] || return 0
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%$'\r'}"
    line="${line#"${line%%[![:space:]]*}"}"
    [[ -z "$line" || "$line" == \#* ]] && continue
    line="${line#export }"
    [[ "$line" == *=* ]] || continue
    key="${line%%=*}"
    key="${key%"${key##*[![:space:]]}"}"
    value="${line#*=}"
    value="${value#"${value%%[![:space:]]*}"}"
    value="${value%"${value##*[![:space:]]}"}"
    if [[ ${#value} -ge 2 && ( ( "$value" == \"*\" ) || ( "$value" == \'*\' ) ) ]]; then
      value="${value:1:${#value}-2}"
    fi
    if [[ ! "$key" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      warn ".env: skipping a line whose name is not a valid variable name"
      continue
    fi
    # The environment wins over .env, so one-off overrides on the command line work.
    if [[ -z "${!key+x}" ]]; then
      export "$key=$value"
      count=$((count + 1))
    fi
  done <"$file"
  say "Loaded $count variable(s) from .env"
}

ensure_uv() {
  command -v uv >/dev/null 2>&1 && return 0
  # Where an earlier run installed it (pip --user, or uv's own installer): found there, never reinstalled.
  local user_bin
  user_bin="$(python3 -c 'import site, os; print(os.path.join(site.getuserbase(), "bin"))' 2>/dev/null || true)"
  export PATH="${user_bin:+$user_bin:}$HOME/.local/bin:$PATH"
  command -v uv >/dev/null 2>&1 && return 0
  say "uv not found; installing it with pip"
  if ! python3 -m pip install --user uv; then
    python3 -m pip install uv || pip install uv || die "could not install uv; see https://docs.astral.sh/uv/"
  fi
  command -v uv >/dev/null 2>&1 || die "uv was installed but is not on PATH; add $user_bin to PATH"
  say "Using $(uv --version)"
}

# When the environment was last synced from the lock: a command checks this stamp instead of having uv check
# the lock at every start.
SYNCED_STAMP=.venv/.dra-synced
# When the project's own modules were last compiled to bytecode.
COMPILED_STAMP=.venv/.dra-compiled

# Every package is compiled to bytecode as it is installed: with PYTHONDONTWRITEBYTECODE set, Python caches
# nothing it compiles, and each command would compile its imports again at every start.
sync_env() {
  say "uv sync --extra dev --compile-bytecode"
  uv sync --extra dev --compile-bytecode
  : 2>/dev/null >"$SYNCED_STAMP" || true
}

# The environment is synced when it is missing, when --sync asks, or when uv.lock or a pyproject.toml changed
# since its last sync; otherwise nothing is checked, so a command starts at once.
ensure_env() {
  if [[ "${FORCE_SYNC:-0}" == 1 ]]; then
    sync_env
  elif [[ ! -d .venv ]]; then
    say ".venv is missing"
    sync_env
  elif [[ ! -f "$SYNCED_STAMP" ]]; then
    say ".venv has no record of its last sync"
    sync_env
  elif [[ uv.lock -nt "$SYNCED_STAMP" || pyproject.toml -nt "$SYNCED_STAMP" || sandbox/pyproject.toml -nt "$SYNCED_STAMP" ]]; then
    say "uv.lock or a pyproject.toml changed since .venv was last synced"
    sync_env
  fi
  compile_sources
}

# The project's own modules as bytecode, compiled again when one of them changed (an edit, a pull).
compile_sources() {
  [[ -d src ]] || return 0
  if [[ ! -f "$COMPILED_STAMP" || -n "$(find src -name '*.py' -newer "$COMPILED_STAMP" -print -quit 2>/dev/null)" ]]; then
    uv run --no-sync python -m compileall -q src >/dev/null && : 2>/dev/null >"$COMPILED_STAMP" || true
  fi
}

# A wildcard bind address is reached by clients through loopback.
client_host() {
  case "$DRA_HOST" in
    0.0.0.0 | "") echo 127.0.0.1 ;;
    :: ) echo "[::1]" ;;
    *:*) echo "[$DRA_HOST]" ;;
    *) echo "$DRA_HOST" ;;
  esac
}

server_url() { echo "${DRA_URL:-http://$(client_host):$DRA_PORT}"; }

# True when something already listens on host:port. Binding (not connecting) also catches a listener
# on the wildcard address; SO_REUSEADDR keeps sockets in TIME_WAIT from counting as "in use".
port_in_use() {
  local host="$1" port="$2"
  if command -v python3 >/dev/null 2>&1; then
    ! python3 - "$host" "$port" <<'EOF'
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
family = socket.AF_INET6 if ":" in host else socket.AF_INET
with socket.socket(family, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError:
        sys.exit(1)
EOF
  else
    (exec 3<>"/dev/tcp/$(client_host)/$port") 2>/dev/null
  fi
}

warn_missing_keys() {
  if [[ -z "${OPENAI_API_KEY:-}" && -z "${OPENROUTER_API_KEY:-}" ]]; then
    warn "neither OPENAI_API_KEY nor OPENROUTER_API_KEY is set; runs will end with a config error (set one in .env)"
  fi
  if [[ -z "${TAVILY_API_KEY:-}" ]]; then
    warn "TAVILY_API_KEY is not set; web search will use Tavily's keyless access, which is rate-limited"
  fi
}

cmd_up() {
  [[ "$DRA_PORT" =~ ^[0-9]+$ ]] || die "DRA_PORT must be a port number, got '$DRA_PORT'"
  if port_in_use "$DRA_HOST" "$DRA_PORT"; then
    die "Port $DRA_PORT on $DRA_HOST is already in use.
  langgraph dev would silently move to a random port, so run.sh stops here.
  Set DRA_PORT to a free port (e.g. DRA_PORT=$((DRA_PORT + 1)) ./run.sh) or stop the process holding it."
  fi
  warn_missing_keys
  ensure_env
  ensure_ui
  ensure_pdf_tools
  # Declared corpora are brought up to date first: only changed files are read, so this is quick once built.
  if [[ -n "${DRA_CORPORA:-}" ]]; then
    say "Updating the corpora DRA_CORPORA declares (only changed files are read)"
    uv run python -m deep_research_agent.cli corpus reindex --declared --background || warn "a corpus could not be indexed; runs will say so"
  fi
  local reload=(--no-reload)
  if [[ "${DRA_RELOAD:-0}" == 1 ]]; then reload=(); fi
  say "Starting the agent server at http://$(client_host):$DRA_PORT (graph deep_research_agent, $DRA_JOBS jobs per worker); the web UI is http://$(client_host):$DRA_PORT/ui"
  exec uv run --extra dev langgraph dev --no-browser --host "$DRA_HOST" --port "$DRA_PORT" \
    --n-jobs-per-worker "$DRA_JOBS" "${reload[@]}"
}

# A Python >= 3.12 for the Aegra environment (Aegra 0.7+ needs it; the project itself runs on 3.11):
# DRA_AEGRA_PYTHON, else a 3.12 (the version deploy/uv.lock is tested with: python3.12, then pyenv's),
# else a newer one the same way, else a bare "3.12" that uv resolves (and may download) itself.
aegra_python() {
  local candidate minor pyenv_versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
  if [[ -n "${DRA_AEGRA_PYTHON:-}" ]]; then
    echo "$DRA_AEGRA_PYTHON"
    return 0
  fi
  for minor in 12 13 14; do
    for candidate in "python3.$minor" "$pyenv_versions"/3."$minor".*/bin/python3; do
      if [[ "$candidate" != *"*"* ]] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
        command -v "$candidate" 2>/dev/null || echo "$candidate"
        return 0
      fi
    done
  done
  echo 3.12
}

# deploy/.venv: the project plus the pinned Aegra, exactly as deploy/uv.lock says.
ensure_aegra_env() {
  local python
  python="$(aegra_python)"
  say "uv sync --locked --project deploy (Aegra environment, Python $python)"
  uv sync --locked --project deploy --python "$python"
}

cmd_serve() {
  ensure_aegra_env
  [[ "${1:-}" == delete-data ]] || warn_missing_keys
  exec deploy/.venv/bin/python -m deploy.serve "$@"
}

# The evaluation harness: compare and cassette take no server URL, a suite run gets the client's default.
cmd_eval() {
  ensure_env
  case "${1:-}" in
    compare | cassette) exec uv run python -m deep_research_agent.evaluation "$@" ;;
    *) exec uv run python -m deep_research_agent.evaluation --url "$(server_url)" "$@" ;;
  esac
}

cmd_cli() {
  ensure_env
  exec uv run --no-sync python -m deep_research_agent.cli "$@"
}

# The node projects: tests/js (the JS client tests) and ui (the web UI served at /ui). Each names the node it
# needs in its package.json engines (">=MAJOR").
NODE_PACKAGES=(tests/js/package.json ui/package.json)

# True when node and npm are installed and node is at least the major version every node project needs.
node_fits() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
    node -e 'const fs = require("fs");
const needs = process.argv.slice(1).filter((p) => fs.existsSync(p))
  .map((p) => Number(JSON.parse(fs.readFileSync(p, "utf8")).engines.node.replace(">=", "")));
process.exit(Number(process.versions.node.split(".")[0]) >= Math.max(0, ...needs) ? 0 : 1);' "${NODE_PACKAGES[@]}"
}

chromium_found() { command -v chromium >/dev/null 2>&1; }

# A command as root: directly when we are root, else through passwordless sudo; fails when neither works.
as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  else
    sudo -n "$@"
  fi
}

apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  if [[ "$(id -u)" != 0 ]]; then
    sudo -n true 2>/dev/null || return 1
  fi
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# The web UI's bundle (ui/dist) from its locked packages. `npm ci` is skipped when ui/node_modules already
# matches the lock, unless FRESH_UI=1 (./run.sh test builds from a clean install).
build_ui() {
  [[ -f ui/package.json ]] || return 0
  if [[ "${FRESH_UI:-0}" == 1 || ! -f ui/node_modules/.package-lock.json || ui/package-lock.json -nt ui/node_modules/.package-lock.json ]]; then
    say "npm ci (ui)"
    (cd ui && npm ci --no-audit --no-fund) || return 1
  fi
  say "npm run build (ui): the web UI, served at /ui"
  (cd ui && npm run build)
}

# True when ui/dist exists and nothing it is built from (sources, lockfile, the event schema) is newer.
ui_bundle_fresh() {
  [[ -f ui/dist/index.html ]] || return 1
  [[ -z "$(find ui/src ui/static ui/scripts ui/package-lock.json schema/events.schema.json -newer ui/dist/index.html -print -quit 2>/dev/null)" ]]
}

# `up` builds the web UI when its bundle is missing or stale; without node the server still runs, and /ui
# says how to build it.
ensure_ui() {
  [[ -f ui/package.json ]] || return 0
  ui_bundle_fresh && return 0
  if ! node_fits; then
    say "the web UI is not built and needs node and npm; installing Debian's nodejs and npm"
    if ! apt_install nodejs npm || ! node_fits; then
      warn "could not install node and npm; the server runs without the web UI (http://$(client_host):$DRA_PORT/ui says how to build it)"
      return 0
    fi
  fi
  build_ui || warn "the web UI build failed (see above); the server runs without it"
}

# What the tests need beyond Python: Debian's nodejs, npm and chromium when missing, the JS client's packages
# (npm ci in tests/js) and the web UI built from a clean install. When something cannot be installed the
# suite still runs and the tests that need it are skipped, as each warning says.
# The sandbox service (sandbox/, tests/test_sandbox_service.py and every test using it) runs sessions under
# bubblewrap, with libseccomp for its seccomp filter. Without them those tests skip (and fail under CI).
sandbox_tools_present() {
  command -v bwrap >/dev/null 2>&1 || return 1
  ! command -v python3 >/dev/null 2>&1 ||
    python3 -c 'import ctypes.util, sys; sys.exit(ctypes.util.find_library("seccomp") is None)'
}

# Report export to PDF (export/pdf.py): WeasyPrint needs Pango; DejaVu and WenQuanYi Micro Hei cover Latin,
# Greek, Cyrillic, Hebrew, Arabic and CJK (any other script falls back to whatever fontconfig finds).
PDF_PACKAGES=(libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core fonts-wqy-microhei)
pdf_tools_present() {
  local libraries fonts
  libraries="$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null)" || return 1
  fonts="$(fc-list 2>/dev/null)" || return 1
  [[ "$libraries" == *libpangoft2-1.0.so* && "$fonts" == *"WenQuanYi Micro Hei"* && "$fonts" == *"DejaVu Sans"* ]]
}

# `up` installs them when missing; without them the server still runs and only PDF export fails, saying why.
ensure_pdf_tools() {
  pdf_tools_present && return 0
  say "installing Debian's ${PDF_PACKAGES[*]} for PDF export"
  apt_install "${PDF_PACKAGES[@]}" || warn "could not install ${PDF_PACKAGES[*]}; PDF export of reports will fail until they are installed"
}

# One apt step for every Debian package the tests need and the machine lacks.
ensure_test_tools() {
  local missing=()
  node_fits || missing+=(nodejs npm)
  chromium_found || missing+=(chromium)
  sandbox_tools_present || missing+=(bubblewrap libseccomp2)
  services_present || missing+=(postgresql redis-server)
  pdf_tools_present || missing+=("${PDF_PACKAGES[@]}")
  if ((${#missing[@]})); then
    say "installing Debian's ${missing[*]} for the tests"
    # postgresql-common reads createcluster.d; without this its install creates and starts a "main" cluster,
    # and the tests on Aegra start throwaway servers of their own.
    if [[ " ${missing[*]} " == *" postgresql "* ]]; then
      { as_root mkdir -p /etc/postgresql-common/createcluster.d &&
        echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.d/deep-research-agent.conf >/dev/null; } 2>/dev/null || true
    fi
    apt_install "${missing[@]}" || warn "apt-get could not install ${missing[*]}"
  fi
  if node_fits; then
    say "npm ci (tests/js)"
    (cd tests/js && npm ci)
    FRESH_UI=1 build_ui
  else
    warn "node and npm are missing or too old; the JS client tests (tests/e2e/test_js_client.py) and the web UI tests (tests/e2e/test_web_ui.py) will be skipped"
  fi
  chromium_found || warn "chromium is missing; the web UI tests (tests/e2e/test_web_ui.py) will be skipped"
  sandbox_tools_present || warn "bubblewrap or libseccomp is missing; the sandbox tests (tests/test_sandbox_service.py) will be skipped"
  services_present || warn "postgresql or redis-server is missing; the tests on Aegra (tests/e2e/test_serve.py) will be skipped"
}

# Debian's postgresql and redis-server, for the tests on Aegra (the serve that tests/e2e/test_serve.py
# starts runs its servers from them). POSTGRES_LIB is where Debian puts its versions; tests point it elsewhere.
services_present() {
  compgen -G "${POSTGRES_LIB:-/usr/lib/postgresql}/*/bin/initdb" >/dev/null && command -v redis-server >/dev/null 2>&1
}

cmd_test() {
  say "uv sync --extra dev --locked"
  uv sync --extra dev --locked
  say "uv lock --check"
  uv lock --check
  ensure_test_tools
  say "uv lock --check --project deploy"
  uv lock --check --project deploy --python "$(aegra_python)"
  if ! ensure_aegra_env; then
    warn "could not create the Aegra environment deploy/.venv; the tests on Aegra (tests/e2e/test_serve.py) will be skipped"
  fi
  if (($# == 0)); then
    run_whole_suite
    return
  fi
  say "pytest $*"
  exec uv run --extra dev pytest "$@"
}

# The whole suite as two pytest processes side by side: the end-to-end tests (one langgraph dev and one serve
# between them, in order) mostly wait on sockets, so the unit tests use the other core meanwhile. The unit
# run's output follows the end-to-end run's; the suite fails if either does.
# Why not pytest-xdist: its loadgroup, which would keep the end-to-end tests on one worker, ignores the groups
# with the pytest this project locks (measured: their node ids never got the group suffix).
run_whole_suite() {
  # One log per checkout, overwritten by its next run (rm may be missing where run.sh is tested).
  local unit_log="${TMPDIR:-/tmp}/dra-unit-tests${PWD//\//-}.log" unit_pid unit_status=0 e2e_status=0
  say "pytest -m 'not e2e' (alongside, into $unit_log; its output follows) and pytest -m e2e"
  uv run --extra dev pytest -m "not e2e" -p no:cacheprovider >"$unit_log" 2>&1 &
  unit_pid=$!
  uv run --extra dev pytest -m e2e || e2e_status=$?
  wait "$unit_pid" || unit_status=$?
  say "the unit tests (pytest -m 'not e2e')"
  printf '%s\n' "$(<"$unit_log")"
  if ((e2e_status || unit_status)); then
    warn "the end-to-end tests exited with $e2e_status and the unit tests with $unit_status"
    exit 1
  fi
}

# What every command needs first: .env loaded, uv present, the server's address and job count settled.
prepare_environment() {
  load_dotenv
  ensure_uv
  export LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true
  DRA_HOST="${DRA_HOST:-127.0.0.1}"
  DRA_PORT="${DRA_PORT:-${PORT:-2024}}"
  DRA_JOBS="${DRA_JOBS:-10}"
}

main() {
  local command="${1:-up}"
  if [[ "$command" == help || "$command" == -h || "$command" == --help ]]; then
    usage
    return 0
  fi
  if [[ "$command" == --sync ]]; then
    FORCE_SYNC=1
    shift
    command="${1:-up}"
  fi
  if [[ $# -gt 0 ]]; then shift; fi

  prepare_environment

  case "$command" in
    up) cmd_up ;;
    serve) cmd_serve "$@" ;;
    ask) cmd_cli ask --url "$(server_url)" "$@" ;;
    steer) cmd_cli steer --url "$(server_url)" "$@" ;;
    tasks) cmd_cli tasks --url "$(server_url)" "$@" ;;
    schedule)
      [[ $# -gt 0 ]] || die "usage: ./run.sh schedule add|list|pause|resume|remove [NAME] (./run.sh help)"
      action="$1"
      shift
      cmd_cli schedule "$action" --url "$(server_url)" "$@"
      ;;
    smoke) cmd_cli ask --url "$(server_url)" --no-clarify "$SMOKE_QUESTION" "$@" ;;
    doctor) cmd_cli doctor --url "$(server_url)" "$@" ;;
    corpus) cmd_cli corpus "$@" ;;
    eval) cmd_eval "$@" ;;
    kb)
      [[ $# -gt 0 ]] || die "usage: ./run.sh kb list|export|delete [--user U] [--dataset D]"
      action="$1"
      shift
      cmd_cli kb "$action" --url "$(server_url)" "$@"
      ;;
    test) cmd_test "$@" ;;
    *)
      usage >&2
      die "unknown command: $command"
      ;;
  esac
}

# Sourced (run-stack.sh): define the functions only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
