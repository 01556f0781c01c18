#!/usr/bin/env bash
# One entry point for the deep research agent: install, serve, ask, check, test.
#
# Contract:
# - installs uv with pip when it is missing, and says so;
# - loads ./.env (KEY=VALUE lines; comments and blank lines ignored) without echoing values; variables
#   already set in the environment win, so `DRA_PORT=2100 ./run.sh` works whatever .env says;
# - `up` refuses to start when the port is taken, because `langgraph dev` would silently move to a random
#   port and clients would talk to whatever holds the configured one;
# - exit status is non-zero on any failure.
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
  up                      start the agent server (langgraph dev); the default command
  serve                   start the agent on Aegra with Postgres and Redis (DATABASE_URL, REDIS_URL; each one
                          unset gets a throwaway server), DRA_INSTANCES instances from DRA_PORT up; creates the
                          Aegra environment deploy/.venv (Python >= 3.12) from deploy/uv.lock
  --sync                  force `uv sync --extra dev`, then `up` (or the command that follows)
  ask "QUESTION" [--no-clarify] [--evidence FILE] [--config JSON]
                          research a question against the running server and watch the run
  smoke                   ask a canned question with --no-clarify
  doctor                  check the local setup (starts nothing)
  test [PYTEST ARGS...]   sync from the lock, check the lock, install node and the JS client's packages
                          (npm ci in tests/js), Debian's postgresql and redis-server and the Aegra environment,
                          run the offline test suite
  help                    show this text

Environment (also read from ./.env):
  DRA_HOST (127.0.0.1)  DRA_PORT (2024; PORT is used when DRA_PORT is unset)  DRA_JOBS (10)
  DRA_RELOAD=1 (reload on code changes)  DRA_URL (client target; default http://DRA_HOST:DRA_PORT)
  serve: DATABASE_URL  REDIS_URL  DRA_INSTANCES (1)  WORKER_COUNT (3)  N_JOBS_PER_WORKER (10)
         DRA_MAX_RUNS_PER_USER (3)  DRA_AUTH_TOKENS  DRA_AEGRA_PYTHON (a Python >= 3.12 for deploy/.venv)
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
  say "uv not found; installing it with pip"
  if ! python3 -m pip install --user uv; then
    python3 -m pip install uv || pip install uv || die "could not install uv; see https://docs.astral.sh/uv/"
  fi
  local user_bin
  user_bin="$(python3 -c 'import site, os; print(os.path.join(site.getuserbase(), "bin"))' 2>/dev/null || true)"
  export PATH="${user_bin:+$user_bin:}$HOME/.local/bin:$PATH"
  command -v uv >/dev/null 2>&1 || die "uv was installed but is not on PATH; add $user_bin to PATH"
  say "Using $(uv --version)"
}

sync_env() {
  say "uv sync --extra dev"
  uv sync --extra dev
}

ensure_env() {
  if [[ "${FORCE_SYNC:-0}" == 1 ]]; then
    sync_env
  elif [[ ! -d .venv ]]; then
    say ".venv is missing"
    sync_env
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
  local reload=(--no-reload)
  if [[ "${DRA_RELOAD:-0}" == 1 ]]; then reload=(); fi
  say "Starting the agent server at http://$(client_host):$DRA_PORT (graph deep_research_agent, $DRA_JOBS jobs per worker)"
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
  warn_missing_keys
  exec deploy/.venv/bin/python -m deploy.serve
}

cmd_cli() {
  ensure_env
  exec uv run python -m deep_research_agent.cli "$@"
}

# True when node and npm are installed and node is at least the major version that tests/js/package.json's
# engines name (">=MAJOR").
node_fits() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
    node -e 'const need = Number(require("./tests/js/package.json").engines.node.replace(">=", ""));
process.exit(Number(process.versions.node.split(".")[0]) >= need ? 0 : 1);'
}

# Debian's nodejs and npm packages, as root or through passwordless sudo.
install_node() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    sudo -n true 2>/dev/null || return 1
    sudo=(sudo -n)
  fi
  "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
}

# The JS client tests (tests/js, driven by tests/e2e/test_js_client.py) need node and the pinned packages of
# tests/js/package-lock.json. When node cannot be installed the suite still runs and those tests are skipped.
ensure_js_client() {
  if ! node_fits; then
    say "node and npm are missing or older than tests/js/package.json's engines; installing Debian's nodejs and npm"
    if ! install_node || ! node_fits; then
      warn "could not install node and npm; the JS client tests (tests/e2e/test_js_client.py) will be skipped"
      return 0
    fi
  fi
  say "npm ci (tests/js)"
  (cd tests/js && npm ci)
}

# Debian's postgresql and redis-server for the tests on Aegra (tests/e2e/test_scaleout.py starts its own
# throwaway servers from them). A fresh install creates no system cluster: the tests never use one.
ensure_services() {
  if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && command -v redis-server >/dev/null 2>&1; then
    return 0
  fi
  say "Debian's postgresql or redis-server is missing; installing them"
  if ! install_services; then
    warn "could not install postgresql and redis-server; the tests on Aegra (tests/e2e/test_scaleout.py) will be skipped"
  fi
}

install_services() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    sudo -n true 2>/dev/null || return 1
    sudo=(sudo -n)
  fi
  # postgresql-common reads createcluster.d; without this its install creates and starts a "main" cluster.
  { "${sudo[@]}" mkdir -p /etc/postgresql-common/createcluster.d &&
    echo "create_main_cluster = false" | "${sudo[@]}" tee /etc/postgresql-common/createcluster.d/deep-research-agent.conf >/dev/null; } 2>/dev/null || true
  "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server
}

cmd_test() {
  say "uv sync --extra dev --locked"
  uv sync --extra dev --locked
  say "uv lock --check"
  uv lock --check
  ensure_js_client
  ensure_services
  say "uv lock --check --project deploy"
  uv lock --check --project deploy
  if ! ensure_aegra_env; then
    warn "could not create the Aegra environment deploy/.venv; the tests on Aegra (tests/e2e/test_scaleout.py) will be skipped"
  fi
  say "pytest $*"
  exec uv run --extra dev pytest "$@"
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

  load_dotenv
  ensure_uv
  export LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true
  DRA_HOST="${DRA_HOST:-127.0.0.1}"
  DRA_PORT="${DRA_PORT:-${PORT:-2024}}"
  DRA_JOBS="${DRA_JOBS:-10}"

  case "$command" in
    up) cmd_up ;;
    serve) cmd_serve ;;
    ask) cmd_cli ask --url "$(server_url)" "$@" ;;
    smoke) cmd_cli ask --url "$(server_url)" --no-clarify "$SMOKE_QUESTION" "$@" ;;
    doctor) cmd_cli doctor --url "$(server_url)" "$@" ;;
    test) cmd_test "$@" ;;
    *)
      usage >&2
      die "unknown command: $command"
      ;;
  esac
}

main "$@"
