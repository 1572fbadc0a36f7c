#!/bin/sh
# Installs the system packages Switchboard needs from Debian/Ubuntu's apt, only
# those missing. `runtime`: the tool sandbox (bubblewrap, socat, util-linux).
# Run as root, or as a user who may sudo. Elsewhere it says what to install.
set -eu
need=""
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have bwrap || need="$need bubblewrap"
have socat || need="$need socat"
have prlimit || need="$need util-linux"
[ -z "$need" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "switchboard setup: install these with your package manager:$need (or set SWITCHBOARD_SANDBOX=none to run tools unconfined)" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "switchboard setup: installing$need"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
