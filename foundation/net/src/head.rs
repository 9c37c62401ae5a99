//! The wait for an HTTP/1.1 request head (RFC 9112 §2.1: it ends with an empty line)
//! before a handshake parser that reads it again from its start after every read is given
//! the connection: tungstenite's WebSocket handshake (RFC 6455 §4.2.1) parses its whole
//! buffer after each read, up to 64 KiB, so a head that never ends cost the one thread of
//! a WebSocket endpoint long enough, per attacking connection, to make a well-behaved
//! client's p99 seven to ten times its usual (bench/hostile.sh ws and websocket,
//! oversized). Here the head is peeked (left in the socket for the parser), looked for
//! with `memmem` from where the last look stopped, and refused over a small cap.

use std::io;
use std::os::fd::AsRawFd;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The most a WebSocket upgrade's head may take: a browser's, cookies and all, fits in a
/// few KiB (nginx reads 1 KiB heads, then up to 4 lines of 8 KiB).
pub const MAX_UPGRADE_HEAD: usize = 16 * 1024;

/// What the wait found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// The head's empty line has arrived (the head is still unread).
    Ended,
    /// `max` bytes came without it.
    TooLarge,
    /// The first line is no HTTP/1.x request line: the head will never be valid.
    Invalid,
    /// The client closed (or reset) before the head ended.
    Closed,
}

/// Waits until `s` holds a whole request head, at most `max` bytes of it, without reading
/// any of it. Each wake-up costs one peek of what is queued and one search of the bytes
/// not searched yet; a connection holds no buffer until bytes come, then one the size of
/// what came (idle connections by the thousand cost nothing here).
pub async fn wait_for_head(s: &TcpStream, max: usize) -> io::Result<Head> {
    let mut buf = Vec::new();
    let mut searched = 0usize;
    loop {
        let ready = s.ready(Interest::READABLE).await?;
        let mut found = None;
        let r = s.try_io(Interest::READABLE, || {
            buf.resize(queued(s)?.clamp(1, max), 0);
            let n = peek(s, &mut buf)?;
            found = judge(&buf[..n], &mut searched, max);
            match found {
                Some(_) => Ok(()),
                // Nothing new to judge: the readiness is cleared and the next byte wakes us.
                None => Err(io::ErrorKind::WouldBlock.into()),
            }
        });
        match r {
            Ok(()) => return Ok(found.unwrap_or(Head::Closed)),
            // The client has sent all it will: what it sent is not a whole head.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && ready.is_read_closed() => {
                return Ok(Head::Closed);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(Head::Closed),
            Err(e) => return Err(e),
        }
    }
}

