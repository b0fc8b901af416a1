#!/usr/bin/env bash
# perf-idle.sh SECONDS: recd (main's and the branch's release builds) idle with N input ports
# registered and connected to a pink source, nothing recording, against jack_simple_client on
# the same private jackd (recd-perf, -R -P 70, 256 frames) in the same window; schedstat CPU.
set -uo pipefail
SECS="$1"
export JACK_DEFAULT_SERVER=recd-perf JACK_NO_AUDIO_RESERVATION=1
cpu_ns() { local t=0 f v; for f in /proc/$1/task/*/schedstat; do v=$(cut -d' ' -f1 "$f" 2>/dev/null || echo 0); t=$((t + ${v:-0})); done; echo $t; }
PRIO=(-R -P 70); chrt -f 10 true 2>/dev/null || PRIO=(--no-realtime)
for N in 2 64; do
for which in main branch; do
  BIN=/tmp/perf-$which-build/release
  W=$(mktemp -d /tmp/perf-idle.XXXX)
  jackd -n recd-perf "${PRIO[@]}" -d dummy -r 48000 -p 256 -C 2 -P 2 >"$W/jackd.log" 2>&1 & JPID=$!
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  "$BIN/recd-signal" --name src play --ports "$(seq -s, -f 'out_%g' 1 "$N")" --signal pink >"$W/src.log" 2>&1 & SPID=$!
  for _ in $(seq 100); do grep -q '^ready' "$W/src.log" && break; sleep 0.1; done
  mkdir -p "$W/d"
  printf '[daemon]\nsocket = %s/run/control.sock\nstate_dir = %s/state\n\n[jack]\nserver = recd-perf\nclient_name = recd-idle\n\n[archive]\ndir = %s/archive\n\n[port src]\ntype = lineIn\ndirection = input\njack = src:out_*\nchannels = %s\n' "$W/d" "$W/d" "$W/d" "$N" >"$W/d/recd.conf"
  "$BIN/recd" --config "$W/d/recd.conf" >"$W/d/recd.log" 2>&1 & RPID=$!
  for _ in $(seq 100); do "$BIN/recctl" --socket "$W/d/run/control.sock" status >/dev/null 2>&1 && break; sleep 0.1; done
  jack_simple_client simple-perf >"$W/simple.log" 2>&1 & CPID=$!
  sleep 3
  r0=$(cpu_ns $RPID); c0=$(cpu_ns $CPID); t0=$(date +%s.%N)
  sleep "$SECS"
  r1=$(cpu_ns $RPID); c1=$(cpu_ns $CPID); t1=$(date +%s.%N)
  ports=$(jack_lsp | grep -c '^recd-idle:')
  awk -v n=$N -v w=$which -v r=$((r1-r0)) -v c=$((c1-c0)) -v t0=$t0 -v t1=$t1 -v p=$ports 'BEGIN { s=t1-t0; printf "| %s | %d (%d registered) | %.3f | %.3f | %.2f× |\n", w, n, p, r/1e6/s, c/1e6/s, (c>0? r/c : 0) }'
  kill $CPID $RPID; wait $CPID $RPID 2>/dev/null; kill $SPID; wait $SPID 2>/dev/null; kill $JPID; wait $JPID 2>/dev/null
  rm -rf "$W"
done
done
