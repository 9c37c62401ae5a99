//! A minimal server endpoint (RFC 7252 §4, §5; RFC 7959 §2) with three built-in
//! resources, for tests and as an echo peer:
//!
//! - `echo`: any method; 2.05 Content with the request's payload.
//! - `blob`: GET; 2.05 Content with [`ServerConfig::blob`], in Block2 blocks (RFC 7959
//!   §2.4) when it is larger than the block size the client asked for or the server's
//!   own ([`ServerConfig::block_size`]).
//! - `upload`: PUT or POST, whole or in Block1 blocks (RFC 7959 §2.5: 2.31 Continue per
//!   block, 2.04 Changed after the last); each complete body is a [`ServerEvent`].
//!
//! A Confirmable request is answered with a piggybacked response in its ACK (§5.2.1), a
//! Non-confirmable one with a Non-confirmable response (§5.2.3). A duplicate Confirmable
//! request (same peer and Message ID within EXCHANGE_LIFETIME, §4.5) is answered from a
//! cache with the same ACK, so that a retransmitted upload block is not appended twice;
//! a duplicate Non-confirmable one is ignored.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use crate::Transmit;
use crate::block::{Block, Szx};
use crate::client::DatagramError;
use crate::message::{Code, Message, Type, option};
use crate::params::{Rng, TransmissionParams};
use crate::recent::Recent;

/// The server's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The transmission parameters; their lifetimes (§4.8.2) bound the dedup cache.
    pub params: TransmissionParams,
    /// The body of the `blob` resource.
    pub blob: Vec<u8>,
    /// The largest block the server sends and asks for (RFC 7959 §2.3, §2.5).
    pub block_size: Szx,
    /// The largest body `upload` accepts (4.13 above it, RFC 7959 §2.9.3).
    pub max_upload: usize,
    /// Entries of the dedup cache (§4.5), to bound memory.
    pub dedup_capacity: usize,
    /// Block1 uploads held at once, one per client address, to bound memory: a new one
    /// beyond them drops the least recently continued (whose client then gets 4.08
    /// Request Entity Incomplete for its next block and starts again).
    pub max_uploads: usize,
}

impl Default for ServerConfig {
    /// The default parameters, an empty blob, 1024-byte blocks, 16 MiB uploads, 64 of
    /// them at once and 4096 remembered Message IDs.
    fn default() -> ServerConfig {
        ServerConfig {
            params: TransmissionParams::default(),
            blob: Vec::new(),
            block_size: Szx::MAX,
            max_upload: 16 << 20,
            dedup_capacity: 4096,
            max_uploads: 64,
        }
    }
}

/// What the server tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// A whole body arrived at `upload`.
    Uploaded {
        /// The client.
        from: SocketAddr,
        /// The body.
        body: Vec<u8>,
    },
}

/// Counted since the server was made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Requests answered (not counting duplicates).
    pub requests: u64,
    /// Of those, Confirmable.
    pub confirmable: u64,
    /// Duplicate requests (§4.5): a client's retransmissions that arrived after a copy.
    pub duplicates: u64,
    /// RSTs sent (malformed or unexpected Confirmable messages, pings).
    pub resets_sent: u64,
    /// Datagrams dropped as malformed.
    pub malformed: u64,
}

/// The server endpoint. See the module docs.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    next_message_id: u16,
    /// The response to each request by peer and Message ID; `None` for a
    /// Non-confirmable request, whose duplicates are ignored.
    cache: Recent<Option<Vec<u8>>>,
    /// Block1 bodies being uploaded, by client, each with the turn of its latest block.
    uploads: HashMap<SocketAddr, (u64, Vec<u8>)>,
    /// Counts blocks received, to find the least recently continued upload.
    turn: u64,
    out: VecDeque<Transmit>,
    events: VecDeque<ServerEvent>,
    stats: ServerStats,
}

impl Server {
    /// A server; `seed` fixes the Message IDs of its Non-confirmable responses.
    pub fn new(config: ServerConfig, seed: u64) -> Server {
        let mut rng = Rng::new(seed);
        let next_message_id = rng.next_u64() as u16;
        Server {
            cache: Recent::new(config.dedup_capacity),
            config,
            next_message_id,
            uploads: HashMap::new(),
            turn: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: ServerStats::default(),
        }
    }

