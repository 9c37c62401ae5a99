//! Block-wise transfer (RFC 7959) end to end: Block2 downloads and Block1 uploads of
//! 10 KiB over a lossy link, with the block size negotiated down to the server's.

use wirebench_coap_engine::{
    Client, ClientConfig, Code, Event, Request, Server, ServerConfig, ServerEvent, Szx,
    TransmissionParams,
};

use crate::pipe::{MS, Pipe, SECOND, client_addr, server_addr};

const BODY: usize = 10 * 1024;

fn body() -> Vec<u8> {
    (0..BODY).map(|i| (i * 7 % 251) as u8).collect()
}

fn endpoints(server_block: Szx) -> (Client, Server) {
    // A 300 ms each way link at 64 kbit/s: ACK_TIMEOUT 2 s is above its round trip.
    let client = Client::new(ClientConfig::new(TransmissionParams::default()), 21).unwrap();
    let server = Server::new(
        ServerConfig {
            blob: body(),
            block_size: server_block,
            ..ServerConfig::default()
        },
        22,
    );
    (client, server)
}

fn one_event(pipe: &mut Pipe, client: &mut Client, server: &mut Server) -> Event {
    let mut event = None;
    let done = pipe.run(client, server, 3_600 * SECOND, |c| {
        event = event.take().or_else(|| c.poll_event());
        event.is_some()
    });
    assert!(done, "no event");
    event.unwrap()
}

#[test]
fn download_10_kib_with_loss_and_a_smaller_server_block() {
    let mut pipe = Pipe::new(300 * MS, 64_000, 100_000, 5);
    let (mut client, mut server) = endpoints(Szx::new(5).unwrap());
    let mut r = Request::get(server_addr(), "blob", true);
    r.block_size = Some(Szx::MAX);
    client.request(r).unwrap();
    let Event::Response(resp) = one_event(&mut pipe, &mut client, &mut server) else {
        panic!("download failed")
    };
    assert_eq!(resp.code, Code::CONTENT);
    assert_eq!(resp.payload, body());
    // The client asked for 1024-byte blocks; the server's 512 win from the first block.
    assert_eq!(resp.exchanges, (BODY / 512) as u32);
    assert!(pipe.lost.iter().sum::<u64>() > 0, "the loss did not happen");
    assert_eq!(resp.retransmissions as u64, client.stats().retransmissions);
    assert!(resp.retransmissions > 0);
}

#[test]
fn download_without_early_negotiation_follows_the_server() {
    let mut pipe = Pipe::new(10 * MS, 0, 0, 5);
    let (mut client, mut server) = endpoints(Szx::new(6).unwrap());
    client
        .request(Request::get(server_addr(), "blob", false))
        .unwrap();
    let Event::Response(resp) = one_event(&mut pipe, &mut client, &mut server) else {
        panic!("download failed")
    };
    assert_eq!(resp.payload, body());
    assert_eq!(resp.exchanges, 10);
    assert_eq!(pipe.sent, [10, 10]);
}

#[test]
fn upload_10_kib_with_loss_and_a_smaller_server_block() {
    let mut pipe = Pipe::new(300 * MS, 64_000, 100_000, 9);
    let (mut client, mut server) = endpoints(Szx::new(4).unwrap());
    let mut r = Request::get(server_addr(), "upload", true);
    r.method = Code::PUT;
    r.payload = body();
    r.block_size = Some(Szx::MAX);
    client.request(r).unwrap();
    let Event::Response(resp) = one_event(&mut pipe, &mut client, &mut server) else {
        panic!("upload failed")
    };
    assert_eq!(resp.code, Code::CHANGED);
    // The first block goes at 1024 bytes, the other 9 KiB in the server's 256.
    assert_eq!(resp.exchanges, 1 + (BODY - 1024) as u32 / 256);
    assert_eq!(
        server.poll_event(),
        Some(ServerEvent::Uploaded {
            from: client_addr(),
            body: body()
        })
    );
    assert_eq!(server.poll_event(), None);
    assert!(resp.retransmissions > 0 && pipe.lost.iter().sum::<u64>() > 0);
}
