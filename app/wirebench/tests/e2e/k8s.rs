//! `wirebench k8s` end to end: the manifests it writes, checked against the Kubernetes
//! API types (k8s-openapi, both ways, so that a field the API lacks is caught: the crate
//! ignores unknown fields on input), against the API's JSON schemas (kubernetes-validate,
//! strict, reading YAML as kubectl does), for what makes a sharded run work, and the
//! arguments it refuses.
//!
//! `scripts/install-k8s-validate.sh` puts kubernetes-validate in
//! `target/k8s-validate-venv`; the test that uses it runs the script itself, and fails,
//! not skips, if it cannot.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PersistentVolumeClaim, Service};
use k8s_openapi::serde::Deserialize;
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::wirebench;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn k8s(args: &[&str]) -> Output {
    wirebench().arg("k8s").args(args).output().unwrap()
}

/// The YAML `wirebench k8s ARGS` prints; the test fails with its stderr unless it exits 0.
fn yaml(args: &[&str]) -> String {
    let out = k8s(args);
    assert!(
        out.status.success(),
        "wirebench k8s {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `wirebench k8s ARGS`'s error message; the test fails if it exits 0.
fn refused(args: &[&str]) -> String {
    let out = k8s(args);
    assert!(
        !out.status.success(),
        "wirebench k8s {args:?} should have been refused; it wrote:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty(), "refused, yet wrote manifests");
    String::from_utf8(out.stderr).unwrap()
}

/// Every document of a multi-document YAML text, as JSON values.
fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

/// Where two JSON values differ, as JSON pointers.
fn differences(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                differences(va, vb, format!("{at}/{k}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(va, vb, format!("{at}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} in the YAML, {b} from the API type")),
        _ => {}
    }
}

/// The document read as the API type `T` and written back: where that differs from the
/// document. A field `T` does not have (misspelled, misplaced, or of a newer API) is
/// dropped on the way in and shows here.
fn mismatches<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<(T, Vec<String>), String> {
    let t: T = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&t).unwrap();
    let mut diff = Vec::new();
    differences(doc, &back, String::new(), &mut diff);
    Ok((t, diff))
}

/// The document as the API type `T`, which must give back exactly the same JSON.
fn typed<T: DeserializeOwned + Serialize>(doc: &Value) -> T {
    let what = format!("{} {}", doc["kind"], doc["metadata"]["name"]);
    let (t, diff) = mismatches::<T>(doc)
        .unwrap_or_else(|e| panic!("{what}: not a {}: {e}", std::any::type_name::<T>()));
    assert!(
        diff.is_empty(),
        "{what} does not match its API type:\n{}",
        diff.join("\n")
    );
    t
}

/// The objects of a manifest file, by kind, each checked against its API type.
#[derive(Default)]
struct Objects {
    config_maps: Vec<ConfigMap>,
    services: Vec<Service>,
    claims: Vec<PersistentVolumeClaim>,
    deployments: Vec<Deployment>,
    jobs: Vec<Job>,
}

impl Objects {
    fn of(yaml: &str) -> Objects {
        let mut o = Objects::default();
        for doc in documents(yaml) {
            match (doc["apiVersion"].as_str(), doc["kind"].as_str()) {
                (Some("v1"), Some("ConfigMap")) => o.config_maps.push(typed(&doc)),
                (Some("v1"), Some("Service")) => o.services.push(typed(&doc)),
                (Some("v1"), Some("PersistentVolumeClaim")) => o.claims.push(typed(&doc)),
                (Some("apps/v1"), Some("Deployment")) => o.deployments.push(typed(&doc)),
                (Some("batch/v1"), Some("Job")) => o.jobs.push(typed(&doc)),
                (v, k) => panic!("unexpected document {v:?} {k:?}: {doc}"),
            }
        }
        o
    }

    fn job(&self) -> &Job {
        assert_eq!(self.jobs.len(), 1, "one Job");
        &self.jobs[0]
    }

    fn service(&self, name: &str) -> &Service {
        self.services
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no Service {name}"))
    }

    /// Every object's metadata, whatever its kind.
    fn metadata(&self) -> Vec<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        let mut m: Vec<_> = self.config_maps.iter().map(|x| &x.metadata).collect();
        m.extend(self.services.iter().map(|x| &x.metadata));
        m.extend(self.claims.iter().map(|x| &x.metadata));
        m.extend(self.deployments.iter().map(|x| &x.metadata));
        m.extend(self.jobs.iter().map(|x| &x.metadata));
        m
    }
}

fn shard_container(job: &Job) -> &Container {
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(pod.containers.len(), 1);
    &pod.containers[0]
}

/// The value after `flag` in a command line.
fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

fn env_value(c: &Container, name: &str) -> Option<String> {
    c.env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)?
        .value
        .clone()
}

