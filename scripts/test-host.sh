#!/usr/bin/env bash
# What the test suite needs on the host, set up when missing (npm test and
# .ci/run call it): redis-server (suites start private servers), Dovecot (the
# email suites' IMAP server), Chromium (the console's browser test), bubblewrap
# and socat (the tool sandbox), curl (run inside the sandbox tests), util-linux
# `script` (the terminal chat test), and a PostgreSQL server on 127.0.0.1:5432
# (each suite creates its own database). Installs with apt-get as root or
# through sudo; elsewhere it says exactly what to install and stops.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have redis-server || need+=(redis-server)
have dovecot || need+=(dovecot-imapd)
[ -x /usr/bin/chromium ] || need+=(chromium)
have bwrap || need+=(bubblewrap)
have socat || need+=(socat)
have curl || need+=(curl)
have script || need+=(bsdutils)
have prlimit || need+=(util-linux)
if ! have pg_ctlcluster && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then need+=(postgresql); fi

sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo -n)
if [ "${#need[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1 || { [ "${#sudo[@]}" -gt 0 ] && ! sudo -n true 2>/dev/null; }; then
    echo "the tests need these packages, which are missing: ${need[*]} (Debian/Ubuntu names); install them, then run npm test again" >&2
    exit 1
  fi
  echo "test setup: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

# A PostgreSQL server on 127.0.0.1:5432, unless the suites are pointed elsewhere.
if [ -z "${SWITCHBOARD_TEST_PG:-}" ] && ! pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then
  ver=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)
  if [ -z "$ver" ]; then
    ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
    "${sudo[@]}" pg_createcluster "$ver" main >/dev/null
  fi
  echo "test setup: starting PostgreSQL $ver"
  "${sudo[@]}" pg_ctlcluster --skip-systemctl-redirect "$ver" main start
  for _ in $(seq 1 50); do pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1 && break; sleep 0.2; done
fi
exit 0
