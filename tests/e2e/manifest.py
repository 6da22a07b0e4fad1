#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks of contrib/kubernetes/ for tests/e2e/kubernetes-manifest.sh.

    manifest.py check MANIFEST
        the DaemonSet is deployed as kube-proxy's is (kube-system, host
        network, system-node-critical, every taint tolerated, RollingUpdate,
        privileged, /run/xtables.lock and /lib/modules read-only mounted),
        its service account bound to system:node-proxier, its --config the
        ConfigMap's config.conf
    manifest.py render MANIFEST ROOT SERVER NODE SVCNAT
        lays the ConfigMap out under ROOT as kubelet does (a 0777 volume
        root, files behind ..data symlinks) and prints the container's
        command, NUL-separated, with $(NODE_NAME) = NODE, the binary =
        SVCNAT, paths under /var/lib/kube-proxy and the service account
        directory moved under ROOT and the kubeconfig's server = SERVER
    manifest.py sa ROOT CA TOKEN
        the service account volume under ROOT, the same way
    manifest.py rbac STATS
        every request the API server saw (kubeapi.py's /stats "verbs") is
        allowed by system:node-proxier or system:discovery
    manifest.py image DOCKERFILE BINARY CONFIGURE_AC
        the image's runtime stage installs the package of every library
        BINARY links, its build stage the package of every pkg-config
        module configure.ac needs
"""
import json
import os
import re
import subprocess
import sys

import yaml

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# The bootstrap ClusterRoles svcnat's requests must fit in, transcribed from
# kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/
# cluster-roles.yaml (system:node-proxier; system:discovery is bound to every
# authenticated user).
NODE_PROXIER = [
    ({"endpoints", "services"}, {"list", "watch"}),
    ({"nodes"}, {"get", "list", "watch"}),
    ({"events"}, {"create", "patch", "update"}),
    ({"endpointslices"}, {"list", "watch"}),
]
DISCOVERY = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
             "/openapi/*", "/readyz", "/version", "/version/"]


def die(msg):
    print("manifest.py: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in ("ServiceAccount", "ClusterRoleBinding", "ConfigMap", "DaemonSet"):
        if len(by_kind.get(kind, [])) != 1:
            die("%s: expected one %s, found %d" % (path, kind, len(by_kind.get(kind, []))))
    return {k: v[0] for k, v in by_kind.items()}


def container(ds):
    cs = ds["spec"]["template"]["spec"]["containers"]
    if len(cs) != 1:
        die("the DaemonSet has %d containers, expected 1" % len(cs))
    return cs[0]


def config_arg(cmd):
    for a in cmd:
        if a.startswith("--config="):
            return a[len("--config="):]
    die("the container command has no --config=")


def check(path):
    m = load(path)
    ds, sa, crb, cm = m["DaemonSet"], m["ServiceAccount"], m["ClusterRoleBinding"], m["ConfigMap"]
    pod = ds["spec"]["template"]["spec"]
    c = container(ds)
    want = [
        (ds["metadata"].get("namespace") == "kube-system", "DaemonSet not in kube-system"),
        (pod.get("hostNetwork") is True, "hostNetwork is not true"),
        (pod.get("priorityClassName") == "system-node-critical",
         "priorityClassName is not system-node-critical"),
        ({"operator": "Exists"} in pod.get("tolerations", []), "not every taint is tolerated"),
        (ds["spec"].get("updateStrategy", {}).get("type") == "RollingUpdate",
         "updateStrategy is not RollingUpdate"),
        (c.get("securityContext", {}).get("privileged") is True, "the container is not privileged"),
        (pod.get("serviceAccountName") == sa["metadata"]["name"],
         "serviceAccountName is not the manifest's ServiceAccount"),
        (sa["metadata"].get("namespace") == "kube-system", "ServiceAccount not in kube-system"),
        (crb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "system:node-proxier"},
         "the ClusterRoleBinding does not bind system:node-proxier"),
        ({"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "kube-system"}
         in crb.get("subjects", []), "the ClusterRoleBinding does not name the ServiceAccount"),
        (cm["metadata"].get("namespace") == "kube-system", "ConfigMap not in kube-system"),
    ]
    for ok, msg in want:
        if not ok:
            die("%s: %s" % (path, msg))
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {mt["mountPath"]: mt for mt in c.get("volumeMounts", [])}

    def host_mount(mount_path, host_path, read_only):
        mt = mounts.get(mount_path)
        if mt is None:
            die("%s: %s is not mounted" % (path, mount_path))
        hp = vols.get(mt["name"], {}).get("hostPath", {})
        if hp.get("path") != host_path:
            die("%s: %s is not the host's %s" % (path, mount_path, host_path))
        if bool(mt.get("readOnly")) != read_only:
            die("%s: %s should be mounted %s" % (path, mount_path, "read-only" if read_only else "read-write"))
        return hp

    if host_mount("/run/xtables.lock", "/run/xtables.lock", False).get("type") != "FileOrCreate":
        die("%s: the xtables lock volume is not FileOrCreate" % path)
    host_mount("/lib/modules", "/lib/modules", True)
    conf = config_arg(c["command"])
    d, f = os.path.split(conf)
    mt = mounts.get(d)
    if mt is None or vols.get(mt["name"], {}).get("configMap", {}).get("name") != cm["metadata"]["name"]:
        die("%s: --config=%s is not in the ConfigMap's volume" % (path, conf))
    if f not in cm["data"]:
        die("%s: the ConfigMap has no %s" % (path, f))
    env = {e["name"]: e for e in c.get("env", [])}
    if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        die("%s: NODE_NAME is not the pod's spec.nodeName" % path)
    if "--hostname-override=$(NODE_NAME)" not in c["command"]:
        die("%s: no --hostname-override=$(NODE_NAME)" % path)
    kpc = yaml.safe_load(cm["data"][f])
    if kpc.get("kind") != "KubeProxyConfiguration":
        die("%s: %s is not a KubeProxyConfiguration" % (path, f))
    kc = kpc.get("clientConnection", {}).get("kubeconfig", "")
    if os.path.dirname(kc) != d or os.path.basename(kc) not in cm["data"]:
        die("%s: clientConnection.kubeconfig %s is not in the ConfigMap" % (path, kc))


def atomic_layout(root, files):
    # kubelet's AtomicWriter: the volume root (an emptyDir, mode 0777) holds
    # ..<timestamp>/ with the files, ..data -> it and one symlink per file.
    os.makedirs(root, exist_ok=True)
    os.chmod(root, 0o777)
    ts = os.path.join(root, "..2026_01_01_00_00_00.000000001")
    os.makedirs(ts, exist_ok=True)
    os.chmod(ts, 0o755)
    for name, data in files.items():
        p = os.path.join(ts, name)
        with open(p, "w") as fh:
            fh.write(data)
        os.chmod(p, 0o644)
    if not os.path.lexists(os.path.join(root, "..data")):
        os.symlink(os.path.basename(ts), os.path.join(root, "..data"))
    for name in files:
        link = os.path.join(root, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..data", name), link)


def render(path, root, server, node, binary):
    m = load(path)
    c = container(m["DaemonSet"])
    conf_dir = os.path.dirname(config_arg(c["command"]))

    def move(text):
        text = text.replace(conf_dir + "/", root + conf_dir + "/")
        return text.replace(SA_DIR + "/", root + SA_DIR + "/")

    files = {}
    for name, data in m["ConfigMap"]["data"].items():
        data = move(data)
        if yaml.safe_load(data).get("kind") == "Config":
            data = re.sub(r"(?m)^(\s*server:\s*).*$", lambda mo: mo.group(1) + server, data)
        files[name] = data
    atomic_layout(root + conf_dir, files)
    cmd = [a.replace("$(NODE_NAME)", node) for a in c["command"]]
    cmd = [binary] + [move(a) for a in cmd[1:]]
    sys.stdout.write("\0".join(cmd) + "\0")


def service_account(root, ca, token):
    with open(ca) as f:
        ca_text = f.read()
    with open(token) as f:
        token_text = f.read()
    atomic_layout(root + SA_DIR, {"ca.crt": ca_text, "token": token_text, "namespace": "kube-system"})


def allowed(verb, what):
    if what.startswith("nonResource "):
        url = what.split(" ", 1)[1]
        return verb == "get" and any(url == p or (p.endswith("/*") and url.startswith(p[:-1]))
                                     for p in DISCOVERY)
    if what.startswith("unknown "):
        return False
    return any(what in res and verb in verbs for res, verbs in NODE_PROXIER)


def rbac(stats_path):
    with open(stats_path) as f:
        verbs = json.load(f).get("verbs", {})
    if not verbs:
        die("the API server saw no request")
    bad = [k for k in sorted(verbs) if not allowed(*k.split(" ", 1))]
    if bad:
        die("requests system:node-proxier does not allow: " + ", ".join(bad))
    print("rbac: " + ", ".join(sorted(verbs)))


def install_list(dockerfile):
    # The packages of each stage's apt-get install, in order of the stages.
    stages, cur = [], None
    with open(dockerfile) as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("FROM "):
            cur = set()
            stages.append(cur)
        m = re.search(r"apt-get install (.*?)(&&|$)", line)
        if m and cur is not None:
            cur.update(w for w in m.group(1).split() if not w.startswith("-"))
    return stages


def package_of(path):
    real = os.path.realpath(path)
    for p in (path, real, real.replace("/usr/lib/", "/lib/", 1)):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    die("no Debian package owns %s" % path)


def image(dockerfile, binary, configure_ac):
    stages = install_list(dockerfile)
    if len(stages) != 2:
        die("%s: expected a build and a runtime stage, found %d" % (dockerfile, len(stages)))
    build, runtime = stages
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]",
                        subprocess.run(["readelf", "-d", binary], capture_output=True,
                                       text=True, check=True).stdout)
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    where = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    for lib in needed:
        if lib.startswith(("libc.so", "libm.so", "libpthread.so", "libasan", "libubsan")):
            continue
        if lib not in where:
            die("ldd does not resolve %s" % lib)
        pkg = package_of(where[lib]).split(":")[0]
        if pkg not in runtime:
            die("%s: the runtime stage lacks %s (for %s)" % (dockerfile, pkg, lib))
    with open(configure_ac) as f:
        ac = f.read()
    mods = re.findall(r"SVCNAT_NEED\(\[\w+\], \[([\w.-]+)", ac)
    mods += re.findall(r"PKG_CHECK_MODULES\(\[IPTC\], \[([\w.-]+)\]", ac)[:1]
    if len(mods) < 5:
        die("%s: found only %d pkg-config modules" % (configure_ac, len(mods)))
    for mod in mods:
        pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", mod], capture_output=True,
                               text=True).stdout.strip()
        if not pcdir:
            die("pkg-config does not know %s" % mod)
        pkg = package_of(os.path.join(pcdir, mod + ".pc")).split(":")[0]
        if pkg not in build:
            die("%s: the build stage lacks %s (for %s)" % (dockerfile, pkg, mod))
    print("image: %d libraries, %d pkg-config modules covered" % (len(needed), len(mods)))


def main():
    a = sys.argv[1:]
    if a[:1] == ["check"] and len(a) == 2:
        check(a[1])
    elif a[:1] == ["render"] and len(a) == 6:
        render(*a[1:])
    elif a[:1] == ["sa"] and len(a) == 4:
        service_account(*a[1:])
    elif a[:1] == ["rbac"] and len(a) == 2:
        rbac(a[1])
    elif a[:1] == ["image"] and len(a) == 4:
        image(*a[1:])
    else:
        die("usage: see the header of this file")


if __name__ == "__main__":
    main()