/// A selector selects a pod when every one of its labels is on the pod.
fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn pod_labels(job: &Job) -> &BTreeMap<String, String> {
    let t = &job.spec.as_ref().unwrap().template;
    t.metadata.as_ref().unwrap().labels.as_ref().unwrap()
}

#[test]
fn every_document_matches_its_kubernetes_api_type() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("run.yaml");
    let out_file = out_file.to_str().unwrap();
    let runs: &[&[&str]] = &[
        &["default", "--shards", "3", "--image", "wb:test"],
        &[
            "s4-tigase",
            "--shards",
            "10",
            "--image",
            "registry.example/wirebench:1",
            "--name",
            "s4",
            "--namespace",
            "bench",
            "--with-server",
            "--server-users",
            "50000",
            "--cpu",
            "1500m",
            "--memory",
            "4Gi",
            "--storage",
            "5Gi",
            "--storage-class",
            "nfs-client",
            "--deadline",
            "90m",
            "--",
            "--start-at",
            "2026-11-26T10:00:00Z",
            "--load-phases",
            "60s@1000/s",
        ],
        &[
            "latency",
            "--shards",
            "1",
            "--image",
            "wb",
            "--target",
            "xmpp.bench.svc:5222",
            "--results-claim",
            "shared-results",
            "--cpu",
            "2",
        ],
    ];
    for args in runs {
        let text = yaml(args);
        let o = Objects::of(&text);
        let kinds = o.config_maps.len()
            + o.services.len()
            + o.claims.len()
            + o.deployments.len()
            + o.jobs.len();
        assert_eq!(kinds, documents(&text).len());
        assert!(kinds >= 3, "{args:?}: {kinds} objects");
        // The same through --out FILE.
        let mut with_out = vec!["--out", out_file];
        with_out.extend(args.iter().copied());
        let out = k8s(&with_out);
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "{with_out:?}"
        );
        assert_eq!(std::fs::read_to_string(out_file).unwrap(), text);
    }
}

