#!/usr/bin/env bash
# The scale benchmark: wall time and peak RSS of kapply at N objects, from a
# release build, against the embedded API server.
#
#   scripts/scale.sh [N...]        (default: 1000 2000 5000 10000)
#
# For each N: generate the manifests (scripts/gen-scale.py), start the
# embedded server (`kapply demo --no-tui`), `kapply apply` them all
# (creates), change a quarter of the Deployments, then measure `diff`,
# `diff --live` (against `kubectl get -o json` output), `plan -o json`,
# `diff --server-side` (the objects were applied client-side, so the
# changed images are conflicts with kubectl-client-side-apply), and
# the TUI's time to the first list with statuses (in tmux). Peak RSS is GNU
# time's %M (the process's VmHWM); the server's is read from /proc: what it
# holds at the end (all N objects) and its peak.
#
# Last, `kapply apply` of the changes (the update).
#
# At N = 2000 the real `kubectl diff -R -f` runs on the same objects too,
# for comparison (slow: kubectl reads and dry-runs one object at a time);
# KUBECTL_DIFF=0 skips it, KUBECTL_DIFF=1 runs it at every N.
# KUBECTL_APPLY=1 also times the real `kubectl apply -R -f` (creates, then
# the update) on a fresh server, at every N (very slow over a link).
# KAPPLY_BIN=PATH measures another build (an A/B against an older binary).
# REAL_APISERVER=1 runs against the real kube-apiserver of
# scripts/real-apiserver (etcd in the same process; a fresh one per N)
# instead of the embedded server; the server column is that process.
#
# CONCURRENCY=N passes --concurrency N to kapply's commands.
#
# DELAY_MS=25 puts a link with a 50 ms round trip between every client
# (kapply, kubectl) and the server: a relay (examples/delay_relay.rs) that
# delivers each byte 25 ms after it arrived, each way, and makes opening a
# connection cost a round trip (this kernel has no netem for a network
# namespace with a delayed link). With REAL_APISERVER=1 too, the relay
# passes kube-apiserver's TLS through (HTTP/2 as it offers it;
# DISABLE_HTTP2=1 measures HTTP/1.1, in kapply and the server alike).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 2000 5000 10000)

# CARGO_TARGET_DIR is honoured (a release build beside a busy debug one).
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet --bin kapply
K=${KAPPLY_BIN:-$target/release/kapply}
delay=${DELAY_MS:-0}
conc=()
[ -z "${CONCURRENCY:-}" ] || conc=(--concurrency "$CONCURRENCY")
if [ "$delay" != 0 ]; then
  cargo build --release --quiet --example delay_relay
fi
RELAY=$target/release/examples/delay_relay
work=$(mktemp -d)
server_pid=
relay_pid=
cleanup() {
  if [ "${REAL_APISERVER:-}" = 1 ]; then
    scripts/real-apiserver stop
    server_pid=
  fi
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null || true
  tmux kill-session -t kapply-scale 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# "wall_s peak_MB" of a command (its output discarded; exit 0/1 both fine).
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || true
  # GNU time writes "Command exited with non-zero status" first: the numbers are last.
  tail -n 1 "$work/time" | awk '{printf "%.2f s  %4.0f MB", $1, $2/1024}'
}

