//! MQTT workloads between two clients through one broker. client1 runs on the case's
//! thread (the lab's client host, or here on loopback); client2 runs on a thread of its
//! own beside the broker (in the lab's server host). With a link, each message crosses it
//! once, as in study S1's XMPP and IRC rows (only their server-to-server link crosses).
//!
//! - ping-pong: client1 publishes exactly `payload` random bytes on `ping`; client2,
//!   subscribed to `ping`, answers with as many on `pong` after `think`; client1,
//!   subscribed to `pong`, times the round trip from its write to the read that completes
//!   the answer (think time excluded). Both clients are connected and subscribed before
//!   round 1, so `rtt.first` is the first message through the established broker (the
//!   set-up is `mqtt.connect` and `mqtt.subscribe`).
//! - stream: a warm-up message (`mqtt.first_delivery`), then `count` messages back to
//!   back on `ping`, timed from the first write until client2 has read the last one; at
//!   most [`MqttRun::window_bytes`] ahead of client2 (and, at QoS 1, within the broker's
//!   Receive Maximum).
//!
//! Every payload is checked against the sender's (both sides derive it from the seed); a
//! mismatch counts in `messages.corrupt`. Each client's QoS is `mqtt.qos`, for its
//! messages and its subscription. The loops are the shared chat workloads'
//! (`wirebench-chat`); this module brings MQTT's session and figures.

use crate::MQTT_CONNECT;
use crate::MQTT_FIRST_DELIVERY;
use crate::MQTT_PUBLISH_BYTES;
use crate::MQTT_SUBSCRIBE;
use crate::conn::MqttConn;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use wirebench_chat::{self as chat, Chat, Client2, Incoming, Plan, Style};
use wirebench_mqtt::{Config, Event, QoS, Version};
use wirebench_protocol::seeded::random_bytes;
use wirebench_protocol::tcpinfo;
use wirebench_protocol::{Case, Ctx, Outcome, WorkloadError};

/// client1 publishes here and client2 subscribes (short: every byte crosses a 2400 bit/s
/// link in every message).
pub const PING: &str = "ping";
/// client2 answers here.
pub const PONG: &str = "pong";

/// Most bytes (payload and 64 of overhead per message) a stream keeps ahead of client2
/// without a rate limit: enough for loopback's pipe at any payload. On a rate-limited
/// link the plugin sets a window of a round trip and a second of the link's bytes, so a
/// stream stops within seconds of its last message ([`MqttRun::window_bytes`]).
pub const STREAM_WINDOW_BYTES: u64 = 1 << 20;

/// Most messages a stream keeps ahead of client2, whatever their size: Mosquitto holds
/// 20 in flight to a subscriber and queues 1,000 more (`max_inflight_messages`,
/// `max_queued_messages`), then drops what comes ("Outgoing messages are being dropped"
/// in its log; tried: a QoS 1 stream of 200,000 64-byte messages on loopback lost some).
pub const MAX_AHEAD: u64 = 1000;

/// Where the clients connect.
#[derive(Debug, Clone)]
pub struct Topology {
    pub broker: SocketAddr,
    /// client2's network namespace (the lab's server host), or `None`: here.
    pub client2_netns: Option<String>,
}

#[derive(Debug, Clone)]
pub struct MqttRun {
    pub topology: Topology,
    pub version: Version,
    pub qos: QoS,
    pub payload: usize,
    /// Ping-pong rounds, or stream messages.
    pub count: u64,
    pub think: Duration,
    pub seed: u64,
    pub stream: bool,
    /// Bytes a stream keeps ahead of client2 (at least two messages).
    pub window_bytes: u64,
    /// How often a stream samples client1's TCP_INFO (`tcp.info`); `None`: never.
    pub tcp_info: Option<Duration>,
}

/// `mqtt.version` as the engine's version.
pub fn version_of(case: &Case) -> Version {
    version_from_word(case.choice(&crate::VERSION)).unwrap_or(Version::V311)
}

/// `mqtt.qos` as the engine's QoS.
pub fn qos_of(case: &Case) -> QoS {
    qos_from_word(case.choice(&crate::QOS)).unwrap_or(QoS::AtMostOnce)
}

fn version_from_word(word: &str) -> Option<Version> {
    match word {
        "3.1.1" => Some(Version::V311),
        "5" => Some(Version::V5),
        _ => None,
    }
}

fn qos_from_word(word: &str) -> Option<QoS> {
    match word {
        "0" => Some(QoS::AtMostOnce),
        "1" => Some(QoS::AtLeastOnce),
        _ => None,
    }
}

impl MqttRun {
    /// The run a case asks for, between the clients of `topology`.
    pub fn from_case(case: &Case, topology: Topology, seed: u64) -> MqttRun {
        let w = case.workload_params();
        MqttRun {
            topology,
            version: version_of(case),
            qos: qos_of(case),
            payload: case.payload() as usize,
            count: w.messages(),
            think: w.think(),
            seed,
            stream: w.is_stream(),
            window_bytes: STREAM_WINDOW_BYTES,
            tcp_info: tcpinfo::interval(case),
        }
    }

    fn config(&self, client_id: &str) -> Config {
        let mut cfg = Config::new(self.version, client_id);
        // Room for the payload with any header and properties, so the broker's packets
        // are never refused as too large.
        cfg.max_packet_size = (self.payload as u64 + 1024)
            .clamp(64 * 1024, u64::from(wirebench_mqtt::MAX_PACKET))
            as u32;
        // client2 sends nothing while it waits `think`; the broker closes a session
        // silent for 1.5 keep-alive intervals (3.1.1 §3.1.2.10).
        cfg.keep_alive_s = (2 * self.think.as_secs()).clamp(60, u64::from(u16::MAX)) as u16;
        cfg
    }
}

