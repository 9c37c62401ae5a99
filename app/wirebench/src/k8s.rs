//! `wirebench k8s`: the Kubernetes manifests of a sharded `wirebench run` (issue #18).
//!
//! One run of a scenario, split over N pods of a Kubernetes batch/v1 Indexed Job: the pod
//! with completion index I runs shard I of N (`wirebench run` reads the index from
//! `JOB_COMPLETION_INDEX` and the count from `WIREBENCH_SHARDS`). Beside the Job: a
//! core/v1 ConfigMap with the scenario file, a headless core/v1 Service that gives shard
//! 0's pod the DNS name `<name>-0.<name>` (the barrier every shard meets before each
//! case), a core/v1 PersistentVolumeClaim (ReadWriteMany) every shard writes its results
//! directory to, and optionally an apps/v1 Deployment + core/v1 Service running the
//! `wirebench serve` endpoint a plugin declares for it
//! ([`wirebench_runner::registry::load_server`]) as the server under load.
//!
//! The objects are k8s-openapi's typed structs, so a field the API does not have (or has
//! only in newer Kubernetes than the crate feature chosen) does not compile; they are
//! written as multi-document YAML for `kubectl apply -f`. Nothing here talks to a cluster.

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    Service, ServicePort, ServiceSpec, TCPSocketAction, TopologySpreadConstraint, Volume,
    VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use wirebench_runner::registry::{LoadServer, LoadSizing};
use wirebench_runner::{BUILTIN, Scenario};

/// Port shard 0 listens on for the barrier.
pub const BARRIER_PORT: u16 = 7700;
/// Where the pods see the scenario file (the ConfigMap's mount).
const SCENARIO_DIR: &str = "/etc/wirebench";
const SCENARIO_KEY: &str = "scenario.toml";
/// Where the pods see the results claim.
const RESULTS_DIR: &str = "/results";
/// Most shards `wirebench k8s` writes a Job for.
pub const MAX_SHARDS: u32 = 1000;
/// Longest run name: a shard's pod hostname is `<name>-<index>` and must be a DNS label
/// (63 characters); 52 leaves room for any index the API allows, and for `-server`.
pub const MAX_NAME: usize = 52;
/// The API server refuses a ConfigMap above 1 MiB (all keys and values together).
const MAX_CONFIGMAP: usize = 1 << 20;

/// What the manifests are made of, every field already checked.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub namespace: Option<String>,
    pub shards: u32,
    pub image: String,
    /// The scenario file's text, as it goes into the ConfigMap.
    pub scenario_text: String,
    /// `--load-target` for every shard (HOST:PORT); `--with-server` sets it too.
    pub target: Option<String>,
    /// An existing claim to write results to; `None`: the manifests create one.
    pub results_claim: Option<String>,
    pub storage: String,
    pub storage_class: Option<String>,
    pub deadline: Duration,
    pub cpu: Option<String>,
    pub memory: Option<String>,
    /// Arguments appended to each shard's `wirebench run`.
    pub extra: Vec<String>,
    pub server: Option<ServerSpec>,
}

/// `--with-server`: a plugin's load server as a Deployment beside the Job.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub endpoint: LoadServer,
    pub sizing: LoadSizing,
}

/// A scenario argument's text and the name it goes by: a file if one is there, else a
/// built-in scenario (the order `wirebench run` uses). The text is checked the way
/// `wirebench run` will read it, so a broken file is refused here and not in every pod.
pub fn scenario(arg: &str) -> Result<(String, String)> {
    let path = Path::new(arg);
    let builtin = BUILTIN.iter().find(|(n, _)| *n == arg && !path.exists());
    let (text, origin, stem) = match builtin {
        Some((name, text)) => (
            text.to_string(),
            format!("built-in scenario {name}"),
            name.to_string(),
        ),
        None => {
            let text = std::fs::read_to_string(path).with_context(|| {
                let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                format!(
                    "cannot read scenario file {} (built-in scenarios: {})",
                    path.display(),
                    names.join(", ")
                )
            })?;
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            (text, path.display().to_string(), stem.into_owned())
        }
    };
    let sc = Scenario::parse(&text, &origin).map_err(|e| anyhow::anyhow!("{e}"))?;
    // The limit is on the whole object; 1 KiB is left for its name and labels.
    if text.len() > MAX_CONFIGMAP - 1024 {
        bail!(
            "{origin} is {} bytes: a ConfigMap holds at most 1 MiB",
            text.len()
        );
    }
    // In the pod the file is scenario.toml, so a file without `name = ...` would run
    // (and be merged) as "scenario".
    if Scenario::parse(&text, SCENARIO_KEY).is_ok_and(|s| s.name != sc.name) {
        eprintln!(
            "wirebench k8s: note: {origin} has no `name = \"...\"`; the shards will call \
             the run \"scenario\" (add a name to keep {:?})",
            sc.name
        );
    }
    Ok((text, stem))
}

