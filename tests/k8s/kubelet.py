"""A test-only "process kubelet": one Node that runs its pods as local processes, so the real
Job controller drives real brink processes on this machine.

It registers a Node, binds every unbound pod to it, and runs each pod's command with the pod's
environment (values, and the fieldRefs a Job's pods use: the completion index, the pod's name,
namespace and IP), in a mount namespace of its own (`unshare -m`) where:

- a tmpfs hides the host's /run, and the pod's Secret and ConfigMap volumes are bind-mounted at
  their mount paths (which must lie under /run);
- /etc/hosts maps every pod of the namespace that has a hostname and subdomain
  (`NAME-I.NAME`) to its IP, as cluster DNS would for a headless Service.

Each pod gets an address of its own on loopback, 127.0.0.(10+K), so no load leaves this
machine. The pod's status follows its process (Running, then Succeeded or Failed with the exit
code); a deleted pod gets SIGTERM, SIGKILL after its grace period, and is then removed. The
containers' logs are served over HTTPS the way a kubelet serves them
(`/containerLogs/NS/POD/CONTAINER?follow=true`), so `kubectl logs -f` and the pods/log API
work. Needs root (mount namespaces).
"""

import base64
import datetime
import http.server
import os
import shlex
import signal
import ssl
import subprocess
import threading
import time
import urllib.parse

from plane import free_port

INDEX = "batch.kubernetes.io/job-completion-index"


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Pod:
    def __init__(self, obj, ip, root):
        self.obj = obj
        self.ns = obj["metadata"]["namespace"]
        self.name = obj["metadata"]["name"]
        self.ip = ip
        self.root = root
        self.log = f"{root}/log"
        self.proc = None
        self.started = None
        self.code = None
        self.term_at = None


