use super::*;
use std::collections::VecDeque;

/// Sends its queued batches (each as few transmits as `max_datagrams` allows), makes
/// every datagram received an event and, when `answer` is set, sends it back to its
/// source. A datagram reading "bad" breaks it.
#[derive(Default)]
struct Echo {
    batches: VecDeque<Batch>,
    answer: bool,
    events: VecDeque<Got>,
}

type Batch = (Option<SocketAddr>, Option<Ecn>, VecDeque<Vec<u8>>);
type Got = (Vec<u8>, Option<SocketAddr>, Option<Ecn>);

impl DatagramEngine for Echo {
    type Event = Got;
    type Error = String;

    fn handle_datagram(&mut self, _now: u64, d: Received<'_>) -> Result<(), String> {
        if d.data == b"bad" {
            self.batches
                .push_back((d.from, None, [b"why".to_vec()].into()));
            return Err("bad datagram".into());
        }
        if self.answer {
            self.batches
                .push_back((d.from, d.ecn, [d.data.to_vec()].into()));
        }
        self.events.push_back((d.data.to_vec(), d.from, d.ecn));
        Ok(())
    }

    fn poll_transmit(&mut self, _now: u64, max: usize, buf: &mut Vec<u8>) -> Option<Transmit> {
        let (to, ecn, batch) = self.batches.front_mut()?;
        let (to, ecn) = (*to, *ecn);
        let segment = batch.front().map_or(0, Vec::len);
        let mut n = 0;
        while n < max.max(1) {
            let Some(d) = batch.pop_front() else { break };
            buf.extend_from_slice(&d);
            n += 1;
        }
        if batch.is_empty() {
            self.batches.pop_front();
        }
        Some(Transmit {
            destination: to,
            ecn,
            size: buf.len(),
            segment_size: (n > 1).then_some(segment),
        })
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        self.events.pop_front()
    }
}

fn batch(to: Option<SocketAddr>, ds: &[&[u8]]) -> Echo {
    Echo {
        batches: [(to, None, ds.iter().map(|d| d.to_vec()).collect())].into(),
        ..Default::default()
    }
}

/// A scripted socket: receives hand out `input` one at a time, then nothing.
struct Script {
    input: VecDeque<(Vec<u8>, Option<usize>)>,
    sent: Vec<(Transmit, Vec<u8>)>,
}

impl DatagramIo for Script {
    fn send(&mut self, t: &Transmit, bytes: &[u8]) -> io::Result<()> {
        self.sent.push((*t, bytes[..t.size].to_vec()));
        Ok(())
    }

    fn recv(&mut self, buf: &mut Vec<u8>, _wait: Duration) -> io::Result<Recv> {
        let Some((d, segment_size)) = self.input.pop_front() else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        buf[..d.len()].copy_from_slice(&d);
        Ok(Recv {
            len: d.len(),
            from: None,
            ecn: None,
            segment_size,
        })
    }
}

