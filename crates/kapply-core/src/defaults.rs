//! Defaulting, as the API server does after every write: only fields that
//! are unset get a value. Also what its storing drops: a field Go writes
//! with `omitempty` (not a pointer) is gone when it holds its zero value
//! (`minReadySeconds: 0`, `hostNetwork: false`, a subject's `apiGroup:
//! ""`), so a manifest that spells the zero out is not a change from a live
//! object without it (seen on kube-apiserver v1.34 with ingress-nginx's and
//! cert-manager's releases).

use serde_json::{Map, Value, json};

/// Set `obj[key]` when it is absent or null (the value made only then:
/// most fields a rule visits are set already).
fn default(obj: &mut Map<String, Value>, key: &str, value: impl FnOnce() -> Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj.insert(key.to_string(), value());
    }
}

/// Drop `obj[key]` when it holds `zero`: a non-pointer `omitempty` field
/// of the Go type, which the server does not store at its zero value.
fn omit_zero(obj: &mut Map<String, Value>, key: &str, zero: &Value) {
    if obj.get(key) == Some(zero) {
        obj.remove(key);
    }
}

/// The map at `obj[key]`, created when absent; `None` when it holds a non-map.
fn child<'a>(obj: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    if obj.get(key).is_none_or(Value::is_null) {
        obj.insert(key.to_string(), Value::Object(Map::new()));
    }
    obj.get_mut(key).and_then(Value::as_object_mut)
}

fn existing<'a>(obj: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    obj.get_mut(key).and_then(Value::as_object_mut)
}

/// What kube-apiserver allocates as it stores a Service (its REST storage,
/// after defaulting): a cluster IP, node ports, a health check node port.
/// A closure `|| ip` allocates cluster IPs alone (node ports left unset):
/// a caller that does not know them predicts nothing of them.
pub trait Allocate {
    fn cluster_ip(&mut self) -> String;
    /// A node port for a Service port without one (`port` is that port's
    /// map, its protocol defaulted); `None`: left unset.
    fn node_port(&mut self, _port: &Map<String, Value>) -> Option<i64> {
        None
    }
    /// A load balancer's health check node port (`externalTrafficPolicy:
    /// Local`); `None`: left unset.
    fn health_check_node_port(&mut self) -> Option<i64> {
        None
    }
}

impl<F: FnMut() -> String + ?Sized> Allocate for F {
    fn cluster_ip(&mut self) -> String {
        self()
    }
}

/// The defaulting of one kind: the object's top-level map, and what
/// allocates a Service's cluster IP and node ports.
type Rule = fn(&mut Map<String, Value>, &mut dyn Allocate);

/// The rule of a kind (group-qualified kinds are matched by kind and
/// apiVersion); `None`: the server defaults nothing of it here.
fn rule(api_version: &str, kind: &str) -> Option<Rule> {
    let rule: Rule = match (api_version, kind) {
        ("apps/v1", "Deployment") => |o, _| deployment(o),
        ("apps/v1", "StatefulSet") => |o, _| statefulset(o),
        ("apps/v1", "DaemonSet") => |o, _| daemonset(o),
        ("apps/v1", "ReplicaSet") => |o, _| {
            if let Some(spec) = child(o, "spec") {
                default(spec, "replicas", || json!(1));
                omit_zero(spec, "minReadySeconds", &json!(0));
                template(spec, true);
            }
        },
        ("batch/v1", "Job") => |o, _| {
            if let Some(spec) = child(o, "spec") {
                job(spec);
                // A Job's alone (SetDefaults_Job), not a CronJob's template.
                default(spec, "manualSelector", || json!(false));
            }
            job_labels(o);
        },
        ("batch/v1", "CronJob") => |o, _| {
            if let Some(spec) = child(o, "spec") {
                default(spec, "concurrencyPolicy", || json!("Allow"));
                default(spec, "suspend", || json!(false));
                default(spec, "successfulJobsHistoryLimit", || json!(3));
                default(spec, "failedJobsHistoryLimit", || json!(1));
                // The Job defaults are SetDefaults_Job's, of a Job alone: a
                // CronJob's jobTemplate gets its pod template's only (seen
                // on kube-apiserver v1.34).
                if let Some(jt) = existing(spec, "jobTemplate")
                    && let Some(js) = existing(jt, "spec")
                {
                    template(js, false);
                }
            }
        },
        ("v1", "Pod") => |o, _| {
            if let Some(spec) = existing(o, "spec") {
                pod_spec(spec, true);
                default(spec, "enableServiceLinks", || json!(true));
                default(spec, "serviceAccountName", || json!("default"));
                default(spec, "serviceAccount", || json!("default"));
                default(spec, "preemptionPolicy", || json!("PreemptLowerPriority"));
                default(spec, "priority", || json!(0));
            }
            if let Some(status) = child(o, "status") {
                default(status, "phase", || json!("Pending"));
                default(status, "qosClass", || json!("BestEffort"));
            }
        },
        ("v1", "Service") => service,
        ("v1", "Secret") => |o, _| secret(o),
        ("v1", "Namespace") => |o, _| {
            let name = o
                .get("metadata")
                .and_then(|m| m["name"].as_str())
                .unwrap_or_default()
                .to_string();
            if let Some(md) = child(o, "metadata")
                && let Some(labels) = child(md, "labels")
            {
                default(labels, "kubernetes.io/metadata.name", || json!(name));
            }
            if let Some(spec) = child(o, "spec") {
                default(spec, "finalizers", || json!(["kubernetes"]));
            }
            if let Some(status) = child(o, "status") {
                default(status, "phase", || json!("Active"));
            }
        },
        ("networking.k8s.io/v1", "NetworkPolicy") => |o, _| network_policy(o),
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            |o, _| webhooks(o, false)
        }
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            |o, _| webhooks(o, true)
        }
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            |o, _| role_binding(o)
        }
        ("v1", "PersistentVolumeClaim") => |o, _| persistent_volume_claim(o),
        _ => return None,
    };
    Some(rule)
}

