//! The Job `wirebench k8s` writes, run as its pods would run, on this machine (issue #18).
//! No cluster is reachable here, so this test plays the parts of the cluster that the
//! manifests rely on, and runs everything else exactly as written:
//!
//! - **DNS**: the pods share one network namespace made for the test (`wb-k8s-<pid>`),
//!   whose hosts file (`ip netns exec` mounts `/etc/netns/<ns>/hosts`) maps the Service
//!   names the manifests use (`NAME-server`, shard 0's `NAME-0.NAME`) to 127.0.0.1;
//! - **volumes**: the ConfigMap's data is written to a directory, and the mount paths in
//!   the containers' arguments (`/etc/wirebench`, `/results`) point at directories of the
//!   test instead (the equivalent of the mounts);
//! - **the kubelet**: each container's `command` + `args` are run with its `env` (values,
//!   and `JOB_COMPLETION_INDEX` from the completion-index annotation), `$(VAR)` expanded
//!   as Kubernetes does; the init container first, then the shard.
//!
//! The server's Deployment, the init container's wait and every shard run; then `wirebench
//! merge` over the claim's `NAME/shard-*`, as docs/cluster.md says. Needs root.

use crate::common;
use common::{m, records, wirebench};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test's network namespace and hosts file, removed however the test ends.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}", self.0));
    }
}

/// Children, ended by PID however the test ends.
struct Pods(Vec<Child>);

impl Drop for Pods {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: signals a process this test started, by its PID.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
    }
}

/// A container of the manifests: its program and arguments, `$(VAR)` expanded with its
/// environment, and the mount paths moved to the test's directories.
fn container(
    c: &serde_yaml_ng::Value,
    index: Option<u32>,
    mounts: &[(&str, &Path)],
) -> (Vec<String>, Vec<(String, String)>) {
    let mut env = Vec::new();
    for e in c["env"].as_sequence().cloned().unwrap_or_default() {
        let name = e["name"].as_str().unwrap().to_string();
        let value = if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else {
            let path = e["valueFrom"]["fieldRef"]["fieldPath"].as_str().unwrap();
            assert_eq!(
                path, "metadata.annotations['batch.kubernetes.io/job-completion-index']",
                "an env var from a field the test does not play"
            );
            index
                .expect("only the Job's pods have an index")
                .to_string()
        };
        env.push((name, value));
    }
    let words: Vec<String> = c["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .chain(c["args"].as_sequence().into_iter().flatten())
        .map(|w| {
            let mut w = w.as_str().unwrap().to_string();
            for (name, value) in &env {
                w = w.replace(&format!("$({name})"), value);
            }
            for (from, to) in mounts {
                if let Some(rest) = w.strip_prefix(from) {
                    w = format!("{}{rest}", to.display());
                }
            }
            w
        })
        .collect();
    (words, env)
}

/// `words` as a process in the pods' namespace, `wirebench` being the binary under test.
fn spawn(ns: &str, words: &[String], env: &[(String, String)], log: &Path) -> Child {
    let exe = env!("CARGO_BIN_EXE_wirebench");
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]);
    cmd.arg(if words[0] == "wirebench" {
        exe
    } else {
        &words[0]
    });
    cmd.args(&words[1..]);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
        .spawn()
        .unwrap()
}

fn docs(yaml: &str) -> Vec<serde_yaml_ng::Value> {
    use k8s_openapi::serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| serde_yaml_ng::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn of_kind<'a>(docs: &'a [serde_yaml_ng::Value], kind: &str) -> &'a serde_yaml_ng::Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