/// The check above is not vacuous: a misspelled or misplaced field is caught, and so is a
/// number where the API has a string.
#[test]
fn api_type_check_catches_what_the_api_lacks() {
    let text = yaml(&["default", "--shards", "2", "--image", "wb", "--cpu", "2"]);
    let job = documents(&text)
        .into_iter()
        .find(|d| d["kind"] == "Job")
        .unwrap();
    assert_eq!(mismatches::<Job>(&job).unwrap().1, Vec::<String>::new());
    let mut misspelled = job.clone();
    let pod = misspelled["spec"]["template"]["spec"]
        .as_object_mut()
        .unwrap();
    let subdomain = pod.remove("subdomain").unwrap();
    pod.insert("subDomain".into(), subdomain);
    let diff = mismatches::<Job>(&misspelled).unwrap().1;
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert!(
        diff[0].starts_with("/spec/template/spec/subDomain: "),
        "{diff:?}"
    );
    let mut misplaced = job.clone();
    misplaced["spec"]["restartPolicy"] = "Never".into();
    assert!(!mismatches::<Job>(&misplaced).unwrap().1.is_empty());
    let mut number = job;
    number["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = 2.into();
    let caught = mismatches::<Job>(&number).map_or(true, |(_, diff)| !diff.is_empty());
    assert!(caught, "a quantity is a string");
}

#[test]
fn indexed_job_shards_meet_at_shard_zero() {
    let o = Objects::of(&yaml(&["default", "--shards", "3", "--image", "wb:test"]));
    let name = "wirebench-default";

    let job = o.job();
    assert_eq!(job.metadata.name.as_deref(), Some(name));
    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(3));
    assert_eq!(spec.parallelism, Some(3));
    assert_eq!(spec.backoff_limit, Some(0), "a failed shard is not retried");
    assert_eq!(spec.active_deadline_seconds, Some(2 * 3600));
    assert_eq!(spec.ttl_seconds_after_finished, None);
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert!(pod.init_containers.is_none(), "no server to wait for");

    // Shard 0 is <name>-0.<name>: the pod's hostname under the headless Service.
    let svc = o.service(name);
    assert_eq!(pod.subdomain.as_deref(), Some(name));
    let svc_spec = svc.spec.as_ref().unwrap();
    assert_eq!(svc_spec.cluster_ip.as_deref(), Some("None"), "headless");
    assert!(selects(
        svc_spec.selector.as_ref().unwrap(),
        pod_labels(job)
    ));
    let port = &svc_spec.ports.as_ref().unwrap()[0];
    assert_eq!((port.name.as_deref(), port.port), (Some("barrier"), 7700));

    let c = shard_container(job);
    assert_eq!(c.name, "wirebench");
    assert_eq!(c.image.as_deref(), Some("wb:test"));
    assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(c.command.as_deref(), Some(&["wirebench".to_string()][..]));
    let args = c.args.as_ref().unwrap();
    assert_eq!(args[..2], ["run", "/etc/wirebench/scenario.toml"]);
    for flag in ["--yes", "--no-report"] {
        assert!(args.iter().any(|a| a == flag), "{flag} in {args:?}");
    }
    assert_eq!(
        after(args, "--barrier"),
        Some("wirebench-default-0.wirebench-default:7700")
    );
    assert_eq!(
        after(args, "--out"),
        Some("/results/wirebench-default/shard-$(JOB_COMPLETION_INDEX)")
    );
    assert_eq!(after(args, "--load-target"), None);
    assert_eq!(env_value(c, "WIREBENCH_SHARDS").as_deref(), Some("3"));
    assert_eq!(
        env_value(c, "WIREBENCH_ALLOW_ANY_TARGET").as_deref(),
        Some("1")
    );
    // $(JOB_COMPLETION_INDEX) in args is expanded from the container's env.
    let index = c
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "JOB_COMPLETION_INDEX");
    let field = index
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.as_str());
    assert_eq!(
        field,
        Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
    );
    let ports = c.ports.as_ref().unwrap();
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].container_port),
        (Some("barrier"), 7700)
    );

    // The ConfigMap holds the scenario, mounted where the args read it.
    let scenario = std::fs::read_to_string(repo().join("scenarios/default.toml")).unwrap();
    assert_eq!(o.config_maps.len(), 1);
    let cm = &o.config_maps[0];
    assert_eq!(
        cm.metadata.name.as_deref(),
        Some("wirebench-default-scenario")
    );
    assert_eq!(cm.data.as_ref().unwrap()["scenario.toml"], scenario);

    // Every volume is a ConfigMap or claim in the file, every mount a volume.
    let volumes = pod.volumes.as_ref().unwrap();
    let mounts = c.volume_mounts.as_ref().unwrap();
    for m in mounts {
        assert!(volumes.iter().any(|v| v.name == m.name), "mount {}", m.name);
    }
    let mount_of = |volume: &str| {
        mounts
            .iter()
            .find(|m| m.name == volume)
            .map(|m| m.mount_path.as_str())
    };
    for v in volumes {
        if let Some(src) = &v.config_map {
            assert_eq!(cm.metadata.name.as_deref(), Some(src.name.as_str()));
            assert_eq!(mount_of(&v.name), Some("/etc/wirebench"));
        } else if let Some(src) = &v.persistent_volume_claim {
            assert!(
                o.claims
                    .iter()
                    .any(|pvc| pvc.metadata.name.as_deref() == Some(&src.claim_name)),
                "claim {} is in the file",
                src.claim_name
            );
            assert_eq!(mount_of(&v.name), Some("/results"));
        } else {
            panic!("unexpected volume {v:?}");
        }
    }
    assert_eq!(o.claims.len(), 1);
    let claim = o.claims[0].spec.as_ref().unwrap();
    assert_eq!(
        claim.access_modes.as_deref(),
        Some(&["ReadWriteMany".to_string()][..])
    );
    let storage = &claim.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"];
    assert_eq!(storage.0, "1Gi");
    assert_eq!(claim.storage_class_name, None);

    for m in o.metadata() {
        let l = m.labels.as_ref().unwrap();
        assert_eq!(l["app.kubernetes.io/name"], "wirebench");
        assert_eq!(l["app.kubernetes.io/instance"], name);
        assert_eq!(m.namespace, None);
    }
}

