//! The one blocking driver for the sans-IO MQTT engine (`wirebench-mqtt`): a TCP
//! connection opened from the calling thread's network namespace, every event stamped
//! with the CLOCK_MONOTONIC time its bytes were read, the engine's keep-alive timer
//! served between reads (by the one blocking driver, `wirebench_engine::blocking`). The
//! workloads and the tests use it.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wirebench_engine::blocking::{DriveError, Driver, Tcp, Wait, wait_for};
use wirebench_model::clock::monotonic_ns;
use wirebench_mqtt::{Client, Config, Event, MqttError, QoS, reason};
use wirebench_protocol::Fault;
use wirebench_protocol::WorkloadError;

/// One client's session with the broker.
pub struct MqttConn {
    driver: Driver<Tcp>,
    pub client: Client,
    addr: SocketAddr,
    /// `client1`, `client2`: who, in errors.
    who: &'static str,
    /// From the start of `connect()` to CONNACK.
    pub connect_time: Duration,
}

impl MqttConn {
    /// The connection to the broker, for its TCP_INFO series.
    pub fn socket(&self) -> &TcpStream {
        &self.driver.io.stream
    }

    /// An engine error as a case error, typed by who is at fault.
    pub fn error(&self, e: MqttError) -> WorkloadError {
        let what = format!("MQTT {} with the broker at {}: {e}", self.who, self.addr);
        match e {
            MqttError::Config(_) | MqttError::Usage(_) => WorkloadError::Input(what),
            MqttError::ConnectTimeout { .. } | MqttError::KeepAliveTimeout { .. } => {
                WorkloadError::Link(what)
            }
            _ => WorkloadError::Peer(what),
        }
    }

    /// Connects from this thread's network namespace and waits for CONNACK, failing
    /// after `timeout` or when `shutdown` is set.
    pub fn connect(
        addr: SocketAddr,
        mut cfg: Config,
        who: &'static str,
        timeout: Duration,
        shutdown: &AtomicBool,
    ) -> Result<MqttConn, WorkloadError> {
        let t = Instant::now();
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .and_then(|s| s.set_nodelay(true).map(|()| s))
            .map_err(|error| WorkloadError::Connect {
                addr: addr.to_string(),
                error,
            })?;
        cfg.connect_timeout_ns = Some(timeout.as_nanos() as u64);
        let client = Client::new(cfg, monotonic_ns())
            .map_err(|e| WorkloadError::because(Fault::Input, format!("MQTT {who}"), e))?;
        let mut c = MqttConn {
            driver: Driver::new(Tcp::new(stream), 64 * 1024),
            client,
            addr,
            who,
            connect_time: Duration::ZERO,
        };
        // No deadline here: the engine fails the session at `connect_timeout_ns`.
        let connected = wait_for(None, shutdown, |d| {
            Ok::<_, WorkloadError>(match c.poll_event(d)? {
                Some((_, Event::Connected(_))) => Some(()),
                _ => None,
            })
        })?;
        match connected {
            Wait::Got(()) => {
                c.connect_time = t.elapsed();
                Ok(c)
            }
            Wait::Stopped | Wait::Deadline => Err(WorkloadError::Interrupted),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Writes what the engine has queued.
    pub fn flush(&mut self) -> Result<(), WorkloadError> {
        self.driver
            .flush(&mut self.client)
            .map_err(|error| WorkloadError::Io {
                during: "writing to the MQTT broker",
                error,
            })
    }

    /// The next event with the time its bytes were read, or `None` at `deadline`. The
    /// session ending is an error (after our DISCONNECT: `None`).
    pub fn poll_event(&mut self, deadline: Instant) -> Result<Option<(u64, Event)>, WorkloadError> {
        match self.driver.poll_event(&mut self.client, deadline) {
            Ok(Some((_, Event::Closed { reason }))) => Err(WorkloadError::Peer(format!(
                "MQTT {} with the broker at {}: session closed: {reason}",
                self.who, self.addr
            ))),
            Ok(e) => Ok(e),
            Err(DriveError::Engine(e)) | Err(DriveError::Eof(Err(e))) => Err(self.error(e)),
            Err(DriveError::Eof(Ok(()))) => Ok(None),
            Err(DriveError::Io { write, error }) => Err(WorkloadError::Io {
                during: if write {
                    "writing to the MQTT broker"
                } else {
                    "reading from the MQTT broker"
                },
                error,
            }),
        }
    }

    /// SUBSCRIBE to `filter` and wait for the SUBACK; a refusal (or a lower QoS than
    /// asked) is the broker's error. Returns how long it took.
    pub fn subscribe(
        &mut self,
        filter: &str,
        qos: QoS,
        timeout: Duration,
    ) -> Result<Duration, WorkloadError> {
        let t = Instant::now();
        let id = self
            .client
            .subscribe(&[(filter, qos)])
            .map_err(|e| self.error(e))?;
        let deadline = t + timeout;
        loop {
            match self.poll_event(deadline)? {
                Some((_, Event::Subscribed { packet_id, codes })) if packet_id == id => {
                    let granted = codes.first().copied().unwrap_or(0x80);
                    if granted != qos.bits() {
                        return Err(WorkloadError::Peer(format!(
                            "MQTT {}: the broker at {} answered the subscription to {filter:?} \
                             at QoS {} with {granted:#04x} ({})",
                            self.who,
                            self.addr,
                            qos.bits(),
                            reason::describe(
                                granted,
                                wirebench_mqtt::wire::PacketType::SubAck,
                                self.client.version()
                            )
                        )));
                    }
                    return Ok(t.elapsed());
                }
                Some(_) => {}
                None => {
                    return Err(WorkloadError::Link(format!(
                        "MQTT {}: no SUBACK from the broker at {} within {} s",
                        self.who,
                        self.addr,
                        timeout.as_secs()
                    )));
                }
            }
        }
    }

    /// Queues and writes one PUBLISH; returns its size in bytes on the wire (above TCP).
    pub fn publish(&mut self, topic: &str, payload: &[u8], qos: QoS) -> Result<u64, WorkloadError> {
        let before = self.client.bytes_out;
        self.client
            .publish(topic, payload, qos, false)
            .map_err(|e| self.error(e))?;
        let n = self.client.bytes_out - before;
        self.flush()?;
        Ok(n)
    }

    /// Waits (at most `limit`) until every QoS 1 message has its PUBACK.
    pub fn drain_acks(&mut self, limit: Duration) -> Result<(), WorkloadError> {
        let deadline = Instant::now() + limit;
        while self.client.in_flight() > 0 && Instant::now() < deadline {
            self.poll_event(deadline)?;
        }
        Ok(())
    }

    /// DISCONNECT, then a short wait (1 s at most) for the broker to close.
    pub fn close(mut self) {
        if self.client.disconnect().is_ok() && self.flush().is_ok() {
            let deadline = Instant::now() + Duration::from_secs(1);
            while let Ok(Some(_)) = self.poll_event(deadline) {}
        }
    }
}
