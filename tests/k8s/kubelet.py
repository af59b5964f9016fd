"""A test-only "process kubelet": one Node that runs its pods as local processes, so the real
Job controller drives real brink processes on this machine.

It registers a Node, binds every unbound pod to it, and runs each pod's command with the pod's
environment (values, and the fieldRefs a Job's pods use: the completion index, the pod's name,
namespace and IP), in a mount namespace of its own (`unshare -m`) where:

- a tmpfs hides the host's /run, and the pod's Secret and ConfigMap volumes are bind-mounted at
  their mount paths (which must lie under /run);
- /etc/hosts maps every pod of the namespace that has a hostname and subdomain
  (`NAME-I.NAME`) to its IP, as cluster DNS would for a headless Service;
- the root filesystem is remounted read-only when the container asks
  (`readOnlyRootFilesystem`).

It runs the command as a real kubelet would with identity and files: as the container's
`runAsUser`/`runAsGroup` (else the image's user, 65532, the Containerfile's `USER`), with the
pod's `fsGroup` and `supplementalGroups` as supplementary groups, no new privileges and no
capabilities (`setpriv`); a pod asking `runAsNonRoot` with user 0 is not started. Secret and
ConfigMap volume files are written with their modes (`defaultMode`, else 0644) and owned by
root; with an `fsGroup` they are given to that group and made group-readable, as the kubelet's
volume ownership does; an emptyDir is 0777.

The log keeps each line with the time it was written (RFC 3339, nanoseconds) as a container
runtime does, and the log endpoint honours `timestamps` and `sinceTime`. With `cut_logs_after`,
the first following stream of each pod is cut after that many lines, as a node's log rotation
cuts a reader; for pods whose name starts with one of `cut_at_end` (`<job>-`), that cut stream
is held open, silent, until the pod has ended, so the reader learns of the cut only once the
pod is over (what a reader that did not read the rest of a finished pod's log would lose).

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
# The image's user and group (the Containerfile's USER).
IMAGE_USER = 65532


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(at=None):
    """A log line's time as a container runtime writes it: RFC 3339 with nanoseconds."""
    at = at or datetime.datetime.now(datetime.timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond:06d}000Z"


def since(text):
    """A sinceTime (RFC 3339, whole seconds or finer) in the log's own format."""
    at = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return stamp(at.astimezone(datetime.timezone.utc))


class Pod:
    def __init__(self, obj, ip, root):
        self.obj = obj
        self.ns = obj["metadata"]["namespace"]
        self.name = obj["metadata"]["name"]
        self.ip = ip
        self.root = root
        self.log = f"{root}/log"
        self.proc = None
        self.copier = None
        self.started = None
        self.code = None
        self.term_at = None
        self.cuts_left = 0


