#!/usr/bin/env bash
# First step of `npm test`: the programs the suite runs besides Node. What is missing is installed
# with apt-get when run as root; otherwise the script stops at once, naming the one command that
# installs it. REDIS_SERVER, REDIS_CLI and NGINX, when set, stand for the programs of those names.
set -euo pipefail

# bash's command -v also prints a file on PATH that cannot be run, hence the -x.
has() { local found; found=$(command -v "$1" 2>/dev/null) && [ -x "$found" ]; }
missing=()
# redis-server's package brings redis-cli; either one missing means installing it.
{ has "${REDIS_SERVER:-redis-server}" && has "${REDIS_CLI:-redis-cli}"; } || missing+=(redis-server)
# Debian puts nginx in /usr/sbin, which is not on a user's PATH; test/helpers/nginx.ts looks there too.
has "${NGINX:-nginx}" || [ -x /usr/sbin/nginx ] || [ -x /usr/local/sbin/nginx ] || missing+=(nginx)
has curl || missing+=(curl)
has openssl || missing+=(openssl)

# test/deploy renders deploy/ with kubectl's built-in kustomize. apt cannot give it: Debian's
# kubernetes-client (1.20) is too old, so it is a requirement of its own.
kubectl=
if ! kubectl kustomize --help >/dev/null 2>&1; then
  kubectl="kubectl 1.27 or newer (for kubectl kustomize) is required by test/deploy and is not on PATH:"
  kubectl+=" install it from https://kubernetes.io/docs/tasks/tools/"
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "npm test needs what only root can install here (${missing[*]}). Run:" >&2
    if has apt-get; then
      echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    else
      echo "  your system package manager's install command for: ${missing[*]}" >&2
    fi
    if [ -n "$kubectl" ]; then echo "$kubectl" >&2; fi
    exit 1
  fi
  echo "installing what npm test needs: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y "${missing[@]}"
fi

if [ -n "$kubectl" ]; then
  echo "$kubectl" >&2
  exit 1
fi
