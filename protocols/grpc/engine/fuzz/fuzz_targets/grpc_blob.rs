//! The gRPC plugin's hand-written protobuf parser (`Blob { bytes data = 1; }`) on
//! arbitrary message bytes: never a panic, the data range always inside the input, and
//! what it finds re-encodes to a message that parses to the same data.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = wirebench_grpc::decode(data) {
        assert!(r.end <= data.len() && r.start <= r.end);
        let found = &data[r];
        let mut again = Vec::new();
        wirebench_grpc::encode_into(&mut again, found);
        let r2 = wirebench_grpc::decode(&again).expect("our own encoding parses");
        assert_eq!(&again[r2], found);
    }
});
