#!/usr/bin/env python3
"""Write the strategic/merge patch corpus under tests/fixtures/smp/.

Each case holds a live object, a patch and the patch kind; tests/smp.rs
runs the real `kubectl patch --local` on it and compares with
kapply's merge::apply. No expected results are stored: kubectl is the oracle.
"""
import copy, json, os

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "smp")
LA = "kubectl.kubernetes.io/last-applied-configuration"


def deployment(**spec_over):
    """nginx-deployment as the API server stores it after `kubectl apply`."""
    d = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "nginx-deployment",
            "namespace": "default",
            "labels": {"app": "nginx"},
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "generation": 1,
            "resourceVersion": "1001",
            "uid": "7b0a7f3e-0000-4000-8000-000000000001",
        },
        "spec": {
            "minReadySeconds": 5,
            "progressDeadlineSeconds": 600,
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "nginx"}},
            "strategy": {
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                "type": "RollingUpdate",
            },
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "nginx"}},
                "spec": {
                    "containers": [
                        {
                            "image": "nginx:1.14.2",
                            "imagePullPolicy": "IfNotPresent",
                            "name": "nginx",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                        }
                    ],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                    "terminationGracePeriodSeconds": 30,
                },
            },
        },
    }
    d["spec"].update(spec_over)
    return d


def pod_spec(d):
    return d["spec"]["template"]["spec"]


CASES = {}


def case(name, live, patch, kind="strategic", note=""):
    CASES[name] = {"description": note, "kind": kind, "live": live, "patch": patch}


def tpl(spec):
    return {"spec": {"template": {"spec": spec}}}


# -- reference page examples -------------------------------------------------
d = deployment()
pod_spec(d)["containers"] = [
    {"name": "nginx", "image": "nginx:1.16"},
    {"name": "nginx-helper-a", "image": "helper:1.3"},
    {"name": "nginx-helper-b", "image": "helper:1.3", "args": ["run"]},
    {"name": "nginx-helper-d", "image": "helper:1.3"},
]
case("reference-containers-by-name", d, tpl({
    "$setElementOrder/containers": [{"name": "nginx"}, {"name": "nginx-helper-b"}, {"name": "nginx-helper-c"}],
    "containers": [{"image": "helper:1.3", "name": "nginx-helper-c"},
                   {"$patch": "delete", "name": "nginx-helper-a"}]}),
    note="reference: merge containers by name; delete helper-a, add helper-c, keep helper-d and args")

d = deployment()
pod_spec(d)["containers"][0]["args"] = ["a", "b", "d"]
case("reference-args-replaced", d, tpl({
    "$setElementOrder/containers": [{"name": "nginx"}],
    "containers": [{"args": ["a", "c"], "name": "nginx"}]}),
    note="reference: args has no patch strategy and is replaced")

d = deployment(replicas=2)
d["metadata"]["annotations"][LA] = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment"}) + "\n"
case("reference-update-deployment", d, {
    "metadata": {"annotations": {LA: "{\"new\":true}\n"}},
    "spec": {"minReadySeconds": None, "template": {"spec": {
        "$setElementOrder/containers": [{"name": "nginx"}],
        "containers": [{"image": "nginx:1.16.1", "name": "nginx"}]}}}},
    note="reference walk-through: image set, minReadySeconds cleared, replicas kept")

case("explicit-null-clears", deployment(), {"spec": {"minReadySeconds": None, "revisionHistoryLimit": None,
                                                      "notThere": None}},
     note="null deletes a key; a null for an absent key is ignored")

case("strategy-recreate-retainkeys", deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
     note="$retainKeys drops the defaulted rollingUpdate")

case("strategy-plain-merge-keeps-rollingupdate", deployment(), {"spec": {"strategy": {"type": "Recreate"}}},
     note="without $retainKeys rollingUpdate stays (the server then rejects it)")

d = deployment()
pod_spec(d)["volumes"] = [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}}]
case("volumes-retainkeys", d, tpl({
    "$setElementOrder/volumes": [{"name": "data"}, {"name": "cfg"}],
    "volumes": [{"$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/srv"}, "name": "data"}]}),
    note="volume source switched from emptyDir to hostPath")

# -- finalizers --------------------------------------------------------------
d = deployment()
d["metadata"]["finalizers"] = ["example.com/a", "server.io/x", "example.com/b"]
case("finalizers-merge-and-delete", d, {"metadata": {
    "$setElementOrder/finalizers": ["example.com/a", "example.com/c"],
    "$deleteFromPrimitiveList/finalizers": ["example.com/b"],
    "finalizers": ["example.com/c"]}},
    note="primitive merge list: add c, delete b, server-only x kept")
case("finalizers-union-no-order", d, {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}},
     note="set union without $setElementOrder")
