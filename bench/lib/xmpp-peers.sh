# Real XMPP servers for the benches, configured on the spot; sourced by bench/xmpp-*.sh
# (which define `die`). Each start_* function starts one server on 127.0.0.1, c2s only, no
# TLS, with accounts user1..userN / pass1..passN (the built-in server's and Tsung's
# convention), waits until it accepts connections, and sets SERVER_PID: the caller stops
# it by that PID.

# start_prosody DIR PORT USERS: Prosody 0.12, one process (single-threaded).
# Warnings only in the log: logging each of thousands of logins costs Prosody's one core.
# A listen backlog like the built-in server's: Prosody's default of 128 overflows with
# 1,024 logins in flight, and those clients see their connection closed. Accounts are
# written as files (internal_plain storage) before it starts: prosodyctl takes a process
# start per account. Why the other options: ../shared/PEERS.md and
# protocols/xmpp/plugin/src/prosody.rs.
start_prosody() {
    local dir=$1 port=$2 users=$3
    command -v prosody >/dev/null || die "prosody is missing: apt-get install -y prosody"
    mkdir -p "$dir/data/wirebench%2etest/accounts"
    cat >"$dir/prosody.cfg.lua" <<CONFIG
run_as_root = true
daemonize = false
pidfile = "$dir/prosody.pid"
data_path = "$dir/data"
log = { warn = "$dir/prosody.log"; error = "$dir/prosody.err"; }
interfaces = { "127.0.0.1" }
c2s_ports = { $port }
s2s_ports = { }
http_ports = { }
https_ports = { }
c2s_direct_tls_ports = { }
s2s_direct_tls_ports = { }
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
authentication = "internal_plain"
modules_enabled = { "roster"; "saslauth"; "ping"; "posix"; }
modules_disabled = { "tls"; "s2s"; }
network_settings = { nagle = false; tcp_backlog = 4096 }
VirtualHost "wirebench.test"
CONFIG
    awk -v n="$users" -v d="$dir/data/wirebench%2etest/accounts" 'BEGIN {
        for (i = 1; i <= n; i++) {
            f = d "/user" i ".dat"
            printf "return {\n\t[\"password\"] = \"pass%d\";\n};\n", i > f
            close(f)
        }
    }'
    prosody --config "$dir/prosody.cfg.lua" -F >"$dir/stdout.log" 2>&1 &
    SERVER_PID=$!
    wait_port "$port" "$SERVER_PID" prosody "$dir/stdout.log" "$dir/prosody.err"
}

# wait_port PORT PID NAME LOG...: waits (10 s at most) until 127.0.0.1:PORT accepts, or
# dies with the logs if PID exits first.
wait_port() {
    local port=$1 pid=$2 name=$3
    shift 3
    for _ in $(seq 100); do
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || die "$name did not start: $(cat "$@" 2>/dev/null)"
        sleep 0.1
    done
    die "$name does not accept connections on port $port after 10 s: $(cat "$@" 2>/dev/null)"
}
