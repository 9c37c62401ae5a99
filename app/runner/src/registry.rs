//! The protocol registry: every protocol wirebench can run, by name. Adding a protocol is
//! its folder under `protocols/` and one line here (plus its crate in this crate's
//! Cargo.toml); the case loop, planner, estimator and CLI ask this list instead of
//! matching protocol names. The interface is `wirebench_protocol::Protocol`.

pub use wirebench_protocol::Protocol;

/// Every protocol, by name, in the order `wirebench protocols` lists them.
pub static REGISTRY: &[&dyn Protocol] = &[
    &wirebench_plugin_raw::Raw,
    &wirebench_plugin_xmpp::Xmpp,
    &wirebench_plugin_irc::Irc,
    &wirebench_plugin_mqtt::Mqtt,
    &wirebench_plugin_http::Http,
    &wirebench_plugin_websocket::WebSocket,
    &wirebench_plugin_grpc::Grpc,
    &wirebench_plugin_soap::Soap,
    &wirebench_plugin_rmi::Rmi,
    // The proxies' baseline lives with their shared connect workload.
    &wirebench_plugin_direct::DirectProtocol,
    &wirebench_plugin_socks5::Socks5,
    &wirebench_plugin_convert::Convert,
    &wirebench_plugin_shadowsocks::Shadowsocks,
];

/// The protocol of that name; `None` for a name no plugin has.
pub fn get(name: &str) -> Option<&'static dyn Protocol> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}

/// A case's protocol. Planned cases always have one: the `protocol` parameter's choices
/// are the registered names, so a case with another name cannot be planned.
pub fn of(case: &crate::Case) -> &'static dyn Protocol {
    get(case.protocol()).unwrap_or_else(|| {
        panic!(
            "case {} has protocol {:?}, which no plugin registers (planning should have refused it)",
            case.index,
            case.protocol()
        )
    })
}

/// The registered names.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|p| p.name()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unknown_name_is_no_protocol() {
        assert!(super::get("raw").is_some());
        assert!(
            super::get("nope").is_none(),
            "an unknown name once meant raw"
        );
    }
}
