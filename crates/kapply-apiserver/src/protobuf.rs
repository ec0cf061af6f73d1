//! The Kubernetes protobuf encoding, for what kubectl's typed clients send:
//! `kubectl create <kind>` writes `application/vnd.kubernetes.protobuf` and
//! does not fall back to JSON when the server answers 415.
//!
//! The decoder is driven by a schema table (message -> field number -> JSON
//! name, type, omit rule) taken from the k8s.io/api Go types, and yields the
//! JSON that kube-apiserver's JSON encoding of the same Go object would hold.
//! A field number the table lacks is an error naming the message and field,
//! so a gap answers 415 instead of storing a silently different object.

use serde_json::{Map, Value, json};

/// One protobuf field: number and payload.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// Fixed 32/64-bit: nothing kubectl sends uses these.
    Fixed,
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn fields(buf: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag = varint(buf, &mut pos)?;
        let (num, wire) = (tag >> 3, tag & 7);
        let f = match wire {
            0 => Field::Varint(varint(buf, &mut pos)?),
            1 | 5 => {
                pos = pos.checked_add(if wire == 1 { 8 } else { 4 })?;
                Field::Fixed
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let b = buf.get(pos..end)?;
                pos = end;
                Field::Bytes(b)
            }
            _ => return None,
        };
        out.push((num, f));
    }
    if pos > buf.len() {
        return None;
    }
    Some(out)
}