class Kubelet:
    def __init__(self, api, work, brink_dir, node="proc-node", cut_logs_after=None,
                 cut_at_end=()):
        self.api = api
        self.work = f"{work}/kubelet"
        self.brink_dir = brink_dir
        self.node = node
        self.pods = {}  # uid -> Pod
        self.next_ip = 10
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.errors = []
        self.cut_logs_after = cut_logs_after
        self.cut_at_end = tuple(f"{job}-" for job in cut_at_end)
        self.refused = []
        self.cuts = 0
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
                query = urllib.parse.parse_qs(url.query)
                follow = query.get("follow") == ["true"]
                timestamps = query.get("timestamps") == ["true"]
                start = since(query["sinceTime"][0]) if "sinceTime" in query else None
                cut = None
                with kubelet.lock:
                    if follow and pod.cuts_left > 0:
                        pod.cuts_left -= 1
                        cut = kubelet.cut_logs_after
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                sent = 0
                with open(pod.log, "rb") as f:
                    rest = b""
                    while True:
                        # Known before reading: once the process and its log copier are
                        # done, an empty read is the end.
                        done = (not follow or pod.code is not None
                                or kubelet.stop_flag.is_set())
                        chunk = f.read(65536)
                        if not chunk:
                            if done:
                                return
                            time.sleep(0.05)
                            continue
                        *lines, rest = (rest + chunk).split(b"\n")
                        for line in lines:
                            at, _, text = line.partition(b" ")
                            if start is not None and at.decode() < start:
                                continue
                            self.wfile.write((line if timestamps else text) + b"\n")
                            sent += 1
                            if cut is not None and sent >= cut:
                                # Cut, as a node rotating its logs cuts a reader.
                                with kubelet.lock:
                                    kubelet.cuts += 1
                                self.wfile.flush()
                                if pod.name.startswith(kubelet.cut_at_end):
                                    while pod.code is None and not kubelet.stop_flag.is_set():
                                        time.sleep(0.05)
                                self.close_connection = True
                                return
                        self.wfile.flush()

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
            copied = pod.copier is None or not pod.copier.is_alive()
            if pod.proc and pod.code is None and pod.proc.poll() is not None and copied:
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
        pod.cuts_left = 1 if self.cut_logs_after else 0
        os.makedirs(pod.root)
        with self.lock:
            self.pods[uid] = pod
        self.write_hosts(pod.ns)
        spec = obj["spec"]
        c = spec["containers"][0]
        pod_sec, sec = spec.get("securityContext", {}), c.get("securityContext", {})
        user = sec.get("runAsUser", pod_sec.get("runAsUser", IMAGE_USER))
        group = sec.get("runAsGroup", pod_sec.get("runAsGroup", IMAGE_USER))
        non_root = sec.get("runAsNonRoot", pod_sec.get("runAsNonRoot", False))
        if non_root and user == 0:
            self.refuse(pod, "CreateContainerConfigError",
                        "container has runAsNonRoot and image will run as root")
            return
        groups = ([pod_sec["fsGroup"]] if "fsGroup" in pod_sec else []) + \
            pod_sec.get("supplementalGroups", [])
        mounts = self.volumes(pod, c, pod_sec.get("fsGroup"))
        env = {"PATH": f"{self.brink_dir}:/usr/bin:/bin",
               "HOSTNAME": spec.get("hostname", pod.name)}
        for e in c.get("env", []):
            env[e["name"]] = self.env_value(pod, e)
        script = ["set -e", "mount -t tmpfs tmpfs /run",
                  f"mount --bind {shlex.quote(self.hosts(pod.ns))} /etc/hosts"]
        for src, dst in mounts:
            script += [f"mkdir -p {shlex.quote(dst)}",
                       f"mount --bind {shlex.quote(src)} {shlex.quote(dst)}"]
        if sec.get("readOnlyRootFilesystem"):
            script.append("mount -o remount,bind,ro /")
        if c.get("workingDir"):
            script.append(f"cd {shlex.quote(c['workingDir'])}")
        who = [f"--reuid={user}", f"--regid={group}"]
        who += [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
        script.append("exec setpriv " + " ".join(who) +
                      ' --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"')
        command = (c.get("command") or []) + (c.get("args") or [])
        pod.proc = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(script), "pod"]
            + command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        pod.copier = threading.Thread(target=self.copy_log, args=(pod,), daemon=True)
        pod.copier.start()
        pod.started = now()
        self.status(pod, {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.0.0.1",
            "startTime": pod.started,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": pod.started}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [self.container(pod, {"running": {"startedAt": pod.started}})],
        })

    def copy_log(self, pod):
        """The container's output into its log, each line with the time it was written."""
        with open(pod.log, "ab") as log:
            for line in pod.proc.stdout:
                log.write(stamp().encode() + b" " + line.rstrip(b"\n") + b"\n")
                log.flush()

    def refuse(self, pod, reason, message):
        """A pod whose container will never start, said in its status as a kubelet does."""
        self.refused.append(f"{pod.name}: {reason}: {message}")
        self.status(pod, {
            "phase": "Pending",
            "containerStatuses": [self.container(pod, {"waiting": {
                "reason": reason, "message": message}})],
        })

    def volumes(self, pod, c, fs_group):
        """Each mounted volume's files in the pod's directory: (source, mount path), with
        their modes and, with an fsGroup, that group's ownership."""
        by_name = {v["name"]: v for v in pod.obj["spec"].get("volumes", [])}
        out = []
        for m in c.get("volumeMounts", []):
            if not m["mountPath"].startswith("/run/"):
                raise RuntimeError(f"{pod.name}: mount path {m['mountPath']} is not under /run")
            v = by_name[m["name"]]
            src = f"{pod.root}/volumes/{m['name']}"
            os.makedirs(src)
            source = v.get("secret") or v.get("configMap")
            if "secret" in v:
                _, obj = self.api.call(
                    "GET", f"/api/v1/namespaces/{pod.ns}/secrets/{v['secret']['secretName']}")
                files = {k: base64.b64decode(b) for k, b in obj.get("data", {}).items()}
            elif "configMap" in v:
                _, obj = self.api.call(
                    "GET", f"/api/v1/namespaces/{pod.ns}/configmaps/{v['configMap']['name']}")
                files = {k: t.encode() for k, t in obj.get("data", {}).items()}
                files.update({k: base64.b64decode(b) for k, b in obj.get("binaryData", {}).items()})
            elif "emptyDir" in v:
                os.chmod(src, 0o777)
                self.own(src, fs_group, 0o660)
                out.append((src, m["mountPath"]))
                continue
            else:
                raise RuntimeError(f"{pod.name}: volume {m['name']} is not a Secret, ConfigMap or emptyDir")
            mode = source.get("defaultMode", 0o644)
            items = source.get("items") or [{"key": k, "path": k} for k in files]
            for item in items:
                dst = os.path.join(src, item["path"])
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "wb") as f:
                    f.write(files[item["key"]])
                os.chmod(dst, item.get("mode", mode))
                self.own(dst, fs_group, 0o440)
            for d, _, _ in os.walk(src):
                self.own(d, fs_group, 0o440)
            out.append((src, m["mountPath"]))
        return out

    @staticmethod
    def own(path, fs_group, mask):
        """What the kubelet's volume ownership does with an fsGroup: the group's, readable
        (and for a read-write volume writable) by it; directories setgid and searchable."""
        if fs_group is None:
            return
        os.chown(path, -1, fs_group)
        st = os.stat(path)
        if os.path.isdir(path):
            mask |= 0o2000 | 0o110
        os.chmod(path, (st.st_mode & 0o7777) | mask)

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
