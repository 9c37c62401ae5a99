//! What the built-in server's workers tell each other, and the links that carry it.
//!
//! Every pair of workers shares one Unix stream socket (a `socketpair`), whether the
//! workers are threads of one process or processes of their own: one design for both, so
//! the thread layout the tests run is the process layout a 100k-session run uses.
//!
//! Five notes cross a link, framed as
//! `[u32 LE: length of what follows][u8 kind][u16 LE: JID length][JID][body]`:
//! - `Online(bare JID)`: a session of that user bound at the sender;
//! - `Offline(bare JID)`: it closed;
//! - `Stanza(bare JID, bytes)`: deliver to that user's session (or, at the user's home
//!   worker, pass it on to the worker that has the session);
//! - `Presence(bare JID, bytes)`: the same for a presence broadcast to a roster, which is
//!   dropped without counting when the contact is offline;
//! - `Ack(bare JID)`: the receiver has taken in the sender's `Online` for that user.
//!
//! **Home workers.** Every user has a home worker, `hash(bare JID) mod workers`, which
//! alone keeps track of where that user's session is. A worker that binds a session tells
//! only the user's home (`Online`, later `Offline`) and holds the bind result back until
//! the home has acked: once a client knows it is logged in, a stanza for it from any
//! worker finds it, and of two contacts logging in at once on different workers, the later
//! one's presence always finds the earlier one (docs/xmpp.md). A stanza for a user who is
//! not on the sending worker goes to the user's home, which delivers it or passes it on:
//! at most two links. The first design told every worker of every login and so crossed at
//! most one link, but a login then cost a note and an ack per worker, and every worker
//! kept an entry for every online user: at a million sessions over 51 worker processes
//! that was 100 notes per login and 0.8 KiB per session of directories, and logins fell
//! behind (docs/performance.md, "The million"). Frames are batched: a worker writes a
//! link once per loop iteration.

use mio::net::UnixStream;
use std::io::{self, Read, Write};

