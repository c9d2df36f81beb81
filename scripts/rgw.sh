#!/usr/bin/env bash
# A one-node Ceph cluster with the RADOS Gateway: a real S3 server for tests, benchmarks and trying
# STORAGE_DRIVER=s3 out on one machine, started without systemd.
#
#   scripts/rgw.sh start DIR [PORT]
#       one monitor, one OSD on memstore (data in memory, pool size 1), auth none, msgr2 on
#       127.0.0.1, and radosgw (beast) on PORT (a free one when absent); creates an S3 user and
#       prints the environment to use it (S3_ENDPOINT, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY,
#       S3_REGION), also kept in DIR/env. Needs the Debian packages radosgw ceph-mon ceph-osd ceph-common.
#   scripts/rgw.sh stop DIR
#       stops the three daemons and removes DIR.
set -euo pipefail

usage() { echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  local p
  for _ in $(seq 1 200); do
    # Below the kernel's ephemeral range (32768 and up), which outgoing connections draw from.
    p=$(( 10000 + RANDOM % 22700 ))
    if port_free "$p"; then echo "$p"; return 0; fi
  done
  echo "no free port found" >&2; return 1
}

wait_until() {
  local what=$1 tries=$2; shift 2
  for _ in $(seq 1 "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  echo "rgw: $what did not happen in time; logs in $DIR/log" >&2; return 1
}

start() {
  DIR=$1
  local rgw_port=${2:-} mon_port
  for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool; do
    command -v "$tool" >/dev/null || { echo "rgw: $tool is missing (apt-get install radosgw ceph-mon ceph-osd ceph-common)" >&2; exit 1; }
  done
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  mkdir -p "$DIR"/{run,log,mon,osd}
  mon_port=$(pick_port)
  [ -n "$rgw_port" ] || rgw_port=$(pick_port)
  local fsid; fsid=$(cat /proc/sys/kernel/random/uuid)
  local conf="$DIR/ceph.conf"
  cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
mon initial members = a
public network = 127.0.0.0/8
ms bind msgr1 = false
ms bind msgr2 = true
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
mon warn on insecure global id reclaim allowed = false
mon allow pool delete = true
mon allow pool size one = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
# Without it each proposal waits a second: pool creations and the first writes would stall.
paxos propose interval = 0.1
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
keyring = /dev/null
mon data = $DIR/mon/\$name
osd data = $DIR/osd/\$name
osd objectstore = memstore
memstore device bytes = 4294967296
osd max object size = 134217728
# Deleted objects' data goes after a minute rather than two hours (memstore keeps it in memory
# meanwhile); a minute still lets a download that started before the delete finish.
rgw gc obj min wait = 60
rgw gc processor period = 5
rgw gc processor max time = 5

[client]
# radosgw otherwise insists on cephx in secure mode and hangs for 300 s.
auth client required = none
ms mon client mode = crc

[client.rgw]
# Without tcp_nodelay small requests wait about 45 ms for Nagle.
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
rgw dns name = localhost
rgw thread pool size = 64
# One log line per request costs RGW CPU on every request; errors are still logged.
debug rgw = 0/5
debug ms = 0/0
CONF
  local cmd=(-c "$conf")
  monmaptool --create --clobber --addv a "[v2:127.0.0.1:$mon_port]" --fsid "$fsid" "$DIR/monmap" >"$DIR/log/monmap.out"
  ceph-mon "${cmd[@]}" --mkfs -i a --monmap "$DIR/monmap" >"$DIR/log/mon-mkfs.out" 2>&1
  ceph-mon "${cmd[@]}" -i a
  local osd_uuid; osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  # One ceph session for every monitor command (each start of the CLI costs most of a second): the
  # OSD (the first, so osd.0), and radosgw's seven pools, created up front because radosgw creates
  # missing ones lazily and each would stall the first request that needs it.
  {
    echo "osd new $osd_uuid"
    for pool in .rgw.root default.rgw.control default.rgw.meta default.rgw.log default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec; do
      echo "osd pool create $pool 8 8"
      echo "osd pool application enable $pool rgw"
    done
  } | ceph "${cmd[@]}" >"$DIR/log/ceph-setup.out" 2>&1
  mkdir -p "$DIR/osd/osd.0"
  ceph-osd "${cmd[@]}" -i 0 --mkfs --osd-uuid "$osd_uuid" >"$DIR/log/osd-mkfs.out" 2>&1
  ceph-osd "${cmd[@]}" -i 0 2>>"$DIR/log/osd.out"
  radosgw "${cmd[@]}" -n client.rgw
  local access secret
  access=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)
  secret=$(head -c 30 /dev/urandom | base64 | tr -d '/+=\n')
  radosgw-admin "${cmd[@]}" user create --uid=filesync --display-name=filesync \
    --access-key="$access" --secret-key="$secret" >"$DIR/log/user.out" 2>&1
  wait_until "radosgw answering on $rgw_port" 400 curl -sf "http://127.0.0.1:$rgw_port/"
  cat >"$DIR/env" <<ENV
S3_ENDPOINT=http://127.0.0.1:$rgw_port
S3_REGION=us-east-1
S3_ACCESS_KEY_ID=$access
S3_SECRET_ACCESS_KEY=$secret
ENV
  chmod 600 "$DIR/env"
  cat "$DIR/env"
}

stop() {
  DIR=$1
  [ -d "$DIR" ] || return 0
  local pidfile pids=()
  for pidfile in "$DIR"/run/*.pid; do
    [ -e "$pidfile" ] || continue
    pids+=("$(cat "$pidfile")")
  done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$DIR"
}

case "${1:-}" in
  start) [ $# -ge 2 ] || usage; start "$2" "${3:-}" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
