//! Prerequisites checked before anything runs (DESIGN.md principle 14): `wirebench run`
//! refusing a run whose peers are missing, `--skip-missing`, `wirebench doctor` and
//! `scripts/install-peers.sh`. Each test runs the binary on a PATH that holds only what the
//! lab needs (`ip`, `sysctl`, `setpriv`, `sh`) plus, where a test says so, fake programs of its own,
//! so it sees the same with and without the real peers installed on this machine.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::records;

/// A directory for a test's PATH: links to `programs` found on this machine's PATH, and
/// fake executables (`sh` scripts) with the given names and bodies.
struct Bin {
    dir: tempfile::TempDir,
}

impl Bin {
    fn new(programs: &[&str]) -> Bin {
        let bin = Bin {
            dir: tempfile::tempdir().unwrap(),
        };
        let path = std::env::var_os("PATH").unwrap_or_default();
        for p in programs {
            let found = std::env::split_paths(&path)
                .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
                .map(|d| d.join(p))
                .find(|f| f.is_file())
                .unwrap_or_else(|| panic!("no {p} on this machine"));
            std::os::unix::fs::symlink(found, bin.dir.path().join(p)).unwrap();
        }
        bin
    }

    /// The lab's programs only: what a user without any peer has.
    fn bare() -> Bin {
        Bin::new(&["ip", "sysctl", "setpriv", "sh"])
    }

