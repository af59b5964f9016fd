"""`brink k8s run` and `brink k8s find` against a real control plane whose pods the process
kubelet runs as local processes: the real Job controller creates and counts the pods, the API
server's own admission holds them to the "restricted" Pod Security Standard, the coordinator
reaches its workers by their pod names over the run's mutual TLS, and brink follows the
coordinator's log through the API server, as a user bound only to the Role brink prints.

    python3 tests/k8s/k8s_run.py BIN_DIR BRINK PLAN_DIR OUT_DIR TARGET   -> prints one JSON object

Runs, one after another, each with the cluster's leftovers counted after it:
- "no_node": before the kubelet runs, with --pod-wait 3s: the pods never start; refused,
  nothing left;
- "clash": a Service named like the run's already exists: refused, nothing it made is left;
- "full": plan.yaml over 3 workers to its end (the kubelet cuts every pod's first log
  stream after a few lines, as a node's log rotation does; this run's coordinator learns of
  the cut only once its pod has ended, and must read the rest of the finished pod's log);
- "interrupted": long.yaml over 3 workers, SIGINT once its progress is shown;
- "killed": short.yaml, the CLI killed with SIGKILL once its progress is shown: the Job ends
  by itself and its TTL and the garbage collector leave nothing;
- "found": `k8s find` of TARGET over 3 workers.
"""

import json
import os
import signal
import subprocess
import sys
import time

import yaml

from kubelet import Kubelet
from plane import ControlPlane

NS = "brink-runs"
KINDS = {"jobs": "/apis/batch/v1", "pods": "/api/v1", "services": "/api/v1",
         "configmaps": "/api/v1", "secrets": "/api/v1",
         "networkpolicies": "/apis/networking.k8s.io/v1"}
IMAGE = ["--image", "local/brink:test", "--namespace", NS, "--allow-loopback-target"]


def leftovers(api, name, wait, theirs=()):
    """The objects labelled as run `name`'s still in the cluster, after up to `wait` s for
    the garbage collector to leave only `theirs` (objects the run did not make)."""
    end = time.time() + wait
    while True:
        left = {}
        for kind, prefix in KINDS.items():
            _, body = api.call("GET", f"{prefix}/namespaces/{NS}/{kind}?labelSelector="
                               f"app.kubernetes.io%2Finstance%3D{name}")
            left[kind] = sorted(o["metadata"]["name"] for o in body.get("items", []))
        mine = [n for names in left.values() for n in names if n not in theirs]
        if not mine or time.time() > end:
            return left
        time.sleep(0.5)


def allow(cp, brink, plan_dir, name):
    """Binds the user `runner` to the Role `brink k8s render --rbac` prints for `name`."""
    rendered = subprocess.run(
        [brink, "k8s", "render", "plan.yaml", "--workers", "3", "--name", name, "--rbac"]
        + IMAGE, cwd=plan_dir, check=True, capture_output=True, text=True).stdout
    role = next(o for o in yaml.safe_load_all(rendered) if o and o["kind"] == "Role")
    cp.bind_runner(NS, role)


def brink_run(cp, brink, plan_dir, out_dir, label, args, name, signal_after=None,
              sig=signal.SIGINT):
    allow(cp, brink, plan_dir, name)
    args = [brink, "k8s"] + args + ["--workers", "3", "--name", name, "--json",
                                    f"{out_dir}/{label}.json", "--history",
                                    f"{out_dir}/history.db"] + IMAGE
    # As the user bound only to the printed Role.
    env = dict(os.environ, KUBECONFIG=cp.runner_kubeconfig)
    started = time.time()
    proc = subprocess.Popen(args, cwd=plan_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if signal_after is None:
        out, err = proc.communicate(timeout=300)
    else:
        # Progress lines reach stderr once the load runs; signal a few seconds into it.
        err_lines = []
        for line in proc.stderr:
            err_lines.append(line)
            if "req/s" in line and time.time() - started > 1:
                time.sleep(signal_after)
                proc.send_signal(sig)
                break
        out, rest = proc.communicate(timeout=120)
        err = "".join(err_lines) + rest
    return {"code": proc.returncode, "stdout": out, "stderr": err,
            "seconds": round(time.time() - started, 1)}


def main():
    bin_dir, brink, plan_dir, out_dir, target = sys.argv[1:6]
    out = {}
    with ControlPlane(bin_dir) as cp:
        cp.namespace(NS, restricted=True)
        cp.wait_for_default_account(NS)
        run = lambda label, args, name, **kw: brink_run(  # noqa: E731
            cp, brink, plan_dir, out_dir, label, args, name, **kw)
        out["no_node"] = run("no_node", ["run", "plan.yaml", "--pod-wait", "3s"], "lost")
        out["no_node"]["left"] = leftovers(cp.api, "lost", 30)
        kubelet = Kubelet(cp.api, cp.work, os.path.dirname(brink), cut_logs_after=3,
                          cut_at_end=("full",))
        kubelet.start()
        try:
            clash = {"apiVersion": "v1", "kind": "Service", "metadata": {
                "name": "clash", "labels": {"app.kubernetes.io/instance": "clash"}},
                "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
            cp.api.call("POST", f"/api/v1/namespaces/{NS}/services", clash)
            out["clash"] = run("clash", ["run", "plan.yaml"], "clash")
            out["clash"]["left"] = leftovers(cp.api, "clash", 30, theirs=("clash",))
            out["full"] = run("full", ["run", "plan.yaml"], "full")
            out["full"]["left"] = leftovers(cp.api, "full", 30)
            out["interrupted"] = run("interrupted", ["run", "long.yaml"], "cut",
                                     signal_after=2)
            out["interrupted"]["left"] = leftovers(cp.api, "cut", 30)
            out["killed"] = run("killed", ["run", "short.yaml", "--ttl", "2s"], "killed",
                                signal_after=0.5, sig=signal.SIGKILL)
            out["killed"]["left"] = leftovers(cp.api, "killed", 90)
            out["found"] = run("found", [
                "find", target, "--by", "rate", "--from", "50", "--to", "800",
                "--slo", "p99<100ms", "--step", "2s", "--warmup", "1s", "--cooldown", "0s",
                "--grace", "1s"], "found")
            out["found"]["left"] = leftovers(cp.api, "found", 30)
            out["pods"] = [{"name": p.name, "ip": p.ip, "exit": p.code}
                           for p in kubelet.pods.values()]
            out["kubelet_errors"] = kubelet.errors
            out["kubelet_refused"] = kubelet.refused
            out["log_cuts"] = kubelet.cuts
        finally:
            kubelet.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
