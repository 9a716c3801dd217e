#!/usr/bin/env bash
# A one-node Slurm cluster in a folder, for the array-job test (docs/scale.md):
#   scripts/slurm-node.sh start DIR   # munged, slurmctld and slurmd from DIR/slurm.conf
#   scripts/slurm-node.sh stop DIR    # stops exactly the daemons `start` started, by pid
# Needs Debian's slurm-wlm and munge, and root (the daemons run as root here, a test node).
set -euo pipefail
cmd=${1:?start or stop}
dir=$(realpath -m "${2:?state folder}")
case "$cmd" in
start)
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  host=$(hostname -s)
  cpus=$(nproc)
  # What the node offers jobs: its memory less 512 MiB for the system, in MiB.
  memory_mib=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 - 512))
  cat >"$dir/slurm.conf" <<CONF
ClusterName=texset-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
NodeName=$host CPUs=$cpus RealMemory=$memory_mib State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  : >"$dir/pids"
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    chmod 400 /etc/munge/munge.key
  fi
  munged --force --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  for _ in $(seq 50); do [ -s "$dir/munge/munged.pid" ] && break; sleep 0.1; done
  cat "$dir/munge/munged.pid" >>"$dir/pids"
  SLURM_CONF="$dir/slurm.conf" slurmctld -D -f "$dir/slurm.conf" >>"$dir/slurmctld.out" 2>&1 &
  echo $! >>"$dir/pids"
  SLURM_CONF="$dir/slurm.conf" slurmd -D -f "$dir/slurm.conf" >>"$dir/slurmd.out" 2>&1 &
  echo $! >>"$dir/pids"
  # Ready when the node is idle.
  for _ in $(seq 100); do
    if SLURM_CONF="$dir/slurm.conf" sinfo -h -o %t 2>/dev/null | grep -qx idle; then
      echo "slurm node $host up ($cpus CPUs); export SLURM_CONF=$dir/slurm.conf"
      exit 0
    fi
    sleep 0.2
  done
  echo "slurm node did not come up; logs in $dir" >&2
  tail -5 "$dir"/*.log "$dir"/*.out >&2 || true
  exit 1
  ;;
stop)
  [ -f "$dir/pids" ] || exit 0
  while read -r pid; do
    kill "$pid" 2>/dev/null || true
  done <"$dir/pids"
  for _ in $(seq 50); do
    alive=0
    while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$dir/pids"
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  rm -f "$dir/pids"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
