//! Study S2 in a real browser (`xmpp.client=browser`): headless Chromium loads a page that
//! uses Strophe.js to connect to the case's WebSocket (RFC 7395), BOSH (XEP-0124/0206) or
//! SockJS 0.3.3 endpoint (sockjs-client under Strophe's WebSocket transport), log in (SASL SCRAM, RFC 5802/7677) and send N XEP-0199 pings one after
//! another, each waiting for its pong; the page times itself with `performance.now()`
//! (W3C High Resolution Time) and reports back.
//!
//! wirebench serves the page and Strophe.js (installed from npm by
//! `scripts/install-strophe.sh`, never fetched at run time) from a small HTTP/1.1 server of
//! its own on loopback, or in the lab's client host when the case has a link, so the link
//! lies between the browser and the server. The page POSTs its result JSON to the same
//! origin; Chromium is started with the page's URL on its command line, so no DevTools
//! protocol client is needed to drive it: the page drives itself, and its console goes to
//! Chromium's stderr (`--enable-logging=stderr`), which a failed case quotes.
//!
//! Chromium runs in its own process group with a throw-away profile directory; both are
//! removed when the case ends, however it ends (success, error, Ctrl-C: [`Browser`]'s
//! `Drop`). If wirebench itself is killed, the parent-death signal ends the browser.
//!
//! Its one job is that harness: the page, its server, Chromium, the page's timings as a
//! case's figures. Concurrency: blocking threads beside one child process. The page
//! server is a thread polling a non-blocking listener, with a thread per HTTP/1.1
//! connection (the page, the scripts, the result); the caller's thread waits on their
//! channel for the page's load and result, reading a progress counter in between, while
//! Chromium runs the page in its own process group.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wirebench_model::MetricSpec;
use wirebench_protocol::Fault;
use wirebench_protocol::prereq::on_path;
use wirebench_protocol::stats::{push_counts, push_rtts, secs};
use wirebench_protocol::{Ctx, Install, Lookup, Outcome, Requirement, WorkloadError};

// Study S2's figures, declared here, the lowest crate that records them; the plugin's
// native S2 client records the first three too.
pub const S2_TOTAL: MetricSpec =
    MetricSpec::new("s2.total", "s", "study S2's test: login and pings")
        .named("Time for 100 pings");
pub const S2_LOGIN: MetricSpec =
    MetricSpec::new("s2.login", "s", "study S2's login").named("Connect and log in");
pub const S2_PINGS: MetricSpec =
    MetricSpec::new("s2.pings", "s", "study S2's pings after the login").named("100 pings");
pub const S2_BROWSER_START: MetricSpec =
    MetricSpec::new("s2.browser_start", "s", "headless Chromium's start");

/// The script that installs Strophe.js, named in errors.
pub const SETUP: &str = "scripts/install-strophe.sh";

/// The S2 page. Parameters come in its query string; the result goes to `POST /result`.
const PAGE: &str = include_str!("s2.html");

/// What the browser case needs to know.
pub struct BrowserRun {
    /// `ws://...` or `http://...`: the endpoint as the page reaches it.
    pub url: String,
    pub jid: String,
    pub password: String,
    pub count: u64,
    /// `on`: `conn.flush()` after each ping (Strophe's BOSH otherwise sends from a 100 ms
    /// timer); `all`: after every stanza, the login's too; `off`: never.
    pub flush: &'static str,
    /// The lab's client host, where the page server and Chromium run (`None`: here).
    pub netns: Option<String>,
    /// Where the page server listens (port 0: any).
    pub bind: SocketAddr,
    /// A SockJS case: sockjs-client's transport name (`url` is then the SockJS base URL,
    /// and the page hands sockjs-client to Strophe's WebSocket transport in place of
    /// WebSocket: each SockJS message carries one RFC 7395 element).
    pub sockjs: Option<&'static str>,
    /// How the case sees that the page is still making progress.
    pub progress: Progress,
}

