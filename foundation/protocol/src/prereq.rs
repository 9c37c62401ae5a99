//! What a case needs on this machine beyond wirebench itself (a real server, a browser, a
//! compiler, root for the lab), so that the runner can check every planned case before the
//! first one starts (nothing starts that cannot finish) and `wirebench doctor` can list it.
//!
//! Each peer is one [`Requirement`] constant in the folder that starts it: its name, how
//! it is found and how it is installed. The same constant answers the run-time check
//! ([`Requirement::require`]) and the plugin's [`crate::Protocol::prerequisites`], so the
//! message a case fails with and the table before the run cannot disagree.

use std::path::PathBuf;

/// How a requirement gets installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// A Debian package.
    Debian(&'static str),
    /// A script of this repository, run with bash from anywhere, with the programs the
    /// script itself needs and the Debian package of each (`("npm", "npm")`): installed
    /// first, and only when the program is not on PATH (a non-Debian npm may be there).
    Script {
        path: &'static str,
        needs: &'static [(&'static str, &'static str)],
    },
    /// Nothing to install: what to do instead.
    Manual(&'static str),
}

impl std::fmt::Display for Install {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Install::Debian(p) => write!(f, "apt-get install {p}"),
            Install::Script { path, needs: [] } => write!(f, "bash {path}"),
            Install::Script { path, needs } => {
                let progs: Vec<&str> = needs.iter().map(|(p, _)| *p).collect();
                write!(f, "bash {path} (needs {})", progs.join(", "))
            }
            Install::Manual(s) => f.write_str(s),
        }
    }
}

/// How to tell a requirement is present.
#[derive(Debug, Clone, Copy)]
pub enum Lookup {
    /// A program on PATH, as the case will start it.
    Program(&'static str),
    /// The plugin's own search (an environment override, files beside the binary, an
    /// Erlang application directory): where it is, or what was looked for and not found.
    Find(fn() -> Result<PathBuf, String>),
}

/// Something cases need on this machine: a program, a file, a privilege.
#[derive(Debug, Clone, Copy)]
pub struct Requirement {
    /// As a user knows it: `ejabberd`, `Strophe.js 5.0.0`, `chromium`.
    pub name: &'static str,
    pub lookup: Lookup,
    pub install: Install,
}

impl Requirement {
    /// Where it is (empty for a privilege), or what was looked for.
    pub fn find(&self) -> Result<PathBuf, String> {
        match self.lookup {
            Lookup::Program(bin) => on_path(bin),
            Lookup::Find(f) => f(),
        }
    }

    /// [`Requirement::find`], failing with the error a case reports: what is missing and
    /// how to install it.
    pub fn require(&self) -> Result<PathBuf, crate::PeerError> {
        self.find().map_err(|_| self.missing())
    }

    /// The error of a case that finds it missing.
    pub fn missing(&self) -> crate::PeerError {
        crate::PeerError::Missing {
            program: self.name.to_string(),
            install: self.install.to_string(),
        }
    }

    /// This requirement, for a case, because of `why` (`xmpp.server=ejabberd`).
    pub fn because(&self, why: impl Into<String>) -> Prerequisite {
        Prerequisite {
            need: *self,
            why: why.into(),
        }
    }
}

/// A [`Requirement`] of one case, with the reason in the case's own words.
#[derive(Debug, Clone)]
pub struct Prerequisite {
    pub need: Requirement,
    /// The parameter values that call for it: `xmpp.client=browser`.
    pub why: String,
}

/// The one program lookup ([`wirebench_host::program`]): what a [`Lookup::Program`] finds
/// is the file the run starts.
pub use wirebench_host::program::{find_program, on_path, program_path};

/// What a case in the lab needs: namespaces are made by root with iproute2's `ip`.
pub const ROOT: Requirement = Requirement {
    name: "root",
    lookup: Lookup::Find(|| {
        wirebench_host::command::check_privileges()
            .map(|()| PathBuf::new())
            .map_err(|e| e.to_string())
    }),
    install: Install::Manual("run as root, or drop the link parameters"),
};

/// iproute2's `ip`, which builds the lab and starts peers in its hosts.
pub const IP: Requirement = Requirement {
    name: "ip (iproute2)",
    lookup: Lookup::Program("ip"),
    install: Install::Debian("iproute2"),
};

/// procps' `sysctl`, which sets each lab host's own kernel settings (IPv6 off, TCP Fast
/// Open, timestamps).
pub const SYSCTL: Requirement = Requirement {
    name: "sysctl (procps)",
    lookup: Lookup::Program("sysctl"),
    install: Install::Debian("procps"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_reads_as_a_command() {
        assert_eq!(
            Install::Debian("ngircd").to_string(),
            "apt-get install ngircd"
        );
        let s = Install::Script {
            path: "scripts/install-strophe.sh",
            needs: &[("npm", "npm")],
        };
        assert_eq!(s.to_string(), "bash scripts/install-strophe.sh (needs npm)");
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        const NONE: Requirement = Requirement {
            name: "wirebench-no-such-program",
            lookup: Lookup::Program("wirebench-no-such-program"),
            install: Install::Debian("no-such-package"),
        };
        assert!(NONE.find().unwrap_err().contains("on PATH"));
        let e = NONE.require().unwrap_err().to_string();
        assert_eq!(
            e,
            "wirebench-no-such-program is not installed; install it with: apt-get install no-such-package"
        );
    }
}