/// The default run name for a scenario: `wirebench-<stem>`, lower-cased, with characters
/// a DNS label cannot have turned into `-`.
pub fn default_name(stem: &str) -> String {
    let mut s: String = format!("wirebench-{stem}")
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_end_matches('-').to_string()
}

/// A run name: a DNS-1035 label (the Service is named after it, and Service names must
/// start with a letter) of at most [`MAX_NAME`] characters.
pub fn check_name(name: &str, what: &str) -> Result<()> {
    let why = "it names the Job, its Service and the pods' hostnames, <name>-<index>";
    if name.is_empty() || name.len() > MAX_NAME {
        bail!(
            "{what} {name:?}: {} characters; at most {MAX_NAME}, since {why}, and a hostname is at most 63",
            name.len()
        );
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) || !is_label(name) {
        bail!(
            "{what} {name:?}: not a DNS label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit ({why})"
        );
    }
    Ok(())
}

/// A DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS-1123 subdomain (claim and storage class names): labels joined by dots, at most
/// 253 characters.
pub fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// A Kubernetes resource quantity as the API reads it (`1Gi`, `500m`, `2`, `1.5G`,
/// `1e3`); checked here so that a typo is not first seen as a rejected `kubectl apply`.
pub fn check_quantity(flag: &str, s: &str) -> Result<Quantity> {
    let digits = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits);
    let number_ok = !number.is_empty()
        && number != "."
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit());
    const SUFFIXES: &[&str] = &[
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    let exponent = |e: &str| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    };
    let suffix_ok =
        SUFFIXES.contains(&suffix) || suffix.strip_prefix(['e', 'E']).is_some_and(exponent);
    if !number_ok || !suffix_ok {
        bail!(
            "{flag} {s:?}: not a Kubernetes quantity; e.g. 1Gi, 512Mi, 2, 500m (binary suffixes Ki Mi Gi Ti, decimal k M G T, m for thousandths)"
        );
    }
    Ok(Quantity(s.to_string()))
}

/// HOST:PORT of the server under load, HOST a name or an address (`[v6]:PORT`).
pub fn check_target(s: &str) -> Result<()> {
    let bad = || {
        anyhow::anyhow!(
            "--target {s:?}: expected HOST:PORT, e.g. xmpp.bench.svc:5222 or 10.0.0.7:5222"
        )
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty()
        || host.contains(char::is_whitespace)
        || port.parse::<u16>().ok().filter(|p| *p > 0).is_none()
    {
        return Err(bad());
    }
    if host.contains(':') && !s.starts_with('[') {
        return Err(bad());
    }
    Ok(())
}

/// Extra `wirebench run` arguments: none of the flags each shard's command line sets
/// itself, which they would override (the last one given wins), breaking the run's layout.
pub fn check_extra(extra: &[String], target: bool) -> Result<()> {
    for a in extra {
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        let set_by = match flag {
            "--out" => "the shard's directory on the results claim",
            "--barrier" => "shard 0's address under the Job's Service",
            "--shard" => "the pod's completion index and WIREBENCH_SHARDS",
            "--load-target" if target => "--target (or --with-server)",
            _ => continue,
        };
        bail!("{flag} after --: each shard's command line sets it from {set_by}");
    }
    Ok(())
}

/// The objects' labels: the recommended `app.kubernetes.io` ones, and a component so
/// that the Job's Service does not select the server's pods.
fn labels(spec: &Spec, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".into(), "wirebench".into()),
        ("app.kubernetes.io/instance".into(), spec.name.clone()),
        ("app.kubernetes.io/component".into(), component.into()),
    ])
}

