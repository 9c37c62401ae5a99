//! The client endpoint (RFC 7252 §4, §5; RFC 7959 §2): requests sent Confirmable or
//! Non-confirmable, retransmitted per §4.2, matched to ACKs, RSTs and responses,
//! continued block by block, and counted.
//!
//! A request ([`Client::request`]) is one or more exchanges: one for a plain request,
//! one per block for a Block1 upload or a Block2 download. Each exchange has its own
//! Message ID (§4.4) and a fresh random token (§5.3.1). NSTART (§4.7) bounds the
//! exchanges outstanding towards one destination; a request waits its turn in order.
//!
//! # Counting spurious retransmissions
//!
//! A retransmission is *spurious* when the copy it repeats was not lost: the server got
//! an earlier copy, so this one only added load. The client cannot see which copy
//! arrived, but it sees the consequence: a server deduplicating by Message ID (§4.5)
//! acknowledges every copy it receives, so each ACK for a Message ID after the first one
//! shows one copy more than the server needed. [`Stats::spurious_retransmissions`]
//! counts these extra ACKs, at most as many as the message had retransmissions. It is a
//! lower bound: a lost extra ACK hides one, and so does one that arrives after the
//! driver stopped reading or after EXCHANGE_LIFETIME. On a lossless path it is exact,
//! and equals the server's count of duplicates ([`crate::ServerStats::duplicates`]).
//! The ACK of an original that arrives after the retransmission left is what happens at
//! a 1 s one-way delay with the default ACK_TIMEOUT: the original's ACK completes the
//! exchange, the retransmission's ACK follows a round trip later and is counted.

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::block::{Block, Szx};
use crate::message::{Code, DecodeError, Message, Type, option};
use crate::params::{ParamsError, Rng, TransmissionParams};
use crate::recent::Recent;
use crate::{MAX_DATAGRAM, Transmit};

/// The client's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// The transmission parameters (§4.8).
    pub params: TransmissionParams,
    /// Token length in bytes, 0 to 8 (§5.3.1). 0 saves bytes on a slow link but then
    /// only the Message ID ties a piggybacked response to its request.
    pub token_len: usize,
    /// How long to wait for a response after a Non-confirmable request was sent or a
    /// Confirmable one was acknowledged with an Empty ACK; RFC 7252 sets no such timer.
    pub response_timeout_ns: u64,
    /// The largest body a Block2 download may assemble, to bound memory.
    pub max_body: usize,
    /// Entries of each deduplication record (§4.5), to bound memory.
    pub dedup_capacity: usize,
}

impl ClientConfig {
    /// `params`, a 4-byte token, MAX_TRANSMIT_WAIT (§4.8.2) as the response timeout, a
    /// 16 MiB body limit and 1024 remembered Message IDs.
    pub fn new(params: TransmissionParams) -> ClientConfig {
        ClientConfig {
            params,
            token_len: 4,
            response_timeout_ns: params.max_transmit_wait_ns(),
            max_body: 16 << 20,
            dedup_capacity: 1024,
        }
    }
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig::new(TransmissionParams::default())
    }
}

/// Why a request cannot be sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The configuration is invalid.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// A token over 8 bytes.
    #[error("token length {0}: at most 8 (RFC 7252 §3)")]
    TokenLength(usize),
    /// Not a method code.
    #[error("{0} is not a method code (RFC 7252 §12.1.1)")]
    NotAMethod(Code),
    /// The request does not fit one datagram, or needs more than 2^20 blocks.
    #[error("the request needs {0} bytes in one datagram: send it in blocks or smaller")]
    TooLarge(usize),
}

/// Why a datagram was dropped. The engine's state is unharmed; a driver counts these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatagramError {
    /// Not a CoAP message (§3); a Confirmable one was answered with RST (§4.2).
    #[error(transparent)]
    Malformed(#[from] DecodeError),
    /// A valid message that matches nothing outstanding (answered with RST if
    /// Confirmable, §4.2).
    #[error("a {0:?} message {1} matches no exchange")]
    Unexpected(Type, Code),
}

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The server.
    pub destination: SocketAddr,
    /// The method.
    pub method: Code,
    /// The Uri-Path, segments separated by `/`.
    pub path: String,
    /// The request body.
    pub payload: Vec<u8>,
    /// Send Confirmable (retransmitted, acknowledged) rather than Non-confirmable.
    pub confirmable: bool,
    /// Block size: a body longer than it goes in Block1 blocks (RFC 7959 §2.5), and a GET
    /// asks for Block2 blocks of it (early negotiation, §2.4). `None`: no Block option
    /// is sent, though a Block2 response is still followed to its end.
    pub block_size: Option<Szx>,
}

