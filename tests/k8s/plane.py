"""A real Kubernetes control plane on loopback for the tests: etcd, kube-apiserver (token
auth, RBAC) and kube-controller-manager with the controllers a Job needs (job, service
accounts, garbage collection, TTL). Built by control-plane.sh; nothing is downloaded here.

    with ControlPlane(bin_dir) as cp:
        cp.api.call("GET", "/version"); cp.kubeconfig  # a file kubectl and brink read
"""

import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import yaml

TOKEN = "brink-test-admin"
# A user with no rights of its own: the tests bind it to the Role brink prints.
RUNNER_TOKEN = "brink-test-runner"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(raw):
    """An answer's JSON, or its text (health endpoints answer `ok`)."""
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return {"message": raw.decode(errors="replace")}


class Api:
    def __init__(self, port):
        self.base = f"https://127.0.0.1:{port}"
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE

    def call(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        req.add_header("Content-Type", ctype)
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


class ControlPlane:
    def __init__(self, bin_dir):
        self.bin = bin_dir
        self.work = tempfile.mkdtemp(prefix="brink-k8s-")
        self.procs = []
        self.api = None
        self.kubeconfig = f"{self.work}/kubeconfig"

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def spawn(self, args):
        log = open(f"{self.work}/log.txt", "a")
        self.procs.append(subprocess.Popen(args, stdout=log, stderr=log))

    def start(self):
        w = self.work
        subprocess.run(["openssl", "genrsa", "-out", f"{w}/sa.key", "2048"], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", f"{w}/sa.key", "-pubout", "-out",
                        f"{w}/sa.pub"], check=True, capture_output=True)
        with open(f"{w}/tokens.csv", "w") as f:
            f.write(f"{TOKEN},admin,admin,system:masters\n")
            f.write(f"{RUNNER_TOKEN},runner,runner\n")
        etcd_client, etcd_peer, api_port = free_port(), free_port(), free_port()
        self.spawn([
            f"{self.bin}/etcd", "--data-dir", f"{w}/etcd",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{etcd_peer}"])
        self.spawn([
            f"{self.bin}/kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            "--bind-address=127.0.0.1", f"--secure-port={api_port}", f"--cert-dir={w}/certs",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={w}/sa.pub",
            f"--service-account-signing-key-file={w}/sa.key",
            f"--token-auth-file={w}/tokens.csv", "--authorization-mode=RBAC",
            "--service-cluster-ip-range=127.0.100.0/24", "--advertise-address=127.0.0.1"])
        self.api = Api(api_port)
        self.api.wait_ready()
        self.write_kubeconfig(self.kubeconfig, TOKEN)
        self.runner_kubeconfig = f"{w}/kubeconfig-runner"
        self.write_kubeconfig(self.runner_kubeconfig, RUNNER_TOKEN)
        self.spawn([
            f"{self.bin}/kube-controller-manager", f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={w}/sa.key",
            "--controllers=job-controller,serviceaccount-controller,"
            "serviceaccount-token-controller,ttl-after-finished-controller,garbagecollector"])

    def write_kubeconfig(self, path, token):
        with open(path, "w") as f:
            yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "t",
                "clusters": [{"name": "t", "cluster": {
                    "server": self.api.base, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "t", "user": {"token": token}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
            }, f)

    def bind_runner(self, ns, role):
        """Gives the user `runner` the Role object `role` (as brink printed it), and nothing
        else."""
        code, body = self.api.call(
            "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", role)
        if code != 201:
            raise SystemExit(f"cannot create the Role: {code} {body}")
        name = role["metadata"]["name"]
        code, body = self.api.call(
            "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": f"{name}-user"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                              "name": "runner"}]})
        if code != 201:
            raise SystemExit(f"cannot bind the Role: {code} {body}")

    def namespace(self, name, restricted=False):
        """A namespace; `restricted`: it enforces the "restricted" Pod Security Standard."""
        labels = {"pod-security.kubernetes.io/enforce": "restricted",
                  "pod-security.kubernetes.io/enforce-version": "latest"} if restricted else {}
        code, body = self.api.call("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}})
        if code != 201:
            raise SystemExit(f"cannot create namespace {name}: {code} {body}")

    def wait_for_default_account(self, ns="default", limit=60):
        """The Job controller's pods need the namespace's `default` ServiceAccount."""
        end = time.time() + limit
        while time.time() < end:
            code, _ = self.api.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
            if code == 200:
                return
            time.sleep(0.2)
        raise SystemExit("the default ServiceAccount never appeared")

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if not os.environ.get("BRINK_K8S_KEEP"):
            subprocess.run(["rm", "-rf", self.work])