#[test]
fn flags_reach_the_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("My_Load.toml");
    let text = "name = \"my-load\"\n[params]\nworkload = \"pingpong\"\nrounds = 10\n";
    std::fs::write(&file, text).unwrap();
    let o = Objects::of(&yaml(&[
        file.to_str().unwrap(),
        "--shards",
        "4",
        "--image",
        "wb:2",
        "--namespace",
        "bench",
        "--target",
        "xmpp.bench.svc:5222",
        "--cpu",
        "2",
        "--memory",
        "4Gi",
        "--deadline",
        "30m",
        "--storage",
        "10Gi",
        "--storage-class",
        "nfs",
        "--",
        "--start-at",
        "2026-11-26T10:00:00Z",
    ]));
    // The default name comes from the file's name, made a DNS label.
    let name = "wirebench-my-load";
    let job = o.job();
    assert_eq!(job.metadata.name.as_deref(), Some(name));
    assert_eq!(
        o.config_maps[0].data.as_ref().unwrap()["scenario.toml"],
        text
    );
    let spec = job.spec.as_ref().unwrap();
    assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
    assert_eq!(spec.active_deadline_seconds, Some(1800));
    let c = shard_container(job);
    let args = c.args.as_ref().unwrap();
    assert_eq!(after(args, "--load-target"), Some("xmpp.bench.svc:5222"));
    assert_eq!(
        after(args, "--barrier"),
        Some("wirebench-my-load-0.wirebench-my-load:7700")
    );
    // Extra arguments come last: they can add to the run, not undo the shard's layout.
    assert_eq!(
        args[args.len() - 2..],
        ["--start-at", "2026-11-26T10:00:00Z"]
    );
    assert_eq!(env_value(c, "WIREBENCH_SHARDS").as_deref(), Some("4"));
    let r = c.resources.as_ref().unwrap();
    assert_eq!(r.requests, r.limits, "requests = limits");
    let req = r.requests.as_ref().unwrap();
    assert_eq!(
        (req["cpu"].0.as_str(), req["memory"].0.as_str()),
        ("2", "4Gi")
    );
    let claim = o.claims[0].spec.as_ref().unwrap();
    assert_eq!(claim.storage_class_name.as_deref(), Some("nfs"));
    assert_eq!(
        claim.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0,
        "10Gi"
    );
    for m in o.metadata() {
        assert_eq!(m.namespace.as_deref(), Some("bench"));
    }
    assert!(o.deployments.is_empty());

    // An existing claim instead of a new one.
    let o = Objects::of(&yaml(&[
        "default",
        "--shards",
        "2",
        "--image",
        "wb",
        "--name",
        "r1",
        "--results-claim",
        "team-results",
    ]));
    assert!(o.claims.is_empty());
    let pod = o
        .job()
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let claims: Vec<_> = pod
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.as_str())
        .collect();
    assert_eq!(claims, ["team-results"]);
    assert_eq!(
        after(shard_container(o.job()).args.as_ref().unwrap(), "--out"),
        Some("/results/r1/shard-$(JOB_COMPLETION_INDEX)")
    );
}

