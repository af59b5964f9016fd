"""`brink k8s run` against a real control plane whose pods the process kubelet runs as local
processes: the real Job controller creates and counts the pods, the coordinator reaches its
workers by their pod names, and brink follows the coordinator's log through the API server.

    python3 tests/k8s/k8s_run.py BIN_DIR BRINK PLAN_DIR OUT_DIR   -> prints one JSON object

Four runs, one after another, each with the cluster's leftovers counted after it:
- "no_node": before the kubelet runs, with --pod-wait 3s: the pods never start; refused,
  nothing left;
- "clash": a Service named like the run's already exists: refused, nothing it made is left;
- "full": plan.yaml over 3 workers to its end;
- "interrupted": long.yaml over 3 workers, SIGINT once its progress is shown.
"""

import json
import os
import signal
import subprocess
import sys
import time

from kubelet import Kubelet
from plane import ControlPlane

KINDS = {"jobs": "/apis/batch/v1", "pods": "/api/v1", "services": "/api/v1",
         "configmaps": "/api/v1", "secrets": "/api/v1"}


def leftovers(api, name, wait):
    """The objects of run `name` still in the cluster, after up to `wait` s for pods to go."""
    end = time.time() + wait
    while True:
        left = {}
        for kind, prefix in KINDS.items():
            _, body = api.call("GET", f"{prefix}/namespaces/default/{kind}?labelSelector="
                               f"app.kubernetes.io%2Finstance%3D{name}")
            left[kind] = sorted(o["metadata"]["name"] for o in body.get("items", []))
        if not any(left.values()) or time.time() > end:
            return left
        time.sleep(0.5)


def brink_run(brink, plan_dir, out_dir, kubeconfig, label, plan, name, interrupt_after=None,
              pod_wait="60s"):
    args = [brink, "k8s", "run", plan, "--workers", "3", "--image", "local/brink:test",
            "--name", name, "--json", f"{out_dir}/{label}.json",
            "--history", f"{out_dir}/history.db", "--pod-wait", pod_wait]
    env = dict(os.environ, KUBECONFIG=kubeconfig)
    started = time.time()
    proc = subprocess.Popen(args, cwd=plan_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if interrupt_after is None:
        out, err = proc.communicate(timeout=240)
    else:
        # Progress lines reach stderr once the load runs; interrupt a few seconds into it.
        err_lines = []
        for line in proc.stderr:
            err_lines.append(line)
            if "req/s" in line and time.time() - started > 1:
                time.sleep(interrupt_after)
                proc.send_signal(signal.SIGINT)
                break
        out, rest = proc.communicate(timeout=120)
        err = "".join(err_lines) + rest
    return {"code": proc.returncode, "stdout": out, "stderr": err,
            "seconds": round(time.time() - started, 1)}


def main():
    bin_dir, brink, plan_dir, out_dir = sys.argv[1:5]
    out = {}
    with ControlPlane(bin_dir) as cp:
        cp.wait_for_default_account()
        out["no_node"] = brink_run(brink, plan_dir, out_dir, cp.kubeconfig, "no_node",
                                   "plan.yaml", "lost", pod_wait="3s")
        out["no_node"]["left"] = leftovers(cp.api, "lost", 30)
        kubelet = Kubelet(cp.api, cp.work, os.path.dirname(brink))
        kubelet.start()
        try:
            clash = {"apiVersion": "v1", "kind": "Service", "metadata": {
                "name": "clash", "labels": {"app.kubernetes.io/instance": "clash"}},
                "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
            cp.api.call("POST", "/api/v1/namespaces/default/services", clash)
            out["clash"] = brink_run(brink, plan_dir, out_dir, cp.kubeconfig, "clash",
                                     "plan.yaml", "clash")
            out["clash"]["left"] = leftovers(cp.api, "clash", 0)
            out["full"] = brink_run(brink, plan_dir, out_dir, cp.kubeconfig, "full",
                                    "plan.yaml", "full")
            out["full"]["left"] = leftovers(cp.api, "full", 30)
            out["interrupted"] = brink_run(brink, plan_dir, out_dir, cp.kubeconfig,
                                           "interrupted", "long.yaml", "cut", interrupt_after=2)
            out["interrupted"]["left"] = leftovers(cp.api, "cut", 30)
            out["pods"] = [{"name": p.name, "ip": p.ip, "exit": p.code}
                           for p in kubelet.pods.values()]
            out["kubelet_errors"] = kubelet.errors
        finally:
            kubelet.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
