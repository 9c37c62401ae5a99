//! The MQTT codec and client engine on arbitrary bytes (MQTT 3.1.1 and 5.0): never a
//! panic, every packet the decoder accepts encodes back to itself, the client's buffer
//! bounded by its maximum packet size.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_mqtt::fuzz_input(data);
});
