//! The plugin's parameters (the load workload's are [`crate::load_case::PARAMS`]), and a case's
//! values of them typed ([`Params`]), read once per case: the drivers take a [`Params`],
//! never a case's words.

use std::time::Duration;
use wirebench_protocol::Case;
use wirebench_protocol::params::{Kind, ON_OFF, ParamSpec, WORKLOADS};
use wirebench_xmpp_client::transport::{TRANSPORTS, Transport};
use wirebench_xmpp_peers::peer::Server;
use wirebench_xmpp_peers::x2x;

/// Server set-ups (`xmpp.server`): the built-in server, or two (one for study S2) real
/// servers of a kind.
pub const SERVERS: &[&str] = &["builtin", "prosody", "ejabberd"];

/// XMPP server-to-server links (`s2s`); absent means standard.
pub const S2S_LINKS: &[&str] = &["standard", "x2x", "x2x-tfo"];

/// `xmpp.server`.
pub const SERVER: ParamSpec = ParamSpec {
    name: "xmpp.server",
    kind: Kind::Choice(SERVERS),
    default: "",
    workloads: WORKLOADS,
    help: "XMPP servers: builtin (wirebench's own, one server, no root needed; the default unless s2s is given), prosody (two Prosody 0.12 servers in lab hosts, study S1's topology; needs root; the default with s2s) or ejabberd (the same with two ejabberd 23.01 servers); for workload load, one server of the kind on loopback with the accounts and rosters the sessions need; with xmpp.ping=server (study S2), one server of the kind in the server host (loopback without a link), client1 on its own endpoint for xmpp.transport (tcp, websocket or bosh)",
    words: "XMPP server",
};

/// `s2s`.
pub const S2S: ParamSpec = ParamSpec {
    name: "s2s",
    kind: Kind::Choice(S2S_LINKS),
    default: "",
    workloads: WORKLOADS,
    help: "server-to-server link between the two real servers (xmpp.server=prosody or ejabberd): standard (dialback over TCP), x2x (wirebench's zero-handshake XEP-0361 gateways as each server's XEP-0114 component, zlib + dictionary, connect on demand) or x2x-tfo (the same with TCP Fast Open)",
    words: "server link",
};

pub const TRANSPORT: ParamSpec = ParamSpec {
    name: "xmpp.transport",
    kind: Kind::Choice(TRANSPORTS),
    default: "tcp",
    workloads: &["pingpong", "stream"],
    help: "what carries the clients' XMPP streams to the built-in server: tcp (RFC 6120), websocket (RFC 7395, through wirebench's WebSocket endpoint) or bosh (XEP-0124/0206, through wirebench's BOSH connection manager), or SockJS 0.3.3 through wirebench's SockJS endpoint: sockjs-websocket, xhr-streaming, xhr-polling, jsonp-polling, eventsource or htmlfile (each SockJS message one RFC 7395 element); the endpoint runs in front of the server, each session with its own TCP connection to it; with xmpp.server=prosody or ejabberd (xmpp.ping=server only), tcp, websocket or bosh straight to that server's own endpoint (Prosody's mod_websocket and mod_bosh, ejabberd's ejabberd_http_ws and mod_bosh)",
    words: "XMPP transport",
};

pub const PING: ParamSpec = ParamSpec {
    name: "xmpp.ping",
    kind: Kind::Choice(&["message", "server"]),
    default: "message",
    workloads: &["pingpong"],
    help: "what one ping-pong round is: message (client1 -> client2 -> client1 chat messages) or server (study S2: client1 alone sends XEP-0199 iq pings to its server, each waiting for its pong; s2.total times connect, login and every round)",
    words: "XMPP ping",
};

pub const CLIENT: ParamSpec = ParamSpec {
    name: "xmpp.client",
    kind: Kind::Choice(&["native", "browser"]),
    default: "native",
    workloads: &["pingpong"],
    help: "who is client1 in study S2 (xmpp.ping=server): native (wirebench's own client engine) or browser (headless Chromium running Strophe.js from npm in a page wirebench serves; needs xmpp.transport=websocket, bosh or a SockJS transport (sockjs-client under Strophe's WebSocket transport), `apt-get install chromium` and scripts/install-strophe.sh)",
    words: "XMPP client",
};