const ONLINE: u8 = 1;
const OFFLINE: u8 = 2;
const STANZA: u8 = 3;
const ACK: u8 = 4;
const PRESENCE: u8 = 5;
/// Kind and JID length.
const HEAD: usize = 3;
/// A frame longer than this is a bug in the sender: links carry only what our own
/// workers wrote, and stanzas are capped well below it.
pub const MAX_FRAME: usize = 64 << 20;
/// Unwritten bytes a link may hold before stanzas on it are dropped (and counted): a
/// stalled worker must not make the others grow without bound. Reading clients pauses
/// long before ([`PAUSE_READS_AT`]); what can still pass it is what a worker passes on
/// for others (a stanza's second hop), not what its own clients send.
pub const MAX_BACKLOG: usize = 64 << 20;
/// Unwritten bytes on a link at which a worker stops reading its clients until the link
/// is down to [`RESUME_READS_AT`]: the worker at the other end is slower than the clients
/// writing to it, and TCP then slows those clients down instead of the backlog growing.
/// bench/hostile.sh's half-open attack (one session flooding 25 that never read, on
/// another worker) grew a link to its former 256 MiB cap: a worker reads a fast client
/// for as long as it has input, and writes the links only after.
pub const PAUSE_READS_AT: usize = 4 << 20;
/// See [`PAUSE_READS_AT`].
pub const RESUME_READS_AT: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note<'a> {
    Online(&'a str),
    Offline(&'a str),
    Stanza { to: &'a str, body: &'a [u8] },
    Presence { to: &'a str, body: &'a [u8] },
    Ack(&'a str),
}

/// Appends `note`'s frame to `out`.
pub fn encode(out: &mut Vec<u8>, note: &Note) {
    let (kind, jid, body): (u8, &str, &[u8]) = match *note {
        Note::Online(j) => (ONLINE, j, &[]),
        Note::Offline(j) => (OFFLINE, j, &[]),
        Note::Stanza { to, body } => (STANZA, to, body),
        Note::Presence { to, body } => (PRESENCE, to, body),
        Note::Ack(j) => (ACK, j, &[]),
    };
    // JIDs are at most 3 x 1023 bytes (RFC 7622), so u16 always holds one.
    let jid = &jid.as_bytes()[..jid.len().min(u16::MAX as usize)];
    let len = HEAD + jid.len() + body.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.push(kind);
    out.extend_from_slice(&(jid.len() as u16).to_le_bytes());
    out.extend_from_slice(jid);
    out.extend_from_slice(body);
}

/// The first whole frame in `buf` and the bytes it took; `Ok(None)` if it is not all
/// there yet.
pub fn decode(buf: &[u8]) -> Result<Option<(Note<'_>, usize)>, String> {
    let Some(len) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes(len.try_into().unwrap_or_default()) as usize;
    if !(HEAD..=MAX_FRAME).contains(&len) {
        return Err(format!("bad frame length {len}"));
    }
    let Some(frame) = buf.get(4..4 + len) else {
        return Ok(None);
    };
    let jid_len = u16::from_le_bytes([frame[1], frame[2]]) as usize;
    let jid = frame
        .get(HEAD..HEAD + jid_len)
        .ok_or_else(|| format!("JID of {jid_len} bytes in a frame of {len}"))?;
    let jid = std::str::from_utf8(jid).map_err(|_| "a JID that is not UTF-8".to_string())?;
    let body = &frame[HEAD + jid_len..];
    let note = match frame[0] {
        ONLINE => Note::Online(jid),
        OFFLINE => Note::Offline(jid),
        STANZA => Note::Stanza { to: jid, body },
        PRESENCE => Note::Presence { to: jid, body },
        ACK => Note::Ack(jid),
        k => return Err(format!("unknown note kind {k}")),
    };
    Ok(Some((note, 4 + len)))
}

/// One end of the link to another worker (a Unix socket; not an emulated
/// link of `wirebench_link`).
pub struct WorkerLink {
    pub stream: UnixStream,
    /// Bytes read but not yet a whole frame.
    rx: Vec<u8>,
    /// Frames queued; those from `sent` on are not written yet.
    tx: Vec<u8>,
    /// How much of `tx` has been written: advancing it, rather than draining `tx` after
    /// every write, keeps a long backlog from costing a copy of itself per write.
    sent: usize,
    /// Registered for writable readiness.
    pub writable: bool,
}

impl WorkerLink {
    pub fn new(stream: UnixStream) -> WorkerLink {
        WorkerLink {
            stream,
            rx: Vec::new(),
            tx: Vec::new(),
            sent: 0,
            writable: false,
        }
    }

    /// Queues `note`; false if the link's backlog is full and a stanza was dropped.
    pub fn push(&mut self, note: &Note) -> bool {
        if matches!(note, Note::Stanza { .. } | Note::Presence { .. })
            && self.backlog() > MAX_BACKLOG
        {
            return false;
        }
        encode(&mut self.tx, note);
        true
    }

    /// Bytes queued and not yet written.
    pub fn backlog(&self) -> usize {
        self.tx.len() - self.sent
    }

    pub fn has_backlog(&self) -> bool {
        self.backlog() > 0
    }

    /// Writes what the socket takes now.
    pub fn flush(&mut self) -> io::Result<()> {
        let mut failed = None;
        while self.sent < self.tx.len() {
            match self.stream.write(&self.tx[self.sent..]) {
                Ok(0) => {
                    failed = Some(io::ErrorKind::WriteZero.into());
                    break;
                }
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if self.sent == self.tx.len() {
            self.tx.clear();
            self.sent = 0;
            if self.tx.capacity() > 1 << 20 {
                self.tx = Vec::new();
            }
        } else if self.sent >= self.tx.len() / 2 {
            // Written bytes are dropped once they are the larger part: amortized, each
            // byte is moved at most once.
            self.tx.drain(..self.sent);
            self.sent = 0;
        }
        failed.map_or(Ok(()), Err)
    }

    /// Reads what has arrived into the link's buffer. An error means the other worker went
    /// away (end of stream) or the socket failed.
    pub fn fill(&mut self, buf: &mut [u8]) -> io::Result<()> {
        loop {
            match self.stream.read(buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.rx.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The bytes read so far, taken out so that handling them may push to this link; give
    /// back what was not a whole frame with [`WorkerLink::restore`].
    pub fn take_received(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.rx)
    }

    /// Puts back `rx` less its first `used` bytes.
    pub fn restore(&mut self, mut rx: Vec<u8>, used: usize) {
        rx.drain(..used);
        if rx.is_empty() && rx.capacity() > 1 << 20 {
            rx = Vec::new();
        }
        self.rx = rx;
    }
}

/// One Unix socket pair for every pair of workers: `mesh(n)[i][j]` is worker `i`'s end of
/// its link to `j` (`None` on the diagonal).
pub(crate) fn mesh(n: usize) -> std::io::Result<Vec<Vec<Option<std::os::unix::net::UnixStream>>>> {
    let mut ends: Vec<Vec<Option<_>>> = (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
    for (i, j) in (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))) {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        ends[i][j] = Some(a);
        ends[j][i] = Some(b);
    }
    Ok(ends)
}

/// A worker's end of a link, made non-blocking for its event loop.
pub(crate) fn link_of(s: std::os::unix::net::UnixStream) -> std::io::Result<WorkerLink> {
    s.set_nonblocking(true)?;
    Ok(WorkerLink::new(mio::net::UnixStream::from_std(s)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn notes_survive_the_round_trip() {
        let notes = [
            Note::Online("user1@a.test"),
            Note::Offline("user2@a.test"),
            Note::Stanza {
                to: "user3@a.test",
                body: b"<message to='user3@a.test'><body>hi</body></message>",
            },
            Note::Stanza { to: "", body: b"" },
            Note::Presence {
                to: "user5@a.test",
                body: b"<presence from='user6@a.test/r'/>",
            },
            Note::Ack("user4@a.test"),
        ];
        let mut wire = Vec::new();
        for n in &notes {
            encode(&mut wire, n);
        }
        let mut at = 0;
        for n in &notes {
            let (got, used) = decode(&wire[at..]).unwrap().unwrap();
            assert_eq!(&got, n);
            at += used;
        }
        assert_eq!(at, wire.len());
        assert_eq!(decode(&wire[at..]).unwrap(), None);
    }

    #[test]
    fn a_backlog_written_in_pieces_arrives_whole_and_in_order() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut link = link_of(a).unwrap();
        let body = vec![b'x'; 1000];
        let jids: Vec<String> = (0..6000).map(|i| format!("user{i}@a.test")).collect();
        for j in &jids {
            assert!(link.push(&Note::Stanza { to: j, body: &body }));
        }
        let queued = link.backlog();
        assert!(queued > 6_000_000, "{queued}");
        let mut got = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while link.has_backlog() {
            link.flush().unwrap();
            // The socket took only part of it (its buffer is far smaller).
            let n = b.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        b.set_nonblocking(true).unwrap();
        while let Ok(n) = b.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got.len(), queued);
        let mut at = 0;
        for j in &jids {
            let (note, used) = decode(&got[at..]).unwrap().unwrap();
            assert_eq!(note, Note::Stanza { to: j, body: &body });
            at += used;
        }
        assert_eq!(link.backlog(), 0);
    }

    #[test]
    fn bad_frames_are_errors_not_panics() {
        assert!(decode(&[0, 0, 0, 0]).is_err(), "shorter than its head");
        assert!(decode(&[3, 0, 0, 0, 9, 0, 0]).is_err(), "unknown kind");
        assert!(decode(&[3, 0, 0, 0, 0, 0, 0]).is_err(), "kind zero");
        assert!(
            decode(&[4, 0, 0, 0, 1, 5, 0, b'x']).is_err(),
            "JID past the end"
        );
        assert!(decode(&[0xff, 0xff, 0xff, 0xff]).is_err(), "over MAX_FRAME");
    }

    proptest! {
        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn a_frame_is_incomplete_until_its_last_byte(jid in "[a-z0-9@.]{0,40}", body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut wire = Vec::new();
            encode(&mut wire, &Note::Stanza { to: &jid, body: &body });
            for cut in 0..wire.len() {
                prop_assert_eq!(decode(&wire[..cut]).unwrap(), None);
            }
            let (note, used) = decode(&wire).unwrap().unwrap();
            prop_assert_eq!(used, wire.len());
            prop_assert_eq!(note, Note::Stanza { to: &jid, body: &body });
        }
    }
}