    /// Entries in the dedup cache (for the fuzz target's bound check).
    #[doc(hidden)]
    pub fn cached_len(&self) -> usize {
        self.cache.len()
    }

    /// The counts so far.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, _now: u64) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// Never: the server sends no Confirmable messages, so it has nothing to time.
    pub fn poll_timeout(&self) -> Option<u64> {
        None
    }

    /// Nothing to do (see [`Server::poll_timeout`]) but forget expired Message IDs.
    pub fn handle_timeout(&mut self, now: u64) {
        self.cache.purge(now);
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    fn send(&mut self, to: SocketAddr, datagram: Vec<u8>) {
        self.out.push_back(Transmit {
            destination: to,
            datagram,
        });
    }

    fn reset(&mut self, to: SocketAddr, message_id: u16) {
        self.stats.resets_sent += 1;
        if let Ok(d) = Message::empty(Type::Reset, message_id).encode() {
            self.send(to, d);
        }
    }

    /// One datagram received at `now` from `from`; an error means it was dropped.
    pub fn handle_datagram(
        &mut self,
        now: u64,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), DatagramError> {
        let m = match Message::decode(datagram) {
            Ok(m) => m,
            Err(e) => {
                self.stats.malformed += 1;
                if let Some(mid) = crate::reject_malformed(datagram, &e) {
                    self.reset(from, mid);
                }
                return Err(e.into());
            }
        };
        let confirmable = m.kind == Type::Confirmable;
        match m.kind {
            // This server sends no Confirmable messages: an ACK or RST is for nothing.
            Type::Acknowledgement | Type::Reset => {
                return Err(DatagramError::Unexpected(m.kind, m.code));
            }
            Type::Confirmable if m.code == Code::EMPTY => {
                // A CoAP ping (§4.3): answered with RST.
                self.reset(from, m.message_id);
                return Ok(());
            }
            _ => {}
        }
        if !m.code.is_request() {
            if confirmable {
                self.reset(from, m.message_id);
            }
            return Err(DatagramError::Unexpected(m.kind, m.code));
        }
        let key = (from, m.message_id);
        if let Some(cached) = self.cache.get_mut(now, &key) {
            self.stats.duplicates += 1;
            if let Some(d) = cached.clone() {
                self.send(from, d);
            }
            return Ok(());
        }
        self.stats.requests += 1;
        let (kind, message_id, lifetime) = if confirmable {
            self.stats.confirmable += 1;
            let lifetime = self.config.params.exchange_lifetime_ns();
            (Type::Acknowledgement, m.message_id, lifetime)
        } else {
            let mid = self.next_message_id;
            self.next_message_id = mid.wrapping_add(1);
            (
                Type::NonConfirmable,
                mid,
                self.config.params.non_lifetime_ns(),
            )
        };
        let mut response = self.respond(from, &m);
        response.kind = kind;
        response.message_id = message_id;
        response.token = m.token;
        let datagram = response.encode().unwrap_or_else(|_| {
            // Cannot happen for the responses built here; answer 5.00 all the same.
            let mut e = Message::new(kind, Code::new(5, 0), message_id);
            e.token = response.token.clone();
            e.encode().unwrap_or_default()
        });
        let expires = now.saturating_add(lifetime);
        self.cache
            .insert(now, key, expires, confirmable.then(|| datagram.clone()));
        self.send(from, datagram);
        Ok(())
    }

    /// The response to request `m` (type, Message ID and token filled in by the caller).
    fn respond(&mut self, from: SocketAddr, m: &Message) -> Message {
        let known = [
            option::URI_HOST,
            option::URI_PORT,
            option::URI_PATH,
            option::URI_QUERY,
            option::BLOCK2,
            option::BLOCK1,
        ];
        if m.options
            .iter()
            .any(|(n, _)| option::is_critical(*n) && !known.contains(n))
        {
            // An unrecognized critical option (§5.4.1).
            return answer(Code::BAD_OPTION, Vec::new());
        }
        match (m.path().as_str(), m.code) {
            ("echo", _) => answer(Code::CONTENT, m.payload.clone()),
            ("blob", Code::GET) => self.blob(m),
            ("upload", Code::PUT | Code::POST) => self.upload(from, m),
            ("blob" | "upload", _) => answer(Code::METHOD_NOT_ALLOWED, Vec::new()),
            _ => answer(Code::NOT_FOUND, Vec::new()),
        }
    }

    /// A Block2 block of the blob (RFC 7959 §2.4): the size the client asked for if
    /// smaller than the server's (§2.3), the whole blob if it fits one block.
    fn blob(&self, m: &Message) -> Message {
        let asked = match m.option(option::BLOCK2).map(Block::decode) {
            None => None,
            Some(Ok(b)) => Some(b),
            Some(Err(_)) => return answer(Code::BAD_REQUEST, Vec::new()),
        };
        let total = self.config.blob.len();
        let szx = asked.map_or(self.config.block_size, |b| {
            b.szx.min(self.config.block_size)
        });
        if asked.is_none() && total <= szx.size() {
            return answer(Code::CONTENT, self.config.blob.clone());
        }
        // A block number in the client's size becomes one in the (smaller) size used.
        let offset = asked.map_or(0, |b| b.offset());
        let num = (offset / szx.size()) as u32;
        let Some((range, more)) = Block::slice(num, szx, total) else {
            return answer(Code::BAD_REQUEST, Vec::new());
        };
        let mut r = answer(Code::CONTENT, self.config.blob[range].to_vec());
        if let Ok(v) = (Block { num, more, szx }).encode() {
            r.add_option(option::BLOCK2, v);
        }
        if num == 0 {
            r.add_uint_option(option::SIZE2, total as u32);
        }
        r
    }

    /// A whole body, or a Block1 block of one (RFC 7959 §2.5): blocks in order from 0,
    /// each but the last of the full size; a larger block size than the server's is
    /// accepted and the smaller one asked for in the 2.31 Continue.
    fn upload(&mut self, from: SocketAddr, m: &Message) -> Message {
        let block = match m.option(option::BLOCK1).map(Block::decode) {
            None => {
                if m.payload.len() > self.config.max_upload {
                    return answer(Code::REQUEST_ENTITY_TOO_LARGE, Vec::new());
                }
                self.events.push_back(ServerEvent::Uploaded {
                    from,
                    body: m.payload.clone(),
                });
                return answer(Code::CHANGED, Vec::new());
            }
            Some(Ok(b)) => b,
            Some(Err(_)) => return answer(Code::BAD_REQUEST, Vec::new()),
        };
        if block.num == 0 {
            self.start_upload(from);
        }
        let max = self.config.max_upload;
        self.turn += 1;
        let turn = self.turn;
        let body = self.uploads.get_mut(&from).map(|(at, body)| {
            *at = turn;
            body
        });
        let in_order = body.as_ref().is_some_and(|b| b.len() == block.offset());
        let full = !block.more || m.payload.len() == block.szx.size();
        let Some(body) = body.filter(|_| in_order && full) else {
            self.uploads.remove(&from);
            return answer(Code::REQUEST_ENTITY_INCOMPLETE, Vec::new());
        };
        if body.len() + m.payload.len() > max {
            self.uploads.remove(&from);
            return answer(Code::REQUEST_ENTITY_TOO_LARGE, Vec::new());
        }
        body.extend_from_slice(&m.payload);
        let echoed = Block {
            szx: block.szx.min(self.config.block_size),
            ..block
        };
        let code = if block.more {
            Code::CONTINUE
        } else {
            let (_, body) = self.uploads.remove(&from).unwrap_or_default();
            self.events.push_back(ServerEvent::Uploaded { from, body });
            Code::CHANGED
        };
        let mut r = answer(code, Vec::new());
        if let Ok(v) = echoed.encode() {
            r.add_option(option::BLOCK1, v);
        }
        r
    }
}

impl Server {
    /// A new upload from `from`, in place of its own earlier one or, at
    /// [`ServerConfig::max_uploads`], of the least recently continued.
    fn start_upload(&mut self, from: SocketAddr) {
        if !self.uploads.contains_key(&from) && self.uploads.len() >= self.config.max_uploads {
            let oldest = self.uploads.iter().min_by_key(|(_, (at, _))| *at);
            if let Some(addr) = oldest.map(|(addr, _)| *addr) {
                self.uploads.remove(&addr);
            }
        }
        if self.config.max_uploads > 0 {
            self.uploads.insert(from, (self.turn, Vec::new()));
        }
    }