class Kubelet:
    def __init__(self, api, work, brink_dir, node="proc-node"):
        self.api = api
        self.work = f"{work}/kubelet"
        self.brink_dir = brink_dir
        self.node = node
        self.pods = {}  # uid -> Pod
        self.next_ip = 10
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.errors = []
        os.makedirs(self.work, exist_ok=True)

    # -- the node and its log server --------------------------------------------------------

    def start(self):
        port = self.serve_logs()
        code, body = self.api.call("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.node, "labels": {"kubernetes.io/hostname": self.node}}})
        if code not in (201, 409):
            raise SystemExit(f"cannot register the node: {code} {body}")
        _, node = self.api.call("GET", f"/api/v1/nodes/{self.node}")
        capacity = {"cpu": "2", "memory": "8Gi", "pods": "110"}
        node["status"] = {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "process kubelet", "lastHeartbeatTime": now(),
                            "lastTransitionTime": now()}],
        }
        code, body = self.api.call("PUT", f"/api/v1/nodes/{self.node}/status", node)
        if code != 200:
            raise SystemExit(f"cannot set the node's status: {code} {body}")
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def serve_logs(self):
        cert, key = f"{self.work}/tls.crt", f"{self.work}/tls.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "1", "-subj", f"/CN={self.node}"],
                       check=True, capture_output=True)
        kubelet = self

        class Logs(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                parts = url.path.strip("/").split("/")
                if len(parts) != 4 or parts[0] != "containerLogs":
                    self.send_error(404)
                    return
                pod = kubelet.find(parts[1], parts[2])
                if pod is None or pod.started is None:
                    self.send_error(404, "no such container")
                    return
                follow = urllib.parse.parse_qs(url.query).get("follow") == ["true"]
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                with open(pod.log, "rb") as f:
                    while True:
                        chunk = f.read(65536)
                        if chunk:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            continue
                        if not follow or pod.code is not None or kubelet.stop_flag.is_set():
                            # The last bytes a finished process wrote.
                            self.wfile.write(f.read())
                            return
                        time.sleep(0.05)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Logs)
        server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server.server_address[1]

    def find(self, ns, name):
        with self.lock:
            for p in self.pods.values():
                if (p.ns, p.name) == (ns, name):
                    return p
        return None

    def stop(self):
        self.stop_flag.set()
        with self.lock:
            pods = list(self.pods.values())
        for p in pods:
            if p.proc and p.proc.poll() is None:
                os.killpg(p.proc.pid, signal.SIGKILL)
                p.proc.wait()
        self.server.shutdown()

    # -- the pods -----------------------------------------------------------------------------

    def loop(self):
        while not self.stop_flag.is_set():
            try:
                self.turn()
            except Exception as e:  # noqa: BLE001 - kept for the test's report
                self.errors.append(repr(e))
            time.sleep(0.1)

    def turn(self):
        _, body = self.api.call("GET", "/api/v1/pods")
        for obj in body.get("items", []):
            meta, spec = obj["metadata"], obj["spec"]
            uid = meta["uid"]
            if not spec.get("nodeName"):
                if not meta.get("deletionTimestamp"):
                    self.bind(obj)
                continue
            if spec["nodeName"] != self.node:
                continue
            pod = self.pods.get(uid)
            if meta.get("deletionTimestamp"):
                self.delete(obj, pod)
            elif pod is None:
                self.run(obj)
        for pod in list(self.pods.values()):
            if pod.proc and pod.code is None and pod.proc.poll() is not None:
                pod.code = pod.proc.returncode
                self.report_exit(pod)

    def bind(self, obj):
        meta = obj["metadata"]
        self.api.call("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node}})

    def run(self, obj):
        ip = f"127.0.0.{self.next_ip}"
        self.next_ip += 1
        uid = obj["metadata"]["uid"]
        pod = Pod(obj, ip, f"{self.work}/{uid}")
        os.makedirs(pod.root)
        with self.lock:
            self.pods[uid] = pod
        self.write_hosts(pod.ns)
        c = obj["spec"]["containers"][0]
        mounts = self.volumes(pod, c)
        env = {"PATH": f"{self.brink_dir}:/usr/bin:/bin",
               "HOSTNAME": obj["spec"].get("hostname", pod.name)}
        for e in c.get("env", []):
            env[e["name"]] = self.env_value(pod, e)
        script = ["set -e", "mount -t tmpfs tmpfs /run",
                  f"mount --bind {shlex.quote(self.hosts(pod.ns))} /etc/hosts"]
        for src, dst in mounts:
            script += [f"mkdir -p {shlex.quote(dst)}",
                       f"mount --bind {shlex.quote(src)} {shlex.quote(dst)}"]
        if c.get("workingDir"):
            script.append(f"cd {shlex.quote(c['workingDir'])}")
        script.append('exec "$@"')
        command = (c.get("command") or []) + (c.get("args") or [])
        log = open(pod.log, "wb")
        pod.proc = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(script), "pod"]
            + command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        pod.started = now()
        self.status(pod, {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.0.0.1",
            "startTime": pod.started,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": pod.started}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [self.container(pod, {"running": {"startedAt": pod.started}})],
        })

    def volumes(self, pod, c):
        """Each mounted volume's files in the pod's directory: (source, mount path)."""
        by_name = {v["name"]: v for v in pod.obj["spec"].get("volumes", [])}
        out = []
        for m in c.get("volumeMounts", []):
            if not m["mountPath"].startswith("/run/"):
                raise RuntimeError(f"{pod.name}: mount path {m['mountPath']} is not under /run")
            v = by_name[m["name"]]
            src = f"{pod.root}/volumes/{m['name']}"
            os.makedirs(src)
            if "secret" in v:
                _, obj = self.api.call(
                    "GET", f"/api/v1/namespaces/{pod.ns}/secrets/{v['secret']['secretName']}")
                files = {k: base64.b64decode(b) for k, b in obj.get("data", {}).items()}
                items = v["secret"].get("items")
            elif "configMap" in v:
                _, obj = self.api.call(
                    "GET", f"/api/v1/namespaces/{pod.ns}/configmaps/{v['configMap']['name']}")
                files = {k: t.encode() for k, t in obj.get("data", {}).items()}
                files.update({k: base64.b64decode(b) for k, b in obj.get("binaryData", {}).items()})
                items = v["configMap"].get("items")
            elif "emptyDir" in v:
                files, items = {}, None
            else:
                raise RuntimeError(f"{pod.name}: volume {m['name']} is not a Secret, ConfigMap or emptyDir")
            for key, path in ([(i["key"], i["path"]) for i in items] if items else
                              [(k, k) for k in files]):
                dst = os.path.join(src, path)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "wb") as f:
                    f.write(files[key])
            out.append((src, m["mountPath"]))
        return out

    def env_value(self, pod, e):
        if "value" in e:
            return e["value"]
        field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
        meta = pod.obj["metadata"]
        known = {
            "metadata.name": meta["name"],
            "metadata.namespace": pod.ns,
            "status.podIP": pod.ip,
            f"metadata.annotations['{INDEX}']": meta.get("annotations", {}).get(INDEX, ""),
            f"metadata.labels['{INDEX}']": meta.get("labels", {}).get(INDEX, ""),
        }
        if field not in known:
            raise RuntimeError(f"{pod.name}: env {e['name']} from {field}: not known here")
        return known[field]

    def hosts(self, ns):
        return f"{self.work}/hosts-{ns}"

    def write_hosts(self, ns):
        lines = ["127.0.0.1 localhost"]
        with self.lock:
            for p in self.pods.values():
                spec = p.obj["spec"]
                if p.ns == ns and spec.get("hostname") and spec.get("subdomain"):
                    fqdn = f"{spec['hostname']}.{spec['subdomain']}"
                    lines.append(f"{p.ip} {fqdn} {fqdn}.{ns}.svc.cluster.local")
        # Written in place: the file is bind-mounted into running pods.
        with open(self.hosts(ns), "w") as f:
            f.write("\n".join(lines) + "\n")

    def container(self, pod, state):
        c = pod.obj["spec"]["containers"][0]
        return {"name": c["name"], "image": c.get("image", ""), "imageID": "",
                "restartCount": 0, "ready": "running" in state, "started": "running" in state,
                "state": state}

    def status(self, pod, status):
        code, body = self.api.call(
            "PATCH", f"/api/v1/namespaces/{pod.ns}/pods/{pod.name}/status", {"status": status},
            ctype="application/merge-patch+json")
        if code != 200 and code != 404:
            self.errors.append(f"status of {pod.name}: {code} {body.get('message')}")

    def report_exit(self, pod):
        ended = now()
        self.status(pod, {
            "phase": "Succeeded" if pod.code == 0 else "Failed",
            "conditions": [{"type": t, "status": "False", "lastTransitionTime": ended}
                           for t in ("ContainersReady", "Ready")],
            "containerStatuses": [self.container(pod, {"terminated": {
                "exitCode": pod.code, "reason": "Completed" if pod.code == 0 else "Error",
                "startedAt": pod.started, "finishedAt": ended}})],
        })

    def delete(self, obj, pod):
        if pod is not None and pod.proc and pod.proc.poll() is None:
            grace = obj["metadata"].get("deletionGracePeriodSeconds") or 30
            if pod.term_at is None:
                pod.term_at = time.time()
                os.killpg(pod.proc.pid, signal.SIGTERM)
            elif time.time() - pod.term_at > grace:
                os.killpg(pod.proc.pid, signal.SIGKILL)
            return
        if pod is not None and pod.proc and pod.code is None:
            pod.code = pod.proc.returncode
            self.report_exit(pod)
        meta = obj["metadata"]
        self.api.call("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                      {"gracePeriodSeconds": 0})