# Start the embedded server (and the relay in front of it with DELAY_MS);
# KUBECONFIG names what the clients talk to.
start_server() {
  rm -f "$work/kc" "$work/kc-link"
  if [ "${REAL_APISERVER:-}" = 1 ]; then
    scripts/real-apiserver stop
    export KUBECONFIG
    cp "$(scripts/real-apiserver start 2>"$work/serve.log" | tail -n 1)" "$work/kc"
    server_pid=$(cat target/real-apiserver/pid)
    url=$(sed -n 's/^ *server: *//p' "$work/kc")
  else
    "$K" demo --no-tui --kubeconfig-out "$work/kc" >"$work/serve.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do grep -q "serving until" "$work/serve.log" 2>/dev/null && break; sleep 0.1; done
    url=$(sed -n 's/^kapply demo cluster: *//p' "$work/serve.log")
  fi
  export KUBECONFIG=$work/kc
  if [ "$delay" != 0 ]; then
    # The relay passes TLS through: the real server's certificate names
    # 127.0.0.1, whatever the port.
    scheme=${url%%://*}
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$RELAY" "$port" "${url#*://}" "$delay" >"$work/relay.log" 2>&1 &
    relay_pid=$!
    for _ in $(seq 100); do grep -q ready "$work/relay.log" 2>/dev/null && break; sleep 0.1; done
    sed "s#$url#$scheme://127.0.0.1:$port#" "$work/kc" >"$work/kc-link"
    chmod 600 "$work/kc-link"
    export KUBECONFIG=$work/kc-link
  fi
}

stop_server() {
  if [ "${REAL_APISERVER:-}" = 1 ]; then
    scripts/real-apiserver stop
  else
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=
  if [ -n "$relay_pid" ]; then kill "$relay_pid"; wait "$relay_pid" 2>/dev/null || true; fi
  relay_pid=
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$delay" = 0 ] || echo "link: ${delay} ms each way ($((2 * delay)) ms round trip)"
printf '%-7s | %-22s | %-22s | %-22s | %-22s | %-22s | %-22s | %-22s | %s\n' \
  N "apply (creates)" "apply (update)" "diff" "diff --live" "plan -o json" "diff --server-side" "TUI: first list" "server: holds (peak)"
for n in "${sizes[@]}"; do
  rm -rf "$work/m"
  python3 scripts/gen-scale.py "$work/m" "$n"
  start_server

  apply=$(measure "$K" apply -R -f "$work/m" --yes "${conc[@]}")
  python3 scripts/gen-scale.py "$work/m" "$n" --changed
  diff=$(measure "$K" diff -R -f "$work/m" "${conc[@]}")
  kubectl get -A -o json configmaps,deployments,namespaces >"$work/live.json"
  difflive=$(measure "$K" diff -R -f "$work/m" --live "$work/live.json")
  plan=$(measure "$K" plan -R -f "$work/m" -o json "${conc[@]}")
  ssadiff=$(measure "$K" diff --server-side -R -f "$work/m" "${conc[@]}")

  # TUI: from start to the header showing the updates, in a 120x40 tmux.
  tmux kill-session -t kapply-scale 2>/dev/null || true
  start=$(date +%s.%N)
  tmux new-session -d -s kapply-scale -x 120 -y 40 \
    "/usr/bin/time -f '%e %M' -o $work/tui-time $K --kubeconfig $KUBECONFIG -R -f $work/m ${conc[*]}"
  tui="timeout"
  for _ in $(seq 600); do
    if tmux capture-pane -p -t kapply-scale 2>/dev/null | grep -qE "~[1-9][0-9]* update"; then
      end=$(date +%s.%N)
      pid=$(pgrep -n -f "^$K --kubeconfig $KUBECONFIG -R -f $work/m" || true)
      rss=$([ -n "$pid" ] && awk '/VmHWM/ {print $2}' "/proc/$pid/status" || echo 0)
      # Its CPU time so far (user + system, both cores): on a loaded
      # machine the wall time is this divided by the share it gets.
      cpu=$([ -n "$pid" ] && awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat" || echo 0)
      tui=$(awk -v s="$start" -v e="$end" -v r="$rss" 'BEGIN {printf "%.2f s  %4.0f MB", e-s, r/1024}')
      echo "        TUI: CPU time at the first list: $cpu s" >>"$work/notes"
      break
    fi
    sleep 0.05
  done
  # (A session already gone, the TUI having failed, leaves "timeout".)
  tmux send-keys -t kapply-scale q 2>/dev/null || true
  sleep 0.3
  tmux kill-session -t kapply-scale 2>/dev/null || true

  update=$(measure "$K" apply -R -f "$work/m" --yes "${conc[@]}")
  server=$(awk '/VmRSS/ {r=$2} /VmHWM/ {h=$2} END {printf "%4.0f MB (%.0f MB)", r/1024, h/1024}' \
    "/proc/$server_pid/status")
  printf '%-7s | %-22s | %-22s | %-22s | %-22s | %-22s | %-22s | %-22s | %s\n' \
    "$n" "$apply" "$update" "$diff" "$difflive" "$plan" "$ssadiff" "$tui" "$server"
  if [ -f "$work/notes" ]; then cat "$work/notes"; rm -f "$work/notes"; fi
  if [ "${KUBECTL_DIFF:-}" = 1 ] || { [ "${KUBECTL_DIFF:-}" != 0 ] && [ "$n" = 2000 ]; }; then
    # The objects as before the update, so kubectl has the same quarter to diff.
    python3 scripts/gen-scale.py "$work/m" "$n"
    "$K" apply -R -f "$work/m" --yes >/dev/null 2>&1 || true
    python3 scripts/gen-scale.py "$work/m" "$n" --changed
    echo "        kubectl diff -R -f (same objects): $(measure kubectl diff -R -f "$work/m")"
  fi
  stop_server
  if [ "${KUBECTL_APPLY:-}" = 1 ]; then
    python3 scripts/gen-scale.py "$work/m" "$n"
    start_server
    echo "        kubectl apply -R -f (creates): $(measure kubectl apply -R -f "$work/m")"
    python3 scripts/gen-scale.py "$work/m" "$n" --changed
    echo "        kubectl apply -R -f (update): $(measure kubectl apply -R -f "$work/m")"
    stop_server
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