    /// Uploads held now (for the fuzz target's bound check and tests).
    #[doc(hidden)]
    pub fn uploads_held(&self) -> usize {
        self.uploads.len()
    }
}

fn answer(code: Code, payload: Vec<u8>) -> Message {
    let mut m = Message::new(Type::Acknowledgement, code, 0);
    m.payload = payload;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        "10.0.0.1:40000".parse().unwrap()
    }

    fn request(kind: Type, mid: u16, path: &str, payload: &[u8]) -> Vec<u8> {
        let mut m = Message::new(kind, Code::POST, mid);
        m.token = vec![0xAB, 0xCD];
        m.set_path(path);
        m.payload = payload.to_vec();
        m.encode().unwrap()
    }

    fn answer_of(s: &mut Server) -> Message {
        Message::decode(&s.poll_transmit(0).unwrap().datagram).unwrap()
    }

    /// Block `num` (16 bytes, more to come) of a PUT to `upload`.
    fn block(mid: u16, num: u32) -> Vec<u8> {
        let mut m = Message::new(Type::Confirmable, Code::PUT, mid);
        m.set_path("upload");
        let b = Block {
            num,
            more: true,
            szx: Szx::MIN,
        };
        m.add_option(option::BLOCK1, b.encode().unwrap());
        m.payload = vec![1; 16];
        m.encode().unwrap()
    }