impl Request {
    /// A GET of `path`.
    pub fn get(destination: SocketAddr, path: &str, confirmable: bool) -> Request {
        Request {
            destination,
            method: Code::GET,
            path: path.to_owned(),
            payload: Vec::new(),
            confirmable,
            block_size: None,
        }
    }
}

/// Identifies a request in events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// A request's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The request.
    pub id: RequestId,
    /// The final response code.
    pub code: Code,
    /// The body: every Block2 block assembled.
    pub payload: Vec<u8>,
    /// First transmission of the first exchange to the final response, ns.
    pub elapsed_ns: u64,
    /// The last exchange's round trip: its first transmission to its response, ns.
    pub round_trip_ns: u64,
    /// Exchanges (one per block).
    pub exchanges: u32,
    /// Retransmissions over all its exchanges.
    pub retransmissions: u32,
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// MAX_RETRANSMIT retransmissions unacknowledged (§4.2), or no response within the
    /// response timeout.
    Timeout,
    /// The server answered with RST (§4.2, §4.3).
    Reset,
    /// A Block2 block out of order, or a body over the limit (RFC 7959 §2.4).
    BadBlock,
}

/// What the client tells its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A request completed.
    Response(Response),
    /// A request failed.
    Failed {
        /// The request.
        id: RequestId,
        /// Why.
        failure: Failure,
        /// First transmission to failure, ns.
        elapsed_ns: u64,
    },
}

/// What a report needs, counted since the client was made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Exchanges started: first transmissions of a request message (one per block).
    pub requests_sent: u64,
    /// Of those, Confirmable.
    pub confirmable_sent: u64,
    /// Retransmissions of Confirmable requests (§4.2).
    pub retransmissions: u64,
    /// Retransmissions shown unnecessary by an extra ACK (see the module docs).
    pub spurious_retransmissions: u64,
    /// Requests that failed with [`Failure::Timeout`].
    pub timeouts: u64,
    /// RSTs matched to an exchange.
    pub resets: u64,
    /// Requests completed with a response.
    pub responses: u64,
    /// ACKs for a Message ID already acknowledged.
    pub duplicate_acks: u64,
    /// Response copies not delivered again (duplicate piggybacked or separate ones).
    pub duplicate_responses: u64,
    /// Empty ACKs sent for separate Confirmable responses (§5.2.2).
    pub acks_sent: u64,
    /// RSTs sent.
    pub resets_sent: u64,
    /// Datagrams dropped as malformed.
    pub malformed: u64,
    /// Datagrams dropped as matching nothing.
    pub unexpected: u64,
    /// Exchanges completed, and the sum, least and most of their round trips (ns).
    pub round_trips: u64,
    pub round_trip_sum_ns: u64,
    pub round_trip_min_ns: u64,
    pub round_trip_max_ns: u64,
}

impl Stats {
    fn round_trip(&mut self, ns: u64) {
        self.round_trip_min_ns = if self.round_trips == 0 {
            ns
        } else {
            self.round_trip_min_ns.min(ns)
        };
        self.round_trips += 1;
        self.round_trip_sum_ns += ns;
        self.round_trip_max_ns = self.round_trip_max_ns.max(ns);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for an NSTART slot.
    Waiting,
    /// In the transmit queue.
    Queued,
    /// Sent Confirmable, not acknowledged: retransmit at `at`.
    AwaitAck { timeout: u64, at: u64 },
    /// Sent Non-confirmable, or acknowledged Empty: give up at `at`.
    AwaitResponse { at: u64 },
}

#[derive(Debug)]
struct Exchange {
    message_id: u16,
    token: Vec<u8>,
    datagram: Vec<u8>,
    phase: Phase,
    sent_at: u64,
    transmissions: u32,
}

impl Exchange {
    /// An outstanding interaction (§4.7): a CON not yet acknowledged, or a NON request
    /// not yet answered.
    fn outstanding(&self, confirmable: bool) -> bool {
        match self.phase {
            Phase::Waiting => false,
            Phase::Queued | Phase::AwaitAck { .. } => true,
            Phase::AwaitResponse { .. } => !confirmable,
        }
    }

