#!/usr/bin/env bash
# The watch benchmark: what following the cluster costs the TUI, from a
# release build, against the embedded API server (a measurement, not a test).
#
#   scripts/watch-bench.sh [N]        (default: 10000)
#
# Generates N objects (scripts/gen-scale.py), applies them, opens the TUI on
# them in tmux (160x45) and waits until it says `watching`. Then:
# - idle: the TUI's CPU time (utime + stime from /proc) over IDLE_S seconds
#   (default 30), as a share of one core;
# - burst: 1,000 ConfigMaps changed by direct API writes (merge patches on one
#   keep-alive connection, as fast as the server takes them), while a probe
#   presses `l` (toggle the log pane) every 150 ms in tmux and times how long
#   the frame takes to show it (tmux capture-pane every 5 ms): the key lag
#   during the burst, against the same probe while idle (the probe's own
#   tmux round trips included). Last, the CPU time the TUI spent until it
#   is idle again.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
idle_s=${IDLE_S:-30}
target=${CARGO_TARGET_DIR:-$PWD/target}
# KAPPLY_BIN=PATH measures another build (no release build then).
[ -n "${KAPPLY_BIN:-}" ] || cargo build --release --quiet --bin kapply
K=${KAPPLY_BIN:-$target/release/kapply}
work=$(mktemp -d)
server_pid=
cleanup() {
  tmux kill-session -t kapply-watch 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$K" demo --no-tui --kubeconfig-out "$work/kc" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "serving until" "$work/serve.log" 2>/dev/null && break; sleep 0.1; done
export KUBECONFIG=$work/kc
url=$(sed -n 's/^ *server: *//p' "$work/kc" | head -n 1)
token=$(sed -n 's/^ *token: *//p' "$work/kc" | head -n 1)
python3 scripts/gen-scale.py "$work/m" "$n"
"$K" apply -R -f "$work/m" --yes >/dev/null 2>&1

tmux new-session -d -s kapply-watch -x 160 -y 45 "$K --kubeconfig $KUBECONFIG -R -f $work/m"
start=$(date +%s.%N)
for _ in $(seq 1200); do
  tmux capture-pane -p -t kapply-watch 2>/dev/null | grep -q "watching" && break
  sleep 0.05
done
tmux capture-pane -p -t kapply-watch | grep -q "watching" || { echo "the TUI never said watching"; exit 1; }
echo "TUI watching after $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e-s}') s"
pid=$(pgrep -n -f "^$K --kubeconfig $KUBECONFIG -R -f $work/m")

python3 - "$pid" "$url" "$n" "$idle_s" "$token" <<'EOF'
import http.client, json, os, statistics, subprocess, sys, threading, time, urllib.parse

pid, url, n, idle_s = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
token = sys.argv[5]
tck = os.sysconf("SC_CLK_TCK")

def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck

def screen():
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", "kapply-watch"],
                          capture_output=True, text=True).stdout

def log_shown():
    return "┌ Log" in screen() or "+ Log" in screen()

def probe(samples, stop=None, every=0.15):
    """Press l, time until the frame shows the log pane toggled."""
    lags = []
    while len(lags) < samples and not (stop and stop.is_set() and len(lags) >= 3):
        before = log_shown()
        t0 = time.monotonic()
        subprocess.run(["tmux", "send-keys", "-t", "kapply-watch", "l"])
        while log_shown() == before and time.monotonic() - t0 < 5:
            time.sleep(0.005)
        lags.append((time.monotonic() - t0) * 1000)
        time.sleep(every)
    return lags

def show(name, lags):
    lags = sorted(lags)
    print(f"{name}: key lag median {statistics.median(lags):.0f} ms, "
          f"max {lags[-1]:.0f} ms ({len(lags)} presses)")

# Idle.
c0, t0 = cpu(), time.monotonic()
time.sleep(idle_s)
c1, t1 = cpu(), time.monotonic()
print(f"idle, watching {n} objects: {100 * (c1 - c0) / (t1 - t0):.2f}% of a core "
      f"over {t1 - t0:.0f} s")
show("idle", probe(10))

# Burst: 1,000 ConfigMaps changed (merge patches, one connection).
u = urllib.parse.urlparse(url)
per_ns = max(1, n // 40)
targets = [(f"scale-{k % 20:02d}", f"settings-{(k // 20) % per_ns}") for k in range(1000)]
stop = threading.Event()
lags = []
t = threading.Thread(target=lambda: lags.extend(probe(1000, stop)))
c0 = cpu()
t.start()
conn = http.client.HTTPConnection(u.hostname, u.port)
w0 = time.monotonic()
for i, (ns, name) in enumerate(targets):
    body = json.dumps({"data": {"color": f"red-{i}"}})
    conn.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/{name}", body,
                 {"Content-Type": "application/merge-patch+json",
                  "Authorization": f"Bearer {token}"})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, (r.status, ns, name)
w1 = time.monotonic()
stop.set()
t.join()
# Until the TUI is idle again (no CPU for 1 s).
last = cpu()
while True:
    time.sleep(1)
    now = cpu()
    if now - last < 0.02:
        break
    last = now
c1 = cpu()
print(f"burst: 1000 changes written in {w1 - w0:.2f} s; the TUI spent {c1 - c0:.2f} s of CPU "
      f"absorbing them")
show("during the burst", lags)
EOF
tmux send-keys -t kapply-watch q 2>/dev/null || true