    #[test]
    fn uploads_beyond_the_bound_drop_the_least_recently_continued() {
        let config = ServerConfig {
            max_uploads: 2,
            ..ServerConfig::default()
        };
        let mut s = Server::new(config, 1);
        let at = |port: u16| SocketAddr::new(peer().ip(), port);
        let code = |s: &mut Server, mid: u16, port: u16, num: u32| {
            s.handle_datagram(0, at(port), &block(mid, num)).unwrap();
            answer_of(s).code
        };
        assert_eq!(code(&mut s, 1, 1, 0), Code::CONTINUE);
        assert_eq!(code(&mut s, 2, 2, 0), Code::CONTINUE);
        // Client 1 continues, so client 2's is the older when client 3 starts.
        assert_eq!(code(&mut s, 3, 1, 1), Code::CONTINUE);
        assert_eq!(code(&mut s, 4, 3, 0), Code::CONTINUE);
        assert_eq!(s.uploads_held(), 2);
        assert_eq!(code(&mut s, 5, 2, 1), Code::REQUEST_ENTITY_INCOMPLETE);
        assert_eq!(code(&mut s, 6, 1, 2), Code::CONTINUE);
    }

    #[test]
    fn piggybacked_echo_and_cached_duplicate() {
        let mut s = Server::new(ServerConfig::default(), 1);
        let req = request(Type::Confirmable, 77, "echo", b"ping");
        s.handle_datagram(0, peer(), &req).unwrap();
        let first = s.poll_transmit(0).unwrap();
        let ack = Message::decode(&first.datagram).unwrap();
        assert_eq!(
            (ack.kind, ack.code, ack.message_id),
            (Type::Acknowledgement, Code::CONTENT, 77)
        );
        assert_eq!(
            (ack.token.as_slice(), ack.payload.as_slice()),
            (&[0xAB, 0xCD][..], &b"ping"[..])
        );
        s.handle_datagram(1, peer(), &req).unwrap();
        assert_eq!(s.poll_transmit(1).unwrap(), first);
        assert_eq!((s.stats().requests, s.stats().duplicates), (1, 1));
        // Past EXCHANGE_LIFETIME the Message ID is new again.
        let later = TransmissionParams::default().exchange_lifetime_ns() + 1;
        s.handle_datagram(later, peer(), &req).unwrap();
        assert_eq!(s.stats().requests, 2);
    }