    fn deadline(&self) -> Option<u64> {
        match self.phase {
            Phase::AwaitAck { at, .. } | Phase::AwaitResponse { at } => Some(at),
            Phase::Waiting | Phase::Queued => None,
        }
    }
}

#[derive(Debug)]
struct Op {
    id: RequestId,
    request: Request,
    /// Bytes of the body acknowledged by the server so far (Block1).
    uploaded: usize,
    /// Block1 size in use, when the body goes in blocks.
    upload_szx: Option<Szx>,
    /// Bytes of the response body so far (Block2).
    body: Vec<u8>,
    /// Block2 size to ask for, once known or requested.
    download_szx: Option<Szx>,
    first_sent_at: Option<u64>,
    exchanges: u32,
    retransmissions: u32,
    exchange: Exchange,
}

/// What the client knows of a Confirmable message once acknowledged.
#[derive(Debug, Clone, Copy)]
struct Acked {
    retransmissions: u32,
    acks: u32,
}

#[derive(Debug)]
enum Out {
    Datagram(Transmit),
    First(RequestId),
}

/// The client endpoint. See the module docs.
#[derive(Debug)]
pub struct Client {
    config: ClientConfig,
    rng: Rng,
    next_message_id: u16,
    next_id: u64,
    ops: Vec<Op>,
    out: VecDeque<Out>,
    events: VecDeque<Event>,
    /// Confirmable messages acknowledged, for extra ACKs (spurious retransmissions).
    acked: Recent<Acked>,
    /// Separate responses received (§4.5), with the ACK to repeat for a duplicate.
    seen: Recent<Option<Vec<u8>>>,
    stats: Stats,
}

impl Client {
    /// A client; `seed` fixes its Message IDs, tokens and timeouts.
    pub fn new(config: ClientConfig, seed: u64) -> Result<Client, RequestError> {
        config.params.validate()?;
        if config.token_len > crate::message::MAX_TOKEN_LENGTH {
            return Err(RequestError::TokenLength(config.token_len));
        }
        let mut rng = Rng::new(seed);
        // A random first Message ID (§4.4), so that a restarted client is unlikely to
        // reuse the IDs the server still remembers.
        let next_message_id = rng.next_u64() as u16;
        Ok(Client {
            acked: Recent::new(config.dedup_capacity),
            seen: Recent::new(config.dedup_capacity),
            config,
            rng,
            next_message_id,
            next_id: 0,
            ops: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        })
    }

    /// The counts so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Entries in the larger of the two deduplication records (for the fuzz target's
    /// bound check).
    #[doc(hidden)]
    pub fn acked_len(&self) -> usize {
        self.acked.len().max(self.seen.len())
    }

    /// Requests not yet completed or failed.
    pub fn pending(&self) -> usize {
        self.ops.len()
    }

    /// Starts a request; its first exchange goes out when NSTART allows.
    pub fn request(&mut self, request: Request) -> Result<RequestId, RequestError> {
        if !request.method.is_request() {
            return Err(RequestError::NotAMethod(request.method));
        }
        let block = request.block_size;
        let upload_szx = block.filter(|s| request.payload.len() > s.size());
        let blocks = upload_szx.map_or(1, |s| request.payload.len().div_ceil(s.size()));
        if blocks > Block::MAX_NUM as usize + 1 {
            return Err(RequestError::TooLarge(request.payload.len()));
        }
        let id = RequestId(self.next_id);
        let mut op = Op {
            id,
            uploaded: 0,
            upload_szx,
            body: Vec::new(),
            download_szx: block.filter(|_| request.method == Code::GET),
            first_sent_at: None,
            exchanges: 0,
            retransmissions: 0,
            exchange: Exchange {
                message_id: 0,
                token: Vec::new(),
                datagram: Vec::new(),
                phase: Phase::Waiting,
                sent_at: 0,
                transmissions: 0,
            },
            request,
        };
        op.exchange = self.build(&op)?;
        self.next_id += 1;
        self.ops.push(op);
        self.pump();
        Ok(id)
    }

    /// The next exchange of `op`: the next block, or the whole request.
    fn build(&mut self, op: &Op) -> Result<Exchange, RequestError> {
        let r = &op.request;
        let kind = if r.confirmable {
            Type::Confirmable
        } else {
            Type::NonConfirmable
        };
        let message_id = self.next_message_id;
        self.next_message_id = self.next_message_id.wrapping_add(1);
        let token = self.fresh_token(r.destination);
        let mut m = Message::new(kind, r.method, message_id);
        m.token = token.clone();
        m.set_path(&r.path);
        if let Some(szx) = op.upload_szx {
            let num = (op.uploaded / szx.size()) as u32;
            let end = (op.uploaded + szx.size()).min(r.payload.len());
            let more = end < r.payload.len();
            let value = Block { num, more, szx }
                .encode()
                .map_err(|_| too_large(r))?;
            m.add_option(option::BLOCK1, value);
            if num == 0 {
                // Size1 in the first block tells the server the whole size (RFC 7959 §4).
                m.add_uint_option(option::SIZE1, r.payload.len() as u32);
            }
            m.payload = r.payload[op.uploaded..end].to_vec();
        } else {
            m.payload = r.payload.clone();
        }
        if let Some(szx) = op.download_szx {
            let num = (op.body.len() / szx.size()) as u32;
            let value = Block {
                num,
                more: false,
                szx,
            };
            m.add_option(option::BLOCK2, value.encode().map_err(|_| too_large(r))?);
        }
        let datagram = m.encode().map_err(|_| too_large(r))?;
        if datagram.len() > MAX_DATAGRAM {
            return Err(RequestError::TooLarge(datagram.len()));
        }
        Ok(Exchange {
            message_id,
            token,
            datagram,
            phase: Phase::Waiting,
            sent_at: 0,
            transmissions: 0,
        })
    }