#[test]
fn the_generated_job_runs_as_its_pods_would_and_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("tiny.toml");
    std::fs::write(
        &scenario,
        r#"name = "tiny"
description = "a small sharded load"
[params]
protocol = "xmpp"
workload = "load"
payload = 32
"load.phases" = "2s@200/s"
"load.stay" = "3s"
"load.think" = "1s"
"load.every" = "1s"
"#,
    )
    .unwrap();
    let name = "wb-emu";
    let o = wirebench()
        .arg("k8s")
        .arg(&scenario)
        .args(["--shards", "3", "--image", "registry.example/wirebench:1"])
        .args(["--with-server", "--server-users", "1000", "--name", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let docs = docs(&String::from_utf8(o.stdout).unwrap());

    // The ConfigMap, "mounted".
    let etc = tmp.path().join("etc-wirebench");
    std::fs::create_dir_all(&etc).unwrap();
    let cm = of_kind(&docs, "ConfigMap");
    for (k, v) in cm["data"].as_mapping().unwrap() {
        std::fs::write(etc.join(k.as_str().unwrap()), v.as_str().unwrap()).unwrap();
    }
    let results = tmp.path().join("claim");
    std::fs::create_dir_all(&results).unwrap();
    let mounts: [(&str, &Path); 2] = [("/etc/wirebench", &etc), ("/results", &results)];

    // The cluster's network: one namespace, the Services' names in its hosts file.
    let ns = format!("wb-k8s-{}", std::process::id());
    let _netns = Netns(ns.clone());
    assert!(
        Command::new("ip")
            .args(["netns", "add", &ns])
            .status()
            .unwrap()
            .success()
    );
    Command::new("ip")
        .args(["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])
        .status()
        .unwrap();
    std::fs::create_dir_all(format!("/etc/netns/{ns}")).unwrap();
    std::fs::write(
        format!("/etc/netns/{ns}/hosts"),
        format!("127.0.0.1 localhost\n127.0.0.1 {name}-server\n127.0.0.1 {name}-0.{name}\n"),
    )
    .unwrap();

    let mut pods = Pods(Vec::new());
    // The server's Deployment.
    let dep = of_kind(&docs, "Deployment");
    let server = &dep["spec"]["template"]["spec"]["containers"][0];
    let (words, env) = container(server, None, &mounts);
    pods.0
        .push(spawn(&ns, &words, &env, &tmp.path().join("server.log")));

    // The Job's pods: init container, then the shard, each with its completion index.
    let job = of_kind(&docs, "Job");
    let spec = &job["spec"]["template"]["spec"];
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let n = job["spec"]["completions"].as_u64().unwrap() as u32;
    assert_eq!(n, 3);
    let mut shards = Vec::new();
    for i in 0..n {
        let (init, ienv) = container(&spec["initContainers"][0], Some(i), &mounts);
        let (words, env) = container(&spec["containers"][0], Some(i), &mounts);
        let log = tmp.path().join(format!("shard-{i}.log"));
        let ns = ns.clone();
        shards.push(std::thread::spawn(move || {
            let mut w = spawn(&ns, &init, &ienv, &log.with_extension("init"));
            let end = Instant::now() + Duration::from_secs(30);
            while w.try_wait().unwrap().is_none() {
                assert!(
                    Instant::now() < end,
                    "the init container never saw the server"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            let mut c = spawn(&ns, &words, &env, &log);
            let status = c.wait().unwrap();
            (status, log)
        }));
    }
    for s in shards {
        let (status, log) = s.join().unwrap();
        assert!(
            status.success(),
            "a shard failed: {}",
            std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
        );
    }
    drop(pods);

    // docs/cluster.md step 5: merge what the claim holds.
    let run_dir = results.join(name);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&run_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    let merged = tmp.path().join("merged");
    let o = wirebench()
        .arg("merge")
        .args(&dirs)
        .args(["--no-report", "--out"])
        .arg(&merged)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = &records(&merged)[0];
    assert_eq!(r["scenario"], "tiny");
    assert_eq!(r["status"], "ok", "{r}");
    assert!(m(r, "load.sessions") > 300.0, "{r}");
    assert_eq!(m(r, "load.logged_in"), m(r, "load.sessions"), "{r}");
    assert!(m(r, "messages.sent") > 0.0, "{r}");
    assert!(m(r, "messages.lost") <= 0.01 * m(r, "messages.sent"), "{r}");
    assert_eq!(m(r, "shards.count"), 3.0);
    for (i, d) in dirs.iter().enumerate() {
        assert!(d.ends_with(format!("shard-{i}")), "{}", d.display());
        let s = &records(d)[0];
        assert_eq!(m(s, "shard.index"), i as f64);
        assert!(m(s, "shard.start_margin") > 0.0, "shard {i} late: {s}");
    }
}