fn kind_of(obj: &Value) -> (&str, &str) {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    (s("apiVersion"), s("kind"))
}

/// Apply the defaults of `kind` (group-qualified kinds are matched by kind
/// and apiVersion). `alloc` hands out Service cluster IPs and node ports.
pub fn apply(obj: &mut Value, alloc: &mut dyn Allocate) {
    let (api_version, kind) = kind_of(obj);
    let Some(rule) = rule(api_version, kind) else {
        return;
    };
    if let Some(o) = obj.as_object_mut() {
        rule(o, alloc);
    }
}

/// Whether the server defaults anything of this object's kind here.
pub fn has_rule(obj: &Value) -> bool {
    let (api_version, kind) = kind_of(obj);
    rule(api_version, kind).is_some()
}

/// The fields whose value a rule copies into another field (a Service's
/// `clusterIP` into `clusterIPs`, a port's `port` into `targetPort`, a
/// Secret's `stringData` into `data`; not a Job's template labels into its
/// own, which `merge::causes` takes out one by one). Of every other field a rule only
/// asks whether it is set, a map or a list, or which string it holds: a
/// copy that keeps these whole, and of other maps and lists no more than
/// that they are there, is defaulted alike where it keeps them whole
/// (`merge::causes` relies on it). A rule that copies another field's
/// value must name it here.
pub const VALUES_COPIED: [&str; 3] = ["clusterIP", "port", "stringData"];

/// The part of an object [`apply`] reads or writes outside `status`:
/// everything but `metadata` and `status`, and of `metadata` only `name`
/// and `labels` (a Namespace's label default). Defaulting this copy gives
/// every field outside `metadata` and `status`, and the labels, what
/// defaulting the whole object gives them, without copying
/// managedFields, annotations and status. `None`: a kind the server
/// defaults nothing of.
pub fn defaultable_copy(obj: &Value) -> Option<Value> {
    let (api_version, kind) = kind_of(obj);
    rule(api_version, kind)?;
    let o = obj.as_object()?;
    let mut out = Map::new();
    for (k, v) in o {
        match k.as_str() {
            "status" => {}
            "metadata" if v.is_object() => {
                let mut md = Map::new();
                for key in ["name", "labels"] {
                    if let Some(x) = v.get(key) {
                        md.insert(key.into(), x.clone());
                    }
                }
                out.insert(k.clone(), Value::Object(md));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Some(Value::Object(out))
}

fn deployment(o: &mut Map<String, Value>) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    default(spec, "replicas", || json!(1));
    default(spec, "revisionHistoryLimit", || json!(10));
    default(spec, "progressDeadlineSeconds", || json!(600));
    omit_zero(spec, "minReadySeconds", &json!(0));
    if let Some(strategy) = child(spec, "strategy") {
        default(strategy, "type", || json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate"
            && let Some(ru) = child(strategy, "rollingUpdate")
        {
            default(ru, "maxUnavailable", || json!("25%"));
            default(ru, "maxSurge", || json!("25%"));
        }
    }
    template(spec, true);
}

fn statefulset(o: &mut Map<String, Value>) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    default(spec, "replicas", || json!(1));
    default(spec, "revisionHistoryLimit", || json!(10));
    default(spec, "podManagementPolicy", || json!("OrderedReady"));
    omit_zero(spec, "minReadySeconds", &json!(0));
    if let Some(us) = child(spec, "updateStrategy") {
        default(us, "type", || json!("RollingUpdate"));
        if us["type"] == "RollingUpdate"
            && let Some(ru) = child(us, "rollingUpdate")
        {
            default(ru, "partition", || json!(0));
        }
    }
    if let Some(p) = child(spec, "persistentVolumeClaimRetentionPolicy") {
        default(p, "whenDeleted", || json!("Retain"));
        default(p, "whenScaled", || json!("Retain"));
    }
    // Each claim template is a PersistentVolumeClaim, defaulted as one.
    let claims = spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut);
    for claim in claims
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        default(claim, "apiVersion", || json!("v1"));
        default(claim, "kind", || json!("PersistentVolumeClaim"));
        persistent_volume_claim(claim);
    }
    template(spec, true);
}