impl MqttRun {
    fn plan(&self) -> Plan {
        Plan {
            payload: self.payload,
            count: self.count,
            think: self.think,
            seed: self.seed,
            stream: self.stream,
            tcp_info: self.tcp_info,
        }
    }
}

/// What differs in MQTT's chat: PUBLISH sizes are a metric, client2 is served every 2 ms.
const STYLE: Style = Style {
    first_delivery: MQTT_FIRST_DELIVERY,
    answer_grace: Duration::ZERO,
    service_wait: Duration::from_millis(2),
    send_metric: Some(MQTT_PUBLISH_BYTES),
    tagged: false,
};

/// A client's session as the chat workloads use it: it publishes on `to` and reads what
/// arrives on `from`.
struct MqttChat {
    conn: MqttConn,
    to: &'static str,
    from: &'static str,
    qos: QoS,
}

impl Chat for MqttChat {
    type Body = Vec<u8>;

    fn body(state: &mut u64, len: usize) -> Vec<u8> {
        random_bytes(state, len)
    }

    fn send(&mut self, body: &Vec<u8>, _tag: &str) -> Result<u64, WorkloadError> {
        self.conn.publish(self.to, body, self.qos)
    }

    fn recv(&mut self, deadline: Instant) -> Result<Option<Incoming<Vec<u8>>>, WorkloadError> {
        Ok(match self.conn.poll_event(deadline)? {
            Some((at, Event::Message(m))) if m.topic == self.from => Some(Incoming {
                at,
                body: m.payload,
                tag: None,
            }),
            _ => None,
        })
    }

    fn may_send(&self) -> bool {
        self.qos == QoS::AtMostOnce || self.conn.client.send_quota() > 0
    }

    fn unacked(&self) -> u64 {
        u64::from(self.conn.client.in_flight())
    }

    fn socket(&self) -> Option<&std::net::TcpStream> {
        Some(self.conn.socket())
    }

    fn close(self) {
        self.conn.close();
    }
}

/// Runs one case's workload; `out` already holds the broker's figures.
pub fn run(run: &MqttRun, ctx: &Ctx, out: &mut Outcome) -> Result<(), WorkloadError> {
    // Connecting is a few round trips, on a 2400 bit/s link with delay seconds each.
    let timeout = ctx.connect_timeout.max(Duration::from_secs(60));
    let plan = run.plan();
    let (broker, cfg2, qos) = (run.topology.broker, run.config("wirebench-2"), run.qos);
    let client2 = Client2::start(
        "wb-mqtt-client2",
        run.topology.client2_netns.clone(),
        &plan,
        move |stop| {
            let mut conn = MqttConn::connect(broker, cfg2, "client2", timeout, stop)?;
            conn.subscribe(PING, qos, timeout)?;
            Ok(MqttChat {
                conn,
                to: PONG,
                from: PING,
                qos,
            })
        },
        2 * timeout + Duration::from_secs(5),
        ctx,
    )?;
    let conn = MqttConn::connect(
        run.topology.broker,
        run.config("wirebench-1"),
        "client1",
        timeout,
        ctx.shutdown,
    )?;
    out.put(MQTT_CONNECT, conn.connect_time.as_secs_f64());
    let mut c1 = MqttChat {
        conn,
        to: PING,
        from: PONG,
        qos,
    };
    if !run.stream {
        let t = c1.conn.subscribe(PONG, run.qos, timeout)?;
        out.put(MQTT_SUBSCRIBE, t.as_secs_f64());
    }
    let r = if run.stream {
        let window = (run.window_bytes / (run.payload as u64 + 64)).clamp(2, MAX_AHEAD);
        chat::stream(&plan, &STYLE, window, ctx, &mut c1, &client2, out).map(|timed| {
            if timed {
                out.notes.push(format!(
                    "MQTT stream: timed from the first PUBLISH to client2's last read, after a \
                     warm-up message (mqtt.first_delivery); at most {window} messages ahead of \
                     client2"
                ));
            }
        })
    } else {
        chat::ping_pong(&plan, &STYLE, ctx, &mut c1, &client2, out)
    };
    // A failure of client2 explains client1's.
    if let (Err(_), Some(e)) = (&r, client2.failed()) {
        return Err(WorkloadError::Peer(e));
    }
    r?;
    if run.qos == QoS::AtLeastOnce {
        c1.conn.drain_acks(ctx.stall_timeout)?;
    }
    client2.finish()?;
    c1.close();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_chat::{seed_a, seed_b};

    /// The specs and the engine's enums cannot drift: a choice added to a spec needs a
    /// variant.
    #[test]
    fn every_choice_parses() {
        for w in crate::VERSION.choices() {
            assert!(version_from_word(w).is_some(), "mqtt.version={w}");
        }
        for w in crate::QOS.choices() {
            assert!(qos_from_word(w).is_some(), "mqtt.qos={w}");
        }
    }

    #[test]
    fn payloads_are_reproducible() {
        let (mut a, mut b) = (seed_a(7), seed_a(7));
        let x = random_bytes(&mut a, 1000);
        assert_eq!(x, random_bytes(&mut b, 1000));
        assert_ne!(x, random_bytes(&mut a, 1000));
        assert_ne!(
            random_bytes(&mut seed_a(7), 8),
            random_bytes(&mut seed_b(7), 8)
        );
    }
}