pub const ENDPOINT: ParamSpec = ParamSpec {
    name: "xmpp.endpoint",
    kind: Kind::Choice(&["own", "wirebench"]),
    default: "own",
    workloads: &["pingpong"],
    help: "xmpp.ping=server with xmpp.server=prosody or ejabberd: whose web endpoint the client reaches, the server's own (own: Prosody's mod_websocket and mod_bosh, ejabberd's ejabberd_http_ws and mod_bosh) or wirebench's gateway in front of the server's client port (wirebench; the only way to SockJS, which neither server has)",
    words: "web endpoint",
};

pub const FLUSH: ParamSpec = ParamSpec {
    name: "xmpp.flush",
    kind: Kind::Choice(&["on", "all", "off"]),
    default: "on",
    workloads: &["pingpong"],
    help: "xmpp.client=browser: the page calls Strophe's connection.flush() after each ping (on), after every stanza Strophe sends, the login's too (all), or leaves sending to Strophe (off: its BOSH transport sends a queued stanza from a 100 ms idle timer)",
    words: "flush after send",
};

pub const USER_TIMEOUT: ParamSpec = ParamSpec {
    name: "x2x.user_timeout",
    kind: Kind::Duration,
    default: "",
    workloads: &["pingpong", "stream"],
    help: "s2s=x2x or x2x-tfo: TCP_USER_TIMEOUT of the gateways' link connection, how long sent data may stay unacknowledged before the connection is declared dead and the gateways reconnect and resend what was not acknowledged (default 120s: TCP bridges outages shorter than that by retransmission)",
    words: "x2x user timeout",
};

pub const TCP_TIMESTAMPS: ParamSpec = ParamSpec {
    name: "x2x.tcp_timestamps",
    kind: Kind::Choice(ON_OFF),
    default: "on",
    workloads: &["pingpong", "stream"],
    help: "s2s=x2x or x2x-tfo: TCP timestamps (RFC 7323) on the gateways' link connection; off saves 12 bytes in every segment (0.04 s per segment at 2400 bit/s), but only pays while the link's round trip stays below 1 s (Linux's initial retransmission timeout): above it, without timestamps the kernel never gets a valid RTT sample and resends every segment (docs/x2x.md); set as net.ipv4.tcp_timestamps in both gateway hosts for the case",
    words: "x2x TCP timestamps",
};

/// `xmpp.ping`: what one ping-pong round is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ping {
    /// client1 -> client2 -> client1 chat messages (study S1).
    Message,
    /// client1 alone pings its server (XEP-0199; study S2).
    Server,
}

/// `xmpp.client`: who is client1 in study S2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    Native,
    /// Headless Chromium running Strophe.js.
    Browser,
}

/// `xmpp.endpoint`: whose web endpoint a real server's client reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Own,
    /// wirebench's gateway in front of the server's client port.
    Wirebench,
}

/// `xmpp.flush`: when the browser's page flushes Strophe's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    On,
    All,
    Off,
}

/// `s2s`: the link between the two real servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum S2sLink {
    Standard,
    X2x,
    X2xTfo,
}

impl Ping {
    fn from_word(w: &str) -> Option<Ping> {
        Some(match w {
            "message" => Ping::Message,
            "server" => Ping::Server,
            _ => return None,
        })
    }
}

impl Client {
    fn from_word(w: &str) -> Option<Client> {
        Some(match w {
            "native" => Client::Native,
            "browser" => Client::Browser,
            _ => return None,
        })
    }
}

impl Endpoint {
    fn from_word(w: &str) -> Option<Endpoint> {
        Some(match w {
            "own" => Endpoint::Own,
            "wirebench" => Endpoint::Wirebench,
            _ => return None,
        })
    }
}

impl Flush {
    fn from_word(w: &str) -> Option<Flush> {
        Some(match w {
            "on" => Flush::On,
            "all" => Flush::All,
            "off" => Flush::Off,
            _ => return None,
        })
    }

    /// As the browser's page takes it.
    pub fn word(self) -> &'static str {
        match self {
            Flush::On => "on",
            Flush::All => "all",
            Flush::Off => "off",
        }
    }
}

impl S2sLink {
    fn from_word(w: &str) -> Option<S2sLink> {
        Some(match w {
            "standard" => S2sLink::Standard,
            "x2x" => S2sLink::X2x,
            "x2x-tfo" => S2sLink::X2xTfo,
            _ => return None,
        })
    }