fn daemonset(o: &mut Map<String, Value>) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    default(spec, "revisionHistoryLimit", || json!(10));
    omit_zero(spec, "minReadySeconds", &json!(0));
    if let Some(us) = child(spec, "updateStrategy") {
        default(us, "type", || json!("RollingUpdate"));
        if us["type"] == "RollingUpdate"
            && let Some(ru) = child(us, "rollingUpdate")
        {
            default(ru, "maxUnavailable", || json!(1));
            default(ru, "maxSurge", || json!(0));
        }
    }
    template(spec, true);
}

fn job(spec: &mut Map<String, Value>) {
    default(spec, "backoffLimit", || json!(6));
    default(spec, "completionMode", || json!("NonIndexed"));
    default(spec, "suspend", || json!(false));
    default(spec, "podReplacementPolicy", || {
        json!("TerminatingOrFailed")
    });
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        spec.insert("completions".into(), json!(1));
    }
    default(spec, "parallelism", || json!(1));
    // Jobs must choose OnFailure or Never themselves: no restartPolicy default.
    template(spec, false);
}

/// SetDefaults_Job: a Job without labels gets its pod template's.
fn job_labels(o: &mut Map<String, Value>) {
    let template = o
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.as_object().is_some_and(|l| !l.is_empty()))
        .cloned();
    if let Some(labels) = template
        && labels_unset(o.get("metadata"))
        && let Some(md) = child(o, "metadata")
    {
        md.insert("labels".into(), labels);
    }
}

fn labels_unset(metadata: Option<&Value>) -> bool {
    metadata
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
}

/// Whether a Job as sent carries no labels of its own: then its labels are
/// its pod template's after [`job_created`] (SetDefaults_Job copies the
/// template's labels before the create strategy adds to them, and in Go
/// both are one map; a Job whose template had none copies them when read).
pub fn job_labels_follow(job: &Value) -> bool {
    labels_unset(job.get("metadata"))
}

/// What kube-apiserver's Job create strategy adds to a new Job unless
/// `spec.manualSelector` (after its field manager recorded the request, so
/// no manager owns them): pod template labels naming the Job and its uid,
/// and a selector of the uid; labels the user set are kept (validation
/// judges them). `labels_follow` ([`job_labels_follow`] of the Job as
/// sent): the Job's own labels become the template's.
pub fn job_created(job: &mut Value, uid: &Value, name: &Value, labels_follow: bool) {
    if job["spec"]["manualSelector"] == json!(true) {
        return;
    }
    let Some(o) = job.as_object_mut() else {
        return;
    };
    let Some(spec) = child(o, "spec") else {
        return;
    };
    let labels = child(spec, "template")
        .and_then(|t| child(t, "metadata"))
        .and_then(|m| child(m, "labels"));
    let Some(labels) = labels else {
        return;
    };
    for (key, value) in [
        ("job-name", name),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("batch.kubernetes.io/controller-uid", uid),
    ] {
        labels.entry(key).or_insert_with(|| value.clone());
    }
    let labels = Value::Object(labels.clone());
    if let Some(ml) = child(spec, "selector").and_then(|s| child(s, "matchLabels")) {
        ml.entry("batch.kubernetes.io/controller-uid")
            .or_insert_with(|| uid.clone());
    }
    if labels_follow && let Some(md) = child(o, "metadata") {
        md.insert("labels".into(), labels);
    }
}

