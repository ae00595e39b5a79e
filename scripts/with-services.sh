#!/usr/bin/env bash
# Run a command with PostgreSQL and Redis reachable.
#
# Uses DATABASE_URL / REDIS_URL when set, else the local default ports. When
# nothing answers there, starts throw-away instances from the installed server
# binaries in a temporary folder, exports their URLs, runs the command, and
# stops them afterwards. With no server binaries it fails with the command
# that installs them. A DATABASE_URL of sqlite:///... is used as it is (no
# PostgreSQL is needed then: the SQLite pass of `make test`).
set -euo pipefail

PY="${PYTHON:-.venv/bin/python}"
# A per-run database name, so that concurrent runs on one server never share the test database.
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/volcanoweb_run$$}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
TMP_ROOT=""
PG_DATA=""
REDIS_PIDFILE=""

cleanup() {
  if [ -n "$PG_DATA" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    kill -INT "$(head -1 "$PG_DATA/postmaster.pid")" 2>/dev/null || true
  fi
  if [ -n "$REDIS_PIDFILE" ] && [ -f "$REDIS_PIDFILE" ]; then
    kill -TERM "$(cat "$REDIS_PIDFILE")" 2>/dev/null || true
  fi
  if [ -n "$TMP_ROOT" ]; then
    sleep 0.5
    rm -rf "$TMP_ROOT"
  fi
}
trap cleanup EXIT

probe() {  # probe postgres|redis URL -> exit 0 when it answers
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
kind, url = sys.argv[1], sys.argv[2]
try:
    if kind == "redis":
        import redis
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    else:
        import dj_database_url, psycopg
        cfg = dj_database_url.parse(url)
        psycopg.connect(host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432,
                        user=cfg["USER"] or "postgres", password=cfg["PASSWORD"] or None,
                        dbname="postgres", connect_timeout=2).close()
except Exception as exc:
    print(f"{kind} at {url} not reachable: {exc}", file=sys.stderr)
    sys.exit(1)
PYEOF
}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

ensure_tmp() { [ -n "$TMP_ROOT" ] || { TMP_ROOT="$(mktemp -d /tmp/volcanoweb-services.XXXXXX)"; chmod 755 "$TMP_ROOT"; }; }

if [[ "$DATABASE_URL" == sqlite:* ]]; then
  echo "Database: SQLite ($DATABASE_URL)" >&2
elif ! probe postgres "$DATABASE_URL" 2>/dev/null; then
  PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    echo "PostgreSQL is not reachable at $DATABASE_URL and no server is installed." >&2
    echo "Install it with:  sudo apt-get install -y postgresql" >&2
    exit 1
  fi
  ensure_tmp
  PG_DATA="$TMP_ROOT/pg"
  PORT="$(free_port)"
  AS=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$TMP_ROOT"
    AS=(runuser -u postgres --)
  fi
  "${AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U postgres --no-sync >/dev/null
  "${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$TMP_ROOT/pg.log" -w \
    -o "-p $PORT -k $TMP_ROOT -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:$PORT/volcanoweb_run$$"
  echo "Started a throw-away PostgreSQL on port $PORT" >&2
fi

if ! probe redis "$REDIS_URL" 2>/dev/null; then
  if ! command -v redis-server >/dev/null; then
    echo "Redis is not reachable at $REDIS_URL and no server is installed." >&2
    echo "Install it with:  sudo apt-get install -y redis-server" >&2
    exit 1
  fi
  ensure_tmp
  PORT="$(free_port)"
  REDIS_PIDFILE="$TMP_ROOT/redis.pid"
  redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP_ROOT" \
    --daemonize yes --pidfile "$REDIS_PIDFILE" --logfile "$TMP_ROOT/redis.log"
  for _ in $(seq 50); do probe redis "redis://127.0.0.1:$PORT/0" 2>/dev/null && break; sleep 0.1; done
  export REDIS_URL="redis://127.0.0.1:$PORT/0"
  echo "Started a throw-away Redis on port $PORT" >&2
fi

"$@"