    /// A random token no live exchange towards `destination` has (§5.3.1).
    fn fresh_token(&mut self, destination: SocketAddr) -> Vec<u8> {
        let len = self.config.token_len;
        loop {
            let bytes = self.rng.next_u64().to_be_bytes();
            let token = bytes[..len].to_vec();
            let taken = self
                .ops
                .iter()
                .any(|o| o.request.destination == destination && o.exchange.token == token);
            if !taken || len == 0 {
                return token;
            }
        }
    }

    /// Queues the waiting exchanges that NSTART (§4.7) lets out, oldest first.
    fn pump(&mut self) {
        let nstart = self.config.params.nstart as usize;
        for i in 0..self.ops.len() {
            if self.ops[i].exchange.phase != Phase::Waiting {
                continue;
            }
            let dest = self.ops[i].request.destination;
            let busy = self
                .ops
                .iter()
                .filter(|o| {
                    o.request.destination == dest && o.exchange.outstanding(o.request.confirmable)
                })
                .count();
            if busy < nstart {
                self.ops[i].exchange.phase = Phase::Queued;
                self.out.push_back(Out::First(self.ops[i].id));
            }
        }
    }

    /// The next datagram to send at `now`.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        loop {
            match self.out.pop_front()? {
                Out::Datagram(t) => return Some(t),
                Out::First(id) => {
                    if let Some(t) = self.first_transmission(now, id) {
                        return Some(t);
                    }
                }
            }
        }
    }

    fn first_transmission(&mut self, now: u64, id: RequestId) -> Option<Transmit> {
        let params = self.config.params;
        let response_timeout = self.config.response_timeout_ns;
        let timeout = params.initial_timeout_ns(&mut self.rng);
        let op = self.ops.iter_mut().find(|o| o.id == id)?;
        if op.exchange.phase != Phase::Queued {
            return None;
        }
        let ex = &mut op.exchange;
        ex.phase = if op.request.confirmable {
            self.stats.confirmable_sent += 1;
            Phase::AwaitAck {
                timeout,
                at: now.saturating_add(timeout),
            }
        } else {
            Phase::AwaitResponse {
                at: now.saturating_add(response_timeout),
            }
        };
        ex.sent_at = now;
        ex.transmissions = 1;
        op.first_sent_at.get_or_insert(now);
        op.exchanges += 1;
        self.stats.requests_sent += 1;
        Some(Transmit {
            destination: op.request.destination,
            datagram: ex.datagram.clone(),
        })
    }

    /// When [`Client::handle_timeout`] wants to be called, if ever.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.ops.iter().filter_map(|o| o.exchange.deadline()).min()
    }

    /// Retransmits the Confirmable messages whose timeout passed (§4.2: the timeout
    /// doubles each time, up to MAX_RETRANSMIT retransmissions), and fails the
    /// exchanges out of retransmissions or past the response timeout.
    pub fn handle_timeout(&mut self, now: u64) {
        let max = self.config.params.max_retransmit;
        let mut failed = Vec::new();
        for op in &mut self.ops {
            let ex = &mut op.exchange;
            match ex.phase {
                Phase::AwaitAck { timeout, at } if at <= now => {
                    if ex.transmissions > max {
                        failed.push(op.id);
                        continue;
                    }
                    let timeout = timeout.saturating_mul(2);
                    ex.phase = Phase::AwaitAck {
                        timeout,
                        at: now.saturating_add(timeout),
                    };
                    ex.transmissions += 1;
                    op.retransmissions += 1;
                    self.stats.retransmissions += 1;
                    self.out.push_back(Out::Datagram(Transmit {
                        destination: op.request.destination,
                        datagram: ex.datagram.clone(),
                    }));
                }
                Phase::AwaitResponse { at } if at <= now => failed.push(op.id),
                _ => {}
            }
        }
        for id in failed {
            self.stats.timeouts += 1;
            self.fail(now, id, Failure::Timeout);
        }
        self.pump();
    }

    fn fail(&mut self, now: u64, id: RequestId, failure: Failure) {
        if let Some(i) = self.ops.iter().position(|o| o.id == id) {
            let op = self.ops.remove(i);
            self.events.push_back(Event::Failed {
                id,
                failure,
                elapsed_ns: now.saturating_sub(op.first_sent_at.unwrap_or(now)),
            });
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// One datagram received at `now` from `from`. An error means it was dropped (and
    /// counted); the client goes on.
    pub fn handle_datagram(
        &mut self,
        now: u64,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), DatagramError> {
        self.acked.purge(now);
        self.seen.purge(now);
        let m = match Message::decode(datagram) {
            Ok(m) => m,
            Err(e) => {
                self.stats.malformed += 1;
                if let Some(rst) = crate::reject_malformed(datagram, &e) {
                    self.send_reset(from, rst);
                }
                return Err(e.into());
            }
        };
        let result = match m.kind {
            Type::Acknowledgement => self.on_ack(now, from, m),
            Type::Reset => self.on_reset(now, from, &m),
            Type::Confirmable | Type::NonConfirmable => self.on_message(now, from, m),
        };
        if result.is_err() {
            self.stats.unexpected += 1;
        }
        self.pump();
        result
    }

    fn send_reset(&mut self, to: SocketAddr, message_id: u16) {
        self.stats.resets_sent += 1;
        self.queue(to, &Message::empty(Type::Reset, message_id));
    }

    fn queue(&mut self, to: SocketAddr, m: &Message) {
        // Empty and echoed messages always encode; a failure would be a bug here, and
        // dropping the datagram is the safe answer to it.
        if let Ok(datagram) = m.encode() {
            self.out.push_back(Out::Datagram(Transmit {
                destination: to,
                datagram,
            }));
        }
    }

    /// The op whose current exchange was sent to `from` with `message_id`.
    fn by_message_id(&self, from: SocketAddr, message_id: u16) -> Option<usize> {
        self.ops.iter().position(|o| {
            o.request.destination == from
                && o.exchange.message_id == message_id
                && o.exchange.deadline().is_some()
        })
    }

    fn on_ack(&mut self, now: u64, from: SocketAddr, m: Message) -> Result<(), DatagramError> {
        if let Some(rec) = self.acked.get_mut(now, &(from, m.message_id)) {
            rec.acks += 1;
            if rec.acks >= 2 {
                self.stats.duplicate_acks += 1;
                if rec.acks - 1 <= rec.retransmissions {
                    self.stats.spurious_retransmissions += 1;
                }
                if m.code != Code::EMPTY {
                    self.stats.duplicate_responses += 1;
                }
            }
            return Ok(());
        }
        let unexpected = DatagramError::Unexpected(m.kind, m.code);
        let i = self
            .by_message_id(from, m.message_id)
            .ok_or(unexpected.clone())?;
        let ex = &self.ops[i].exchange;
        if !matches!(ex.phase, Phase::AwaitAck { .. }) {
            return Err(unexpected);
        }
        let record = Acked {
            retransmissions: ex.transmissions - 1,
            acks: 1,
        };
        let lifetime = self.config.params.exchange_lifetime_ns();
        self.acked.insert(
            now,
            (from, m.message_id),
            now.saturating_add(lifetime),
            record,
        );
        if m.code == Code::EMPTY || m.token != ex.token {
            // An Empty ACK: the response follows separately (§5.2.2). A response whose
            // token is not the request's still acknowledges the message, but it is not
            // the answer (§5.3.2).
            self.ops[i].exchange.phase = Phase::AwaitResponse {
                at: now.saturating_add(self.config.response_timeout_ns),
            };
            return if m.code == Code::EMPTY {
                Ok(())
            } else {
                Err(unexpected)
            };
        }
        self.on_response(now, i, m);
        Ok(())
    }

    fn on_reset(&mut self, now: u64, from: SocketAddr, m: &Message) -> Result<(), DatagramError> {
        if self.acked.get_mut(now, &(from, m.message_id)).is_some() {
            // A RST after the ACK (a duplicate the server no longer knew): nothing to do.
            return Ok(());
        }
        let i = self
            .by_message_id(from, m.message_id)
            .ok_or(DatagramError::Unexpected(m.kind, m.code))?;
        self.stats.resets += 1;
        let id = self.ops[i].id;
        self.fail(now, id, Failure::Reset);
        Ok(())
    }

    /// A Confirmable or Non-confirmable message from the server: a separate response
    /// (§5.2.2) or a response to a Non-confirmable request (§5.2.3).
    fn on_message(&mut self, now: u64, from: SocketAddr, m: Message) -> Result<(), DatagramError> {
        let confirmable = m.kind == Type::Confirmable;
        let unexpected = DatagramError::Unexpected(m.kind, m.code);
        if !m.code.is_response() {
            // A request (this endpoint serves nothing), a CoAP ping (Empty CON, §4.3) or
            // a reserved class: rejected.
            if confirmable {
                self.send_reset(from, m.message_id);
            }
            return if m.code == Code::EMPTY {
                Ok(())
            } else {
                Err(unexpected)
            };
        }
        if let Some(ack) = self.seen.get_mut(now, &(from, m.message_id)) {
            // A duplicate (§4.5): acknowledge a Confirmable one again, deliver nothing.
            let ack = ack.clone();
            self.stats.duplicate_responses += 1;
            if let Some(datagram) = ack {
                self.stats.acks_sent += 1;
                self.out.push_back(Out::Datagram(Transmit {
                    destination: from,
                    datagram,
                }));
            }
            return Ok(());
        }
        let found = self.ops.iter().position(|o| {
            o.request.destination == from
                && o.exchange.token == m.token
                && o.exchange.deadline().is_some()
        });
        let Some(i) = found else {
            if confirmable {
                self.send_reset(from, m.message_id);
            }
            return Err(unexpected);
        };
        let params = self.config.params;
        let ack = confirmable.then(|| {
            Message::empty(Type::Acknowledgement, m.message_id)
                .encode()
                .unwrap_or_default()
        });
        let lifetime = if confirmable {
            params.exchange_lifetime_ns()
        } else {
            params.non_lifetime_ns()
        };
        self.seen.insert(
            now,
            (from, m.message_id),
            now.saturating_add(lifetime),
            ack.clone(),
        );
        if let Some(datagram) = ack {
            self.stats.acks_sent += 1;
            self.out.push_back(Out::Datagram(Transmit {
                destination: from,
                datagram,
            }));
        }
        let ex = &self.ops[i].exchange;
        if let Phase::AwaitAck { .. } = ex.phase {
            // The response before the ACK acknowledges the request (§5.2.2); the Empty
            // ACK that may still come is then the first ACK, not an extra one.
            let record = Acked {
                retransmissions: ex.transmissions - 1,
                acks: 0,
            };
            let key = (from, ex.message_id);
            self.acked.insert(
                now,
                key,
                now.saturating_add(params.exchange_lifetime_ns()),
                record,
            );
        }
        self.on_response(now, i, m);
        Ok(())
    }

    /// The response `m` to op `i`'s current exchange: the next block, or the end.
    fn on_response(&mut self, now: u64, i: usize, m: Message) {
        let round_trip = now.saturating_sub(self.ops[i].exchange.sent_at);
        self.stats.round_trip(round_trip);
        let op = &mut self.ops[i];
        if let Some(next) = op.advance_upload(&m) {
            op.uploaded = next;
            return self.next_exchange(now, i);
        }
        match op.advance_download(&m, self.config.max_body) {
            Ok(true) => return self.next_exchange(now, i),
            Ok(false) => {}
            Err(()) => {
                let id = op.id;
                return self.fail(now, id, Failure::BadBlock);
            }
        }
        let op = self.ops.remove(i);
        self.stats.responses += 1;
        let mut payload = op.body;
        if payload.is_empty() {
            payload = m.payload;
        }
        self.events.push_back(Event::Response(Response {
            id: op.id,
            code: m.code,
            payload,
            elapsed_ns: now.saturating_sub(op.first_sent_at.unwrap_or(now)),
            round_trip_ns: round_trip,
            exchanges: op.exchanges,
            retransmissions: op.retransmissions,
        }));
    }

    fn next_exchange(&mut self, now: u64, i: usize) {
        // The same request, so build() cannot fail where the first one did not, except
        // past 2^20 blocks of a server that shrank the block size.
        let mut op = self.ops.remove(i);
        match self.build(&op) {
            Ok(ex) => {
                op.exchange = ex;
                self.ops.insert(i, op);
            }
            Err(_) => {
                self.ops.insert(i, op);
                let id = self.ops[i].id;
                self.fail(now, id, Failure::BadBlock);
            }
        }
    }
}

fn too_large(r: &Request) -> RequestError {
    RequestError::TooLarge(r.payload.len())
}

impl Op {
    /// After a 2.31 Continue for a Block1 block (RFC 7959 §2.5): the offset of the next
    /// block, in the size the server asked for if smaller (§2.5: the client SHOULD use
    /// it); `None` when the upload is over or not block-wise.
    fn advance_upload(&mut self, m: &Message) -> Option<usize> {
        let szx = self.upload_szx?;
        if m.code != Code::CONTINUE {
            return None;
        }
        let sent = (self.request.payload.len() - self.uploaded).min(szx.size());
        let next = self.uploaded + sent;
        if next >= self.request.payload.len() {
            return None;
        }
        let asked = m.option(option::BLOCK1).and_then(|v| Block::decode(v).ok());
        if let Some(b) = asked.filter(|b| b.szx < szx) {
            self.upload_szx = Some(b.szx);
        }
        Some(next)
    }

    /// Appends a Block2 block (RFC 7959 §2.4); `Ok(true)` if more blocks follow and the
    /// next is to be asked for, `Err` for a block out of order or a body over `max`.
    fn advance_download(&mut self, m: &Message, max: usize) -> Result<bool, ()> {
        let Some(value) = m.option(option::BLOCK2) else {
            return Ok(false);
        };
        let block = Block::decode(value).map_err(|_| ())?;
        if block.offset() != self.body.len() || !m.code.is_response() {
            return Err(());
        }
        if self.body.len() + m.payload.len() > max {
            return Err(());
        }
        self.body.extend_from_slice(&m.payload);
        // Only a GET is continued: the next block of a POST's or PUT's response would
        // need the request repeated (RFC 7959 §2.6), which this client does not do.
        if !block.more || self.request.method != Code::GET {
            return Ok(false);
        }
        if block.more && m.payload.len() != block.szx.size() {
            return Err(());
        }
        let asked = self.download_szx.unwrap_or(block.szx);
        self.download_szx = Some(asked.min(block.szx));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> SocketAddr {
        "10.0.0.2:5683".parse().unwrap()
    }

    fn sent(c: &mut Client, now: u64) -> Message {
        Message::decode(&c.poll_transmit(now).expect("a datagram").datagram).unwrap()
    }

    fn response(kind: Type, mid: u16, token: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut m = Message::new(kind, Code::CONTENT, mid);
        m.token = token.to_vec();
        m.payload = payload.to_vec();
        m.encode().unwrap()
    }

    fn client_with_request(confirmable: bool) -> (Client, Message) {
        let mut c = Client::new(ClientConfig::default(), 3).unwrap();
        c.request(Request::get(server(), "x", confirmable)).unwrap();
        let req = sent(&mut c, 0);
        (c, req)
    }

    #[test]
    fn separate_response_acknowledged_once_delivered_once() {
        let (mut c, req) = client_with_request(true);
        assert_eq!((req.kind, req.token.len()), (Type::Confirmable, 4));
        let ack = Message::empty(Type::Acknowledgement, req.message_id)
            .encode()
            .unwrap();
        c.handle_datagram(1000, server(), &ack).unwrap();
        // Acknowledged: no retransmission, only the response timeout is left.
        assert_eq!(
            c.poll_timeout(),
            Some(1000 + c.config().response_timeout_ns)
        );
        let resp = response(Type::Confirmable, 0x5555, &req.token, b"late");
        c.handle_datagram(2000, server(), &resp).unwrap();
        let our_ack = sent(&mut c, 2000);
        assert_eq!(
            (our_ack.kind, our_ack.code, our_ack.message_id),
            (Type::Acknowledgement, Code::EMPTY, 0x5555)
        );
        let Some(Event::Response(r)) = c.poll_event() else {
            panic!()
        };
        assert_eq!(
            (r.payload.as_slice(), r.round_trip_ns),
            (&b"late"[..], 2000)
        );
        // The server's retransmission of its response: ACKed again, not delivered.
        c.handle_datagram(3000, server(), &resp).unwrap();
        assert_eq!(sent(&mut c, 3000).message_id, 0x5555);
        assert_eq!(c.poll_event(), None);
        let s = c.stats();
        assert_eq!((s.acks_sent, s.duplicate_responses, s.responses), (2, 1, 1));
        assert_eq!(c.pending(), 0);
    }

    #[test]
    fn response_before_the_empty_ack() {
        let (mut c, req) = client_with_request(true);
        let resp = response(Type::Confirmable, 9, &req.token, b"r");
        c.handle_datagram(10, server(), &resp).unwrap();
        assert!(matches!(c.poll_event(), Some(Event::Response(_))));
        // The Empty ACK after it is the first ACK, not an extra one.
        let ack = Message::empty(Type::Acknowledgement, req.message_id)
            .encode()
            .unwrap();
        c.handle_datagram(20, server(), &ack).unwrap();
        assert_eq!(
            (c.stats().duplicate_acks, c.stats().spurious_retransmissions),
            (0, 0)
        );
    }

    #[test]
    fn piggybacked_duplicate_is_spurious_only_after_a_retransmission() {
        let (mut c, req) = client_with_request(true);
        let first_timeout = c.poll_timeout().unwrap();
        c.handle_timeout(first_timeout);
        assert_eq!(sent(&mut c, first_timeout).message_id, req.message_id);
        let ack = {
            let mut m = Message::new(Type::Acknowledgement, Code::CONTENT, req.message_id);
            m.token = req.token.clone();
            m.encode().unwrap()
        };
        for t in 1..=3 {
            c.handle_datagram(first_timeout + t, server(), &ack)
                .unwrap();
        }
        // Three ACKs for two copies: one spurious retransmission, and a third ACK (a
        // duplicated datagram) that is not one.
        let s = c.stats();
        assert_eq!(
            (
                s.retransmissions,
                s.spurious_retransmissions,
                s.duplicate_acks
            ),
            (1, 1, 2)
        );
        assert_eq!(s.responses, 1);
        assert_eq!(
            c.poll_event().map(|e| matches!(e, Event::Response(_))),
            Some(true)
        );
        assert_eq!(c.poll_event(), None);
    }

    #[test]
    fn reset_fails_the_request() {
        let (mut c, req) = client_with_request(true);
        let rst = Message::empty(Type::Reset, req.message_id)
            .encode()
            .unwrap();
        c.handle_datagram(5, server(), &rst).unwrap();
        assert!(matches!(
            c.poll_event(),
            Some(Event::Failed {
                failure: Failure::Reset,
                ..
            })
        ));
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn unmatched_and_malformed_datagrams() {
        let (mut c, req) = client_with_request(false);
        assert_eq!(req.kind, Type::NonConfirmable);
        // A Confirmable response with an unknown token: rejected with RST (§5.3.2, §4.2).
        let stray = response(Type::Confirmable, 77, &[1, 2, 3, 4, 5], b"");
        assert!(c.handle_datagram(1, server(), &stray).is_err());
        let rst = sent(&mut c, 1);
        assert_eq!((rst.kind, rst.message_id), (Type::Reset, 77));
        // The same from another address does not match either.
        let other: SocketAddr = "10.0.0.3:5683".parse().unwrap();
        let right = response(Type::NonConfirmable, 78, &req.token, b"");
        assert!(c.handle_datagram(1, other, &right).is_err());
        // A malformed Non-confirmable datagram is dropped silently.
        assert!(matches!(
            c.handle_datagram(1, server(), &[0x50, 0x45, 0, 1, 0xff]),
            Err(DatagramError::Malformed(DecodeError::EmptyPayload))
        ));
        assert_eq!(c.poll_transmit(1), None);
        c.handle_datagram(2, server(), &right).unwrap();
        assert!(matches!(c.poll_event(), Some(Event::Response(_))));
        let s = c.stats();
        assert_eq!((s.malformed, s.unexpected, s.resets_sent), (1, 2, 1));
    }

    #[test]
    fn nstart_two_sends_two_at_once() {
        let mut config = ClientConfig::default();
        config.params.nstart = 2;
        let mut c = Client::new(config, 3).unwrap();
        for _ in 0..3 {
            c.request(Request::get(server(), "x", true)).unwrap();
        }
        let a = sent(&mut c, 0);
        let b = sent(&mut c, 0);
        assert_eq!(c.poll_transmit(0), None);
        assert_ne!(a.message_id, b.message_id);
        assert_ne!(a.token, b.token);
        let ack = Message::empty(Type::Acknowledgement, a.message_id)
            .encode()
            .unwrap();
        c.handle_datagram(1, server(), &ack).unwrap();
        // An acknowledged request is no longer outstanding (§4.7): the third goes.
        assert!(c.poll_transmit(1).is_some());
    }

    #[test]
    fn same_seed_same_run() {
        let run = |seed| {
            let mut c = Client::new(ClientConfig::default(), seed).unwrap();
            c.request(Request::get(server(), "x", true)).unwrap();
            let d = c.poll_transmit(0).unwrap().datagram;
            (d, c.poll_timeout())
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }

    #[test]
    fn invalid_requests() {
        let mut c = Client::new(ClientConfig::default(), 3).unwrap();
        let mut r = Request::get(server(), "x", true);
        r.method = Code::CONTENT;
        assert_eq!(
            c.request(r.clone()),
            Err(RequestError::NotAMethod(Code::CONTENT))
        );
        r.method = Code::PUT;
        r.payload = vec![0; MAX_DATAGRAM];
        assert!(matches!(c.request(r), Err(RequestError::TooLarge(_))));
        let config = ClientConfig {
            token_len: 9,
            ..ClientConfig::default()
        };
        assert!(matches!(
            Client::new(config, 1),
            Err(RequestError::TokenLength(9))
        ));
    }
}