fn persistent_volume_claim(o: &mut Map<String, Value>) {
    if let Some(spec) = child(o, "spec") {
        default(spec, "volumeMode", || json!("Filesystem"));
    }
    if let Some(status) = child(o, "status") {
        default(status, "phase", || json!("Pending"));
    }
}

fn template(spec: &mut Map<String, Value>, restart_always: bool) {
    if let Some(t) = existing(spec, "template")
        && let Some(ps) = existing(t, "spec")
    {
        pod_spec(ps, restart_always);
    }
}

/// An ObjectFieldSelector's apiVersion (env `fieldRef`, downward API items).
fn field_ref(holder: &mut Map<String, Value>) {
    if let Some(r) = existing(holder, "fieldRef") {
        default(r, "apiVersion", || json!("v1"));
    }
}

/// The items of a downward API volume or projection.
fn downward_items(src: &mut Map<String, Value>) {
    let items = src.get_mut("items").and_then(Value::as_array_mut);
    for item in items.into_iter().flatten().filter_map(Value::as_object_mut) {
        field_ref(item);
    }
}

fn pod_spec(ps: &mut Map<String, Value>, restart_always: bool) {
    if restart_always {
        default(ps, "restartPolicy", || json!("Always"));
    }
    default(ps, "dnsPolicy", || json!("ClusterFirst"));
    default(ps, "schedulerName", || json!("default-scheduler"));
    default(ps, "terminationGracePeriodSeconds", || json!(30));
    default(ps, "securityContext", || json!({}));
    // The deprecated alias, written from serviceAccountName whenever that
    // is set (the v1 conversion does it, templates included).
    if let Some(name) = ps
        .get("serviceAccountName")
        .filter(|n| n.is_string())
        .cloned()
    {
        default(ps, "serviceAccount", || name);
    }
    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        omit_zero(ps, key, &json!(false));
    }
    for list in ["containers", "initContainers"] {
        if let Some(cs) = ps.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                container(c);
            }
        }
    }
    // Volumes of files get the file mode 0644 (420).
    if let Some(vs) = ps.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in vs.iter_mut().filter_map(Value::as_object_mut) {
            for source in ["configMap", "secret", "downwardAPI", "projected"] {
                if let Some(src) = existing(v, source) {
                    default(src, "defaultMode", || json!(420));
                }
            }
            if let Some(src) = existing(v, "downwardAPI") {
                downward_items(src);
            }
            let sources = existing(v, "projected")
                .and_then(|p| p.get_mut("sources"))
                .and_then(Value::as_array_mut);
            for src in sources
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                if let Some(d) = existing(src, "downwardAPI") {
                    downward_items(d);
                }
                if let Some(t) = existing(src, "serviceAccountToken") {
                    default(t, "expirationSeconds", || json!(3600));
                }
            }
        }
    }
}

/// A probe's timing and thresholds, and an HTTP check's path and scheme.
fn probe(p: &mut Map<String, Value>) {
    default(p, "timeoutSeconds", || json!(1));
    default(p, "periodSeconds", || json!(10));
    default(p, "successThreshold", || json!(1));
    default(p, "failureThreshold", || json!(3));
    if let Some(h) = existing(p, "httpGet") {
        default(h, "path", || json!("/"));
        default(h, "scheme", || json!("HTTP"));
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    // The tag is what follows the last ':' after the last '/', digests aside.
    let last = image.rsplit('/').next().unwrap_or_default();
    let tag = if image.contains('@') {
        Some("digest")
    } else {
        last.split_once(':').map(|(_, t)| t)
    };
    let policy = match tag {
        None | Some("latest") => "Always",
        Some(_) => "IfNotPresent",
    };
    default(c, "imagePullPolicy", || json!(policy));
    default(c, "terminationMessagePath", || {
        json!("/dev/termination-log")
    });
    default(c, "terminationMessagePolicy", || json!("File"));
    default(c, "resources", || json!({}));
    for key in ["stdin", "stdinOnce", "tty"] {
        omit_zero(c, key, &json!(false));
    }
    let mounts = c.get_mut("volumeMounts").and_then(Value::as_array_mut);
    for m in mounts
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        omit_zero(m, "readOnly", &json!(false));
    }
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = existing(c, kind) {
            probe(p);
        }
    }
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default(p, "protocol", || json!("TCP"));
        }
    }
    let env = c.get_mut("env").and_then(Value::as_array_mut);
    for e in env.into_iter().flatten().filter_map(Value::as_object_mut) {
        if let Some(from) = existing(e, "valueFrom") {
            field_ref(from);
        }
    }
}

