#!/usr/bin/env bash
# A local Redis Cluster for tests, benchmarks and trying REDIS_CLUSTER_NODES out on one machine.
#
#   scripts/redis-cluster.sh start DIR [MASTERS] [REPLICAS_PER_MASTER]
#       starts MASTERS (3) masters with REPLICAS_PER_MASTER (0) replicas each on free ports, data and
#       logs under DIR, joins them with `redis-cli --cluster create`, waits until every node says
#       cluster_state:ok (and every replica is in sync), and prints the REDIS_CLUSTER_NODES value.
#       DIR/nodes holds that value, DIR/ports one port per line (masters first).
#   scripts/redis-cluster.sh restart DIR PORT
#       starts the node of PORT again (after it was killed): it rejoins the cluster, as a replica when
#       its replica took its slots over meanwhile.
#   scripts/redis-cluster.sh stop DIR
#       stops every node started in DIR (SHUTDOWN NOSAVE) and removes DIR.
#
# Nodes keep nothing on disk (no RDB, no AOF) and time a peer out after 1 s, so a killed master's
# replica takes over within about two seconds.
set -euo pipefail

usage() { echo "usage: $0 start DIR [MASTERS] [REPLICAS_PER_MASTER] | restart DIR PORT | stop DIR" >&2; exit 2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port p with p and its cluster bus port p+10000 both free, at random below the kernel's
# ephemeral range (32768 and up), where outgoing connections could take it between check and bind.
pick_port() {
  local taken=" $* " p
  for _ in $(seq 1 200); do
    p=$(( 10000 + RANDOM % 12700 ))
    [[ $taken == *" $p "* ]] && continue
    if port_free "$p" && port_free $((p + 10000)); then echo "$p"; return 0; fi
  done
  echo "no free port found" >&2; return 1
}

wait_until() {
  local what=$1; shift
  for _ in $(seq 1 400); do
    if "$@"; then return 0; fi
    sleep 0.05
  done
  echo "redis cluster: $what did not happen in time" >&2; return 1
}

cluster_ok() {
  local p
  for p in "${ports[@]}"; do
    redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

replicas_synced() {
  local p
  for p in "${ports[@]}"; do
    local info
    info=$(redis-cli -p "$p" info replication 2>/dev/null) || return 1
    if grep -q '^role:slave' <<<"$info"; then grep -q '^master_link_status:up' <<<"$info" || return 1; fi
  done
}

launch() {
  local dir=$1 p=$2
  redis-server --port "$p" --bind 127.0.0.1 --daemonize yes --dir "$dir" \
    --pidfile "$dir/redis-$p.pid" --logfile "$dir/redis-$p.log" \
    --cluster-enabled yes --cluster-config-file "nodes-$p.conf" --cluster-node-timeout 1000 \
    --save "" --appendonly no
}

restart() {
  local dir=$1 p=$2
  launch "$dir" "$p"
  wait_until "node $p answering" bash -c "[ \"\$(redis-cli -p $p ping 2>/dev/null)\" = PONG ]"
  mapfile -t ports <"$dir/ports"
  wait_until "cluster_state:ok on every node" cluster_ok
}

# A port taken between the check and the bind (by another test run) fails one attempt: start over
# on other ports, a few times.
start() {
  local attempt
  for attempt in 1 2 3; do
    if start_once "$@"; then return 0; fi
    echo "redis cluster: attempt $attempt failed, trying other ports" >&2
    stop "$1"
  done
  return 1
}

start_once() {
  local dir=$1 masters=${2:-3} replicas=${3:-0}
  local total=$(( masters * (1 + replicas) ))
  # Called as an `if` condition, where `set -e` does not apply: every step says when it failed.
  mkdir -p "$dir" || return 1
  dir=$(cd "$dir" && pwd) || return 1
  ports=()
  for _ in $(seq 1 "$total"); do ports+=("$(pick_port "${ports[@]}")") || return 1; done
  for p in "${ports[@]}"; do launch "$dir" "$p" || return 1; done
  for p in "${ports[@]}"; do wait_until "node $p answering" bash -c "[ \"\$(redis-cli -p $p ping 2>/dev/null)\" = PONG ]" || return 1; done
  local hosts=()
  for p in "${ports[@]}"; do hosts+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${hosts[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log" 2>&1 \
    || { cat "$dir/create.log" >&2; return 1; }
  wait_until "cluster_state:ok on every node" cluster_ok || return 1
  wait_until "replicas in sync" replicas_synced || return 1
  printf '%s\n' "${ports[@]}" >"$dir/ports"
  local nodes
  nodes=$(IFS=,; echo "${hosts[*]}")
  echo "$nodes" >"$dir/nodes"
  echo "$nodes"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  local pidfile
  for pidfile in "$dir"/redis-*.pid; do
    [ -e "$pidfile" ] || continue
    local p=${pidfile##*/redis-}; p=${p%.pid}
    redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  for pidfile in "$dir"/redis-*.pid; do
    [ -e "$pidfile" ] || continue
    local pid; pid=$(cat "$pidfile")
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
  done
  rm -rf "$dir"
}

case "${1:-}" in
  start) [ $# -ge 2 ] || usage; start "$2" "${3:-3}" "${4:-0}" ;;
  restart) [ $# -eq 3 ] || usage; restart "$2" "$3" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
