//! The measurement loops' socket calls allocate nothing: a ping-pong round is one
//! `send`/`sendmsg` and one `recv` system call, as in sockperf.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::IoSlice;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;
use wirebench_net::sock;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

#[test]
fn send_sendmsg_recv_and_poll_allocate_nothing() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    let (fa, fb) = (sock::fd(&a), sock::fd(&b));
    let mut buf = [0u8; 64];
    let header = [1u8; 21];
    let payload = [2u8; 2];
    let before = allocations();
    for _ in 0..100 {
        sock::send(fa, &header, 0).unwrap();
        sock::sendmsg(fa, &[IoSlice::new(&header), IoSlice::new(&payload)], 0).unwrap();
        let mut got = 0;
        while got < 2 * header.len() + payload.len() {
            assert_ne!(
                sock::poll(&b, libc::POLLIN, Duration::from_secs(5)).unwrap(),
                0
            );
            got += sock::recv(fb, &mut buf, libc::MSG_DONTWAIT).unwrap();
        }
    }
    assert_eq!(allocations() - before, 0, "allocations in the message loop");
}