fn service(o: &mut Map<String, Value>, alloc: &mut dyn Allocate) {
    let Some(spec) = child(o, "spec") else {
        return;
    };
    default(spec, "type", || json!("ClusterIP"));
    default(spec, "sessionAffinity", || json!("None"));
    omit_zero(spec, "publishNotReadyAddresses", &json!(false));
    let ty = spec["type"].as_str().unwrap_or_default().to_string();
    if ty != "ExternalName" {
        if spec.get("clusterIP").is_none_or(|v| v.is_null() || v == "") {
            spec.insert("clusterIP".into(), json!(alloc.cluster_ip()));
        }
        let ip = spec["clusterIP"].clone();
        default(spec, "clusterIPs", || json!([ip]));
        default(spec, "ipFamilies", || json!(["IPv4"]));
        default(spec, "ipFamilyPolicy", || json!("SingleStack"));
        default(spec, "internalTrafficPolicy", || json!("Cluster"));
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
        default(spec, "externalTrafficPolicy", || json!("Cluster"));
    }
    // SetDefaults_Service: a load balancer allocates node ports unless told not to.
    if ty == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", || json!(true));
    }
    // Node ports for a NodePort Service and a load balancer that allocates
    // them (the registry's allocation, seen on kube-apiserver v1.34: a port
    // without one gets one, a `0` counts as none).
    let node_ports = ty == "NodePort"
        || (ty == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default(p, "protocol", || json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                default(p, "targetPort", || port);
            }
            if node_ports
                && p.get("nodePort").is_none_or(|v| v.is_null() || v == 0)
                && let Some(n) = alloc.node_port(p)
            {
                p.insert("nodePort".into(), json!(n));
            }
        }
    }
    if ty == "LoadBalancer"
        && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
        && spec
            .get("healthCheckNodePort")
            .is_none_or(|v| v.is_null() || v == 0)
        && let Some(n) = alloc.health_check_node_port()
    {
        spec.insert("healthCheckNodePort".into(), json!(n));
    }
    if let Some(status) = child(o, "status") {
        default(status, "loadBalancer", || json!({}));
    }
}

/// SetDefaults_ValidatingWebhook, _MutatingWebhook (`mutating`: its
/// reinvocationPolicy too), _Rule and _ServiceReference: each webhook's
/// failure and match policies, selectors that select everything, a
/// 10 s timeout, every rule's scope `*`, a service's port 443.
fn webhooks(o: &mut Map<String, Value>, mutating: bool) {
    let hooks = o.get_mut("webhooks").and_then(Value::as_array_mut);
    for w in hooks.into_iter().flatten().filter_map(Value::as_object_mut) {
        default(w, "failurePolicy", || json!("Fail"));
        default(w, "matchPolicy", || json!("Equivalent"));
        default(w, "namespaceSelector", || json!({}));
        default(w, "objectSelector", || json!({}));
        default(w, "timeoutSeconds", || json!(10));
        if mutating {
            default(w, "reinvocationPolicy", || json!("Never"));
        }
        let rules = w.get_mut("rules").and_then(Value::as_array_mut);
        for r in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
            default(r, "scope", || json!("*"));
        }
        if let Some(cc) = existing(w, "clientConfig")
            && let Some(svc) = existing(cc, "service")
        {
            default(svc, "port", || json!(443));
        }
    }
}

/// SetDefaults_RoleBinding (and ClusterRoleBinding) and _Subject: the
/// role's API group is RBAC's; a subject's empty API group is RBAC's for a
/// User or Group, and stays empty, so not stored, for a ServiceAccount.
fn role_binding(o: &mut Map<String, Value>) {
    const RBAC: &str = "rbac.authorization.k8s.io";
    if let Some(r) = existing(o, "roleRef")
        && r.get("apiGroup").is_none_or(|g| g.is_null() || g == "")
    {
        r.insert("apiGroup".into(), json!(RBAC));
    }
    let subjects = o.get_mut("subjects").and_then(Value::as_array_mut);
    for s in subjects
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        if s.get("apiGroup").is_none_or(|g| g.is_null() || g == "") {
            match s.get("kind").and_then(Value::as_str) {
                Some("User" | "Group") => {
                    s.insert("apiGroup".into(), json!(RBAC));
                }
                _ => {
                    s.remove("apiGroup");
                }
            }
        }
    }
}