/// A counter that moves while the page talks to its server, read from outside the page:
/// a progress report from the page would cross the link and share the measured time.
pub enum Progress {
    /// Our endpoint's count of client requests (WebSocket messages, HTTP requests).
    Endpoint(Arc<wirebench_xmpp_gateway::WebStats>),
    /// A real server's own endpoint counts nothing we can read, so its CPU time stands in
    /// (milliseconds): every request the page sends costs the server some. A server that
    /// burns CPU while idle would hide a stalled page, so such cases also get a deadline
    /// for the whole page ([`Progress::deadline`]).
    ServerCpu(u32),
}

impl Progress {
    fn read(&self) -> u64 {
        match self {
            Progress::Endpoint(s) => s.requests.load(Ordering::Relaxed),
            Progress::ServerCpu(pid) => {
                wirebench_peer::usage(*pid).map_or(0, |u| (u.cpu_s * 1000.0) as u64)
            }
        }
    }

    fn stalled(&self, stall: Duration, seen: u64) -> String {
        match self {
            Progress::Endpoint(_) => format!(
                "the S2 page stopped: nothing reached the endpoint for {} s ({seen} requests \
                 so far) and no result",
                stall.as_secs()
            ),
            Progress::ServerCpu(_) => format!(
                "the S2 page stopped: the server used no CPU for {} s ({seen} ms so far) and \
                 no result came",
                stall.as_secs()
            ),
        }
    }

    /// The longest a page may take once loaded, however busy the server looks: a second
    /// per ping plus twice the stall timeout (the slowest page seen, Strophe's BOSH timer
    /// over 162 ms, takes about 0.27 s per ping).
    fn deadline(&self, count: u64, stall: Duration) -> Option<Duration> {
        match self {
            Progress::Endpoint(_) => None,
            Progress::ServerCpu(_) => Some(stall * 2 + Duration::from_secs(count)),
        }
    }
}

/// Strophe.js (with sockjs-client) from npm, pinned by bench/strophe-browser's lock file
/// (a test keeps this name's version equal to it).
pub const STROPHE: Requirement = Requirement {
    name: "Strophe.js 5.0.0",
    lookup: Lookup::Find(find_strophe),
    install: Install::Script {
        path: SETUP,
        needs: &[("npm", "npm")],
    },
};

/// Headless Chromium: `$WIREBENCH_CHROMIUM`, else `chromium` on PATH.
pub const CHROMIUM: Requirement = Requirement {
    name: "chromium",
    lookup: Lookup::Find(|| {
        on_path(&chromium()).map_err(|e| format!("{e}; or set WIREBENCH_CHROMIUM"))
    }),
    install: Install::Debian("chromium"),
};

/// Where Strophe.js's browser bundle is: `$WIREBENCH_STROPHE_DIR` if set (and only there), else
/// `target/strophe-browser` beside the running binary's `target/<profile>/`, else the one
/// of the source tree this was built from.
pub fn strophe_bundle() -> Result<PathBuf, WorkloadError> {
    find_strophe().map_err(|_| {
        WorkloadError::Environment(format!(
            "xmpp.client=browser needs Strophe.js (and sockjs-client) from npm: run `bash {SETUP}` (installs it \
             into target/strophe-browser; or set WIREBENCH_STROPHE_DIR)"
        ))
    })
}

