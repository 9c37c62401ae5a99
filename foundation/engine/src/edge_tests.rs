use super::*;
use std::collections::VecDeque;
use std::io;

/// A socket that answers each read and write with the next scripted result.
#[derive(Default)]
struct Script {
    reads: VecDeque<io::Result<Vec<u8>>>,
    writes: VecDeque<io::Result<usize>>,
    read_calls: usize,
    written: Vec<u8>,
}

impl Read for Script {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_calls += 1;
        match self.reads.pop_front() {
            Some(Ok(b)) => {
                buf[..b.len()].copy_from_slice(&b);
                Ok(b.len())
            }
            Some(Err(e)) => Err(e),
            None => panic!("read past the script: the driver read once too often"),
        }
    }
}

impl Write for Script {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.writes.pop_front().expect("write past the script");
        if let Ok(n) = r {
            self.written.extend_from_slice(&buf[..n.min(buf.len())]);
        }
        r
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An engine that keeps what it was given, refuses a `!` and calls an end before its
/// goodbye (`bye`) a broken session.
#[derive(Default)]
struct Keep {
    got: Vec<u8>,
    eofs: usize,
    out: Vec<u8>,
}

impl Engine for Keep {
    type Event = ();
    type Error = &'static str;
    fn handle_input(&mut self, _now: u64, data: &[u8]) -> Result<(), &'static str> {
        self.got.extend_from_slice(data);
        if data.contains(&b'!') {
            return Err("refused");
        }
        Ok(())
    }
    fn handle_eof(&mut self) -> Result<(), &'static str> {
        self.eofs += 1;
        if self.got.ends_with(b"bye") {
            Ok(())
        } else {
            Err("cut short")
        }
    }
    fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
        let n = self.out.len();
        buf.append(&mut self.out);
        n
    }
    fn poll_event(&mut self) -> Option<()> {
        None
    }
}

fn would_block() -> io::Error {
    io::Error::from(io::ErrorKind::WouldBlock)
}

#[test]
fn a_short_read_ends_the_edge_without_a_further_read() {
    let mut s = Script::default();
    s.reads.push_back(Ok(b"abcd".to_vec()));
    s.reads.push_back(Ok(b"ef".to_vec()));
    let (mut e, mut buf) = (Keep::default(), [0u8; 4]);
    let input = read_ready(&mut s, &mut e, &mut buf, false, 7);
    // The full read is followed by one more; the short one ends the edge.
    assert_eq!((s.read_calls, e.got.as_slice()), (2, &b"abcdef"[..]));
    assert!(!input.ended() && input.error().is_none());
}

#[test]
fn a_closing_peer_is_read_to_its_end_past_short_reads() {
    let mut s = Script::default();
    s.reads.push_back(Ok(b"b".to_vec()));
    s.reads
        .push_back(Err(io::Error::from(io::ErrorKind::Interrupted)));
    s.reads.push_back(Ok(b"ye".to_vec()));
    s.reads.push_back(Ok(Vec::new()));
    let (mut e, mut buf) = (Keep::default(), [0u8; 4]);
    let input = read_ready(&mut s, &mut e, &mut buf, true, 0);
    assert_eq!((e.got.as_slice(), e.eofs), (&b"bye"[..], 1));
    assert!(matches!(
        input.ended,
        Some(Ended {
            broken: false,
            said: Ok(())
        })
    ));
    assert!(input.error().is_none());
}

#[test]
fn a_clean_close_mid_session_is_the_engines_error_and_a_reset_is_not() {
    for (last, broken) in [
        (Ok(Vec::new()), false),
        (Err(io::ErrorKind::ConnectionReset.into()), true),
    ] {
        let mut s = Script::default();
        s.reads.push_back(Ok(b"hel".to_vec()));
        s.reads.push_back(last);
        let (mut e, mut buf) = (Keep::default(), [0u8; 3]);
        let input = read_ready(&mut s, &mut e, &mut buf, false, 0);
        assert_eq!(input.ended.as_ref().map(|e| e.broken), Some(broken));
        assert_eq!(e.eofs, 1, "the engine is told of either end");
        let (error, any) = {
            let again = Input {
                refused: None,
                ended: input.ended.as_ref().map(|e| Ended {
                    broken: e.broken,
                    said: e.said,
                }),
            };
            (input.error(), again.any_error())
        };
        assert_eq!(error, (!broken).then_some("cut short"));
        assert_eq!(any, Some("cut short"));
    }
}

#[test]
fn a_refused_input_stops_the_reading() {
    let mut s = Script::default();
    s.reads.push_back(Ok(b"a!cd".to_vec()));
    let (mut e, mut buf) = (Keep::default(), [0u8; 4]);
    let input = read_ready(&mut s, &mut e, &mut buf, true, 0);
    assert_eq!(s.read_calls, 1);
    assert_eq!(input.error(), Some("refused"));
}

#[test]
fn an_empty_socket_blocks_the_step() {
    let mut s = Script::default();
    s.reads.push_back(Err(would_block()));
    let (mut e, mut buf) = (Keep::default(), [0u8; 4]);
    assert!(matches!(
        read_once(&mut s, &mut e, &mut buf, 0),
        Step::Blocked
    ));
    assert!(e.got.is_empty() && e.eofs == 0);
}

#[test]
fn what_the_socket_does_not_take_waits_in_pending() {
    let mut s = Script::default();
    s.writes.extend([
        Ok(2),
        Err(io::ErrorKind::Interrupted.into()),
        Ok(1),
        Err(would_block()),
    ]);
    let mut e = Keep {
        out: b"hello".to_vec(),
        ..Keep::default()
    };
    let mut pending = b">".to_vec();
    assert_eq!(flush(&mut s, &mut e, &mut pending, 0), Output::Waiting);
    assert_eq!(
        (s.written.as_slice(), pending.as_slice()),
        (&b">he"[..], &b"llo"[..])
    );
    assert!(!release_idle(&mut pending));
    s.writes.push_back(Ok(3));
    assert_eq!(write_pending(&mut s, &mut pending), Output::Written);
    assert_eq!(s.written, b">hello");
    assert!(pending.capacity() > 0 && release_idle(&mut pending));
    assert_eq!(pending.capacity(), 0, "an idle session keeps no buffer");
}

#[test]
fn a_write_that_takes_nothing_or_fails_is_a_broken_connection() {
    for r in [Ok(0), Err(io::ErrorKind::BrokenPipe.into())] {
        let mut s = Script::default();
        s.writes.push_back(r);
        let mut pending = b"x".to_vec();
        assert_eq!(write_pending(&mut s, &mut pending), Output::Broken);
        assert_eq!(pending, b"x", "nothing written is dropped");
    }
}
