# Shared set-up for scripts/test, scripts/run and bench/run. Source it; do not run it.
# Everything here is idempotent: a second run on a ready machine does no installing.

RECD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RECD_ROOT

# Debian packages the project needs (C libraries with headers behind the system-library
# targets, the JACK server, the reference tools the tests check with): scripts/packages.list,
# which also names the programs each provides; the tests start no program it does not name.
RECD_PACKAGES=()
while read -r package _; do
    package="${package%:}"
    case "$package" in ""|\#*|swift-toolchain) continue ;; esac
    RECD_PACKAGES+=("$package")
done <"$RECD_ROOT/scripts/packages.list"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }

ensure_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
            [ -x "$dir/swift" ] && export PATH="$dir:$PATH" && break
        done
    fi
    command -v swift >/dev/null 2>&1 || { log "swift is not installed (need Swift 6.x on PATH)"; exit 1; }
}

# ensure_packages [extra packages...]: installs what is missing; apt-get update once.
ensure_packages() {
    local wanted=("${RECD_PACKAGES[@]}" "$@") missing=()
    for package in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # jackd2 asks about real-time priority; answer no (the dummy backend needs none).
    echo "jackd2 jackd/tweak_rt_limits boolean false" | $sudo debconf-set-selections 2>/dev/null || true
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# start_jack NAME [PERIOD]: starts a private `jackd -d dummy` server called NAME unless one
# with that name runs; sets STARTED_JACK_PID when this call started it.
STARTED_JACK_PID=""
# start_jack NAME [PERIOD] [SCHEDULING]: SCHEDULING "realtime" runs jackd (and so every client's
# process thread) SCHED_FIFO at priority 70, as a real appliance does; the default is
# --no-realtime, which every machine allows.
start_jack() {
    local name="$1" period="${2:-256}" scheduling="${3:-normal}"
    local priority=(--no-realtime)
    [ "$scheduling" = realtime ] && priority=(-R -P 70)
    export JACK_DEFAULT_SERVER="$name"
    export JACK_NO_AUDIO_RESERVATION=1
    if jack_lsp >/dev/null 2>&1; then
        log "JACK server '$name' already running"
        return 0
    fi
    local logfile="${TMPDIR:-/tmp}/recd-jackd-$name.log"
    jackd -n "$name" "${priority[@]}" -d dummy -r 48000 -p "$period" -C 2 -P 2 >"$logfile" 2>&1 &
    STARTED_JACK_PID=$!
    for _ in $(seq 1 50); do
        jack_lsp >/dev/null 2>&1 && { log "started jackd -n $name -d dummy (pid $STARTED_JACK_PID)"; return 0; }
        sleep 0.1
    done
    log "jackd did not start; its log:"; cat "$logfile" >&2
    return 1
}

# stop_stale_jack PREFIX: ends every jackd whose server name starts with PREFIX (servers left
# by an earlier run that was killed before it could stop them) and waits until they are gone.
stop_stale_jack() {
    local prefix="$1"
    pkill -TERM -f "^[^ ]*jackd -n $prefix" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        pgrep -f "^[^ ]*jackd -n $prefix" >/dev/null || return 0
        sleep 0.1
    done
    pkill -KILL -f "^[^ ]*jackd -n $prefix" 2>/dev/null || true
}

stop_jack() {
    if [ -n "$STARTED_JACK_PID" ]; then
        kill "$STARTED_JACK_PID" 2>/dev/null
        wait "$STARTED_JACK_PID" 2>/dev/null
        STARTED_JACK_PID=""
    fi
}