fn find_strophe() -> Result<PathBuf, String> {
    const REL: &str = "node_modules/strophe.js/dist/strophe.umd.min.js";
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("WIREBENCH_STROPHE_DIR") {
        dirs.push(PathBuf::from(d));
    } else if let Ok(exe) = std::env::current_exe() {
        // target/release/wirebench, or target/release/deps/<test> for tests.
        for up in exe.ancestors().skip(1).take(3) {
            dirs.push(up.join("strophe-browser"));
        }
    }
    if dirs.is_empty() || std::env::var_os("WIREBENCH_STROPHE_DIR").is_none() {
        dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/strophe-browser"));
    }
    dirs.iter()
        .map(|d| d.join(REL))
        .find(|p| p.is_file())
        .ok_or_else(|| match std::env::var_os("WIREBENCH_STROPHE_DIR") {
            Some(d) => format!(
                "no {REL} in $WIREBENCH_STROPHE_DIR ({})",
                Path::new(&d).display()
            ),
            None => format!(
                "no {REL} in target/strophe-browser beside wirebench or in its source tree \
                 (or set WIREBENCH_STROPHE_DIR)"
            ),
        })
}

/// The browser program: `$WIREBENCH_CHROMIUM`, else `chromium`.
fn chromium() -> String {
    std::env::var("WIREBENCH_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// The scripts the page loads: Strophe.js, and sockjs-client for a SockJS case (else empty).
struct Scripts {
    strophe: Vec<u8>,
    sockjs: Vec<u8>,
}

/// What the page server tells the case.
enum Msg {
    Loaded(Instant),
    Result(String),
}

/// The page server: one thread accepting, one per connection (Chromium opens speculative
/// connections that may never carry a request, so no connection may hold up another).
struct PageServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PageServer {
    fn start(
        bind: SocketAddr,
        netns: Option<&str>,
        scripts: Scripts,
        tx: mpsc::Sender<Msg>,
    ) -> Result<PageServer, WorkloadError> {
        // Bound on a thread inside the client host: the listener belongs to its namespace.
        let ns = netns.map(str::to_string);
        let listener = std::thread::spawn(move || {
            if let Some(ns) = &ns {
                wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())?;
            }
            TcpListener::bind(bind).map_err(|e| format!("cannot listen on {bind}: {e}"))
        })
        .join()
        .map_err(|_| WorkloadError::Environment("the page server's start-up panicked".into()))?
        .map_err(WorkloadError::Environment)?;
        listener
            .set_nonblocking(true)
            .map_err(|e| WorkloadError::Environment(e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| WorkloadError::Environment(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let sp = stop.clone();
        let scripts = Arc::new(scripts);
        let thread = std::thread::Builder::new()
            .name("wb-s2-page".into())
            .spawn(move || {
                // Polled, not blocking: nothing outside the client host's namespace could
                // connect to wake a blocking accept at the end.
                while !sp.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            let _ = conn.set_nonblocking(false);
                            let (tx, scripts) = (tx.clone(), scripts.clone());
                            let _ = std::thread::Builder::new()
                                .name("wb-s2-page-conn".into())
                                .spawn(move || serve_conn(conn, &scripts, &tx));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
            .map_err(|e| WorkloadError::Environment(e.to_string()))?;
        Ok(PageServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One HTTP/1.1 connection: requests in turn until the client closes it or is idle 10 s.
fn serve_conn(mut conn: TcpStream, scripts: &Scripts, tx: &mpsc::Sender<Msg>) {
    const MAX: usize = 1 << 20;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::new();
    loop {
        // Read until the headers are complete, then the body's Content-Length.
        let (method, path, head_len, body_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let len = req
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                        .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                        .unwrap_or(0usize);
                    break (
                        req.method.unwrap_or("").to_string(),
                        req.path.unwrap_or("/").to_string(),
                        n,
                        len,
                    );
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX => {
                    let mut chunk = [0u8; 8192];
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
                _ => return,
            }
        };
        if body_len > MAX {
            return;
        }
        while buf.len() < head_len + body_len {
            let mut chunk = [0u8; 8192];
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        let body = buf[head_len..head_len + body_len].to_vec();
        buf.drain(..head_len + body_len);
        let route = path.split('?').next().unwrap_or("");
        let (status, ctype, content): (&str, &str, &[u8]) = match (method.as_str(), route) {
            ("GET", "/s2.html") => {
                let _ = tx.send(Msg::Loaded(Instant::now()));
                ("200 OK", "text/html; charset=utf-8", PAGE.as_bytes())
            }
            ("GET", "/strophe.js") => ("200 OK", "text/javascript", &scripts.strophe[..]),
            ("GET", "/sockjs.js") => ("200 OK", "text/javascript", &scripts.sockjs[..]),
            ("POST", "/result") => {
                let _ = tx.send(Msg::Result(String::from_utf8_lossy(&body).into_owned()));
                ("204 No Content", "text/plain", b"")
            }
            _ => ("404 Not Found", "text/plain", b"not found\n"),
        };
        // Cross-origin isolation (COOP + COEP) lets performance.now() tick in 5 µs steps
        // instead of 100 µs; the BOSH endpoint's answers carry CORS headers, so the page
        // may still reach it, and WebSocket is not subject to COEP. Not with SockJS: its
        // JSONP and iframe transports load cross-origin scripts and pages that COEP blocks.
        let isolate = if path.contains("sockjs=") {
            ""
        } else {
            "Cross-Origin-Opener-Policy: same-origin\r\n\
             Cross-Origin-Embedder-Policy: require-corp\r\n"
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
             Cache-Control: no-store\r\n{isolate}\
             Cross-Origin-Resource-Policy: same-origin\r\n\r\n",
            content.len()
        );
        if conn.write_all(head.as_bytes()).is_err() || conn.write_all(content).is_err() {
            return;
        }
    }
}

/// A running Chromium: killed with its whole process group, and its profile directory
/// removed, when dropped.
struct Browser {
    child: std::process::Child,
    dir: PathBuf,
    log: PathBuf,
}

impl Browser {
    fn start(url: &str, netns: Option<&str>) -> Result<Browser, WorkloadError> {
        let program = chromium();
        CHROMIUM.find().map_err(|_| {
            WorkloadError::Environment(format!(
                "xmpp.client=browser needs Chromium: `{program}` is not on PATH (Debian: {}; \
                 or set WIREBENCH_CHROMIUM)",
                CHROMIUM.install
            ))
        })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("wirebench-chromium-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            WorkloadError::because(Fault::Environment, format!("{}", dir.display()), e)
        })?;
        // Chromium's own scratch files (`org.chromium.*`) go where TMPDIR says: inside the
        // profile directory, so that removing it on drop leaves nothing in /tmp.
        let scratch = dir.join("tmp");
        std::fs::create_dir_all(&scratch).map_err(|e| {
            WorkloadError::because(Fault::Environment, format!("{}", scratch.display()), e)
        })?;
        let log = dir.with_extension("log");
        let stderr = std::fs::File::create(&log).map_err(|e| {
            WorkloadError::because(Fault::Environment, format!("{}", log.display()), e)
        })?;
        let mut cmd = wirebench_peer::command_in(netns, &program);
        cmd.args([
            "--headless=new",
            // Root (the lab needs it) cannot use Chromium's sandbox.
            "--no-sandbox",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            // Any proxy in the environment would put itself between page and endpoint.
            "--no-proxy-server",
            // The page's console.* goes to stderr (INFO:CONSOLE lines).
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.display()))
        .env("TMPDIR", &scratch)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                let _ = std::fs::remove_file(&log);
                return Err(WorkloadError::Environment(format!(
                    "cannot start {program}: {e} (Debian: apt-get install chromium)"
                )));
            }
        };
        Ok(Browser { child, dir, log })
    }

    /// The page's console lines from Chromium's stderr, else its last lines.
    fn console(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let console: Vec<&str> = text.lines().filter(|l| l.contains(":CONSOLE")).collect();
        let lines: Vec<&str> = if console.is_empty() {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(15)..].to_vec()
        } else {
            console[console.len().saturating_sub(30)..].to_vec()
        };
        if lines.is_empty() {
            "(nothing on Chromium's stderr)".into()
        } else {
            lines.join("\n")
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Its own process group (command_in): the renderer and helper processes too.
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) on the group this child leads; no memory is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The page's report.
#[derive(serde::Deserialize)]
struct PageResult {
    ok: bool,
    #[serde(default)]
    why: String,
    #[serde(default)]
    total_ms: f64,
    #[serde(default)]
    login_ms: f64,
    #[serde(default)]
    rtts_ms: Vec<f64>,
    #[serde(default)]
    isolated: bool,
    #[serde(default)]
    user_agent: String,
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs study S2 in headless Chromium and reads the page's timings back.
pub fn run(run: &BrowserRun, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let bundle = strophe_bundle()?;
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| {
            WorkloadError::Environment(format!("{}: {e} (run `bash {SETUP}`)", p.display()))
        })
    };
    let strophe = read(&bundle)?;
    let sockjs = match run.sockjs {
        // node_modules/strophe.js/dist/<bundle> -> node_modules/sockjs-client/dist/...
        Some(_) => read(
            &bundle
                .ancestors()
                .nth(3)
                .unwrap_or(Path::new("."))
                .join("sockjs-client/dist/sockjs.min.js"),
        )?,
        None => Vec::new(),
    };
    let (tx, rx) = mpsc::channel();
    let pages = PageServer::start(
        run.bind,
        run.netns.as_deref(),
        Scripts { strophe, sockjs },
        tx,
    )?;
    let mut page = format!(
        "http://{}/s2.html?url={}&jid={}&password={}&n={}&flush={}",
        pages.addr,
        percent_encode(&run.url),
        percent_encode(&run.jid),
        percent_encode(&run.password),
        run.count,
        run.flush
    );
    if let Some(t) = run.sockjs {
        page.push_str(&format!("&sockjs={t}"));
    }
    let launched = Instant::now();
    let mut browser = Browser::start(&page, run.netns.as_deref())?;
    // Chromium's start-up gets 30 s; after that the page must make progress: the endpoint
    // counts every WebSocket message or HTTP request it gets, so a page that sends nothing
    // for the stall timeout has stalled (watched from outside: a progress report from the
    // page would cross the link and share the measured time).
    let start_limit = Duration::from_secs(30);
    let stall = ctx.stall_timeout.max(Duration::from_secs(10));
    let mut last_seen = (run.progress.read(), Instant::now());
    let deadline = run.progress.deadline(run.count, stall);
    let mut loaded = None;
    let result = loop {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Loaded(at)) => {
                loaded.get_or_insert(at);
            }
            Ok(Msg::Result(r)) => break r,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(WorkloadError::Environment("the page server stopped".into()));
            }
        }
        let now = Instant::now();
        let seen = run.progress.read();
        if seen != last_seen.0 {
            last_seen = (seen, now);
        }
        let failed = match loaded {
            None if now > launched + start_limit => Some(format!(
                "Chromium never loaded the S2 page within {} s",
                start_limit.as_secs()
            )),
            Some(at) if now > last_seen.1.max(at) + stall => {
                Some(run.progress.stalled(stall, seen))
            }
            Some(at) if deadline.is_some_and(|d| now > at + d) => Some(format!(
                "the S2 page did not finish {} pings within {} s of loading",
                run.count,
                deadline.unwrap_or_default().as_secs()
            )),
            _ => None,
        };
        if let Some(what) = failed {
            return Err(WorkloadError::Peer(format!(
                "{what}; the page's console:\n{}",
                browser.console()
            )));
        }
        // A browser that died is not coming back.
        if let Ok(Some(status)) = browser.child.try_wait() {
            return Err(WorkloadError::Peer(format!(
                "Chromium exited ({status}) before the S2 page reported; its output:\n{}",
                browser.console()
            )));
        }
    };
    let r: PageResult = serde_json::from_str(&result).map_err(|e| {
        WorkloadError::Peer(format!(
            "the S2 page's result is not what was expected ({e}): {result}"
        ))
    })?;
    if !r.ok {
        return Err(WorkloadError::Peer(format!(
            "the S2 page failed after {} pongs: {}; the page's console:\n{}",
            r.rtts_ms.len(),
            r.why,
            browser.console()
        )));
    }
    let ms = |x: f64| (x * 1e6).round().max(0.0) as u64;
    let rtts: Vec<u64> = r.rtts_ms.iter().map(|&x| ms(x)).collect();
    let mut tally = wirebench_protocol::tally::Tally::new();
    for i in 0..rtts.len() as u64 {
        tally.observe(i, false);
    }
    tally.finish(run.count);
    let mut out = Outcome::default();
    out.put(S2_TOTAL, secs(ms(r.total_ms)));
    out.put(S2_LOGIN, secs(ms(r.login_ms)));
    out.put(S2_PINGS, secs(ms(r.total_ms - r.login_ms)));
    if let Some(at) = loaded {
        out.put(S2_BROWSER_START, at.duration_since(launched).as_secs_f64());
    }
    push_counts(&mut out, run.count, &tally);
    (ctx.progress)(rtts.len() as u64, run.count);
    push_rtts(&mut out, rtts);
    out.notes.push(format!(
        "study S2 in headless Chromium ({}): Strophe.js, {} XEP-0199 pings from {} to {}, \
         each waiting for its pong, xmpp.flush={}; timed by the page with \
         performance.now() ({} resolution)",
        r.user_agent,
        run.count,
        run.jid,
        run.url,
        run.flush,
        if r.isolated { "5 µs" } else { "100 µs" }
    ));
    drop(browser);
    drop(pages);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoding_keeps_only_unreserved_characters() {
        assert_eq!(
            percent_encode("ws://127.0.0.1:80/x?a=b&c"),
            "ws%3A%2F%2F127.0.0.1%3A80%2Fx%3Fa%3Db%26c"
        );
        assert_eq!(
            percent_encode("user1@wirebench.test"),
            "user1%40wirebench.test"
        );
    }

    #[test]
    fn strophes_name_carries_the_pinned_version() {
        let pkg = include_str!("../../../../bench/strophe-browser/package.json");
        let pinned = pkg
            .lines()
            .find_map(|l| l.trim().strip_prefix("\"strophe.js\": \""))
            .and_then(|v| v.split('"').next())
            .unwrap();
        assert_eq!(STROPHE.name, format!("Strophe.js {pinned}"));
    }

    /// The page server answers the page, the scripts and the result on one kept-alive
    /// connection, and reports the page's load and its result.
    #[test]
    fn page_server_serves_and_reports() {
        let (tx, rx) = mpsc::channel();
        let scripts = Scripts {
            strophe: b"/* strophe */".to_vec(),
            sockjs: Vec::new(),
        };
        let s = PageServer::start(([127, 0, 0, 1], 0).into(), None, scripts, tx).unwrap();
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let body = "{\"ok\":true}";
        write!(
            c,
            "GET /s2.html?url=x HTTP/1.1\r\nHost: a\r\n\r\nGET /strophe.js HTTP/1.1\r\nHost: a\r\n\r\n\
             POST /result HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        while !String::from_utf8_lossy(&got).contains("204 No Content") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        assert!(text.contains("<title>wirebench S2</title>"), "{text}");
        assert!(text.contains("/* strophe */"), "{text}");
        assert!(
            text.contains("Cross-Origin-Embedder-Policy: require-corp"),
            "{text}"
        );
        assert!(matches!(rx.recv().unwrap(), Msg::Loaded(_)));
        match rx.recv().unwrap() {
            Msg::Result(r) => assert_eq!(r, body),
            Msg::Loaded(_) => panic!("loaded twice"),
        }
    }
}