#[test]
fn with_server_loads_its_own_xmpp_server() {
    let o = Objects::of(&yaml(&[
        "s4-tigase",
        "--shards",
        "2",
        "--image",
        "wb:3",
        "--name",
        "s4",
        "--with-server",
        "--server-users",
        "20000",
        "--server-sessions",
        "30000",
        "--server-contacts",
        "0",
    ]));
    let job = o.job();
    let c = shard_container(job);
    assert_eq!(
        after(c.args.as_ref().unwrap(), "--load-target"),
        Some("s4-server:5222")
    );

    assert_eq!(o.deployments.len(), 1);
    let d = &o.deployments[0];
    assert_eq!(d.metadata.name.as_deref(), Some("s4-server"));
    let ds = d.spec.as_ref().unwrap();
    assert_eq!(ds.replicas, Some(1));
    let server_labels = ds
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .as_ref()
        .unwrap();
    assert!(selects(
        ds.selector.match_labels.as_ref().unwrap(),
        server_labels
    ));
    let server = &ds.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(server.image.as_deref(), Some("wb:3"));
    let sargs = server.args.as_ref().unwrap();
    assert_eq!(sargs[0], "serve");
    assert_eq!(after(sargs, "--xmpp"), Some("0.0.0.0:5222"));
    assert_eq!(after(sargs, "--xmpp-users"), Some("20000"));
    assert_eq!(after(sargs, "--xmpp-sessions"), Some("30000"));
    assert_eq!(after(sargs, "--xmpp-contacts"), Some("0"));
    assert!(
        server
            .readiness_probe
            .as_ref()
            .unwrap()
            .tcp_socket
            .is_some()
    );

    // Each Service selects its own pods only.
    let svc = o.service("s4-server").spec.as_ref().unwrap();
    let sel = svc.selector.as_ref().unwrap();
    assert!(selects(sel, server_labels));
    assert!(!selects(sel, pod_labels(job)));
    assert_eq!(svc.ports.as_ref().unwrap()[0].port, 5222);
    let barrier = o
        .service("s4")
        .spec
        .as_ref()
        .unwrap()
        .selector
        .as_ref()
        .unwrap();
    assert!(selects(barrier, pod_labels(job)));
    assert!(!selects(barrier, server_labels));

    // The shards wait for the server's Service before they start.
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let init = &pod.init_containers.as_ref().unwrap()[0];
    let cmd = init.command.as_ref().unwrap();
    assert_eq!(cmd[..2], ["bash", "-c"]);
    assert_eq!(cmd[3..], ["s4-server", "5222"]);
}

/// The wait loop of the init container, run by this machine's bash: quiet while the port
/// is closed, done once it answers.
#[test]
fn wait_for_server_loop_returns_once_the_port_answers() {
    let o = Objects::of(&yaml(&[
        "default",
        "--shards",
        "1",
        "--image",
        "wb",
        "--with-server",
    ]));
    let pod = o
        .job()
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let cmd = pod.init_containers.as_ref().unwrap()[0]
        .command
        .clone()
        .unwrap();
    // A port nobody listens on, until the server "starts" 1.5 s later.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let l = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        l.accept().unwrap();
    });
    let started = std::time::Instant::now();
    let out = Command::new(&cmd[0])
        .args([&cmd[1], &cmd[2], "127.0.0.1", &port.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "it waited"
    );
    server.join().unwrap();
}

