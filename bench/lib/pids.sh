# shellcheck shell=bash
# Sourced by the bench scripts: ending the processes a script started, by PID only
# (never by name: other people's processes share this machine).

# stop_pids PID...: each that still runs gets SIGTERM and is waited for; empty or ended
# PIDs are skipped. Only the script's own children can be waited for.
stop_pids() {
    local pid
    for pid in "$@"; do
        [[ -n $pid ]] || continue
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
}
