#!/usr/bin/env bash
# Make sure Slurm and munge exist for the Slurm peer benchmark (`python -m bench peer-slurm`, `make bench-peer`)
# and its test (tests/bench/test_slurm_peer.py). Installs Debian's slurm-wlm and munge if missing (~30 s);
# their daemons are not started (the benchmark starts throw-away ones of its own).
set -euo pipefail
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
packages=()
for binary in slurmctld slurmd sbatch squeue scontrol sdiag; do
  have "$binary" || { packages+=(slurm-wlm); break; }
done
have munged || packages+=(munge)
[ "${#packages[@]}" -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "The Slurm peer needs Slurm and munge: install them (Debian: slurm-wlm, munge)." >&2
  exit 1
fi
echo "Installing Debian's ${packages[*]} for the Slurm peer benchmark..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}" >/dev/null