/// Independent of k8s-openapi: the API's JSON schemas, strict (kubernetes-validate), for
/// Kubernetes 1.33 (the k8s-openapi feature) and the newest the package knows. It reads
/// YAML 1.1 as kubectl does, so a string such as `on` or `yes` written unquoted would
/// arrive as a boolean and fail: the extra arguments here are such strings.
#[test]
fn manifests_pass_the_kubernetes_json_schemas() {
    let out = Command::new("bash")
        .arg(repo().join("scripts/install-k8s-validate.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/install-k8s-validate.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let tricky = [
        "on", "yes", "No", "off", "y", "~", "null", "1e3", "0x1F", "010", "1_000", "12:30", "",
    ];
    let runs: Vec<Vec<&str>> = vec![
        vec!["default", "--shards", "3", "--image", "wb:test"],
        vec![
            "s4-tigase",
            "--shards",
            "10",
            "--image",
            "wb:1",
            "--namespace",
            "bench",
            "--with-server",
            "--cpu",
            "500m",
            "--memory",
            "1Gi",
            "--storage-class",
            "nfs",
        ],
        [
            &[
                "latency",
                "--shards",
                "2",
                "--image",
                "wb",
                "--target",
                "10.0.0.7:5222",
                "--results-claim",
                "shared",
                "--",
            ][..],
            &tricky[..],
        ]
        .concat(),
    ];
    let venv = repo().join("target/k8s-validate-venv/bin/kubernetes-validate");
    let validate = |file: &Path, version: &str| {
        Command::new(&venv)
            .args(["--strict", "--no-warn", "-k", version])
            .arg(file)
            .output()
            .unwrap()
    };
    // Not vacuous: a misspelled field, and a YAML 1.1 boolean where a string belongs, fail.
    let good = yaml(&runs[0]);
    for bad in [
        good.replace("subdomain:", "subDomain:"),
        good.replace("- --no-report", "- on"),
    ] {
        assert_ne!(bad, good);
        let file = dir.path().join("bad.yaml");
        std::fs::write(&file, &bad).unwrap();
        let out = validate(&file, "1.33.0");
        assert!(
            !out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    for (i, args) in runs.iter().enumerate() {
        let text = yaml(args);
        let file = dir.path().join(format!("run{i}.yaml"));
        std::fs::write(&file, &text).unwrap();
        for version in ["1.33.0", "1.37.0"] {
            let out = validate(&file, version);
            assert!(
                out.status.success(),
                "{args:?} against Kubernetes {version}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let said = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                said.lines()
                    .filter(|l| l.starts_with("INFO") && l.contains(" passed for resource "))
                    .count(),
                documents(&text).len(),
                "every document validated: {said}"
            );
        }
        if i == 2 {
            // And the strings arrive as strings, in order, read as YAML 1.1.
            let py = repo().join("target/k8s-validate-venv/bin/python");
            let out = Command::new(py)
                .args([
                    "-c",
                    "import sys, yaml, json\n\
                     docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]\n\
                     job = [d for d in docs if d['kind'] == 'Job'][0]\n\
                     print(json.dumps(job['spec']['template']['spec']['containers'][0]['args']))",
                ])
                .arg(&file)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let args: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(args[args.len() - tricky.len()..], tricky);
        }
    }
}

#[test]
fn refuses_what_would_not_run() {
    let base = ["--image", "wb"];
    let with = |more: &[&str]| -> String {
        let mut a = vec!["default", "--shards", "2"];
        a.extend(base);
        a.extend(more);
        refused(&a)
    };
    // Names: DNS labels starting with a letter, short enough for <name>-<index>.
    for bad in [
        "Bench",
        "1bench",
        "bench_1",
        "bench.1",
        "bench-",
        &"b".repeat(53),
    ] {
        let e = with(&["--name", bad]);
        assert!(e.contains("--name") && e.contains(bad), "{bad}: {e}");
    }
    let e = with(&["--name", &"b".repeat(53)]);
    assert!(e.contains("at most 52"), "{e}");
    assert!(
        k8s(&[
            "default",
            "--shards",
            "2",
            "--image",
            "wb",
            "--name",
            &"b".repeat(52)
        ])
        .status
        .success()
    );

    let e = refused(&["default", "--shards", "0", "--image", "wb"]);
    assert!(e.contains("--shards 0") && e.contains("at least 1"), "{e}");
    let e = refused(&["default", "--shards", "1001", "--image", "wb"]);
    assert!(e.contains("at most 1000") && e.contains("barrier"), "{e}");
    assert!(
        k8s(&["default", "--shards", "1000", "--image", "wb"])
            .status
            .success()
    );
    let e = refused(&["default", "--shards", "2", "--image", ""]);
    assert!(e.contains("--image"), "{e}");

    // Scenario files: unreadable, or not a scenario; the error names the file.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope/gone.toml");
    let e = refused(&[missing.to_str().unwrap(), "--shards", "2", "--image", "wb"]);
    assert!(
        e.contains("cannot read scenario file") && e.contains(missing.to_str().unwrap()),
        "{e}"
    );
    let e = refused(&[
        dir.path().to_str().unwrap(),
        "--shards",
        "2",
        "--image",
        "wb",
    ]);
    assert!(e.contains(dir.path().to_str().unwrap()), "a directory: {e}");
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[params\nworkload = \"pingpong\"\n").unwrap();
    let e = refused(&[broken.to_str().unwrap(), "--shards", "2", "--image", "wb"]);
    assert!(e.contains(broken.to_str().unwrap()), "{e}");
    let wrong = dir.path().join("wrong.toml");
    std::fs::write(
        &wrong,
        "[params]\nworkload = \"pingpong\"\nrounds = \"many\"\n",
    )
    .unwrap();
    let e = refused(&[wrong.to_str().unwrap(), "--shards", "2", "--image", "wb"]);
    assert!(
        e.contains(wrong.to_str().unwrap()) && e.contains("rounds"),
        "{e}"
    );
    // A scenario name that is neither a file nor built in.
    let e = refused(&["no-such-scenario", "--shards", "2", "--image", "wb"]);
    assert!(
        e.contains("no-such-scenario") && e.contains("built-in scenarios"),
        "{e}"
    );

    // Quantities, durations, targets, names of other objects.
    let e = with(&["--memory", "4GB"]);
    assert!(e.contains("--memory") && e.contains("quantity"), "{e}");
    let e = with(&["--cpu", "two"]);
    assert!(e.contains("--cpu"), "{e}");
    let e = with(&["--storage", "1 Gi"]);
    assert!(e.contains("--storage"), "{e}");
    let e = with(&["--deadline", "2"]);
    assert!(e.contains("--deadline"), "{e}");
    let e = with(&["--target", "xmpp.bench.svc"]);
    assert!(e.contains("--target") && e.contains("HOST:PORT"), "{e}");
    let e = with(&["--namespace", "Bench"]);
    assert!(e.contains("--namespace"), "{e}");
    let e = with(&["--results-claim", "My_Claim"]);
    assert!(e.contains("--results-claim"), "{e}");
    // clap: a server of our own and a target are one or the other.
    let e = with(&["--with-server", "--target", "x:1"]);
    assert!(e.contains("--target") && e.contains("--with-server"), "{e}");

    // Flags each shard's command line sets itself.
    let e = with(&["--", "--out", "/tmp/x"]);
    assert!(e.contains("--out"), "{e}");
    let e = with(&["--", "--shard=1/2"]);
    assert!(e.contains("--shard"), "{e}");
    let e = with(&["--target", "x:1", "--", "--load-target", "y:1"]);
    assert!(e.contains("--load-target"), "{e}");
}

#[test]
fn help_teaches_the_steps() {
    let out = wirebench().args(["k8s", "--help"]).output().unwrap();
    assert!(out.status.success());
    // Wrapped to the terminal's width: compare with single spaces.
    let help = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for needle in [
        "ConfigMap",
        "headless Service",
        "PersistentVolumeClaim",
        "Indexed Job",
        "kubectl apply -f",
        "wirebench merge",
        "docs/cluster.md",
    ] {
        assert!(help.contains(needle), "{needle} in:\n{help}");
    }
}
