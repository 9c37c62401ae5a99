//! The protocol registry: every protocol wirebench can run, by name. Adding a protocol is
//! its folder under `protocols/` and one line in this crate's Cargo.toml (its
//! `wirebench-plugin-NAME` dependency): build.rs makes the list from those lines. The case
//! loop, planner, estimator, merge and the binary's command line ask this list instead of
//! matching protocol names; the binary reaches plugins only through it. The interface is
//! `wirebench_protocol::Protocol`.

pub use wirebench_protocol::{LoadServer, LoadSizing, PluginCommand, Protocol};

include!(concat!(env!("OUT_DIR"), "/registry.rs"));

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

/// Every plugin's own commands (`wirebench x2x`, `converter`, worker entry points), in
/// the registry's order.
pub fn commands() -> impl Iterator<Item = &'static PluginCommand> {
    REGISTRY.iter().flat_map(|p| p.commands())
}

/// The plugin command of that name.
pub fn command(name: &str) -> Option<&'static PluginCommand> {
    commands().find(|c| (c.command)().get_name() == name)
}

/// The `wirebench serve` endpoint a sharded load runs against (`wirebench k8s
/// --with-server`): the first plugin's that declares one.
pub fn load_server() -> Option<LoadServer> {
    REGISTRY.iter().find_map(|p| p.load_server())
}

/// The registered names.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|p| p.name()).collect()
}

#[cfg(test)]
mod tests {
    /// build.rs found every plugin: as many as there are `wirebench-plugin-*` lines.
    #[test]
    fn the_registry_has_every_plugin_line() {
        let manifest = include_str!("../Cargo.toml");
        let lines = manifest
            .lines()
            .filter(|l| l.starts_with("wirebench-plugin-"))
            .count();
        assert_eq!(super::REGISTRY.len(), lines);
        assert_eq!(super::names()[..2], ["raw", "xmpp"]);
        let mut names = super::names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), lines, "two plugins have one name");
    }

    #[test]
    fn command_names_are_unique() {
        let mut names: Vec<String> = super::commands()
            .map(|c| (c.command)().get_name().to_string())
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        assert!(super::command("x2x").is_some());
        assert!(super::command("nope").is_none());
    }

    #[test]
    fn an_unknown_name_is_no_protocol() {
        assert!(super::get("raw").is_some());
        assert!(
            super::get("nope").is_none(),
            "an unknown name once meant raw"
        );
    }
}