/// [`wait_for_head`] for a server that then hands `s` to its handshake parser: `Err`
/// says why not, for its log line, after a 431 (RFC 6585 §5) for a head over `max`. A
/// head refused for what it is (not HTTP, over `max`) is a strike against its source
/// ([`crate::ban`]).
pub async fn whole_head(s: &mut TcpStream, max: usize) -> Result<(), String> {
    use tokio::io::AsyncWriteExt;
    let judged = wait_for_head(s, max).await;
    if let Ok(Head::Invalid | Head::TooLarge) = judged {
        crate::ban::strike_peer(s);
    }
    match judged {
        Ok(Head::Ended) => Ok(()),
        Ok(Head::Closed) => Err("closed before its request head ended".into()),
        // As for an invalid HTTP/2 preface (RFC 9113 §3.4), no answer to what is no HTTP.
        Ok(Head::Invalid) => Err("no HTTP/1.x request line; closed".into()),
        Ok(Head::TooLarge) => {
            // What was peeked is taken, so that a client that sent no more than that gets
            // the status and a close, not a reset; more than that is left unread.
            let mut taken = vec![0u8; max];
            let _ = s.try_read(&mut taken);
            let _ = s
                .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                .await;
            Err(format!(
                "request head over {max} bytes; answered 431, closed"
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// `bytes` (all the head so far) judged: `None` while the head may still end within `max`.
/// `searched` is how far earlier calls looked; the search starts a few bytes before it,
/// so that an end split over two arrivals is found.
fn judge(bytes: &[u8], searched: &mut usize, max: usize) -> Option<Head> {
    if bytes.is_empty() {
        return Some(Head::Closed);
    }
    // The queue only grows while nothing is read, but peer data must never make this
    // panic, so a shorter peek is searched from its start.
    let from = searched.saturating_sub(3).min(bytes.len());
    let fresh = &bytes[from..];
    // RFC 9112 §2.2 lets a server take a bare LF as a line end, as httparse does.
    if memchr::memmem::find(fresh, b"\r\n\r\n").is_some()
        || memchr::memmem::find(fresh, b"\n\n").is_some()
        || memchr::memmem::find(fresh, b"\n\r\n").is_some()
    {
        return Some(Head::Ended);
    }
    *searched = bytes.len();
    if bytes.len() >= max {
        return Some(Head::TooLarge);
    }
    // Garbage is refused at once, as the parser would have: no header array, so httparse
    // looks at the request line only, and says TooManyHeaders once that line is valid.
    let mut none = [httparse::EMPTY_HEADER; 0];
    match httparse::Request::new(&mut none).parse(bytes) {
        Ok(_) | Err(httparse::Error::TooManyHeaders) => None,
        Err(_) => Some(Head::Invalid),
    }
}

/// Bytes queued on `s` to be read (`FIONREAD`).
fn queued(s: &TcpStream) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, valid for the call.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n.max(0) as usize)
}

fn peek(s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes, and the descriptor is
    // open for as long as `s` is borrowed.
    let n = unsafe {
        libc::recv(
            s.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn an_end_split_over_arrivals_is_found_and_nothing_is_searched_twice() {
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for cut in 1..head.len() {
            let mut searched = 0;
            assert_eq!(judge(&head[..cut], &mut searched, 1024), None, "cut {cut}");
            assert_eq!(searched, cut);
            assert_eq!(
                judge(head, &mut searched, 1024),
                Some(Head::Ended),
                "cut {cut}"
            );
        }
        let mut searched = 0;
        assert_eq!(
            judge(b"GET / HTTP/1.1\nHost: a\n\n", &mut searched, 64),
            Some(Head::Ended)
        );
        let mut searched = 0;
        assert_eq!(judge(&[b'A'; 64], &mut searched, 64), Some(Head::TooLarge));
        assert_eq!(judge(b"", &mut 0, 64), Some(Head::Closed));
        for garbage in [&b"\x16\x03\x01\x02\x00"[..], b"GET / HTTP/2.0\r\n", b"G\0"] {
            assert_eq!(
                judge(garbage, &mut 0, 64),
                Some(Head::Invalid),
                "{garbage:?}"
            );
        }
        assert_eq!(judge(b"GE", &mut 0, 64), None);
    }

    proptest::proptest! {
        /// However the bytes arrive, the head is judged ended exactly when the whole of
        /// what came holds an empty line, as a one-shot search of it says.
        #[test]
        fn arrivals_in_any_pieces_judge_as_the_whole(
            fields in proptest::collection::vec(
                proptest::sample::select(vec![b'\r', b'\n', b'a', b':', b' ']), 0..48),
            cuts in proptest::collection::vec(0usize..80, 0..8),
        ) {
            // A valid request line, so that what follows is judged on its line ends only.
            let mut bytes = b"GET / HTTP/1.1\r\n".to_vec();
            bytes.extend_from_slice(&fields);
            let ended_at = (1..=bytes.len()).find(|&n| {
                let w = &bytes[..n];
                memchr::memmem::find(w, b"\r\n\r\n").is_some()
                    || memchr::memmem::find(w, b"\n\n").is_some()
                    || memchr::memmem::find(w, b"\n\r\n").is_some()
            });
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            points.push(bytes.len());
            points.sort_unstable();
            let mut searched = 0;
            for &n in points.iter().filter(|&&n| n > 0) {
                let got = judge(&bytes[..n], &mut searched, 1 << 20);
                if ended_at.is_some_and(|e| e <= n) {
                    proptest::prop_assert_eq!(got, Some(Head::Ended));
                    break;
                }
                proptest::prop_assert_ne!(got, Some(Head::Ended));
                if got.is_some() {
                    break;
                }
            }
        }
    }

    #[test]
    fn waits_for_the_end_leaves_the_head_unread_and_refuses_a_head_without_end() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let client = tokio::spawn(async move {
                let mut c = TcpStream::connect(addr).await.unwrap();
                for part in [&b"GET / HTTP/1.1\r\n"[..], b"Host: a\r", b"\n\r", b"\n"] {
                    c.write_all(part).await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                let mut big = TcpStream::connect(addr).await.unwrap();
                big.write_all(&[b'A'; 2048]).await.unwrap();
                let mut closed = TcpStream::connect(addr).await.unwrap();
                closed.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
                closed.shutdown().await.unwrap();
                (c, big, closed)
            });
            let (mut s, _) = l.accept().await.unwrap();
            assert_eq!(wait_for_head(&s, 1024).await.unwrap(), Head::Ended);
            let mut all = Vec::new();
            while !all.ends_with(b"\r\n\r\n") {
                let mut b = [0u8; 64];
                let n = s.read(&mut b).await.unwrap();
                all.extend_from_slice(&b[..n]);
            }
            assert_eq!(all, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
            let (big, _) = l.accept().await.unwrap();
            assert_eq!(wait_for_head(&big, 1024).await.unwrap(), Head::TooLarge);
            let (closed, _) = l.accept().await.unwrap();
            let _ = client.await.unwrap();
            assert_eq!(wait_for_head(&closed, 1024).await.unwrap(), Head::Closed);
        });
    }
}