/// How a field's payload becomes JSON.
#[derive(Clone, Copy)]
enum T {
    Str,
    /// int32/int64 varint (negative values are sign-extended to 64 bits).
    Int,
    Bool,
    /// `[]byte`: base64 in JSON.
    Bytes,
    Msg(&'static str),
    /// An embedded Go struct whose JSON fields sit in the parent (`json:",inline"`).
    Inline(&'static str),
    MapStr,
    MapBytes,
    /// `ResourceList`: map of Quantity.
    MapQty,
    IntStr,
    Qty,
    /// metav1.Time: the zero time is JSON `null`, as Go's encoder writes it.
    Time,
    /// Ignored: status, which the server resets on create.
    Skip,
}

/// The Go field's JSON omit rule.
#[derive(Clone, Copy, PartialEq)]
enum Z {
    /// Non-pointer with `omitempty`: a zero scalar is dropped.
    Omit,
    /// Non-pointer without `omitempty`: an absent scalar is its zero value.
    Keep,
    /// Pointer (or struct): kept when sent, even when zero.
    Ptr,
    /// Repeated with `omitempty`: dropped when empty.
    List,
    /// Repeated without `omitempty`: `null` when empty.
    ListKeep,
    /// Pointer without `omitempty`: `null` when not sent.
    Null,
}

type Row = (u64, &'static str, T, Z);

use T::*;
use Z::*;

const META: Row = (1, "metadata", Msg("ObjectMeta"), Ptr);
const STATUS: Row = (3, "status", Skip, Ptr);

/// Message name -> its fields, in Go struct order (which fixes JSON key order).
const SCHEMA: &[(&str, &[Row])] = &[
    // meta/v1
    (
        "ObjectMeta",
        &[
            (1, "name", Str, Omit),
            (2, "generateName", Str, Omit),
            (3, "namespace", Str, Omit),
            (4, "selfLink", Str, Omit),
            (5, "uid", Str, Omit),
            (6, "resourceVersion", Str, Omit),
            (7, "generation", Int, Omit),
            (8, "creationTimestamp", Time, Ptr),
            (9, "deletionTimestamp", Time, Ptr),
            (10, "deletionGracePeriodSeconds", Int, Ptr),
            (11, "labels", MapStr, List),
            (12, "annotations", MapStr, List),
            (13, "ownerReferences", Msg("OwnerReference"), List),
            (14, "finalizers", Str, List),
        ],
    ),
    (
        "OwnerReference",
        &[
            (5, "apiVersion", Str, Keep),
            (1, "kind", Str, Keep),
            (3, "name", Str, Keep),
            (4, "uid", Str, Keep),
            (6, "controller", Bool, Ptr),
            (7, "blockOwnerDeletion", Bool, Ptr),
        ],
    ),
    (
        "LabelSelector",
        &[
            (1, "matchLabels", MapStr, List),
            (2, "matchExpressions", Msg("LabelSelectorRequirement"), List),
        ],
    ),
    (
        "LabelSelectorRequirement",
        &[
            (1, "key", Str, Keep),
            (2, "operator", Str, Keep),
            (3, "values", Str, List),
        ],
    ),
    // core/v1
    (
        "Namespace",
        &[META, (2, "spec", Msg("NamespaceSpec"), Ptr), STATUS],
    ),
    ("NamespaceSpec", &[(1, "finalizers", Str, List)]),
    (
        "ConfigMap",
        &[
            META,
            (4, "immutable", Bool, Ptr),
            (2, "data", MapStr, List),
            (3, "binaryData", MapBytes, List),
        ],
    ),
    (
        "Secret",
        &[
            META,
            (5, "immutable", Bool, Ptr),
            (2, "data", MapBytes, List),
            (4, "stringData", MapStr, List),
            (3, "type", Str, Omit),
        ],
    ),
    (
        "ServiceAccount",
        &[
            META,
            (2, "secrets", Msg("ObjectReference"), List),
            (3, "imagePullSecrets", Msg("LocalObjectReference"), List),
            (4, "automountServiceAccountToken", Bool, Ptr),
        ],
    ),
    (
        "ObjectReference",
        &[
            (1, "kind", Str, Omit),
            (2, "namespace", Str, Omit),
            (3, "name", Str, Omit),
            (4, "uid", Str, Omit),
            (5, "apiVersion", Str, Omit),
            (6, "resourceVersion", Str, Omit),
            (7, "fieldPath", Str, Omit),
        ],
    ),
    ("LocalObjectReference", &[(1, "name", Str, Omit)]),
    (
        "Service",
        &[META, (2, "spec", Msg("ServiceSpec"), Ptr), STATUS],
    ),
    (
        "ServiceSpec",
        &[
            (1, "ports", Msg("ServicePort"), List),
            (2, "selector", MapStr, List),
            (3, "clusterIP", Str, Omit),
            (18, "clusterIPs", Str, List),
            (4, "type", Str, Omit),
            (5, "externalIPs", Str, List),
            (7, "sessionAffinity", Str, Omit),
            (8, "loadBalancerIP", Str, Omit),
            (9, "loadBalancerSourceRanges", Str, List),
            (10, "externalName", Str, Omit),
            (11, "externalTrafficPolicy", Str, Omit),
            (12, "healthCheckNodePort", Int, Omit),
            (13, "publishNotReadyAddresses", Bool, Omit),
            (19, "ipFamilies", Str, List),
            (17, "ipFamilyPolicy", Str, Ptr),
            (20, "allocateLoadBalancerNodePorts", Bool, Ptr),
            (21, "loadBalancerClass", Str, Ptr),
            (22, "internalTrafficPolicy", Str, Ptr),
            (23, "trafficDistribution", Str, Ptr),
        ],
    ),
    (
        "ServicePort",
        &[
            (1, "name", Str, Omit),
            (2, "protocol", Str, Omit),
            (6, "appProtocol", Str, Ptr),
            (3, "port", Int, Keep),
            (4, "targetPort", IntStr, Ptr),
            (5, "nodePort", Int, Omit),
        ],
    ),
    ("Pod", &[META, (2, "spec", Msg("PodSpec"), Ptr), STATUS]),
    ("PodTemplateSpec", &[META, (2, "spec", Msg("PodSpec"), Ptr)]),
    (
        "PodSpec",
        &[
            (20, "initContainers", Msg("Container"), List),
            (2, "containers", Msg("Container"), ListKeep),
            (3, "restartPolicy", Str, Omit),
            (4, "terminationGracePeriodSeconds", Int, Ptr),
            (5, "activeDeadlineSeconds", Int, Ptr),
            (6, "dnsPolicy", Str, Omit),
            (7, "nodeSelector", MapStr, List),
            (8, "serviceAccountName", Str, Omit),
            (9, "serviceAccount", Str, Omit),
            (21, "automountServiceAccountToken", Bool, Ptr),
            (10, "nodeName", Str, Omit),
            (11, "hostNetwork", Bool, Omit),
            (12, "hostPID", Bool, Omit),
            (13, "hostIPC", Bool, Omit),
            (27, "shareProcessNamespace", Bool, Ptr),
            (14, "securityContext", Msg("PodSecurityContext"), Ptr),
            (15, "imagePullSecrets", Msg("LocalObjectReference"), List),
            (16, "hostname", Str, Omit),
            (17, "subdomain", Str, Omit),
            (19, "schedulerName", Str, Omit),
            (22, "tolerations", Msg("Toleration"), List),
            (24, "priorityClassName", Str, Omit),
            (25, "priority", Int, Ptr),
            (29, "runtimeClassName", Str, Ptr),
            (30, "enableServiceLinks", Bool, Ptr),
            (31, "preemptionPolicy", Str, Ptr),
            (35, "setHostnameAsFQDN", Bool, Ptr),
            (37, "hostUsers", Bool, Ptr),
        ],
    ),
    (
        "PodSecurityContext",
        &[
            (2, "runAsUser", Int, Ptr),
            (6, "runAsGroup", Int, Ptr),
            (3, "runAsNonRoot", Bool, Ptr),
            (4, "supplementalGroups", Int, List),
            (5, "fsGroup", Int, Ptr),
            (9, "fsGroupChangePolicy", Str, Ptr),
        ],
    ),
    (
        "Toleration",
        &[
            (1, "key", Str, Omit),
            (2, "operator", Str, Omit),
            (3, "value", Str, Omit),
            (4, "effect", Str, Omit),
            (5, "tolerationSeconds", Int, Ptr),
        ],
    ),
    (
        "Container",
        &[
            (1, "name", Str, Keep),
            (2, "image", Str, Omit),
            (3, "command", Str, List),
            (4, "args", Str, List),
            (5, "workingDir", Str, Omit),
            (6, "ports", Msg("ContainerPort"), List),
            (19, "envFrom", Msg("EnvFromSource"), List),
            (7, "env", Msg("EnvVar"), List),
            (8, "resources", Msg("ResourceRequirements"), Ptr),
            (9, "volumeMounts", Msg("VolumeMount"), List),
            (13, "terminationMessagePath", Str, Omit),
            (20, "terminationMessagePolicy", Str, Omit),
            (14, "imagePullPolicy", Str, Omit),
            (15, "securityContext", Msg("SecurityContext"), Ptr),
            (16, "stdin", Bool, Omit),
            (17, "stdinOnce", Bool, Omit),
            (18, "tty", Bool, Omit),
        ],
    ),
    (
        "ContainerPort",
        &[
            (1, "name", Str, Omit),
            (2, "hostPort", Int, Omit),
            (3, "containerPort", Int, Keep),
            (4, "protocol", Str, Omit),
            (5, "hostIP", Str, Omit),
        ],
    ),
    (
        "EnvVar",
        &[
            (1, "name", Str, Keep),
            (2, "value", Str, Omit),
            (3, "valueFrom", Msg("EnvVarSource"), Ptr),
        ],
    ),
    (
        "EnvVarSource",
        &[
            (1, "fieldRef", Msg("ObjectFieldSelector"), Ptr),
            (3, "configMapKeyRef", Msg("KeySelector"), Ptr),
            (4, "secretKeyRef", Msg("KeySelector"), Ptr),
        ],
    ),
    (
        "ObjectFieldSelector",
        &[(1, "apiVersion", Str, Omit), (2, "fieldPath", Str, Keep)],
    ),
    // ConfigMapKeySelector and SecretKeySelector have the same fields.
    (
        "KeySelector",
        &[
            (1, "", Inline("LocalObjectReference"), Ptr),
            (2, "key", Str, Keep),
            (3, "optional", Bool, Ptr),
        ],
    ),
    (
        "EnvFromSource",
        &[
            (1, "prefix", Str, Omit),
            (2, "configMapRef", Msg("EnvSource"), Ptr),
            (3, "secretRef", Msg("EnvSource"), Ptr),
        ],
    ),
    // ConfigMapEnvSource and SecretEnvSource have the same fields.
    (
        "EnvSource",
        &[
            (1, "", Inline("LocalObjectReference"), Ptr),
            (2, "optional", Bool, Ptr),
        ],
    ),
    (
        "VolumeMount",
        &[
            (1, "name", Str, Keep),
            (2, "readOnly", Bool, Omit),
            (3, "mountPath", Str, Keep),
            (4, "subPath", Str, Omit),
            (6, "subPathExpr", Str, Omit),
        ],
    ),
    (
        "ResourceRequirements",
        &[(1, "limits", MapQty, List), (2, "requests", MapQty, List)],
    ),
    (
        "SecurityContext",
        &[
            (1, "capabilities", Msg("Capabilities"), Ptr),
            (2, "privileged", Bool, Ptr),
            (4, "runAsUser", Int, Ptr),
            (8, "runAsGroup", Int, Ptr),
            (5, "runAsNonRoot", Bool, Ptr),
            (6, "readOnlyRootFilesystem", Bool, Ptr),
            (7, "allowPrivilegeEscalation", Bool, Ptr),
        ],
    ),
    (
        "Capabilities",
        &[(1, "add", Str, List), (2, "drop", Str, List)],
    ),
    (
        "ResourceQuota",
        &[META, (2, "spec", Msg("ResourceQuotaSpec"), Ptr), STATUS],
    ),
    (
        "ResourceQuotaSpec",
        &[
            (1, "hard", MapQty, List),
            (2, "scopes", Str, List),
            (3, "scopeSelector", Msg("ScopeSelector"), Ptr),
        ],
    ),
    (
        "ScopeSelector",
        &[(
            1,
            "matchExpressions",
            Msg("ScopedResourceSelectorRequirement"),
            List,
        )],
    ),
    (
        "ScopedResourceSelectorRequirement",
        &[
            (1, "scopeName", Str, Keep),
            (2, "operator", Str, Keep),
            (3, "values", Str, List),
        ],
    ),
    // apps/v1
    (
        "Deployment",
        &[META, (2, "spec", Msg("DeploymentSpec"), Ptr), STATUS],
    ),
    (
        "DeploymentSpec",
        &[
            (1, "replicas", Int, Ptr),
            (2, "selector", Msg("LabelSelector"), Ptr),
            (3, "template", Msg("PodTemplateSpec"), Ptr),
            (4, "strategy", Msg("DeploymentStrategy"), Ptr),
            (5, "minReadySeconds", Int, Omit),
            (6, "revisionHistoryLimit", Int, Ptr),
            (7, "paused", Bool, Omit),
            (9, "progressDeadlineSeconds", Int, Ptr),
        ],
    ),
    (
        "DeploymentStrategy",
        &[
            (1, "type", Str, Omit),
            (2, "rollingUpdate", Msg("RollingUpdateDeployment"), Ptr),
        ],
    ),
    (
        "RollingUpdateDeployment",
        &[
            (1, "maxUnavailable", IntStr, Ptr),
            (2, "maxSurge", IntStr, Ptr),
        ],
    ),
    // batch/v1
    ("Job", &[META, (2, "spec", Msg("JobSpec"), Ptr), STATUS]),
    (
        "JobSpec",
        &[
            (1, "parallelism", Int, Ptr),
            (2, "completions", Int, Ptr),
            (3, "activeDeadlineSeconds", Int, Ptr),
            (7, "backoffLimit", Int, Ptr),
            (12, "backoffLimitPerIndex", Int, Ptr),
            (13, "maxFailedIndexes", Int, Ptr),
            (4, "selector", Msg("LabelSelector"), Ptr),
            (5, "manualSelector", Bool, Ptr),
            (6, "template", Msg("PodTemplateSpec"), Ptr),
            (8, "ttlSecondsAfterFinished", Int, Ptr),
            (9, "completionMode", Str, Ptr),
            (10, "suspend", Bool, Ptr),
            (14, "podReplacementPolicy", Str, Ptr),
            (15, "managedBy", Str, Ptr),
        ],
    ),
    (
        "CronJob",
        &[META, (2, "spec", Msg("CronJobSpec"), Ptr), STATUS],
    ),
    (
        "CronJobSpec",
        &[
            (1, "schedule", Str, Keep),
            (8, "timeZone", Str, Ptr),
            (2, "startingDeadlineSeconds", Int, Ptr),
            (3, "concurrencyPolicy", Str, Omit),
            (4, "suspend", Bool, Ptr),
            (5, "jobTemplate", Msg("JobTemplateSpec"), Ptr),
            (6, "successfulJobsHistoryLimit", Int, Ptr),
            (7, "failedJobsHistoryLimit", Int, Ptr),
        ],
    ),
    ("JobTemplateSpec", &[META, (2, "spec", Msg("JobSpec"), Ptr)]),
    // rbac.authorization.k8s.io/v1
    ("Role", &[META, (2, "rules", Msg("PolicyRule"), ListKeep)]),
    (
        "ClusterRole",
        &[
            META,
            (2, "rules", Msg("PolicyRule"), ListKeep),
            (3, "aggregationRule", Msg("AggregationRule"), Ptr),
        ],
    ),
    (
        "PolicyRule",
        &[
            (1, "verbs", Str, ListKeep),
            (2, "apiGroups", Str, List),
            (3, "resources", Str, List),
            (4, "resourceNames", Str, List),
            (5, "nonResourceURLs", Str, List),
        ],
    ),
    (
        "AggregationRule",
        &[(1, "clusterRoleSelectors", Msg("LabelSelector"), List)],
    ),
    (
        "RoleBinding",
        &[
            META,
            (2, "subjects", Msg("Subject"), List),
            (3, "roleRef", Msg("RoleRef"), Ptr),
        ],
    ),
    (
        "Subject",
        &[
            (1, "kind", Str, Keep),
            (2, "apiGroup", Str, Omit),
            (3, "name", Str, Keep),
            (4, "namespace", Str, Omit),
        ],
    ),
    (
        "RoleRef",
        &[
            (1, "apiGroup", Str, Keep),
            (2, "kind", Str, Keep),
            (3, "name", Str, Keep),
        ],
    ),
    // authentication.k8s.io/v1
    (
        "TokenRequest",
        &[META, (2, "spec", Msg("TokenRequestSpec"), Ptr), STATUS],
    ),
    (
        "TokenRequestSpec",
        &[
            (1, "audiences", Str, ListKeep),
            (4, "expirationSeconds", Int, Null),
            (3, "boundObjectRef", Msg("BoundObjectReference"), Null),
        ],
    ),
    (
        "BoundObjectReference",
        &[
            (1, "kind", Str, Omit),
            (2, "apiVersion", Str, Omit),
            (3, "name", Str, Omit),
            (4, "uid", Str, Omit),
        ],
    ),
    // scheduling.k8s.io/v1
    (
        "PriorityClass",
        &[
            META,
            (2, "value", Int, Keep),
            (3, "globalDefault", Bool, Omit),
            (4, "description", Str, Omit),
            (5, "preemptionPolicy", Str, Ptr),
        ],
    ),
    // policy/v1
    (
        "PodDisruptionBudget",
        &[
            META,
            (2, "spec", Msg("PodDisruptionBudgetSpec"), Ptr),
            STATUS,
        ],
    ),
    (
        "PodDisruptionBudgetSpec",
        &[
            (1, "minAvailable", IntStr, Ptr),
            (2, "selector", Msg("LabelSelector"), Ptr),
            (3, "maxUnavailable", IntStr, Ptr),
            (4, "unhealthyPodEvictionPolicy", Str, Ptr),
        ],
    ),
    // networking.k8s.io/v1
    (
        "Ingress",
        &[META, (2, "spec", Msg("IngressSpec"), Ptr), STATUS],
    ),
    (
        "IngressSpec",
        &[
            (4, "ingressClassName", Str, Ptr),
            (1, "defaultBackend", Msg("IngressBackend"), Ptr),
            (2, "tls", Msg("IngressTLS"), List),
            (3, "rules", Msg("IngressRule"), List),
        ],
    ),
    (
        "IngressBackend",
        &[
            (4, "service", Msg("IngressServiceBackend"), Ptr),
            (3, "resource", Msg("TypedLocalObjectReference"), Ptr),
        ],
    ),
    (
        "IngressServiceBackend",
        &[
            (1, "name", Str, Keep),
            (2, "port", Msg("ServiceBackendPort"), Ptr),
        ],
    ),
    (
        "ServiceBackendPort",
        &[(1, "name", Str, Omit), (2, "number", Int, Omit)],
    ),
    (
        "TypedLocalObjectReference",
        &[
            (1, "apiGroup", Str, Ptr),
            (2, "kind", Str, Keep),
            (3, "name", Str, Keep),
        ],
    ),
    (
        "IngressTLS",
        &[(1, "hosts", Str, List), (2, "secretName", Str, Omit)],
    ),
    (
        "IngressRule",
        &[
            (1, "host", Str, Omit),
            (2, "", Inline("IngressRuleValue"), Ptr),
        ],
    ),
    (
        "IngressRuleValue",
        &[(1, "http", Msg("HTTPIngressRuleValue"), Ptr)],
    ),
    (
        "HTTPIngressRuleValue",
        &[(1, "paths", Msg("HTTPIngressPath"), ListKeep)],
    ),
    (
        "HTTPIngressPath",
        &[
            (1, "path", Str, Omit),
            (3, "pathType", Str, Ptr),
            (2, "backend", Msg("IngressBackend"), Ptr),
        ],
    ),
];

/// apiVersion and kind -> the top-level message.
const KINDS: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("v1", "ResourceQuota"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "Ingress"),
];

fn schema(message: &str) -> &'static [Row] {
    // ClusterRoleBinding has RoleBinding's fields.
    let message = if message == "ClusterRoleBinding" {
        "RoleBinding"
    } else {
        message
    };
    SCHEMA
        .iter()
        .find(|(m, _)| *m == message)
        .map_or(&[], |(_, rows)| rows)
}

fn string(b: &[u8], at: &str) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| format!("{at}: not UTF-8"))
}