    pub fn word(self) -> &'static str {
        match self {
            S2sLink::Standard => "standard",
            S2sLink::X2x => "x2x",
            S2sLink::X2xTfo => "x2x-tfo",
        }
    }

    /// The link as the gateways take it.
    pub fn gateways(self) -> x2x::S2s {
        match self {
            S2sLink::Standard => x2x::S2s::Standard,
            S2sLink::X2x => x2x::S2s::X2x { tfo: false },
            S2sLink::X2xTfo => x2x::S2s::X2x { tfo: true },
        }
    }
}

/// The real servers a case runs, if any: `xmpp.server=prosody` or `ejabberd`, or Prosody
/// when `s2s` is given without `xmpp.server` (a server-to-server link only exists
/// between two servers).
pub fn real_server(case: &Case) -> Option<Server> {
    match case.text(&SERVER) {
        Some("prosody") => Some(Server::Prosody),
        Some("ejabberd") => Some(Server::Ejabberd),
        Some(_) => None,
        None => case.has(&S2S).then_some(Server::Prosody),
    }
}

/// A case's XMPP parameters, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The real servers the case runs, if any: `xmpp.server`, or Prosody when only `s2s`
    /// is given ([`real_server`]).
    pub real_server: Option<Server>,
    /// Whether the case names its server (`xmpp.server`) rather than implying Prosody
    /// with `s2s`, so that what a case needs is said as the case says it.
    pub server_given: bool,
    /// `s2s` if given.
    pub s2s: Option<S2sLink>,
    pub transport: Transport,
    pub ping: Ping,
    pub client: Client,
    pub endpoint: Endpoint,
    pub flush: Flush,
    /// TCP_USER_TIMEOUT of the x2x gateways' link connection (`None`: the gateway's).
    pub user_timeout: Option<Duration>,
    /// TCP timestamps on the x2x gateways' link connection.
    pub tcp_timestamps: bool,
}

impl Params {
    /// A word outside a spec's choices (which the runner refuses) reads as the default.
    pub fn from_case(case: &Case) -> Params {
        Params {
            real_server: real_server(case),
            server_given: case.has(&SERVER),
            s2s: case.text(&S2S).and_then(S2sLink::from_word),
            transport: Transport::from_word(case.text(&TRANSPORT)),
            ping: Ping::from_word(case.choice(&PING)).unwrap_or(Ping::Message),
            client: Client::from_word(case.choice(&CLIENT)).unwrap_or(Client::Native),
            endpoint: Endpoint::from_word(case.choice(&ENDPOINT)).unwrap_or(Endpoint::Own),
            flush: Flush::from_word(case.choice(&FLUSH)).unwrap_or(Flush::On),
            user_timeout: case.duration(&USER_TIMEOUT),
            tcp_timestamps: case.choice(&TCP_TIMESTAMPS) != "off",
        }
    }

    /// Study S2's test: client1 pings its own server.
    pub fn is_s2(&self) -> bool {
        self.ping == Ping::Server
    }

    pub fn in_browser(&self) -> bool {
        self.client == Client::Browser
    }

    /// Why a case needs its real server, as the case says it: `xmpp.server=prosody`, or
    /// `s2s=x2x` (which implies Prosody).
    pub fn server_reason(&self) -> String {
        match (self.server_given, self.real_server) {
            (true, Some(s)) => format!("{}={}", SERVER.name, s.name()),
            _ => format!("{}={}", S2S.name, self.s2s.map_or("", S2sLink::word)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specs and the enums cannot drift: a choice added to a spec needs a variant.
    #[test]
    fn every_choice_parses() {
        for w in TRANSPORT.choices() {
            assert_eq!(Transport::from_word(Some(w)).word(), *w, "xmpp.transport");
        }
        for w in PING.choices() {
            assert!(Ping::from_word(w).is_some(), "xmpp.ping={w}");
        }
        for w in CLIENT.choices() {
            assert!(Client::from_word(w).is_some(), "xmpp.client={w}");
        }
        for w in ENDPOINT.choices() {
            assert!(Endpoint::from_word(w).is_some(), "xmpp.endpoint={w}");
        }
        for w in FLUSH.choices() {
            assert_eq!(Flush::from_word(w).map(Flush::word), Some(*w), "xmpp.flush");
        }
        for w in S2S.choices() {
            assert_eq!(S2sLink::from_word(w).map(S2sLink::word), Some(*w), "s2s");
        }
        for w in SERVER.choices() {
            // Every set-up but the built-in one is a real server.
            let real = [Server::Prosody, Server::Ejabberd]
                .into_iter()
                .any(|s| s.name() == *w);
            assert!(real || *w == "builtin", "xmpp.server={w}");
        }
    }
}
