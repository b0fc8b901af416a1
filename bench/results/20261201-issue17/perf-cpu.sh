#!/usr/bin/env bash
# perf-cpu.sh SECONDS: CPU per channel-hour of recd (main's and the branch's release builds) at 2
# Expects main's and the branch's release builds in /tmp/perf-main-build and /tmp/perf-branch-build, and
# (for the flac floor) a benchtool built by bench/run (kept with --keep); the path below is the one used.
# and 32 channels, rotter at 2, each on a fresh private jackd (recd-perf, -R -P 70, 256 frames),
# pink noise from recd-signal; /proc/PID/stat ticks over SECONDS after 3 s of warm-up.
set -uo pipefail
SECS="$1"
export JACK_DEFAULT_SERVER=recd-perf JACK_NO_AUDIO_RESERVATION=1
PRIO=(-R -P 70); chrt -f 10 true 2>/dev/null || PRIO=(--no-realtime)
ticks() { awk '{ print $14 + $15 }' /proc/$1/stat; }
run() { # run WHAT N
  local what=$1 N=$2 BIN W JPID SPID RPID t0 t1 x0 x1 files
  BIN=/tmp/perf-${what%%-*}-build/release; [ "$what" = rotter ] && BIN=/tmp/perf-main-build/release
  W=$(mktemp -d /tmp/perf-cpu.XXXX)
  jackd -n recd-perf "${PRIO[@]}" -d dummy -r 48000 -p 256 -C 2 -P 2 >"$W/jackd.log" 2>&1 & JPID=$!
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  "$BIN/recd-signal" --name src play --ports "$(seq -s, -f 'out_%g' 1 "$N")" --signal pink >"$W/src.log" 2>&1 & SPID=$!
  for _ in $(seq 100); do grep -q '^ready' "$W/src.log" && break; sleep 0.1; done
  if [ "$what" = rotter ]; then
    mkdir -p "$W/out"; rotter -j -f flac -c "$N" -n rotter-perf -N perf -L flat "$W/out" >"$W/rotter.log" 2>&1 & RPID=$!
    for _ in $(seq 100); do jack_lsp | grep -q '^rotter-perf:' && break; sleep 0.1; done
    mapfile -t theirs < <(jack_lsp | grep '^rotter-perf:' | head -"$N")
    for i in $(seq 1 "$N"); do jack_connect "src:out_$i" "${theirs[$((i-1))]}"; done
  else
    mkdir -p "$W/d"
    printf '[daemon]\nsocket = %s/run/control.sock\nstate_dir = %s/state\n\n[jack]\nserver = recd-perf\nclient_name = recd-cpu\n\n[archive]\ndir = %s/archive\ncompression_level = 5\n\n[port src]\ntype = lineIn\ndirection = input\njack = src:out_*\nchannels = %s\n' "$W/d" "$W/d" "$W/d" "$N" >"$W/d/recd.conf"
    "$BIN/recd" --config "$W/d/recd.conf" >"$W/d/recd.log" 2>&1 & RPID=$!
    CTL=("$BIN/recctl" --socket "$W/d/run/control.sock")
    for _ in $(seq 100); do "${CTL[@]}" status >/dev/null 2>&1 && break; sleep 0.1; done
    sleep 1
    "${CTL[@]}" session set bench --category record --mic-usage benchmark >/dev/null
    "${CTL[@]}" permission grant bench >/dev/null
    "${CTL[@]}" record start bench --input src --stream src >/dev/null
  fi
  sleep 3
  t0=$(ticks $RPID); x0=$(date +%s.%N); l0=$(wc -l <"$W/jackd.log")
  sleep "$SECS"
  t1=$(ticks $RPID); x1=$(date +%s.%N)
  own=$(sed -n "$((l0+1)),\$p" "$W/jackd.log" | grep -cE "client (= )?(recd-cpu|rotter-perf) (was not finished|finished after)" || true)
  if [ "$what" != rotter ]; then "${CTL[@]}" record stop bench >/dev/null 2>&1; fi
  kill $RPID; wait $RPID 2>/dev/null; kill $SPID; wait $SPID 2>/dev/null; kill $JPID; wait $JPID 2>/dev/null
  mapfile -t files < <(find "$W" -name '*.flac')
  bad=0; for f in "${files[@]}"; do flac -t -s "$f" >/dev/null 2>&1 || bad=$((bad+1)); done
  awk -v w="$what" -v n=$N -v t=$((t1-t0)) -v s0=$x0 -v s1=$x1 -v own=$own -v f=${#files[@]} -v b=$bad 'BEGIN { printf "| %s | %d | %.1f | %d | %d files, %d fail flac -t |\n", w, n, t/100*3600/(n*(s1-s0)), own, f, b }'
  rm -rf "$W"
}
echo "| recorder | channels | CPU s per channel-hour | xruns blamed on it | files |"
echo "|---|---|---|---|---|"
for n in 2 32; do run main $n; run branch $n; done
run rotter 2
# The flac CLI floor at 32 channels, as bench/run measures it.
floor() {
  local N=$1 W JPID SPID user=0 sys=0 pcm ch line
  W=$(mktemp -d /tmp/perf-flac.XXXX); BIN=/tmp/perf-main-build/release
  jackd -n recd-perf "${PRIO[@]}" -d dummy -r 48000 -p 256 -C 2 -P 2 >"$W/jackd.log" 2>&1 & JPID=$!
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  "$BIN/recd-signal" --name src play --ports "$(seq -s, -f 'out_%g' 1 "$N")" --signal pink >"$W/src.log" 2>&1 & SPID=$!
  for _ in $(seq 100); do grep -q '^ready' "$W/src.log" && break; sleep 0.1; done
  "$BIN/recd-signal" --name cap capture --ports "$(seq -s, -f 'in_%g' 1 "$N")" --connect "$(seq -s, -f 'src:out_%g' 1 "$N")" --out "$W/pink.raw" --seconds "$SECS" >"$W/cap.log" 2>&1
  kill $SPID; wait $SPID 2>/dev/null; kill $JPID; wait $JPID 2>/dev/null
  /tmp/recd-bench.hACZBK/tools/benchtool topcm "$W/pink.raw" "$N" "$W/pink" >/dev/null; rm -f "$W/pink.raw"
  for pcm in "$W"/pink-*.s24; do
    ch=$(cat "${pcm%.s24}.channels")
    /usr/bin/time -f '%U %S' -o "$W/time" flac -5 -s -f --force-raw-format --endian=little --sign=signed --channels=$ch --bps=24 --sample-rate=48000 -o "${pcm%.s24}.flac" "$pcm"
    line=$(tail -1 "$W/time"); user=$(awk -v a=$user -v b=${line%% *} 'BEGIN{print a+b}'); sys=$(awk -v a=$sys -v b=${line##* } 'BEGIN{print a+b}')
  done
  awk -v n=$N -v u=$user -v s=$sys -v w=$SECS 'BEGIN { printf "| flac CLI -5 (encoding only) | %d | %.1f | – | |\n", n, (u+s)*3600/(n*w) }'
  rm -rf "$W"
}
floor 32
