#!/usr/bin/env bash
# Installs the Debian packages that the tests' real components need (Slurm with
# slurmdbd on MariaDB, munge, Prometheus), tmux for the end-to-end TUI test and
# chromium for the browser test of `quotatop web` (tests/test_web.py).
# Idempotent: does nothing when every package is already present. Needs root.
set -euo pipefail
PKGS=(slurm-wlm slurmctld slurmd slurmdbd slurm-client munge mariadb-server prometheus tmux chromium gcc libc6-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "install-system-deps: not root; missing ${missing[*]} (tests needing them will skip locally)" >&2
  exit 0
fi
# Debian's postinst scripts would start the daemons with the packaged config;
# the test harness starts its own, so forbid service starts during install.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[ $created_policy = 1 ] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