    fn fake(&self, name: &str, body: &str) {
        let f = self.dir.path().join(name);
        std::fs::write(&f, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The binary with `bin` as its whole PATH, nothing installed by npm, no browser override.
fn wirebench(bin: &Bin, strophe: &Path) -> Command {
    let mut c = common::wirebench();
    c.env("PATH", bin.path())
        .env("WIREBENCH_STROPHE_DIR", strophe)
        .env_remove("WIREBENCH_CHROMIUM");
    c
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[test]
fn a_run_missing_peers_is_refused_before_anything_starts() {
    let bin = Bin::bare();
    let strophe = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = wirebench(&bin, strophe.path())
        .args(["run", "browser-transports", "--part", "native,browser"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // The table: what, how to install it, how many cases need it, which and why.
    let row = |name: &str| {
        err.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{err}"))
            .to_string()
    };
    let chromium = row("chromium");
    assert!(
        chromium.contains("apt-get install chromium")
            && chromium.contains(" 7 ")
            && chromium.contains("(xmpp.client=browser)"),
        "{chromium}"
    );
    let strophe_row = row("Strophe.js 5.0.0");
    assert!(
        strophe_row.contains("bash scripts/install-strophe.sh (needs npm)"),
        "{strophe_row}"
    );
    assert!(
        err.contains("7 of 16 cases need what this machine lacks"),
        "{err}"
    );
    assert!(
        // From another directory the script is named by its path in this checkout, so
        // the command works as printed.
        err.contains("install all of it with: bash ")
            && err.contains("scripts/install-peers.sh browser-transports --part native,browser\n"),
        "{err}"
    );
    assert!(
        err.contains("or pass --skip-missing to run the other 9 cases"),
        "{err}"
    );
    // Nothing started: no results directory, no first case.
    assert!(!out.exists());
    assert!(!err.contains("running against"), "{err}");

    // A dry run shows the same table and exits 0, still creating nothing.
    let o = wirebench(&bin, strophe.path())
        .args([
            "run",
            "browser-transports",
            "--part",
            "browser",
            "--dry-run",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("apt-get install chromium"), "{err}");
    assert!(!out.exists());
}

#[test]
fn skip_missing_runs_the_rest_and_records_the_skipped() {
    let bin = Bin::bare();
    let strophe = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let args = [
        "--protocol",
        "socks5",
        "--workload",
        "connect",
        "--payload",
        "64",
        "--connects",
        "5",
    ];
    let o = wirebench(&bin, strophe.path())
        .args(["run", "--no-report", "--skip-missing"])
        .args(args)
        .args(["--socks5-server", "ours,microsocks", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (err, stdout) = (text(&o.stderr), text(&o.stdout));
    // Skipping was asked for: the cases that ran decide the exit status.
    assert!(o.status.success(), "{err}");
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert_eq!(recs[0]["status"], "ok", "{}", recs[0]);
    assert_eq!(recs[1]["status"], "skipped", "{}", recs[1]);
    assert_eq!(
        recs[1]["error"],
        "needs microsocks (apt-get install microsocks)"
    );
    assert!(stdout.contains("skipped"), "{stdout}");
    assert!(
        err.contains("1 case run skipped for want of microsocks"),
        "{err}"
    );

    // Every case would be skipped: nothing to run, refused.
    let none = tmp.path().join("none");
    let o = wirebench(&bin, strophe.path())
        .args(["run", "--no-report", "--skip-missing"])
        .args(args)
        .args(["--socks5-server", "microsocks", "--out"])
        .arg(&none)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to run"), "{err}");
    assert!(!none.exists());
}

#[test]
fn doctor_lists_prerequisites_and_exits_by_them() {
    let bin = Bin::bare();
    let strophe = tempfile::tempdir().unwrap();
    let doctor = |bin: &Bin, args: &[&str]| -> Output {
        wirebench(bin, strophe.path())
            .arg("doctor")
            .args(args)
            .output()
            .unwrap()
    };
    let socks = ["--protocol", "socks5", "--workload", "connect"];
    let dante = [&socks[..], &["--socks5-server", "dante"]].concat();

    // The default scenario needs nothing.
    let o = doctor(&bin, &["default"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("needs nothing"));

    // Missing: 1, with the row and the install command.
    let o = doctor(&bin, &dante);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}{}", text(&o.stderr));
    let row = stdout.lines().find(|l| l.contains("danted")).unwrap();
    assert!(
        row.contains("MISSING") && row.contains("apt-get install dante-server"),
        "{row}"
    );
    assert!(
        stdout.contains(
            "scripts/install-peers.sh --protocol socks5 --workload connect --socks5-server dante"
        ),
        "{stdout}"
    );
    // What install-peers.sh reads; 0 whatever is missing.
    let o = doctor(&bin, &[&dante[..], &["--install-plan"]].concat());
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), "apt dante-server\n");

    // Present (a program of that name on PATH): 0, and nothing to install.
    let with = Bin::bare();
    with.fake("danted", "exit 0");
    let o = doctor(&with, &dante);
    assert!(o.status.success(), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("everything is present"));
    let o = doctor(&with, &[&dante[..], &["--install-plan"]].concat());
    assert_eq!(text(&o.stdout), "");

    // A script's own tool comes from Debian only when it is not on PATH (a non-Debian npm
    // may be there, which Debian's would conflict with).
    let browser = ["browser-transports", "--part", "browser", "--install-plan"];
    let plan = text(&doctor(&bin, &browser).stdout);
    assert!(plan.contains("apt npm\n"), "{plan}");
    assert!(
        plan.contains("script scripts/install-strophe.sh\n"),
        "{plan}"
    );
    with.fake("npm", "exit 0");
    let plan = text(&doctor(&with, &browser).stdout);
    assert!(!plan.contains("apt npm"), "{plan}");
    assert!(
        plan.contains("script scripts/install-strophe.sh\n"),
        "{plan}"
    );

    // Bad input: 2.
    assert_eq!(doctor(&bin, &["no-such-scenario"]).status.code(), Some(2));
}

/// The lab's programs are looked for as the run starts them: a PATH without `sysctl`
/// (Debian's /usr/sbin left out) is a missing prerequisite for doctor and the run alike,
/// not "everything is present" and then a run that cannot build its hosts.
#[test]
fn the_labs_programs_are_looked_for_as_the_run_starts_them() {
    let bin = Bin::new(&["ip", "setpriv", "sh"]);
    let strophe = tempfile::tempdir().unwrap();
    let link = [
        "--link",
        "1Mbit/1ms",
        "--workload",
        "pingpong",
        "--rounds",
        "3",
    ];
    let o = wirebench(&bin, strophe.path())
        .arg("doctor")
        .args(link)
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("sysctl (procps)  MISSING")
            && stdout.contains("  sysctl (procps): no sysctl on PATH"),
        "{stdout}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    for dry in [true, false] {
        let o = wirebench(&bin, strophe.path())
            .arg("run")
            .args(link)
            .arg("--out")
            .arg(&out)
            .args(dry.then_some("--dry-run"))
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert!(err.contains("\n  sysctl (procps)"), "{err}");
        assert_eq!(o.status.code(), Some(if dry { 0 } else { 2 }), "{err}");
    }
    assert!(!out.exists());
}

/// `doctor --packages` (hidden; what scripts/test.sh installs): every Debian package a
/// plugin declares for any parameter value, one per line, installed here or not.
#[test]
fn doctor_packages_lists_what_every_plugin_may_need() {
    let strophe = tempfile::tempdir().unwrap();
    let o = wirebench(&Bin::bare(), strophe.path())
        .args(["doctor", "--packages"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let packages: Vec<&str> = stdout.lines().collect();
    // A protocol's one peer (irc's ngircd), a value's (socks5.server=dante), a value
    // reached only with another (ejabberd's luerl for a load), a script's tool, the lab's.
    for p in [
        "ngircd",
        "dante-server",
        "erlang-luerl",
        "npm",
        "iproute2",
        "procps",
    ] {
        assert!(packages.contains(&p), "{p} missing:\n{stdout}");
    }
    assert!(
        packages.iter().all(|p| !p.is_empty() && !p.contains(' ')),
        "{stdout}"
    );
    // Not in the help: it is for scripts.
    let help = common::wirebench()
        .args(["doctor", "--help"])
        .output()
        .unwrap();
    assert!(!text(&help.stdout).contains("--packages"));
}

#[test]
fn install_peers_installs_what_doctor_plans_and_is_quiet_otherwise() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = repo.join("scripts/install-peers.sh");
    let bin = Bin::new(&["ip", "setpriv", "sh", "bash", "env"]);
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("apt.log");
    // apt-get records what it was asked (and installs nothing); sudo, for a user who is not
    // root, only runs it.
    bin.fake(
        "apt-get",
        &format!(
            "echo \"DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*\" >> {}",
            log.display()
        ),
    );
    bin.fake("sudo", "exec \"$@\"");
    let strophe = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(bin.path().join("bash"))
            .arg(&script)
            .args(args)
            .env("PATH", bin.path())
            .env("WIREBENCH", env!("CARGO_BIN_EXE_wirebench"))
            .env("WIREBENCH_STROPHE_DIR", strophe.path())
            .env_remove("DEBIAN_FRONTEND")
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };

    // Nothing missing: nothing done, nothing said.
    let o = run(&["default"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "");
    assert!(!log.exists());

    let o = run(&[
        "--protocol",
        "socks5",
        "--workload",
        "connect",
        "--socks5-server",
        "microsocks,dante",
    ]);
    let err = text(&o.stderr);
    let apt = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        apt,
        "DEBIAN_FRONTEND= update -q\n\
         DEBIAN_FRONTEND=noninteractive -o DPkg::Lock::Timeout=600 install -y -q microsocks dante-server\n"
    );
    // The fake apt-get installed nothing: the script says so and fails.
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("still missing after installing"), "{err}");
}
