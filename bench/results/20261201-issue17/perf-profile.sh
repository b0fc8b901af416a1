#!/usr/bin/env bash
# perf-profile.sh BIN CHANNELS SECONDS OUT: profiles a release recd recording CHANNELS of pink noise
# on a private jackd (recd-perf, 256-frame period, as bench/run), perf record -g on recd.
# Environment: SERVER (the jackd name, default recd-perf), LOUDNESS ([archive] loudness, default yes),
# IDLE=1 (nothing recorded).
set -euo pipefail
BIN="$1"; N="$2"; SECS="$3"; OUT="$4"
SERVER="${SERVER:-recd-perf}"
export JACK_DEFAULT_SERVER="$SERVER" JACK_NO_AUDIO_RESERVATION=1
W=$(mktemp -d /tmp/perf-prof.XXXX)
PRIO=(-R -P 70); chrt -f 10 true 2>/dev/null || PRIO=(--no-realtime)
jackd -n "$SERVER" "${PRIO[@]}" -d dummy -r 48000 -p 256 >"$W/jackd.log" 2>&1 & JPID=$!
cleanup() { kill $RPID $SPID 2>/dev/null || true; wait $RPID $SPID 2>/dev/null || true; kill $JPID; wait $JPID 2>/dev/null || true; }
RPID=""; SPID=""
trap cleanup EXIT
for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
"$BIN/recd-signal" --name src play --ports "$(seq -s, -f 'out_%g' 1 "$N")" --signal pink >"$W/src.log" 2>&1 & SPID=$!
for _ in $(seq 100); do grep -q '^ready' "$W/src.log" && break; sleep 0.1; done
mkdir -p "$W/d"
printf '[daemon]\nsocket = %s/run/control.sock\nstate_dir = %s/state\n\n[jack]\nserver = %s\nclient_name = recd-prof\n\n[archive]\ndir = %s/archive\ncompression_level = 5\nloudness = %s\n\n[port src]\ntype = lineIn\ndirection = input\njack = src:out_*\nchannels = %s\n' "$W/d" "$W/d" "$SERVER" "$W/d" "${LOUDNESS:-yes}" "$N" >"$W/d/recd.conf"
"$BIN/recd" --config "$W/d/recd.conf" >"$W/d/recd.log" 2>&1 & RPID=$!
CTL=("$BIN/recctl" --socket "$W/d/run/control.sock")
for _ in $(seq 100); do "${CTL[@]}" status >/dev/null 2>&1 && break; sleep 0.1; done
sleep 1
if [ "${IDLE:-0}" != 1 ]; then
  "${CTL[@]}" session set bench --category record --mic-usage benchmark >/dev/null
  "${CTL[@]}" permission grant bench >/dev/null
  "${CTL[@]}" record start bench --input src --stream src >/dev/null
fi
sleep 3
T0=$(awk '{print $14+$15}' /proc/$RPID/stat)
perf record -F 999 -g -p $RPID -o "$OUT.data" -- sleep "$SECS" 2>"$W/perf.err" || cat "$W/perf.err"
T1=$(awk '{print $14+$15}' /proc/$RPID/stat)
echo "recd CPU ticks over ${SECS}s: $((T1 - T0)) (CLK_TCK $(getconf CLK_TCK)); per channel-hour: $(awk -v t=$((T1-T0)) -v n=$N -v s=$SECS 'BEGIN{printf "%.2f", t/100*3600/(n*s)}')"
[ "${IDLE:-0}" = 1 ] || "${CTL[@]}" record stop bench >/dev/null || true
perf report -i "$OUT.data" --no-children --sort comm,dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25 >"$OUT.dso.txt"
perf report -i "$OUT.data" --no-children --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 >"$OUT.sym.txt"
perf report -i "$OUT.data" --no-children --sort comm,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 >"$OUT.comm-sym.txt"
echo "profile in $OUT.*"
