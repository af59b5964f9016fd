"""A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-controller-manager
with the Job controller), the objects `brink k8s render` prints applied to it through the API
exactly as `kubectl apply` would send them, and what the Job controller made of them: the
pods it created, their indexes, host names, commands and environment. No kubelet runs, so the
pods stay Pending; the test reads them and tears everything down.

    python3 tests/k8s/job_pods.py BIN_DIR BRINK PLAN_DIR   -> prints one JSON object

BIN_DIR holds etcd, kube-apiserver and kube-controller-manager (tests/k8s/control-plane.sh).
"""

import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

TOKEN = "brink-test-admin"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, port):
        self.base = f"https://127.0.0.1:{port}"
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
                return r.status, parse(r.read())
        except urllib.error.HTTPError as e:
            return e.code, parse(e.read())

    def wait_ready(self, limit=60):
        end = time.time() + limit
        while time.time() < end:
            try:
                code, _ = self.call("GET", "/readyz")
                if code == 200:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.3)
        raise SystemExit("kube-apiserver did not become ready")


def parse(raw):
    """An answer's JSON, or its text (health endpoints answer `ok`)."""
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return {"message": raw.decode(errors="replace")}


def path_of(obj):
    kind, ns = obj["kind"], obj["metadata"].get("namespace", "default")
    plural = {"Secret": "secrets", "ConfigMap": "configmaps", "Service": "services",
              "ServiceAccount": "serviceaccounts"}
    if kind in plural:
        return f"/api/v1/namespaces/{ns}/{plural[kind]}"
    if kind == "Job":
        return f"/apis/batch/v1/namespaces/{ns}/jobs"
    if kind in ("Role", "RoleBinding"):
        return f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{kind.lower()}s"
    raise SystemExit(f"unknown kind {kind}")


def main():
    bin_dir, brink, plan_dir = sys.argv[1:4]
    work = tempfile.mkdtemp(prefix="brink-k8s-")
    procs = []
    out = {}
    try:
        subprocess.run(["openssl", "genrsa", "-out", f"{work}/sa.key", "2048"], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", f"{work}/sa.key", "-pubout", "-out",
                        f"{work}/sa.pub"], check=True, capture_output=True)
        with open(f"{work}/tokens.csv", "w") as f:
            f.write(f"{TOKEN},admin,admin,system:masters\n")
        etcd_client, etcd_peer, api_port = free_port(), free_port(), free_port()
        log = open(f"{work}/log.txt", "w")
        procs.append(subprocess.Popen([
            f"{bin_dir}/etcd", "--data-dir", f"{work}/etcd",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{etcd_peer}"],
            stdout=log, stderr=log))
        procs.append(subprocess.Popen([
            f"{bin_dir}/kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            "--bind-address=127.0.0.1", f"--secure-port={api_port}", f"--cert-dir={work}/certs",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={work}/sa.pub",
            f"--service-account-signing-key-file={work}/sa.key",
            f"--token-auth-file={work}/tokens.csv", "--authorization-mode=RBAC",
            "--service-cluster-ip-range=127.0.100.0/24", "--advertise-address=127.0.0.1"],
            stdout=log, stderr=log))
        api = Api(api_port)
        api.wait_ready()
        kubeconfig = f"{work}/kubeconfig"
        with open(kubeconfig, "w") as f:
            yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "t",
                "clusters": [{"name": "t", "cluster": {
                    "server": api.base, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "t", "user": {"token": TOKEN}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
            }, f)
        procs.append(subprocess.Popen([
            f"{bin_dir}/kube-controller-manager", f"--kubeconfig={kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={work}/sa.key",
            "--controllers=job-controller,serviceaccount-controller,serviceaccount-token-controller,ttl-after-finished-controller"],
            stdout=log, stderr=log))
        with open(f"{work}/token", "w") as f:
            f.write("job-token\n")
        rendered = subprocess.run(
            [brink, "k8s", "render", "plan.yaml", "--workers", "3", "--image",
             "registry.example/brink:test", "--name", "load", "--token-file", f"{work}/token",
             "--cpu", "500m", "--memory", "256Mi", "--rbac"],
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
            _, body = api.call("GET", "/api/v1/namespaces/default/pods?labelSelector="
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
            })
        _, job = api.call("GET", "/apis/batch/v1/namespaces/default/jobs/load")
        out["job"] = {k: job.get("spec", {}).get(k) for k in (
            "completionMode", "completions", "parallelism", "backoffLimitPerIndex",
            "podReplacementPolicy", "successPolicy", "activeDeadlineSeconds")}
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if os.environ.get("BRINK_K8S_KEEP"):
            out["work"] = work
        else:
            subprocess.run(["rm", "-rf", work])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
