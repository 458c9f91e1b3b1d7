# slurm-lib.sh: shared by slurm-local-up.sh, slurm-netns-up.sh and slurm-down.sh
# (sourced, not run). Everything a test cluster writes lives under $D; nothing goes
# to /etc/slurm or /var, and no systemd is needed.
#   HV_SLURM_AUTH  none (default: no munged at all) or munge (starts munged if absent)
#   HV_SLURM_PORT  slurmctld port (default 6817); slurmd uses the next one

slurm_lib_alive() {  # slurm_lib_alive PIDFILE: wait for the pid file, then check the daemon lives
  local _; for _ in $(seq 30); do [ -s "$1" ] && break; sleep 0.1; done
  # Slurm daemons fork before binding their ports: one that cannot bind exits just after
  sleep 0.2; [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

slurm_lib_auth_lines() {  # prints AuthType/CredType; starts munged when asked for munge
  local auth=${HV_SLURM_AUTH:-none}
  if [ "$auth" = munge ]; then
    [ -s /etc/munge/munge.key ] || { mungekey --create --force; chown munge:munge /etc/munge/munge.key; }
    install -d -o munge -g munge -m 0755 /run/munge
    if ! munge -n >/dev/null 2>&1; then
      runuser -u munge -- /usr/sbin/munged
      touch "$D/run/munged.ours"   # so slurm-down.sh stops only a munged we started
      for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
    fi
    printf 'AuthType=auth/munge\nCredType=cred/munge\n'
  elif [ "$auth" = none ]; then
    printf 'AuthType=auth/none\nCredType=cred/none\n'
  else
    echo "HV_SLURM_AUTH=$auth: use none or munge" >&2; return 1
  fi
}

# The settings both clusters share. SlurmdParameters=config_overrides is the key line:
# it lets a node declare more CPUs than the machine has (otherwise the node goes INVAL
# and srun queues forever). proctrack/linuxproc: the default cgroup plugin does not
# initialise in containers. MpiDefault=pmix: Debian's Open MPI can only be started by
# srun through PMIx, so plain `srun prog` works as users type it.
slurm_lib_common_conf() {
  cat <<CONF
SlurmUser=root
SlurmctldPort=${HV_SLURM_PORT:-6817}
SlurmdPort=$(( ${HV_SLURM_PORT:-6817} + 1 ))
StateSaveLocation=$D/state
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmctldLogFile=$D/log/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
CONF
}
