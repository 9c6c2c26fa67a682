#!/usr/bin/env bash
# Brings up a complete local Sidekicks: a Synapse homeserver on 127.0.0.1 (installed from
# PyPI into a cached virtualenv), an account for you, and the gateway running the demo agent
# as its own Matrix user. Prints how to log in, then runs until Ctrl-C (or SIGTERM), and
# stops everything it started when it ends.
#
# Everything lives in .demo/; run it again to reuse it. Settings, from the environment:
#   SIDEKICKS_DEMO_DIR      where its state lives (default: .demo in the repository)
#   SIDEKICKS_DEMO_PORT     Synapse's port on 127.0.0.1 (default: 8008)
#   SIDEKICKS_SYNAPSE_VENV  the virtualenv Synapse is installed in (default:
#                           ~/.cache/sidekicks/synapse-venv, shared with the tests)
#   SIDEKICKS_BIN           a sidekicks binary to run instead of building one
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO=${SIDEKICKS_DEMO_DIR:-$ROOT/.demo}
PORT=${SIDEKICKS_DEMO_PORT:-8008}
VENV=${SIDEKICKS_SYNAPSE_VENV:-$HOME/.cache/sidekicks/synapse-venv}
HS="http://127.0.0.1:$PORT"

say() { printf '\033[1m%s\033[0m\n' "$*" >&2; }
# Says why the demo cannot go on, with the end of the log that tells more, and ends it.
fail() {
    say "$1"
    [ -n "${2:-}" ] && [ -e "$2" ] && tail -n 20 "$2" >&2
    exit 1
}

# Everything here talks to 127.0.0.1: never through a proxy set for the outside world
# (a proxy cannot reach this machine's loopback, and Synapse would look down).
export no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}"

if [ ! -e "$VENV/.sidekicks-installed" ]; then
    say "Installing Synapse into $VENV (once)…"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check matrix-synapse
    touch "$VENV/.sidekicks-installed"
fi

if [ -n "${SIDEKICKS_BIN:-}" ]; then
    BIN=$SIDEKICKS_BIN
else
    if [ ! -x "$ROOT/target/debug/sidekicks" ]; then
        say "Building Sidekicks (the first build takes about 4 minutes on 2 cores)…"
    else
        say "Building Sidekicks…"
    fi
    # Cargo shows its progress on a terminal.
    (cd "$ROOT" && cargo build --bin sidekicks)
    BIN="$ROOT/target/debug/sidekicks"
fi

mkdir -p "$DEMO/synapse" "$DEMO/workspace"
if [ ! -e "$DEMO/credentials" ]; then
    rand() { python3 -c 'import secrets; print(secrets.token_urlsafe(18))'; }
    {
        echo "SHARED_SECRET=$(rand)"
        echo "YOUR_PASSWORD=$(rand)"
        echo "AGENT_PASSWORD=$(rand)"
    } > "$DEMO/credentials"
    chmod 600 "$DEMO/credentials"
    python3 -c 'import secrets, base64; print("ed25519 a_demo", base64.b64encode(secrets.token_bytes(32)).decode().rstrip("="))' \
        > "$DEMO/synapse/signing.key"
fi
# shellcheck disable=SC1091
. "$DEMO/credentials"

sed -e "s|@DIR@|$DEMO/synapse|g" -e "s|@PORT@|$PORT|g" -e "s|@SECRET@|$SHARED_SECRET|g" \
    "$ROOT/scripts/synapse/homeserver.yaml.in" > "$DEMO/synapse/homeserver.yaml"
# A single-user demo: let the agent edit its replies briskly.
echo "rc_message: {per_second: 5, burst_count: 50}" >> "$DEMO/synapse/homeserver.yaml"

say "Starting Synapse on $HS…"
"$VENV/bin/python" -m synapse.app.homeserver -c "$DEMO/synapse/homeserver.yaml" > "$DEMO/synapse/synapse.log" 2>&1 &
SYNAPSE_PID=$!
GATEWAY_PID=
# Whatever ends the script (Ctrl-C, SIGTERM, an error) stops what it started: the gateway
# first (it marks a turn it cuts), then Synapse, each given a few seconds.
stop_all() {
    trap - EXIT INT TERM
    for pid in $GATEWAY_PID $SYNAPSE_PID; do
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Its first start makes its database: seconds, more on a busy machine. A minute at most.
answers() {
    "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('$HS/_matrix/client/versions', timeout=5)" 2>/dev/null
}
deadline=$((SECONDS + 60))
until answers; do
    kill -0 "$SYNAPSE_PID" 2>/dev/null || fail "Synapse stopped as it started:" "$DEMO/synapse/synapse.log"
    [ "$SECONDS" -lt "$deadline" ] || fail "Synapse did not answer on $HS within a minute:" "$DEMO/synapse/synapse.log"
    sleep 0.2
done

# The password goes in through a file descriptor: as an argument, one that begins with `-`
# (a random one does, one time in 64) is read as an option, and any user of the machine
# could read it in the process list.
register() {
    "$VENV/bin/register_new_matrix_user" -u "$1" --password-file <(printf '%s' "$2") \
        --no-admin -c "$DEMO/synapse/homeserver.yaml" "$HS" \
        > "$DEMO/register-$1.log" 2>&1 || grep -q "already taken" "$DEMO/register-$1.log" ||
        fail "Could not make the account $1 on Synapse:" "$DEMO/register-$1.log"
}
register me "$YOUR_PASSWORD"
register demo "$AGENT_PASSWORD"

cat > "$DEMO/sidekicks.toml" <<TOML
state_dir = "state"

[matrix]
homeserver = "$HS"

[access]
allowed_users = ["@me:localhost"]

[streaming]
edit_interval_ms = 500

[[agents]]
id = "demo"
display_name = "Demo agent"
command = "$BIN"
args = ["demo-agent"]
workspace = "$DEMO/workspace"

[agents.matrix]
user_id = "@demo:localhost"
password_env = "SIDEKICKS_DEMO_AGENT_PASSWORD"
TOML

cat >&2 <<INFO

  Sidekicks is starting. Log in from any Matrix client (Element Desktop, Fractal, nheko…):

    homeserver:  $HS
    username:    me
    password:    $YOUR_PASSWORD

  Then start a chat with @demo:localhost (or create a room and invite it) and say hello.
  Try "!help"; ask something "slowly" and stop it with "!stop" or a 🛑 reaction; "%echo hi"
  gets your words back exactly.
  Gateway state: $DEMO/state   Synapse log: $DEMO/synapse/synapse.log   Stop: Ctrl-C

INFO
# In the background, so a signal to this script reaches its trap at once (bash runs traps
# only between commands, and `wait` is one that a signal interrupts).
SIDEKICKS_DEMO_AGENT_PASSWORD=$AGENT_PASSWORD "$BIN" run --config "$DEMO/sidekicks.toml" &
GATEWAY_PID=$!
wait "$GATEWAY_PID"
