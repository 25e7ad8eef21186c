#!/usr/bin/env bash
# A single-node Slurm on localhost, for tests and laptops.
#
#   scripts/local-slurm.sh up DIR     start munged, slurmctld and slurmd with configs generated in DIR
#   scripts/local-slurm.sh env DIR    print the export that points Slurm's commands at that cluster
#   scripts/local-slurm.sh down DIR   cancel its jobs, stop its daemons, remove its cgroups
#
# Needs root and the Debian packages slurmctld, slurmd, slurm-client, munge, slurm-wlm-basic-plugins.
# The node has the host's cores and memory and 4 fake GPUs (device files with /dev/null's numbers), so
# GPU requests are accepted. If DIR/job_submit.lua exists at `up`, it is loaded as the job-submit
# plugin (JobSubmitPlugins=lua reads the file beside slurm.conf).
#
# Caps: with cgroup v1 controllers (cpuset, memory, freezer) mounted, Slurm's task/cgroup plugin
# confines each step (ConstrainCores, ConstrainRAMSpace) and proctrack/cgroup tracks its processes.
# Otherwise it falls back to task/affinity + proctrack/linuxproc and says why: Slurm 22.05's
# cgroup/v2 plugin needs slurmd started by systemd.
set -euo pipefail

die() { echo "local-slurm: $*" >&2; exit 1; }
usage() { die "usage: $0 up|down|env DIR"; }