case("finalizers-delete-only", d, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["server.io/x", "nope"]}})

# -- nested merge lists ------------------------------------------------------
d = deployment()
c = pod_spec(d)["containers"][0]
c["ports"] = [{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 9090, "protocol": "TCP"}]
c["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "S", "value": "server"}]
pod_spec(d)["containers"].append({"name": "sidecar", "image": "envoy:1", "env": [{"name": "X", "value": "x"}]})
case("nested-ports-and-env", d, tpl({
    "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
    "containers": [
        {"name": "nginx",
         "$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 8443}],
         "ports": [{"containerPort": 8443, "name": "https"}, {"$patch": "delete", "containerPort": 9090}],
         "$setElementOrder/env": [{"name": "B"}, {"name": "A"}, {"name": "C"}],
         "env": [{"name": "A", "value": "one"}, {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
        {"name": "sidecar", "env": [{"name": "X", "value": None, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}),
    note="ports merged by containerPort, env by name, reordered by $setElementOrder")

d = deployment()
pod_spec(d)["containers"] = [{"name": n, "image": n + ":1"} for n in ["x", "a", "s"]]
case("server-only-keeps-position", d, tpl({
    "$setElementOrder/containers": [{"name": "a"}, {"name": "n"}],
    "containers": [{"image": "n:1", "name": "n"}, {"$patch": "delete", "name": "x"}]}),
    note="delete + add with a server-only element: the server-only one keeps its place")

d = deployment()
pod_spec(d)["containers"] = [{"name": n, "image": n + ":1"} for n in ["s", "a"]]
case("new-element-after-server-only", d, tpl({
    "$setElementOrder/containers": [{"name": "a"}, {"name": "n"}],
    "containers": [{"image": "n:1", "name": "n"}]}))

d = deployment()
pod_spec(d)["containers"] = [{"name": n, "image": n + ":1"} for n in ["a", "b"]]
case("new-element-no-order-directive", d, tpl({"containers": [{"image": "n:1", "name": "n"}, {"name": "b", "image": "b:2"}]}),
     note="without $setElementOrder patch elements come first")

# -- maps ----------------------------------------------------------------------
d = deployment()
d["metadata"]["labels"].update({"tier": "web", "team": "a"})
d["metadata"]["annotations"]["example.com/owner"] = "ops"
case("labels-annotations", d, {"metadata": {
    "labels": {"tier": None, "team": "b", "new": "yes"},
    "annotations": {"example.com/owner": None, "example.com/x": "1"}}})

case("patch-replace-map", d, {"metadata": {"labels": {"$patch": "replace", "only": "this"}}},
     note="$patch: replace on a map replaces it whole")

d = deployment()
pod_spec(d)["containers"][0]["resources"] = {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}
case("patch-delete-map", d, tpl({"$setElementOrder/containers": [{"name": "nginx"}],
                                 "containers": [{"name": "nginx", "resources": {"$patch": "delete"}}]}),
     note="$patch: delete on a map empties it")

d = deployment()
pod_spec(d)["containers"] = [{"name": n, "image": n + ":1"} for n in ["a", "b"]]
case("patch-replace-list", d, tpl({"containers": [{"$patch": "replace"}, {"name": "z", "image": "z:1"}, {"name": "a", "image": "a:9"}]}),
     note="$patch: replace element replaces the merge list")

# -- atomic lists --------------------------------------------------------------
d = deployment()
pod_spec(d)["tolerations"] = [{"key": "a", "operator": "Exists"},
                              {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                               "tolerationSeconds": 300}]
case("tolerations-atomic", d, tpl({"tolerations": [{"key": "b", "operator": "Equal", "value": "1"}]}),
     note="tolerations have no patch strategy: replaced, server entries lost")

# -- Service -------------------------------------------------------------------
svc = {"apiVersion": "v1", "kind": "Service",
       "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "demo"}},
       "spec": {"clusterIP": "10.96.0.12", "clusterIPs": ["10.96.0.12"], "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None", "type": "ClusterIP",
                "selector": {"app": "nginx"},
                "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
                          {"name": "metrics", "port": 9100, "protocol": "TCP", "targetPort": 9100}]}}
case("service-ports-by-port", svc, {"spec": {
    "$setElementOrder/ports": [{"port": 80}, {"port": 443}],
    "ports": [{"port": 80, "targetPort": 8081}, {"name": "https", "port": 443, "targetPort": 8443},
              {"$patch": "delete", "port": 9100}],
    "selector": {"app": "web", "version": "v2"}}})

# -- other kinds ---------------------------------------------------------------
cm = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "settings", "namespace": "demo",
                   "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1"}]},
      "data": {"a": "1", "b": "2"}}
case("configmap-data-and-ownerrefs", cm, {"data": {"a": None, "c": "3"},
                                          "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "u-2"}]}},
     note="ownerReferences merge by uid")

# -- edges ---------------------------------------------------------------------
d = deployment()
c = pod_spec(d)["containers"][0]
c["env"] = [{"name": "E%02d" % i, "value": str(i)} for i in range(26)]
order = ["E%02d" % i for i in range(25, -1, -1) if i % 5 != 0] + ["N1", "N2"]
case("long-list-reordered", d, tpl({
    "$setElementOrder/containers": [{"name": "nginx"}],
    "containers": [{"name": "nginx",
                    "$setElementOrder/env": [{"name": n} for n in order],
                    "env": [{"name": "N1", "value": "n1"}, {"name": "N2", "value": "n2"}]
                           + [{"$patch": "delete", "name": "E%02d" % i} for i in (3, 7)]}]}),
    note="more than 20 elements: Go's stable sort merges blocks")

d = deployment()
c = pod_spec(d)["containers"][0]
c["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}]
case("duplicate-keys-in-live", d, tpl({
    "$setElementOrder/containers": [{"name": "nginx"}],
    "containers": [{"name": "nginx", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}],
                    "env": [{"name": "A", "value": "x"}]}]}))

d = deployment()
pod_spec(d)["containers"][0]["args"] = ["a", "b", "c"]
case("delete-from-atomic-primitive-list", d, tpl({
    "$setElementOrder/containers": [{"name": "nginx"}],
    "containers": [{"name": "nginx", "$deleteFromPrimitiveList/args": ["b"]}]}))

case("type-change-takes-patch", deployment(), tpl({"securityContext": "odd", "dnsPolicy": {"a": None, "b": 1}}),
     note="a value of another type replaces live, its nulls dropped")

d = deployment()
del d["spec"]["strategy"]
case("retainkeys-on-new-map", d, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
     note="a map absent from live is taken whole; the directive is dropped")

d = deployment()
pod_spec(d)["containers"] = [{"name": n, "image": n + ":1"} for n in ["a", "b", "c"]]
case("set-element-order-only", d, tpl({"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}),
     note="an order directive alone reorders the listed elements")

case("patch-replace-root", deployment(), {"$patch": "replace", "apiVersion": "apps/v1", "kind": "Deployment",
                                          "metadata": {"name": "nginx-deployment"}})

s2 = copy.deepcopy(svc)
case("float-merge-key-is-another-key", s2, {"spec": {"ports": [{"port": 80.0, "targetPort": 1}]}},
     note="80.0 and 80 are different merge key values")

case("new-element-with-nulls-and-directives", deployment(), tpl({"containers": [
    {"name": "new", "image": "n:1", "args": None,
     "env": [{"name": "X", "$patch": "delete"}, {"name": "Y", "value": "y"}]}]}),
    note="a new merge list element is taken as sent, nulls included")

# -- errors --------------------------------------------------------------------
case("error-missing-merge-key", deployment(), tpl({"containers": [{"image": "x"}]}),
     note="a merge list element without its merge key is an error")
case("error-bad-directive", deployment(), {"spec": {"$patch": "merge"}}, note="$patch: merge on a map is an error")
case("error-retainkeys-not-listed", deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate",
                                                                         "rollingUpdate": {"maxSurge": 1}}}})
case("error-order-mismatch", deployment(), tpl({
    "$setElementOrder/containers": [{"name": "nginx"}],
    "containers": [{"name": "other", "image": "o"}]}))
case("error-uncomparable-merge-key", deployment(), tpl({"containers": [{"name": {"a": 1}}, {"name": {"a": 1}}]}),
     note="merge keys that are maps cannot be compared (apimachinery panics; the server answers 500)")

# -- JSON merge patch (custom resources) ---------------------------------------
cr = {"apiVersion": "demo.kapply.dev/v1", "kind": "Widget",
      "metadata": {"name": "w", "namespace": "demo", "labels": {"app": "demo"}},
      "spec": {"size": 3, "color": "blue", "parts": [{"name": "a", "n": 1}, {"name": "b", "n": 2}],
               "nested": {"x": 1, "y": 2}}}
case("merge-custom-resource", cr, {"spec": {"size": 5, "color": None, "parts": [{"name": "a", "n": 9, "gone": None}],
                                            "nested": {"y": None, "z": {"k": None, "v": 1}}}},
     kind="merge", note="lists replaced whole, nulls delete, new maps lose their nulls")
case("merge-deployment", deployment(), {"spec": {"replicas": 3, "strategy": {"type": "Recreate", "rollingUpdate": None}}},
     kind="merge")

os.makedirs(OUT, exist_ok=True)
for name, c in CASES.items():
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(c, f, indent=1, sort_keys=True)
        f.write("\n")
print(len(CASES), "cases")