fn script(input: &[(&[u8], Option<usize>)]) -> DatagramDriver<Script> {
    let io = Script {
        input: input.iter().map(|(d, s)| (d.to_vec(), *s)).collect(),
        sent: Vec::new(),
    };
    DatagramDriver::new(io, 64)
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

#[test]
fn a_coalesced_receive_reaches_the_engine_datagram_by_datagram() {
    let mut d = script(&[(b"abcdefg", Some(3)), (b"", None)]);
    let mut e = Echo {
        answer: true,
        ..Default::default()
    };
    let mut got = Vec::new();
    let mut times = Vec::new();
    while let Some((t, (data, _, _))) = d.poll_event(&mut e, soon()).unwrap() {
        got.push(data);
        times.push(t);
        if got.len() == 4 {
            break;
        }
    }
    assert_eq!(got, [&b"abc"[..], b"def", b"g", b""]);
    assert_eq!(times[0], times[2], "the three came in one receive");
    assert!(times[3] >= times[2]);
    let sent: Vec<&[u8]> = d.io.sent.iter().map(|(_, b)| &b[..]).collect();
    assert_eq!(
        sent,
        [&b"abc"[..], b"def", b"g", b""],
        "each answered on its own"
    );
    assert_eq!((d.datagrams_in, d.bytes_in), (4, 7));
    assert_eq!((d.datagrams_out, d.bytes_out), (4, 7));
}

#[test]
fn an_engine_error_is_its_own_and_its_last_word_is_sent() {
    let mut d = script(&[(b"bad", None)]);
    let r = d.poll_event(&mut Echo::default(), soon());
    assert!(matches!(r, Err(DriveError::Engine(e)) if e == "bad datagram"));
    assert_eq!(d.io.sent.len(), 1);
    assert_eq!(d.io.sent[0].1, b"why");
}

#[test]
fn the_deadline_ends_a_quiet_wait() {
    let mut d = script(&[]);
    let r = d.poll_event(
        &mut Echo::default(),
        Instant::now() + Duration::from_millis(20),
    );
    assert!(matches!(r, Ok(None)));
}

/// Two sockets on loopback, `a` connected to `b`.
fn pair() -> (Udp, Udp) {
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    a.connect(b.local_addr().unwrap()).unwrap();
    (Udp::new(a), Udp::new(b))
}

/// Receives until `n` datagrams came, with their segment sizes per receive.
fn take(u: &mut Udp, n: usize) -> (Vec<Vec<u8>>, Vec<Recv>) {
    let (mut got, mut recvs) = (Vec::new(), Vec::new());
    let mut buf = vec![0; 2048];
    while got.len() < n {
        let r = u
            .recv(&mut buf, Duration::from_secs(2))
            .expect("a datagram in time");
        got.extend(r.datagrams(&buf).map(<[u8]>::to_vec));
        recvs.push(r);
    }
    (got, recvs)
}

#[test]
fn datagrams_keep_their_boundaries_over_loopback() {
    let (mut a, mut b) = pair();
    let sent: Vec<Vec<u8>> = [0, 1, 7, 1200, 0, 3]
        .iter()
        .map(|&n| vec![n as u8; n])
        .collect();
    for d in &sent {
        a.send(&Transmit::single(d.len()), d).unwrap();
    }
    let (got, recvs) = take(&mut b, sent.len());
    assert_eq!(got, sent, "one receive per datagram, none merged or cut");
    let from = a.socket.local_addr().unwrap();
    assert!(recvs.iter().all(|r| r.from == Some(from)));
}

#[test]
fn a_datagram_longer_than_the_buffer_is_an_error() {
    let (mut a, b) = pair();
    let mut b = b.without_offload();
    a.send(&Transmit::single(100), &[1; 100]).unwrap();
    let e = b
        .recv(&mut vec![0; 50], Duration::from_secs(2))
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
}

#[test]
fn a_segmented_transmit_arrives_as_its_datagrams_with_or_without_offload() {
    for offload in [true, false] {
        let (a, b) = pair();
        let (mut a, mut b) = if offload {
            (a, b)
        } else {
            (a.without_offload(), b.without_offload())
        };
        let bytes: Vec<u8> = (0..350u32).map(|i| (i / 100) as u8).collect();
        let t = Transmit {
            segment_size: Some(100),
            ..Transmit::single(350)
        };
        a.send(&t, &bytes).unwrap();
        let (got, recvs) = take(&mut b, 4);
        let want: Vec<Vec<u8>> = bytes.chunks(100).map(<[u8]>::to_vec).collect();
        assert_eq!(got, want, "offload {offload}");
        if a.gso() && b.gro() {
            // Loopback hands the GSO packet to a GRO socket whole: one receive.
            assert_eq!(recvs.len(), 1, "{recvs:?}");
            assert_eq!(recvs[0].segment_size, Some(100));
        } else {
            assert!(recvs.iter().all(|r| r.segment_size.is_none()), "{recvs:?}");
        }
    }
}

#[test]
fn an_unconnected_socket_sends_to_each_transmits_destination() {
    let s = Udp::new(UdpSocket::bind("127.0.0.1:0").unwrap());
    let mut x = Udp::new(UdpSocket::bind("127.0.0.1:0").unwrap());
    let mut y = Udp::new(UdpSocket::bind("127.0.0.1:0").unwrap());
    let (to_x, to_y) = (
        x.socket.local_addr().unwrap(),
        y.socket.local_addr().unwrap(),
    );
    let mut engine = Echo {
        batches: [
            (Some(to_x), None, [b"x1".to_vec(), b"x2".to_vec()].into()),
            (Some(to_y), None, [b"y".to_vec()].into()),
        ]
        .into(),
        ..Default::default()
    };
    let mut d = DatagramDriver::new(s, 2048);
    d.flush(&mut engine).unwrap();
    assert_eq!((d.datagrams_out, d.bytes_out), (3, 5));
    assert_eq!(take(&mut x, 2).0, [b"x1".to_vec(), b"x2".to_vec()]);
    assert_eq!(take(&mut y, 1).0, [b"y".to_vec()]);
}

#[test]
fn the_driver_runs_an_exchange_over_loopback_with_ecn() {
    let (a, b) = pair();
    let to_b = b.socket.local_addr().unwrap();
    let mut client = batch(None, &[b"one", b"two", b"six", b"!"]);
    client.batches[0].1 = Some(Ecn::Ect0);
    let mut server = Echo {
        answer: true,
        ..Default::default()
    };
    let mut c = DatagramDriver::new(a, 2048);
    let mut s = DatagramDriver::new(b, 2048);
    c.flush(&mut client).unwrap();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let (_, (data, from, ecn)) = s.poll_event(&mut server, soon()).unwrap().unwrap();
        assert_eq!(from, Some(c.io.socket.local_addr().unwrap()));
        assert_eq!(
            ecn,
            Some(Ecn::Ect0),
            "IP_TOS set on send and read on receive"
        );
        seen.push(data);
    }
    assert_eq!(seen, [&b"one"[..], b"two", b"six", b"!"]);
    let mut back = Vec::new();
    while back.len() < 4 {
        let (_, (data, from, _)) = c.poll_event(&mut client, soon()).unwrap().unwrap();
        assert_eq!(from, Some(to_b));
        back.push(data);
    }
    assert_eq!(back, seen, "answers came back whole, in order");
    assert_eq!((s.datagrams_in, s.datagrams_out, c.datagrams_in), (4, 4, 4));
}