fn b64(b: &[u8]) -> Value {
    json!(kapply_core::gocompat::encode_bytes(b))
}

fn parse<'a>(b: &'a [u8], at: &str) -> Result<Vec<(u64, Field<'a>)>, String> {
    fields(b).ok_or_else(|| format!("{at}: malformed protobuf"))
}

/// A map entry (key 1, value 2) whose value is decoded by `t`.
fn entry(b: &[u8], t: T, at: &str) -> Result<(String, Value), String> {
    let (mut k, mut v) = (String::new(), None);
    for (n, f) in parse(b, at)? {
        match (n, f) {
            (1, Field::Bytes(x)) => k = string(x, at)?,
            (2, f) => v = Some(scalar(t, f, at)?),
            (n, _) => return Err(format!("{at}: unexpected map entry field {n}")),
        }
    }
    let v = v.unwrap_or_else(|| match t {
        Bytes | Str => json!(""),
        _ => Value::Null,
    });
    Ok((k, v))
}

/// A payload that is not itself a schema message.
fn scalar(t: T, f: Field<'_>, at: &str) -> Result<Value, String> {
    let wire = || format!("{at}: unexpected wire type");
    Ok(match (t, f) {
        (Str, Field::Bytes(x)) => json!(string(x, at)?),
        (Bytes, Field::Bytes(x)) => b64(x),
        (Int, Field::Varint(v)) => json!(v as i64),
        (Bool, Field::Varint(v)) => json!(v != 0),
        (Qty, Field::Bytes(x)) => {
            let mut s = String::new();
            for (n, f) in parse(x, at)? {
                match (n, f) {
                    (1, Field::Bytes(q)) => s = string(q, at)?,
                    (n, _) => return Err(format!("{at}: field {n} of Quantity is not understood")),
                }
            }
            json!(s)
        }
        (IntStr, Field::Bytes(x)) => {
            let (mut ty, mut i, mut s) = (0, 0, String::new());
            for (n, f) in parse(x, at)? {
                match (n, f) {
                    (1, Field::Varint(v)) => ty = v,
                    (2, Field::Varint(v)) => i = v as i64 as i32,
                    (3, Field::Bytes(b)) => s = string(b, at)?,
                    (n, _) => {
                        return Err(format!("{at}: field {n} of IntOrString is not understood"));
                    }
                }
            }
            if ty == 1 { json!(s) } else { json!(i) }
        }
        (Time, Field::Bytes(x)) => {
            let (mut secs, mut nanos) = (0i64, 0i32);
            for (n, f) in parse(x, at)? {
                match (n, f) {
                    (1, Field::Varint(v)) => secs = v as i64,
                    (2, Field::Varint(v)) => nanos = v as i64 as i32,
                    (n, _) => return Err(format!("{at}: field {n} of Time is not understood")),
                }
            }
            if secs == 0 && nanos == 0 {
                Value::Null
            } else {
                let ts = jiff::Timestamp::from_second(secs).map_err(|e| format!("{at}: {e}"))?;
                json!(kapply_core::gocompat::timestamp(ts))
            }
        }
        _ => return Err(wire()),
    })
}

