//! The load workload against real servers it starts itself (`xmpp.server=prosody` and
//! `ejabberd`, on 127.0.0.1): accounts and 10-entry rosters for every session are written
//! before the server starts, every other user logs in (half of each roster online, as in
//! study S4), partners message each other. Every session must log in, see its whole
//! roster and the presence of online contacts, and every message must arrive; the
//! server's own memory and CPU must be recorded. Needs the Debian packages
//! (scripts/test.sh installs them).

use crate::common;
use common::{m, records, run_ok};

fn run_against(server: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_ok(&[
        "run",
        "--protocol",
        "xmpp",
        "--workload",
        "load",
        "--xmpp-server",
        server,
        "--load-phases",
        "3s@200/s",
        "--load-arrivals",
        "uniform",
        "--load-stay",
        "6s",
        "--load-think",
        "4s",
        "--load-every",
        "1s",
        "--load-contacts",
        "10",
        "--load-online",
        "half",
        "--payload",
        "32",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let rs = records(&out);
    assert_eq!(rs.len(), 1, "{stderr}");
    let r = &rs[0];
    assert_eq!(r["status"], "ok", "{r}");
    let sessions = m(r, "load.sessions");
    assert!(sessions >= 500.0, "{r}");
    assert_eq!(m(r, "load.logged_in"), sessions, "{r}");
    assert_eq!(m(r, "load.failed"), 0.0, "{r}");
    // Every roster as written: the 5 users before and after each user.
    assert_eq!(m(r, "load.roster_items"), 10.0, "{r}");
    // Half of each roster logs in, all of them within 3 s and staying 6 s, so nearly
    // every session sees about 5 contacts come online (fewer at the schedule's ends).
    let presences = m(r, "load.presences");
    assert!(
        presences > 3.0 * sessions && presences <= 5.0 * sessions,
        "{presences} presences for {sessions} sessions: {r}"
    );
    assert!(m(r, "messages.sent") > 0.0, "{r}");
    assert_eq!(m(r, "messages.lost"), 0.0, "{r}");
    // Its own process, measured from outside: a plausible size and some CPU.
    let rss = m(r, "server.rss");
    assert!(rss > 10e6 && rss < 4e9, "{r}");
    assert!(m(r, "server.cpu") > 0.0, "{r}");
    assert!(m(r, "server.rss_per_session") > 0.0, "{r}");
    // The server's logs stay beside the results; its account files do not.
    let files = out.join(format!("case-0001-{server}"));
    assert!(files.is_dir(), "{}", files.display());
    assert!(!files.join("data").exists() && !files.join("prosody-data").exists());
}

#[test]
fn prosody_started_for_a_load_case_holds_its_sessions_and_rosters() {
    run_against("prosody");
}

#[test]
fn ejabberd_started_for_a_load_case_holds_its_sessions_and_rosters() {
    run_against("ejabberd");
}
