#!/bin/sh
# Registers the compose demo's accounts (you, `me`, and the demo agent, `demo`) with the
# homeserver's shared secret; an account that exists already (a later `up`) is fine, any
# other failure stops with Synapse's answer.
#
#   register-accounts.sh CONFIG URL     (Synapse's homeserver.yaml, its client address)
set -u
config=$1
url=$2
for account in "me demo-password-me" "demo demo-password-agent"; do
    set -- $account
    if out=$(register_new_matrix_user -u "$1" -p "$2" --no-admin -c "$config" "$url" 2>&1); then
        echo "registered @$1"
    elif printf '%s\n' "$out" | grep -q "User ID already taken"; then
        echo "@$1 exists already"
    else
        printf 'could not register @%s:\n%s\n' "$1" "$out" >&2
        exit 1
    fi
done