/// SetDefaults_NetworkPolicy and _NetworkPolicyPort: a port's protocol
/// is TCP; without policyTypes, Ingress, and Egress too when there are
/// egress rules (seen on kube-apiserver v1.34).
fn network_policy(o: &mut Map<String, Value>) {
    let Some(spec) = existing(o, "spec") else {
        return;
    };
    for dir in ["ingress", "egress"] {
        let rules = spec.get_mut(dir).and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
            let ports = rule.get_mut("ports").and_then(Value::as_array_mut);
            for p in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
                default(p, "protocol", || json!("TCP"));
            }
        }
    }
    let no_types = spec
        .get("policyTypes")
        .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty));
    if no_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

fn secret(o: &mut Map<String, Value>) {
    default(o, "type", || json!("Opaque"));
    // stringData is write-only: folded into data, never stored.
    if let Some(Value::Object(sd)) = o.remove("stringData")
        && let Some(data) = child(o, "data")
    {
        for (k, v) in sd {
            let s = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            data.insert(k, json!(crate::gocompat::encode_bytes(s)));
        }
    }
}

/// A field a Service's storage sets or drops on an update, past its field
/// manager (kube-apiserver v1.34's `patchAllocatedValues` and
/// `dropTypeDependentFields`).
#[derive(Debug, Clone, PartialEq)]
pub enum ServiceField {
    /// A port's node port: the port's list keys (`protocol` defaulted).
    NodePort { port: Value, protocol: Value },
    /// A field of `spec`.
    Spec(&'static str),
}

impl ServiceField {
    fn node_port(port: &Map<String, Value>) -> ServiceField {
        let protocol = port.get("protocol").filter(|p| !p.is_null());
        ServiceField::NodePort {
            port: port.get("port").cloned().unwrap_or(Value::Null),
            protocol: protocol.cloned().unwrap_or_else(|| json!("TCP")),
        }
    }
}

fn needs_node_ports(spec: &Value) -> bool {
    match spec["type"].as_str() {
        Some("NodePort") => true,
        Some("LoadBalancer") => spec["allocateLoadBalancerNodePorts"] != json!(false),
        _ => false,
    }
}

fn needs_health_check(spec: &Value) -> bool {
    spec["type"] == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
}

fn node_port_of(port: &Value) -> i64 {
    port["nodePort"].as_i64().unwrap_or(0)
}

/// An update of a Service `old` to `new` (before defaulting): node ports
/// the new spec leaves out are kept from the old port of the same name
/// (unless another port of the new spec holds it), as is the health check
/// node port. Returns what was put back.
pub fn service_keeps_allocated(old: &Value, new: &mut Value) -> Vec<ServiceField> {
    let mut put_back = Vec::new();
    let (o, Some(n)) = (&old["spec"], new.get_mut("spec")) else {
        return put_back;
    };
    if needs_node_ports(o) && needs_node_ports(n) {
        let old_ports = o["ports"].as_array().map(Vec::as_slice).unwrap_or_default();
        let held: Vec<i64> = n["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(node_port_of)
            .collect();
        for p in n["ports"].as_array_mut().into_iter().flatten() {
            if node_port_of(p) != 0 {
                continue;
            }
            let same_name = old_ports.iter().find(|q| q["name"] == p["name"]);
            if let Some(v) = same_name
                .map(node_port_of)
                .filter(|v| *v != 0 && !held.contains(v))
                && let Some(m) = p.as_object_mut()
            {
                m.insert("nodePort".into(), json!(v));
                put_back.push(ServiceField::node_port(m));
            }
        }
    }
    if needs_health_check(o)
        && needs_health_check(n)
        && n["healthCheckNodePort"].as_i64().unwrap_or(0) == 0
        && let Some(v) = o.get("healthCheckNodePort")
    {
        n["healthCheckNodePort"] = v.clone();
        put_back.push(ServiceField::Spec("healthCheckNodePort"));
    }
    put_back
}

/// An update of a Service `old` to `new` (before defaulting): what the new
/// type does not use is dropped where the update left it as it was: an
/// ExternalName's cluster IPs, IP families and internal traffic policy, node ports (when none is
/// net-new), the health check node port,
/// `allocateLoadBalancerNodePorts`, `loadBalancerClass` and
/// `externalTrafficPolicy`. Returns what was dropped.
pub fn service_drops_unused(old: &Value, new: &mut Value) -> Vec<ServiceField> {
    let mut dropped = Vec::new();
    let (o, Some(n)) = (&old["spec"], new.get_mut("spec")) else {
        return dropped;
    };
    // An ExternalName has no cluster IP: the allocated ones go, and the IP
    // families with them.
    if o["type"] != "ExternalName" && n["type"] == "ExternalName" {
        let same = |k: &str| o.get(k) == n.get(k);
        let ips = same("clusterIP") && same("clusterIPs");
        let fields = [
            ("clusterIP", ips),
            ("clusterIPs", ips),
            ("ipFamilies", same("ipFamilies")),
            ("ipFamilyPolicy", same("ipFamilyPolicy")),
            ("internalTrafficPolicy", same("internalTrafficPolicy")),
        ];
        for (field, gone) in fields {
            if gone
                && let Some(m) = n.as_object_mut()
                && m.remove(field).is_some()
            {
                dropped.push(ServiceField::Spec(field));
            }
        }
    }
    let all = |s: &Value| -> std::collections::BTreeSet<i64> {
        let ports = s["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(node_port_of);
        ports.filter(|n| *n != 0).collect()
    };
    if needs_node_ports(o) && !needs_node_ports(n) && all(o).is_superset(&all(n)) {
        let ports = n["ports"].as_array_mut().into_iter().flatten();
        for p in ports.filter_map(Value::as_object_mut) {
            if p.remove("nodePort").is_some() {
                dropped.push(ServiceField::node_port(p));
            }
        }
    }
    let load_balancer = |s: &Value| s["type"] == "LoadBalancer";
    let external = |s: &Value| matches!(s["type"].as_str(), Some("NodePort" | "LoadBalancer"));
    let same = |k: &str| o.get(k) == n.get(k);
    let drop = [
        (
            "healthCheckNodePort",
            needs_health_check(o) && !needs_health_check(n) && same("healthCheckNodePort"),
        ),
        (
            "allocateLoadBalancerNodePorts",
            load_balancer(o)
                && !load_balancer(n)
                && !n["allocateLoadBalancerNodePorts"].is_null()
                && same("allocateLoadBalancerNodePorts"),
        ),
        (
            "loadBalancerClass",
            load_balancer(o) && !load_balancer(n) && same("loadBalancerClass"),
        ),
        (
            "externalTrafficPolicy",
            external(o) && !external(n) && same("externalTrafficPolicy"),
        ),
    ];
    for (field, gone) in drop {
        if gone
            && let Some(m) = n.as_object_mut()
            && m.remove(field).is_some()
        {
            dropped.push(ServiceField::Spec(field));
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_and_file_volumes() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {
                "containers": [{"name": "a", "image": "x:1",
                    "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 5}}],
                "volumes": [{"name": "c", "configMap": {"name": "c"}},
                    {"name": "s", "secret": {"secretName": "s", "defaultMode": 256}},
                    {"name": "e", "emptyDir": {}}]}}}});
        apply(&mut d, &mut || "10.96.0.1".into());
        let ps = &d["spec"]["template"]["spec"];
        assert_eq!(
            ps["containers"][0]["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "periodSeconds": 5,
                "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(ps["volumes"][0]["configMap"]["defaultMode"], 420);
        assert_eq!(ps["volumes"][1]["secret"]["defaultMode"], 256);
        assert_eq!(ps["volumes"][2], json!({"name": "e", "emptyDir": {}}));
    }

    #[test]
    fn deployment_defaults() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "n"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}]},
                {"name": "b", "image": "reg:5000/x"}]}}}});
        apply(&mut d, &mut || "10.96.0.1".into());
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c[1]["imagePullPolicy"], "Always");
        assert_eq!(c[0]["ports"][0]["protocol"], "TCP");
        assert_eq!(d["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    }

    /// What kube-apiserver v1.34 stored of these (`kubectl apply
    /// --dry-run=server`): the zero values of `omitempty` fields gone.
    #[test]
    fn zero_values_of_omitempty_fields_are_not_stored() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"minReadySeconds": 0, "template": {"spec": {
                "hostNetwork": false, "hostPID": false, "hostIPC": false,
                "containers": [{"name": "c", "image": "x:1", "stdin": false,
                    "stdinOnce": false, "tty": false, "volumeMounts": [
                        {"name": "v", "mountPath": "/v", "readOnly": false},
                        {"name": "w", "mountPath": "/w", "readOnly": true}]}]}}}});
        apply(&mut d, &mut || unreachable!());
        assert!(d["spec"].get("minReadySeconds").is_none(), "{d}");
        let ps = &d["spec"]["template"]["spec"];
        for key in ["hostNetwork", "hostPID", "hostIPC"] {
            assert!(ps.get(key).is_none(), "{key}: {ps}");
        }
        let c = &ps["containers"][0];
        for key in ["stdin", "stdinOnce", "tty"] {
            assert!(c.get(key).is_none(), "{key}: {c}");
        }
        assert_eq!(
            c["volumeMounts"],
            json!([{"name": "v", "mountPath": "/v"},
                {"name": "w", "mountPath": "/w", "readOnly": true}])
        );
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"minReadySeconds": 5}});
        apply(&mut d, &mut || unreachable!());
        assert_eq!(d["spec"]["minReadySeconds"], 5);
        let mut s = json!({"apiVersion": "v1", "kind": "Service",
            "spec": {"publishNotReadyAddresses": false, "ports": [{"port": 80}]}});
        apply(&mut s, &mut || "10.96.0.1".into());
        assert!(s["spec"].get("publishNotReadyAddresses").is_none(), "{s}");
    }

    /// kube-apiserver v1.34 on ingress-nginx's and cert-manager's webhook
    /// configurations, and on a binding's subjects.
    #[test]
    fn webhook_configurations_and_role_bindings() {
        let mut v = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "webhooks": [{"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "failurePolicy": "Ignore",
                "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/v"}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                    "resources": ["pods"]}]}]});
        let mut m = v.clone();
        m["kind"] = json!("MutatingWebhookConfiguration");
        apply(&mut v, &mut || unreachable!());
        let w = &v["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Ignore");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["namespaceSelector"], json!({}));
        assert_eq!(w["objectSelector"], json!({}));
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
        assert!(w.get("reinvocationPolicy").is_none());
        apply(&mut m, &mut || unreachable!());
        assert_eq!(m["webhooks"][0]["reinvocationPolicy"], "Never");

        let mut b = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "a", "apiGroup": ""},
                {"kind": "User", "name": "u"}, {"kind": "Group", "name": "g", "apiGroup": ""}]});
        apply(&mut b, &mut || unreachable!());
        assert_eq!(
            b,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "roleRef": {"kind": "Role", "name": "r", "apiGroup": "rbac.authorization.k8s.io"},
                "subjects": [{"kind": "ServiceAccount", "name": "a"},
                    {"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
                    {"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"}]})
        );
    }

    #[test]
    fn recreate_gets_no_rolling_update() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"strategy": {"type": "Recreate"}}});
        apply(&mut d, &mut || "10.96.0.1".into());
        assert!(d["spec"]["strategy"].get("rollingUpdate").is_none());
    }

    /// What kube-apiserver v1.34 answered to a create of this policy
    /// (`kubectl create --dry-run=server`).
    #[test]
    fn network_policy_defaults() {
        let mut n = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "t"},
            "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}],
                "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 443}]}]}});
        apply(&mut n, &mut || unreachable!());
        assert_eq!(
            n["spec"],
            json!({"egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 443, "protocol": "TCP"}]}],
                "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}], "podSelector": {},
                "policyTypes": ["Ingress", "Egress"]})
        );
        let mut only_in = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "spec": {"podSelector": {}, "policyTypes": ["Egress"]}});
        apply(&mut only_in, &mut || unreachable!());
        assert_eq!(only_in["spec"]["policyTypes"], json!(["Egress"]));
    }

    #[test]
    fn secret_string_data_folds() {
        let mut s = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"a": "b"}});
        apply(&mut s, &mut || String::new());
        assert_eq!(s["data"]["a"], "Yg==");
        assert!(s.get("stringData").is_none());
        assert_eq!(s["type"], "Opaque");
    }

    #[test]
    fn service_defaults() {
        let mut s = json!({"apiVersion": "v1", "kind": "Service",
            "spec": {"ports": [{"port": 80}]}});
        apply(&mut s, &mut || "10.96.0.7".into());
        assert_eq!(s["spec"]["clusterIP"], "10.96.0.7");
        assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.7"]));
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
    }
}