    #[test]
    fn non_confirmable_gets_non_and_duplicate_is_ignored() {
        let mut s = Server::new(ServerConfig::default(), 1);
        let req = request(Type::NonConfirmable, 5, "echo", b"x");
        s.handle_datagram(0, peer(), &req).unwrap();
        let r = answer_of(&mut s);
        assert_eq!((r.kind, r.code), (Type::NonConfirmable, Code::CONTENT));
        s.handle_datagram(1, peer(), &req).unwrap();
        assert_eq!(s.poll_transmit(1), None);
        assert_eq!(s.stats().duplicates, 1);
    }

    #[test]
    fn ping_malformed_and_unknown() {
        let mut s = Server::new(ServerConfig::default(), 1);
        s.handle_datagram(0, peer(), &[0x40, 0, 0x12, 0x34])
            .unwrap();
        let rst = answer_of(&mut s);
        assert_eq!((rst.kind, rst.message_id), (Type::Reset, 0x1234));
        // A CON with a reserved nibble: format error, rejected with RST (§4.2).
        assert!(
            s.handle_datagram(0, peer(), &[0x40, 1, 0, 9, 0xf1])
                .is_err()
        );
        assert_eq!(answer_of(&mut s).kind, Type::Reset);
        // The same as NON: silently dropped (§4.3).
        assert!(
            s.handle_datagram(0, peer(), &[0x50, 1, 0, 9, 0xf1])
                .is_err()
        );
        assert_eq!(s.poll_transmit(0), None);
        s.handle_datagram(0, peer(), &request(Type::Confirmable, 8, "nope", b""))
            .unwrap();
        assert_eq!(answer_of(&mut s).code, Code::NOT_FOUND);
        let mut m = Message::new(Type::Confirmable, Code::GET, 9);
        m.set_path("echo");
        m.add_option(9, vec![1]);
        s.handle_datagram(0, peer(), &m.encode().unwrap()).unwrap();
        assert_eq!(answer_of(&mut s).code, Code::BAD_OPTION);
    }

    #[test]
    fn blob_in_blocks_of_the_smaller_size() {
        let blob: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let cfg = ServerConfig {
            blob: blob.clone(),
            block_size: Szx::new(3).unwrap(),
            ..ServerConfig::default()
        };
        let mut s = Server::new(cfg, 1);
        // The client asks for 256-byte blocks; the server's 128 win.
        let mut m = Message::new(Type::Confirmable, Code::GET, 1);
        m.set_path("blob");
        m.add_option(
            option::BLOCK2,
            Block {
                num: 0,
                more: false,
                szx: Szx::new(4).unwrap(),
            }
            .encode()
            .unwrap(),
        );
        s.handle_datagram(0, peer(), &m.encode().unwrap()).unwrap();
        let r = answer_of(&mut s);
        let b = Block::decode(r.option(option::BLOCK2).unwrap()).unwrap();
        assert_eq!((b.num, b.more, b.szx.size()), (0, true, 128));
        assert_eq!(r.payload, blob[..128]);
        assert_eq!(r.option(option::SIZE2), Some(&[1, 44][..]));
        m.message_id = 2;
        m.set_option(
            option::BLOCK2,
            Block {
                num: 2,
                more: false,
                szx: Szx::new(3).unwrap(),
            }
            .encode()
            .unwrap(),
        );
        s.handle_datagram(0, peer(), &m.encode().unwrap()).unwrap();
        let r = answer_of(&mut s);
        let b = Block::decode(r.option(option::BLOCK2).unwrap()).unwrap();
        assert_eq!((b.num, b.more), (2, false));
        assert_eq!(r.payload, blob[256..]);
    }

    #[test]
    fn upload_out_of_order_is_incomplete() {
        let mut s = Server::new(ServerConfig::default(), 1);
        let mut m = Message::new(Type::Confirmable, Code::PUT, 1);
        m.set_path("upload");
        m.add_option(
            option::BLOCK1,
            Block {
                num: 1,
                more: true,
                szx: Szx::MIN,
            }
            .encode()
            .unwrap(),
        );
        m.payload = vec![0; 16];
        s.handle_datagram(0, peer(), &m.encode().unwrap()).unwrap();
        assert_eq!(answer_of(&mut s).code, Code::REQUEST_ENTITY_INCOMPLETE);
        assert_eq!(s.poll_event(), None);
    }
}