/// Go's zero value of a non-pointer scalar.
fn zero(t: T) -> Option<Value> {
    match t {
        Str => Some(json!("")),
        Int => Some(json!(0)),
        Bool => Some(json!(false)),
        Time => Some(Value::Null),
        _ => None,
    }
}

fn is_zero(v: &Value) -> bool {
    matches!(v, Value::String(s) if s.is_empty())
        || v.as_i64() == Some(0)
        || v.as_bool() == Some(false)
}

/// Nesting is bounded by the schema, but a hostile body may not follow it.
const MAX_DEPTH: usize = 32;

fn message(name: &str, b: &[u8], depth: usize) -> Result<Map<String, Value>, String> {
    if depth > MAX_DEPTH {
        return Err(format!("{name}: nested too deeply"));
    }
    let rows = schema(name);
    let mut got: Vec<Option<Value>> = vec![None; rows.len()];
    let mut inline = Map::new();
    for (n, f) in parse(b, name)? {
        let Some(i) = rows.iter().position(|r| r.0 == n) else {
            return Err(format!("field {n} of {name} is not understood"));
        };
        let (_, json_name, t, z) = rows[i];
        let at = format!("{name}.{json_name}");
        let v = match (t, f) {
            (Skip, _) => continue,
            (Msg(m), Field::Bytes(x)) => Value::Object(message(m, x, depth + 1)?),
            (Inline(m), Field::Bytes(x)) => {
                inline.extend(message(m, x, depth + 1)?);
                continue;
            }
            (MapStr | MapBytes | MapQty, Field::Bytes(x)) => {
                let vt = match t {
                    MapStr => Str,
                    MapBytes => Bytes,
                    _ => Qty,
                };
                let (k, v) = entry(x, vt, &at)?;
                let slot = got[i].get_or_insert_with(|| json!({}));
                if let Some(m) = slot.as_object_mut() {
                    m.insert(k, v);
                }
                continue;
            }
            (Msg(_) | Inline(_) | MapStr | MapBytes | MapQty, _) => {
                return Err(format!("{at}: unexpected wire type"));
            }
            (t, f) => scalar(t, f, &at)?,
        };
        if matches!(z, List | ListKeep) {
            let slot = got[i].get_or_insert_with(|| json!([]));
            if let Some(a) = slot.as_array_mut() {
                a.push(v);
            }
        } else {
            got[i] = Some(v);
        }
    }
    let mut out = Map::new();
    for ((_, json_name, t, z), v) in rows.iter().zip(got) {
        let v = match (v, z) {
            (Some(v), Omit) if is_zero(&v) => continue,
            (Some(v), _) => v,
            (None, Keep) => match zero(*t) {
                Some(v) => v,
                None => continue,
            },
            (None, ListKeep | Null) => Value::Null,
            (None, _) => continue,
        };
        out.insert((*json_name).to_string(), v);
    }
    out.extend(inline);
    Ok(out)
}

