#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, started by hand (no systemd), so that CI can
# grade a batch through a real Slurm (grader/tests/test_slurm_integration.py):
#
#   eval "$(bash tools/slurm-ci.sh start)"   # installs and starts it; prints `export SLURM_CONF=...`
#   bash tools/slurm-ci.sh stop              # stops everything start started, removes its folder
#
# What it runs: munged (unless one already answers), slurmctld and slurmd as root, all
# state under $CUDALAB_SLURM_CI_DIR (default /tmp/cudalab-slurm-ci). The node has this
# machine's CPUs and one GPU as GRES: a character device that stands in for /dev/nvidia0,
# so that `--gres=gpu:1` tasks run one at a time with CUDA_VISIBLE_DEVICES set, as on a
# real GPU node. Accounting is off (no slurmdbd): sacct does not work, scontrol does.
# The scheduler is told to schedule at once (sched_min_interval, batch_sched_delay): a
# job array of 1 s tasks then runs in about as many seconds as it has tasks.
set -euo pipefail
dir="${CUDALAB_SLURM_CI_DIR:-/tmp/cudalab-slurm-ci}"
conf="$dir/slurm.conf"

say() { printf 'slurm-ci: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# Whether a process of ours is still running: a zombie (a dead daemon whose parent has not
# reaped it, as happens in a container whose pid 1 does not) counts as gone.
alive() {
  local pid="$1" state
  [ -n "$pid" ] && [ -r "/proc/$pid/status" ] || return 1
  state="$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null)" || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Stops the process whose pid is in file $1 (SIGTERM, then SIGKILL after 10 s).
stop_pidfile() {
  local file="$1" name="$2" pid
  [ -f "$file" ] || return 0
  pid="$(tr -dc 0-9 <"$file")"
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then say "$name (pid $pid) ignored SIGTERM: killing it"; kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$file"
}

install_packages() {
  local missing=()
  command -v munged >/dev/null 2>&1 || missing+=(munge)
  command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
  command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
  command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and there is no apt-get: install Slurm and munge first"
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

munge_answers() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  munge_answers && return 0
  [ -f /etc/munge/munge.key ] || { mungekey --create --keyfile /etc/munge/munge.key >/dev/null 2>&1 || \
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  # munged refuses a socket folder that others cannot search (it must be 755).
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 755 /run/munge
  runuser -u munge -- munged --pid-file=/run/munge/munged.pid
  cp /run/munge/munged.pid "$dir/munged.pid"
  for _ in $(seq 50); do munge_answers && return 0; sleep 0.1; done
  die "munged did not start (see /var/log/munge/munged.log)"
}

write_config() {
  local node cpus memory
  node="$(hostname -s)"
  cpus="$(nproc)"
  memory="$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  # The stand-in for a GPU: a character device (the numbers of /dev/null) that Slurm hands
  # to one --gres=gpu:1 task at a time.
  [ -c "$dir/fake-gpu0" ] || mknod "$dir/fake-gpu0" c 1 3
  cat >"$conf" <<EOF
ClusterName=cudalab-ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
SchedulerParameters=sched_min_interval=100000,batch_sched_delay=0
MinJobAge=300
ReturnToService=2
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory Gres=gpu:1 State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$dir/gres.conf" <<EOF
AutoDetect=off
NodeName=$node Name=gpu File=$dir/fake-gpu0
EOF
}

node_ready() {
  local state
  state="$(SLURM_CONF="$conf" sinfo -h -N -o '%T' 2>/dev/null | head -1)"
  [ "$state" = idle ] || [ "$state" = mixed ] || [ "$state" = allocated ]
}

start() {
  [ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and starts daemons"
  if [ -f "$dir/slurmctld.pid" ] && alive "$(tr -dc 0-9 <"$dir/slurmctld.pid")"; then
    say "already running ($dir)"; echo "export SLURM_CONF=$conf"; return 0
  fi
  install_packages
  mkdir -p "$dir"
  start_munge
  write_config
  export SLURM_CONF="$conf"
  slurmctld -f "$conf" -i || die "slurmctld did not start: $(tail -5 "$dir/log/slurmctld.log" 2>/dev/null)"
  slurmd -f "$conf" || die "slurmd did not start: $(tail -5 "$dir/log/slurmd.log" 2>/dev/null)"
  for _ in $(seq 300); do
    if scontrol ping >/dev/null 2>&1 && node_ready; then
      say "up: one node, partition ci, $(nproc) CPUs, 1 GPU (GRES); SLURM_CONF=$conf"
      echo "export SLURM_CONF=$conf"
      return 0
    fi
    sleep 0.1
  done
  say "Slurm did not come up in 30 s; its logs:"
  tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
  stop
  exit 1
}

stop() {
  # The jobs first, while slurmd is there to end their steps.
  if [ -f "$conf" ] && SLURM_CONF="$conf" scontrol ping >/dev/null 2>&1; then
    SLURM_CONF="$conf" scancel --user="$(id -un)" >/dev/null 2>&1 || true
    for _ in $(seq 100); do
      [ -z "$(SLURM_CONF="$conf" squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  stop_pidfile "$dir/slurmd.pid" slurmd
  stop_pidfile "$dir/slurmctld.pid" slurmctld
  stop_pidfile "$dir/munged.pid" munged  # only the munged this script started
  rm -rf "$dir"
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: bash tools/slurm-ci.sh start|stop" >&2; exit 2 ;;
esac