fn meta(spec: &Spec, name: String, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: spec.namespace.clone(),
        labels: Some(labels(spec, component)),
        ..Default::default()
    }
}

fn scenario_map_name(spec: &Spec) -> String {
    format!("{}-scenario", spec.name)
}

fn claim_name(spec: &Spec) -> String {
    spec.results_claim
        .clone()
        .unwrap_or_else(|| format!("{}-results", spec.name))
}

fn server_name(spec: &Spec) -> String {
    format!("{}-server", spec.name)
}

/// `HOST:PORT` of the `--with-server` server, as the shards reach it (its Service, in
/// the same namespace).
pub fn server_target(name: &str, endpoint: &LoadServer) -> String {
    format!("{name}-server:{}", endpoint.port)
}

/// The barrier's address: shard 0's pod by its hostname under the headless Service.
pub fn barrier(name: &str) -> String {
    format!("{name}-0.{name}:{BARRIER_PORT}")
}

pub fn config_map(spec: &Spec) -> ConfigMap {
    ConfigMap {
        metadata: meta(spec, scenario_map_name(spec), "scenario"),
        data: Some(BTreeMap::from([(
            SCENARIO_KEY.to_string(),
            spec.scenario_text.clone(),
        )])),
        ..Default::default()
    }
}

/// The headless Service that gives each shard's pod a DNS name (`<name>-<index>.<name>`,
/// from the pod's hostname and `subdomain`): the barrier on shard 0 is found by it.
pub fn barrier_service(spec: &Spec) -> Service {
    Service {
        metadata: meta(spec, spec.name.clone(), "shard"),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(labels(spec, "shard")),
            // Shards look shard 0 up as they start; its name must resolve as soon as its
            // pod has an address, not only once Kubernetes counts it ready.
            publish_not_ready_addresses: Some(true),
            ports: Some(vec![ServicePort {
                name: Some("barrier".into()),
                port: BARRIER_PORT.into(),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn results_claim(spec: &Spec) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: meta(spec, claim_name(spec), "results"),
        spec: Some(PersistentVolumeClaimSpec {
            // Every shard's pod writes to it at once, from whichever node it runs on.
            access_modes: Some(vec!["ReadWriteMany".into()]),
            storage_class_name: spec.storage_class.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(spec.storage.clone()),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Each shard's `wirebench run` arguments (after the program name).
pub fn shard_args(spec: &Spec) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        &format!("{SCENARIO_DIR}/{SCENARIO_KEY}"),
        // Nobody is there to answer the long-run question.
        "--yes",
        // Each shard holds part of the sessions: the report is `wirebench merge`'s.
        "--no-report",
        "--out",
        // Kubernetes expands $(VAR) from the container's env.
        &format!("{RESULTS_DIR}/{}/shard-$(JOB_COMPLETION_INDEX)", spec.name),
        "--barrier",
        &barrier(&spec.name),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(t) = &spec.target {
        args.extend(["--load-target".to_string(), t.clone()]);
    }
    args.extend(spec.extra.iter().cloned());
    args
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

fn resources(spec: &Spec) -> Option<ResourceRequirements> {
    let mut r = BTreeMap::new();
    if let Some(c) = &spec.cpu {
        r.insert("cpu".to_string(), Quantity(c.clone()));
    }
    if let Some(m) = &spec.memory {
        r.insert("memory".to_string(), Quantity(m.clone()));
    }
    // Requests equal to limits: a generator that is throttled or squeezed by a
    // neighbour measures itself, not the server.
    (!r.is_empty()).then(|| ResourceRequirements {
        requests: Some(r.clone()),
        limits: Some(r),
        ..Default::default()
    })
}

pub fn job(spec: &Spec) -> Job {
    let shard = Container {
        name: "wirebench".into(),
        image: Some(spec.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec!["wirebench".into()]),
        args: Some(shard_args(spec)),
        env: Some(vec![
            // The Job controller adds the same variable to the pods it creates unless
            // the template has it; named here, the manifest shows where the
            // $(JOB_COMPLETION_INDEX) in args comes from.
            EnvVar {
                name: "JOB_COMPLETION_INDEX".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path:
                            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                                .into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            env("WIREBENCH_SHARDS", &spec.shards.to_string()),
            // The load target is another pod or host, never loopback or the lab's
            // range, which `wirebench run` refuses without this.
            env("WIREBENCH_ALLOW_ANY_TARGET", "1"),
        ]),
        ports: Some(vec![ContainerPort {
            name: Some("barrier".into()),
            container_port: BARRIER_PORT.into(),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "scenario".into(),
                mount_path: SCENARIO_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            },
            VolumeMount {
                name: "results".into(),
                mount_path: RESULTS_DIR.into(),
                ..Default::default()
            },
        ]),
        resources: resources(spec),
        ..Default::default()
    };
    // The shards start together and would find no server yet: each waits until the
    // server's Service answers (bash's /dev/tcp; the image is Debian's).
    let wait_for_server = spec.server.as_ref().map(|server| Container {
        name: "wait-for-server".into(),
        image: Some(spec.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec![
            "bash".into(),
            "-c".into(),
            "until : 2>/dev/null >/dev/tcp/$0/$1; do sleep 1; done".into(),
            server_name(spec),
            server.endpoint.port.to_string(),
        ]),
        ..Default::default()
    });
    let n = i32::try_from(spec.shards).expect("at most MAX_SHARDS");
    Job {
        metadata: meta(spec, spec.name.clone(), "shard"),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(n),
            // A shard that failed must not be retried: its replacement would start its
            // cases after the others, out of step with the barrier, and the merged run's
            // alignment would be wrong. One failure fails the Job (and ends the others).
            backoff_limit: Some(0),
            active_deadline_seconds: Some(spec.deadline.as_secs().max(1) as i64),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(spec, "shard")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    subdomain: Some(spec.name.clone()),
                    init_containers: wait_for_server.map(|c| vec![c]),
                    containers: vec![shard],
                    // Shards are there to spread the load over machines: prefer one per
                    // node, but still run on a cluster with fewer nodes than shards.
                    topology_spread_constraints: Some(vec![TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "kubernetes.io/hostname".into(),
                        when_unsatisfiable: "ScheduleAnyway".into(),
                        label_selector: Some(LabelSelector {
                            match_labels: Some(labels(spec, "shard")),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }]),
                    volumes: Some(vec![
                        Volume {
                            name: "scenario".into(),
                            config_map: Some(ConfigMapVolumeSource {
                                name: scenario_map_name(spec),
                                ..Default::default()
                            }),
                            ..Default::default()
                        },
                        Volume {
                            name: "results".into(),
                            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                                claim_name: claim_name(spec),
                                ..Default::default()
                            }),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The load server's `wirebench serve` as a one-replica Deployment.
pub fn server_deployment(spec: &Spec, server: &ServerSpec) -> Deployment {
    let endpoint = &server.endpoint;
    let listen = format!("0.0.0.0:{}", endpoint.port);
    let args = std::iter::once("serve".to_string())
        .chain((endpoint.serve_args)(&listen, &server.sizing))
        .collect();
    let container = Container {
        name: "server".into(),
        image: Some(spec.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec!["wirebench".into()]),
        args: Some(args),
        ports: Some(vec![ContainerPort {
            name: Some(endpoint.port_name.into()),
            container_port: endpoint.port.into(),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        // Ready once it accepts connections: the shards' init container waits for that
        // through the Service.
        readiness_probe: Some(Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::String(endpoint.port_name.into()),
                ..Default::default()
            }),
            period_seconds: Some(2),
            ..Default::default()
        }),
        ..Default::default()
    };
    Deployment {
        metadata: meta(spec, server_name(spec), "server"),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels(spec, "server")),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(spec, "server")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn server_service(spec: &Spec, server: &ServerSpec) -> Service {
    let endpoint = &server.endpoint;
    Service {
        metadata: meta(spec, server_name(spec), "server"),
        spec: Some(ServiceSpec {
            selector: Some(labels(spec, "server")),
            ports: Some(vec![ServicePort {
                name: Some(endpoint.port_name.into()),
                port: endpoint.port.into(),
                target_port: Some(IntOrString::String(endpoint.port_name.into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One YAML document. kubectl reads YAML 1.1, where `on`, `yes` or `0x1F` written plain
/// are not strings, and extra arguments such as `--load-tls on` are: the writer quotes
/// such strings (serde-saphyr's default). Multi-line strings (the scenario) are literal
/// blocks; long single-line ones stay on their line, never folded.
fn doc<T: k8s_openapi::serde::Serialize>(value: &T) -> Result<String> {
    let options = serde_saphyr::ser_options! {
        folded_wrap_chars: usize::MAX,
        min_fold_chars: usize::MAX,
    };
    serde_saphyr::to_string_with_options(value, options).context("cannot write YAML")
}

/// The manifests as one multi-document YAML file, in the order `kubectl apply` should
/// create them (what the Job's pods mount before the Job).
pub fn manifests(spec: &Spec) -> Result<String> {
    let mut docs = vec![doc(&config_map(spec))?, doc(&barrier_service(spec))?];
    if spec.results_claim.is_none() {
        docs.push(doc(&results_claim(spec))?);
    }
    if let Some(server) = &spec.server {
        docs.push(doc(&server_deployment(spec, server))?);
        docs.push(doc(&server_service(spec, server))?);
    }
    docs.push(doc(&job(spec))?);
    let name = &spec.name;
    let mut out = format!(
        "# wirebench k8s: {n} shards of one run, as a Kubernetes Indexed Job (docs/cluster.md).\n\
         #   kubectl apply -f THIS_FILE\n\
         #   kubectl wait --for=condition=complete job/{name} --timeout={t}s\n\
         # then copy {RESULTS_DIR}/{name} off the claim {claim} to results/{name}, and\n\
         #   wirebench merge results/{name}/shard-* --out merged\n",
        n = spec.shards,
        t = spec.deadline.as_secs(),
        claim = claim_name(spec),
    );
    for d in docs {
        out.push_str("---\n");
        out.push_str(&d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(default_name("s4-tigase"), "wirebench-s4-tigase");
        assert_eq!(default_name("My_Run.v2"), "wirebench-my-run-v2");
        assert_eq!(default_name("x__"), "wirebench-x");
        assert!(check_name("wirebench-default", "n").is_ok());
        assert!(check_name(&"a".repeat(MAX_NAME), "n").is_ok());
        assert!(check_name(&"a".repeat(MAX_NAME + 1), "n").is_err());
        for bad in ["", "Run", "1run", "run-", "-run", "ru_n", "ru.n"] {
            assert!(check_name(bad, "n").is_err(), "{bad:?}");
        }
        assert!(is_subdomain("fast.nfs-1"));
        assert!(!is_subdomain("fast..nfs"));
    }

    #[test]
    fn quantities() {
        for ok in [
            "1Gi", "512Mi", "2", "500m", "1.5G", "1e3", "0.5", "100k", "2E-2",
        ] {
            assert!(check_quantity("--x", ok).is_ok(), "{ok}");
        }
        for bad in ["", "Gi", "1GB", "1 Gi", "-1Gi", "1..5", ".", "1e", "two"] {
            assert!(check_quantity("--x", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn targets() {
        for ok in [
            "xmpp:5222",
            "10.0.0.7:5222",
            "[fd00::7]:5222",
            "a.b.svc.cluster.local:1",
        ] {
            assert!(check_target(ok).is_ok(), "{ok}");
        }
        for bad in [
            "xmpp",
            "xmpp:",
            ":5222",
            "xmpp:0",
            "xmpp:70000",
            "fd00::7:5222",
        ] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn extra_args() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_extra(&v(&["--start-at", "2026-11-26T10:00:00Z"]), true).is_ok());
        assert!(check_extra(&v(&["--out=x"]), false).is_err());
        assert!(check_extra(&v(&["--load-target", "x:1"]), false).is_ok());
        assert!(check_extra(&v(&["--load-target", "x:1"]), true).is_err());
    }
}