/// Decode a `k8s\0`-prefixed protobuf object of a supported kind into JSON.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(b"k8s\0")
        .ok_or("protobuf body without the k8s magic prefix")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    // runtime.Unknown: typeMeta 1 (apiVersion 1, kind 2), raw 2,
    // contentEncoding 3, contentType 4.
    for (n, f) in parse(rest, "Unknown")? {
        match (n, f) {
            (1, Field::Bytes(tm)) => {
                for (tn, tf) in parse(tm, "TypeMeta")? {
                    match (tn, tf) {
                        (1, Field::Bytes(x)) => api_version = string(x, "TypeMeta")?,
                        (2, Field::Bytes(x)) => kind = string(x, "TypeMeta")?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(x)) => raw = x,
            _ => {}
        }
    }
    if !KINDS.contains(&(api_version.as_str(), kind.as_str())) {
        return Err(format!(
            "protobuf is not understood for {api_version} {kind}; send JSON"
        ));
    }
    let mut obj = Map::new();
    obj.insert("kind".into(), json!(kind));
    obj.insert("apiVersion".into(), json!(api_version));
    obj.extend(message(&kind, raw, 0)?);
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, b.len() as u8];
        out.extend_from_slice(b);
        out
    }

    fn object(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let tm = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        [b"k8s\0".to_vec(), field(1, &tm), field(2, raw)].concat()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let body = [b"k8s\0".to_vec(), tail].concat();
            let _ = decode(&body);
        }

        /// Garbage inside every supported kind, also behind a valid
        /// metadata/spec wrapper so that nested messages see it.
        #[test]
        fn nested_garbage_never_panics(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..120),
                                       which in 0..KINDS.len(), wrap in 0u64..4) {
            let (api_version, kind) = KINDS[which];
            let raw = if wrap == 0 { raw } else { field(wrap, &raw) };
            let _ = decode(&object(api_version, kind, &raw));
        }
    }

    #[test]
    fn every_message_named_in_the_schema_exists() {
        for (m, rows) in SCHEMA {
            for (n, _, t, _) in rows.iter() {
                if let Msg(x) | Inline(x) = t {
                    assert!(!schema(x).is_empty(), "{m} field {n} names {x}");
                }
            }
        }
        for (_, k) in KINDS {
            assert!(!schema(k).is_empty(), "{k}");
        }
    }

    #[test]
    fn decodes_a_configmap() {
        let meta = [
            field(1, b"cm"),
            field(11, &[field(1, b"a"), field(2, b"b")].concat()),
        ]
        .concat();
        let raw = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
        ]
        .concat();
        let v = decode(&object("v1", "ConfigMap", &raw)).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}})
        );
        assert!(decode(b"k8s\0\xff\xff").is_err());
        assert!(decode(b"nope").is_err());
    }

    #[test]
    fn unknown_fields_are_named_not_dropped() {
        let raw = [field(1, &field(1, b"cm")), field(9, b"x")].concat();
        let e = decode(&object("v1", "ConfigMap", &raw)).unwrap_err();
        assert_eq!(e, "field 9 of ConfigMap is not understood");
        let e = decode(&object("v1", "Node", &[])).unwrap_err();
        assert!(e.contains("v1 Node"), "{e}");
    }

    #[test]
    fn omit_rules_follow_go_json() {
        // Service port 80 -> targetPort "http", nodePort 0 (omitempty, dropped),
        // port kept; a zero creationTimestamp is null.
        let intstr = [vec![0x08, 0x01], field(3, b"http")].concat();
        let port = [vec![0x18, 80], field(4, &intstr), vec![0x28, 0]].concat();
        let meta = [field(1, b"s"), field(8, b"")].concat();
        let spec = [field(1, &port), field(4, b"ClusterIP"), field(3, b"")].concat();
        let raw = [field(1, &meta), field(2, &spec), field(3, b"")].concat();
        let v = decode(&object("v1", "Service", &raw)).unwrap();
        assert_eq!(
            v,
            json!({"kind": "Service", "apiVersion": "v1",
                "metadata": {"name": "s", "creationTimestamp": null},
                "spec": {"ports": [{"port": 80, "targetPort": "http"}], "type": "ClusterIP"}})
        );
        // A ClusterRole without rules has `rules: null`, as Go writes a nil slice.
        let v = decode(&object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            &field(1, b""),
        ))
        .unwrap();
        assert_eq!(v["rules"], Value::Null);
        assert!(v.as_object().unwrap().contains_key("rules"));
    }
}