[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# Slurm's v1 cgroups for every job live under slurm_<node name> in each controller. Each cluster
# names its node after its slurmctld port (slurmd -N), so two local clusters never share cgroups
# and `down` touches only its own.
slurm_cgroups() { echo "slurm_$(cat "$dir/nodename" 2>/dev/null || echo none)"; }
CGROUP_CONTROLLERS="cpuset memory freezer cpu cpuacct devices"

cgroup_v1_ok() {
    local c
    for c in cpuset memory freezer; do
        [ "$(stat -f -c %T "/sys/fs/cgroup/$c" 2>/dev/null)" = cgroupfs ] || return 1
    done
}

# A TCP port nothing listens on, starting from a random point in 20000-29999.
free_port() {
    local p=$((20000 + RANDOM % 10000)) tries=0
    while [ $tries -lt 200 ]; do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [ "$p" != "${1:-}" ]; then
            echo "$p"
            return
        fi
        p=$((p + 1)); tries=$((tries + 1))
    done
    die "no free TCP port found in 20000-30199"
}

wait_for() { # SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2 i
    shift 2
    for ((i = 0; i < limit * 5; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    return 1
}

node_idle() { [ "$(sinfo -h -N -o %t 2>/dev/null | head -1)" = idle ]; }

# Closes every descriptor above stderr, so the daemons do not inherit one: a lock the caller
# holds (`flock /tmp/measure.lock scripts/local-slurm.sh up`) would otherwise outlive the caller.
close_inherited_fds() {
    local fd
    for fd in /proc/$$/fd/*; do
        fd=${fd##*/}
        [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null || true
    done
}

up() {
    [ "$(id -u)" = 0 ] || die "must run as root (slurmd confines jobs with cgroups and switches users)"
    close_inherited_fds
    local b
    for b in munged mungekey slurmctld slurmd sinfo scontrol; do
        command -v "$b" >/dev/null || die "$b not found: apt-get install slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins"
    done
    [ -e "$dir/slurmctld.pid" ] && die "$dir already holds a cluster; run '$0 down $dir' first"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chmod 755 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge" "$dir/log"
    chmod 700 "$dir/munge"

    # munge: own key, socket and pid file, so a host munged (if any) is untouched.
    mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1 \
        || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed" \
        || die "munged failed to start; see $dir/log/munged.log"

    local host node ctld_port slurmd_port hw cpus mem task proctrack reason=""
    host=$(hostname -s)
    ctld_port=$(free_port)
    slurmd_port=$(free_port "$ctld_port")
    node="local$ctld_port"
    echo "$node" >"$dir/nodename"
    hw=$(slurmd -C | head -1)
    cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
    mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
    local topo
    topo=$(grep -o 'Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' <<<"$hw" || true)
    # Leave the OS some memory, so a job at the node's whole RealMemory cannot starve the daemons.
    mem=$((mem - 512))

    if cgroup_v1_ok; then
        task="task/cgroup,task/affinity"
        proctrack="proctrack/cgroup"
    else
        task="task/affinity"
        proctrack="proctrack/linuxproc"
        reason="cgroup v1 cpuset/memory/freezer controllers are not all mounted under /sys/fs/cgroup; Slurm 22.05's cgroup/v2 plugin needs systemd"
        echo "local-slurm: caps NOT enforced by cgroups (task/affinity only): $reason" >&2
    fi

    local submit=""
    [ -f "$dir/job_submit.lua" ] && submit="JobSubmitPlugins=lua"

    cat >"$dir/slurm.conf" <<EOF
# Generated by scripts/local-slurm.sh: a single node on localhost.
ClusterName=local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=$proctrack
TaskPlugin=$task
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=60
GresTypes=gpu
$submit
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus $topo RealMemory=$mem Gres=gpu:4 State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    # Slurm 22.05 drops GPUs without a device file, so the four GPUs are character devices with
    # /dev/null's numbers: requests are scheduled, nothing real is bound (ConstrainDevices is off).
    mkdir -p "$dir/dev"
    local i
    for i in 0 1 2 3; do
        [ -e "$dir/dev/gpu$i" ] || mknod "$dir/dev/gpu$i" c 1 3
    done
    cat >"$dir/gres.conf" <<EOF
NodeName=$node Name=gpu File=$dir/dev/gpu[0-3]
EOF
    cat >"$dir/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=yes
ConstrainRAMSpace=yes
AllowedRAMSpace=100
ConstrainSwapSpace=no
EOF
    [ -n "$reason" ] && echo "# caps not enforced: $reason" >>"$dir/cgroup.conf"

    export SLURM_CONF="$dir/slurm.conf"
    # setsid: the daemons outlive this script but not `down`; -D keeps them in the foreground of
    # their own session, so their pids are the ones written here.
    setsid slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 </dev/null &
    echo $! >"$dir/slurmctld.launcher.pid"
    wait_for 30 slurmctld scontrol ping \
        || { tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" >&2 || true; die "slurmctld did not answer"; }
    setsid slurmd -D -N "$node" -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 </dev/null &
    echo $! >"$dir/slurmd.launcher.pid"
    if ! wait_for 60 "node idle" node_idle; then
        tail -20 "$dir/log/slurmd.log" "$dir/log/slurmd.out" >&2 || true
        sinfo -N -l >&2 || true
        die "node $node did not become idle"
    fi
    echo "local-slurm: node $node idle ($cpus CPUs, $mem MB, gpu:4, $task); export SLURM_CONF=$SLURM_CONF" >&2
}

# Pids listed in Slurm's cgroups under every controller (the steps' processes, slurmstepd included).
slurm_cgroup_pids() {
    local c g
    for c in $CGROUP_CONTROLLERS; do
        for g in $(slurm_cgroups); do
            [ -d "/sys/fs/cgroup/$c/$g" ] || continue
            find "/sys/fs/cgroup/$c/$g" -name tasks -exec cat {} + 2>/dev/null || true
        done
    done | sort -u
}

kill_pidfile() { # FILE
    local f=$1 pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        wait_for 15 "exit of $pid" bash -c "! kill -0 $pid" || kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

down() {
    [ -d "$dir" ] || die "$dir does not exist"
    dir=$(cd "$dir" && pwd)
    export SLURM_CONF="$dir/slurm.conf"
    if [ -f "$SLURM_CONF" ] && scontrol ping >/dev/null 2>&1; then
        scancel --quiet --full "--user=$(id -un)" 2>/dev/null || true
        scancel --quiet --full 2>/dev/null || true
        # Give the steps KillWait to end before the daemons go.
        wait_for 15 "jobs ended" bash -c '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' || true
    fi
    kill_pidfile "$dir/slurmd.pid"
    kill_pidfile "$dir/slurmd.launcher.pid"
    kill_pidfile "$dir/slurmctld.pid"
    kill_pidfile "$dir/slurmctld.launcher.pid"
    # Step daemons and job processes left in Slurm's cgroups (slurmstepd outlives slurmd).
    local pid
    for pid in $(slurm_cgroup_pids); do kill -9 "$pid" 2>/dev/null || true; done
    sleep 0.3
    # Slurm's cgroups, deepest first (only directories: rmdir fails on a non-empty cgroup).
    local c g
    for c in $CGROUP_CONTROLLERS; do
        for g in $(slurm_cgroups); do
            [ -d "/sys/fs/cgroup/$c/$g" ] || continue
            find "/sys/fs/cgroup/$c/$g" -depth -type d -exec rmdir {} \; 2>/dev/null || true
        done
    done
    kill_pidfile "$dir/munge/munged.pid"
    local left
    left=$(slurm_cgroup_pids | tr '\n' ' ')
    [ -z "$left" ] || die "processes still in Slurm's cgroups: $left"
    for c in $CGROUP_CONTROLLERS; do
        for g in $(slurm_cgroups); do
            [ ! -d "/sys/fs/cgroup/$c/$g" ] || die "cgroup /sys/fs/cgroup/$c/$g not removed"
        done
    done
    echo "local-slurm: $dir stopped" >&2
}

case $cmd in
    up) up ;;
    down) down ;;
    env) echo "export SLURM_CONF=$(cd "$dir" && pwd)/slurm.conf" ;;
    *) usage ;;
esac
