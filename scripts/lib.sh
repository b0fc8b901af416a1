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

# ensure_localhost: "localhost" must resolve (Selenium reaches chromedriver at localhost:PORT).
# A freshly bootstrapped Debian has no /etc/hosts (the installer, not a package, writes it): as
# root, add the two loopback lines there; otherwise say what to do.
ensure_localhost() {
    getent hosts localhost >/dev/null && return 0
    if [ "$(id -u)" -ne 0 ]; then
        log "'localhost' does not resolve here: add '127.0.0.1 localhost' to /etc/hosts (the browser test needs it)"
        return 1
    fi
    log "'localhost' does not resolve (no /etc/hosts entry): adding 127.0.0.1 and ::1 localhost to /etc/hosts"
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >>/etc/hosts
}

# pypi_venv VENV MODULE PACKAGE: a virtual environment at VENV in which MODULE imports, PACKAGE
# installed from PyPI when it does not (made once, then reused: a second run checks the import
# and installs nothing). Non-zero, and no VENV left, when PyPI is out of reach.
pypi_venv() {
    local venv="$1" module="$2" package="$3"
    "$venv/bin/python3" -c "import $module" 2>/dev/null && return 0
    log "installing $package (PyPI) into $venv"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    if /usr/bin/python3 -m venv "$venv" &&
        "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 30 "$package"; then
        return 0
    fi
    rm -rf "$venv"
    return 1
}

# ensure_selenium: Selenium from PyPI in a virtual environment under .build (Debian's python3
# with python3-venv), for the status page's browser test (Tests/Browser/status_page.py): made
# once, then reused (a second run checks the import and installs nothing). Exports
# RECD_SELENIUM_VENV, where the test looks for it.
ensure_selenium() {
    local venv="$RECD_ROOT/.build/selenium-venv"
    export RECD_SELENIUM_VENV="$venv"
    pypi_venv "$venv" selenium selenium && return 0
    # No PyPI here (no route, or a TLS-intercepting proxy whose CA this machine lacks): the
    # same Selenium from Debian, seen through the venv.
    log "PyPI is out of reach; using Debian's python3-selenium instead"
    ensure_packages python3-selenium
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv" && "$venv/bin/python3" -c 'import selenium'
}

# ensure_c2pa: c2pa-python from PyPI (the C2PA reference implementation, c2pa-rs, as a wheel) in a
# virtual environment under .build, the oracle that reads the Content Credentials of recd's clips
# (Tests/C2PA/verify_clip.py): made once, then reused. Exports RECD_C2PA_VENV, where the test
# looks for it. Debian has no c2pa package: without PyPI the end-to-end test skips, saying so.
ensure_c2pa() {
    local venv="$RECD_ROOT/.build/c2pa-venv"
    export RECD_C2PA_VENV="$venv"
    pypi_venv "$venv" c2pa c2pa-python && return 0
    log "PyPI is out of reach: no c2pa-python; the Content Credentials end-to-end test will skip, saying so"
    return 0
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

# stop_stale_netns PREFIX: deletes the network namespaces whose names start with PREFIX: those the
# tests' NamespacePair (Tests/TestSupport/NetworkNamespaces.swift) made in a run that was killed
# before it could remove them. Deleting a namespace deletes its veth end, and so the pair.
stop_stale_netns() {
    local prefix="$1" name
    command -v ip >/dev/null 2>&1 || return 0
    for name in $(ip netns list 2>/dev/null | cut -d' ' -f1); do
        case "$name" in "$prefix"*) ip netns del "$name" 2>/dev/null || true ;; esac
    done
}

stop_jack() {
    if [ -n "$STARTED_JACK_PID" ]; then
        kill "$STARTED_JACK_PID" 2>/dev/null
        # Its exit status is not the run's: jackd can die of SIGPIPE while it tells a client
        # that is already gone that it stops ("Cannot write socket ... Broken pipe"), and under
        # `set -e` that 141 ended scripts/test before its verdicts.
        wait "$STARTED_JACK_PID" 2>/dev/null || true
        STARTED_JACK_PID=""
    fi
}

# start_pipewire DIR [PERIOD] [CONFIG]: a headless PipeWire serving JACK clients from DIR (its
# socket, log and pid file live there): no sound card, no D-Bus, no session manager. It offers
# system:capture_1/2 (silent) and system:playback_1/2 like jackd's dummy driver (the drop-in
# config/pipewire/pipewire.conf.d/headless-system.conf, which recd-pipewire.service runs too),
# at 48000 Hz with the quantum forced to PERIOD (default 1024). CONFIG: the XDG_CONFIG_HOME
# PipeWire reads its drop-ins from (CONFIG/pipewire/pipewire.conf.d; default this tree's config/):
# a test's own holds a copy of headless-system.conf and its own (RTPAudioTests: module-rtp-sink
# on a sender, module-rtp-source on a logger). JACK clients reach it only
# through PipeWire's libjack: run them under `pw-jack`, with PIPEWIRE_RUNTIME_DIR (exported
# here) naming DIR/run. A PipeWire left running in DIR by an earlier, killed run is stopped
# first. Sets STARTED_PIPEWIRE_PID. Measured differences from jackd2: docs/jack-servers.md.
STARTED_PIPEWIRE_PID=""
STARTED_PIPEWIRE_DIR=""
start_pipewire() {
    local dir="$1" period="${2:-1024}" config="${3:-$RECD_ROOT/config}"
    stop_stale_pipewire "$dir"
    mkdir -p -m 0700 "$dir/run"
    export PIPEWIRE_RUNTIME_DIR="$dir/run"
    unset PIPEWIRE_REMOTE
    # XDG_CONFIG_HOME: PipeWire reads the drop-in from $XDG_CONFIG_HOME/pipewire/pipewire.conf.d.
    XDG_RUNTIME_DIR="$dir/run" XDG_CONFIG_HOME="$config" pipewire >"$dir/pw.log" 2>&1 &
    STARTED_PIPEWIRE_PID=$!
    STARTED_PIPEWIRE_DIR="$dir"
    echo "$STARTED_PIPEWIRE_PID" >"$dir/pw.pid"
    local ready=""
    for _ in $(seq 1 100); do
        if pw-jack jack_lsp 2>/dev/null | grep -q system:capture_2; then ready=yes; break; fi
        kill -0 "$STARTED_PIPEWIRE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$ready" ]; then
        log "PipeWire did not start; its log:"; cat "$dir/pw.log" >&2
        stop_pipewire
        return 1
    fi
    pw-metadata -n settings 0 clock.force-rate 48000 >/dev/null
    pw-metadata -n settings 0 clock.force-quantum "$period" >/dev/null
    log "started a headless PipeWire in $dir (pid $STARTED_PIPEWIRE_PID, quantum $period)"
}

# stop_stale_pipewire DIR: ends the PipeWire an earlier run started in DIR (its pid file), if
# that process is still a pipewire serving DIR (not another one that got the same pid).
stop_stale_pipewire() {
    local dir="$1" pid
    pid="$(cat "$dir/pw.pid" 2>/dev/null)" || return 0
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pipewire ] || return 0
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "XDG_RUNTIME_DIR=$dir/run" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

stop_pipewire() {
    if [ -n "$STARTED_PIPEWIRE_PID" ]; then
        kill "$STARTED_PIPEWIRE_PID" 2>/dev/null || true
        wait "$STARTED_PIPEWIRE_PID" 2>/dev/null || true
        rm -f "$STARTED_PIPEWIRE_DIR/pw.pid"
        STARTED_PIPEWIRE_PID=""
    fi
}
