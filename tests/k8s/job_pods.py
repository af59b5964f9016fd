"""A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-controller-manager
with the Job controller), the objects `brink k8s render` prints applied to it through the API
exactly as `kubectl apply` would send them, and what the Job controller made of them: the
pods it created, their indexes, host names, commands and environment. No kubelet runs, so the
pods stay Pending; the test reads them and tears everything down.

    python3 tests/k8s/job_pods.py BIN_DIR BRINK PLAN_DIR   -> prints one JSON object

BIN_DIR holds etcd, kube-apiserver and kube-controller-manager (tests/k8s/control-plane.sh).
"""

import json
import subprocess
import sys
import time

import yaml

from plane import ControlPlane

NS = "brink-restricted"


def path_of(obj):
    kind, ns = obj["kind"], obj["metadata"].get("namespace", "default")
    plural = {"Secret": "secrets", "ConfigMap": "configmaps", "Service": "services",
              "ServiceAccount": "serviceaccounts"}
    if kind in plural:
        return f"/api/v1/namespaces/{ns}/{plural[kind]}"
    if kind == "Job":
        return f"/apis/batch/v1/namespaces/{ns}/jobs"
    if kind == "NetworkPolicy":
        return f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
    if kind in ("Role", "RoleBinding"):
        return f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{kind.lower()}s"
    raise SystemExit(f"unknown kind {kind}")


def main():
    bin_dir, brink, plan_dir = sys.argv[1:4]
    out = {}
    with ControlPlane(bin_dir) as cp:
        api, work = cp.api, cp.work
        # The namespace enforces the "restricted" Pod Security Standard: the API server's own
        # admission refuses any pod of the Job that does not meet it.
        cp.namespace(NS, restricted=True)
        cp.wait_for_default_account(NS)
        with open(f"{work}/token", "w") as f:
            f.write("job-token\n")
        rendered = subprocess.run(
            [brink, "k8s", "render", "plan.yaml", "--workers", "3", "--image",
             "registry.example/brink:test", "--name", "load", "--token-file", f"{work}/token",
             "--cpu", "500m", "--memory", "256Mi", "--rbac", "--namespace", NS],
            cwd=plan_dir, check=True, capture_output=True, text=True).stdout
        objects = [o for o in yaml.safe_load_all(rendered) if o]
        out["applied"] = []
        for obj in objects:
            # The default ServiceAccount appears when its controller has run.
            for _ in range(100):
                code, body = api.call("POST", path_of(obj), obj)
                if code != 403 and not (code == 404 and obj["kind"] != "Job"):
                    break
                time.sleep(0.2)
            out["applied"].append([obj["kind"], code, body.get("message", "")])
        pods = []
        end = time.time() + 60
        while time.time() < end:
            _, body = api.call("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector="
                               "batch.kubernetes.io%2Fjob-name%3Dload")
            pods = body.get("items", [])
            if len(pods) >= 4:
                break
            time.sleep(0.5)
        out["pods"] = []
        for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
            c = p["spec"]["containers"][0]
            env = {e["name"]: e.get("value") or e.get("valueFrom") for e in c.get("env", [])}
            out["pods"].append({
                "name": p["metadata"]["name"],
                "index": p["metadata"].get("annotations", {}).get(
                    "batch.kubernetes.io/job-completion-index"),
                "hostname": p["spec"].get("hostname"),
                "subdomain": p["spec"].get("subdomain"),
                "command": c.get("command"),
                "env": env,
                "volumes": [v["name"] for v in p["spec"].get("volumes", [])],
                "labels": p["metadata"].get("labels", {}),
            })
        _, job = api.call("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/load")
        _, events = api.call("GET", f"/api/v1/namespaces/{NS}/events")
        # Why a pod was not made, in the Job controller's words (a refused pod is an event).
        out["refused"] = [e.get("message", "") for e in events.get("items", [])
                          if e.get("reason") == "FailedCreate"]
        out["job"] = {k: job.get("spec", {}).get(k) for k in (
            "completionMode", "completions", "parallelism", "backoffLimitPerIndex",
            "podReplacementPolicy", "successPolicy", "activeDeadlineSeconds")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
