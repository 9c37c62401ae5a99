# shellcheck shell=bash
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
# protocols/xmpp/peers/src/prosody.rs.
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

# start_ejabberd DIR PORT USERS: ejabberd 23.01, one Erlang VM (all cores), started
# straight from erl as protocols/xmpp/peers/src/ejabberd.rs does (no node name: no epmd,
# no distribution port; ejabberdctl would run it through su and sh, so $! would not be
# the server). Accounts are registered over its HTTP API on PORT+1 once it listens
# (bench/lib/ejabberd-register.py, four keep-alive connections), passwords stored plain as
# Prosody's are. Warnings only in the log; no shapers; backlog 4096; Nagle off.
start_ejabberd() {
    local dir=$1 port=$2 users=$3
    { command -v erl >/dev/null && compgen -G '/usr/lib/x86_64-linux-gnu/ejabberd-*' >/dev/null; } ||
        die "ejabberd is missing: apt-get install -y ejabberd"
    mkdir -p "$dir/spool" "$dir/logs"
    cat >"$dir/ejabberd.yml" <<CONFIG
hosts:
  - wirebench.test
loglevel: warning
log_rotate_count: 0
certfiles: []
listen:
  -
    port: $port
    ip: "127.0.0.1"
    module: ejabberd_c2s
    max_stanza_size: 262144
    access: c2s
    shaper: none
    backlog: 4096
    starttls: false
  -
    port: $((port + 1))
    ip: "127.0.0.1"
    module: ejabberd_http
    request_handlers:
      /api: mod_http_api
auth_method: internal
auth_password_format: plain
s2s_access: s2s_closed
acl:
  api_clients:
    ip:
      - 127.0.0.0/8
access_rules:
  c2s:
    allow: all
  s2s_closed:
    deny: all
api_permissions:
  "the bench registers its users":
    from:
      - mod_http_api
    who:
      acl: api_clients
    what:
      - register
shaper: {}
modules:
  mod_roster: {}
  mod_disco: {}
  mod_ping: {}
CONFIG
    printf '{file, hosts, "/etc/hosts"}.\n{lookup, ["file", "native"]}.\n' >"$dir/inetrc"
    printf -- '-kernel inet_default_connect_options [{nodelay,true}]\n-kernel inet_default_listen_options [{nodelay,true}]\n' >"$dir/vm.args"
    HOME=$dir EJABBERD_CONFIG_PATH=$dir/ejabberd.yml EJABBERD_LOG_PATH=$dir/logs/ejabberd.log \
        ERL_INETRC=$dir/inetrc ERL_LIBS=/usr/lib/x86_64-linux-gnu ERL_MAX_PORTS=32000 \
        ERL_CRASH_DUMP=$dir/logs/erl_crash.dump \
        erl +K true +P 250000 -env ERL_CRASH_DUMP_BYTES 0 -args_file "$dir/vm.args" \
        -mnesia dir "\"$dir/spool\"" -ejabberd log_rotate_count 0 -s ejabberd -noinput \
        >"$dir/stdout.log" 2>&1 &
    SERVER_PID=$!
    wait_port "$port" "$SERVER_PID" ejabberd "$dir/stdout.log" "$dir/logs/error.log"
    wait_port "$((port + 1))" "$SERVER_PID" ejabberd "$dir/stdout.log" "$dir/logs/error.log"
    python3 "$(dirname "${BASH_SOURCE[0]}")/ejabberd-register.py" "$((port + 1))" wirebench.test "$users" ||
        die "registering $users users with ejabberd failed; logs in $dir/logs"
}
