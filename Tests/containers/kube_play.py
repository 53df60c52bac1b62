"""Tessera's Kubernetes manifests run with `podman kube play`, for scripts/test-containers: the kustomize
base (deploy/k8s/base) or the Helm chart (deploy/helm/tessera), rendered as tests/stack renders them
(k8s_render.py), with the secrets an overlay or a values file would give them.

    python Tests/containers/kube_play.py kustomize|helm IMAGE ARTIFACTS_DIR

What runs is the manifests' own pods: the migration Job's pod first (it must exit 0), then each
Deployment's pod, with their containers, commands, environment (the ConfigMap and the Secrets), volumes,
security contexts and ports as rendered. A PostgreSQL pod (tessera-postgres:15, deploy/images/postgres)
stands in for the database the manifests expect outside them. Every httpGet probe of every container is
then called at the pod's address, and Tests/containers/smoke.py runs against the pods: end-user calls
on the token service's port, admin calls on the directory's, the privileged end-user form on the token
service's admin port (the Ingress objects would route the two planes so; kube play does not run them).

Podman 4.3 (Debian 12's) needs four changes to the YAML, each for a podman bug or gap, each printed:
  - a Deployment or Job becomes a Pod of its template. kube play runs no Services, and no Jobs in 4.3
    ("YAML document does not contain any supported kube kind"),
    and names a Deployment's pod NAME-pod-0, which nothing resolves; a Pod is resolved by its own name on
    the network, so each becomes a Pod named after the Service that selects it, the name its clients use;
  - Secrets read through env (secretKeyRef, secretRef) are made as podman secrets beforehand, in the form
    4.3 reads them (a JSON map of base64 values). A Secret in the YAML is stored as YAML, which 4.3's
    secretKeyRef then refuses: "secret NAME is not valid JSON";
  - Secrets mounted as volumes become hostPath volumes of a directory holding their files: 4.3's
    kube play panics on a secret volume ("nil pointer dereference" in kube.VolumeFromSecret);
  - the objects kube play does not run are left out and listed: Ingress, NetworkPolicy,
    HorizontalPodAutoscaler, PodDisruptionBudget, Service (used for names only).
Everything it made is removed at the end; the pods' logs go to ARTIFACTS_DIR/<source>/."""

from __future__ import annotations

import base64
import copy
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "Tests" / "stack"))

from k8s_render import helm_template, kustomize_build, split_image  # noqa: E402

NOT_RUN = {"Ingress", "NetworkPolicy", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"}
SERVICE_UID = 10001
POSTGRES_IMAGE = "tessera-postgres:15"


def log(message: str) -> None:
    print(f"kube-play: {message}", file=sys.stderr, flush=True)


def podman(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(["podman", *args], capture_output=True, text=True, input=stdin, timeout=300)
    if check and result.returncode != 0:
        raise SystemExit(f"kube-play: podman {' '.join(args[:3])}… failed ({result.returncode}):\n"
                         f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result


class Deployment:
    """One source's run: its values, what it made (for the teardown), and the pods' addresses."""

    def __init__(self, source: str, image: str, artifacts: Path):
        self.source, self.image = source, image
        self.artifacts = artifacts / source
        self.prefix = f"tkp-{source}"
        self.network = f"{self.prefix}-net"
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
        self.yamls: list[Path] = []
        self.podman_secrets: list[str] = []
        self.pods: list[str] = []
        self.values = {
            "TESSERA_INTERNAL_SECRET": secrets.token_hex(32),
            "TESSERA_ADMIN_TOKEN": secrets.token_hex(32),
            "TESSERA_API_KEY": secrets.token_hex(32),
            "TESSERA_MFA_KEYS": base64.b64encode(os.urandom(32)).decode(),
        }
        self.postgres_password = secrets.token_hex(24)
        self.values["DATABASE_URL"] = f"postgres://tessera:{self.postgres_password}@postgres:5432/tessera"

    # ------------------------------------------------------------------------------------------
    # Rendering

    def signing_keys(self) -> dict[str, dict[str, str]]:
        """Key files made by the image's own `token-service keys generate`: ID tokens' and session
        cookies' directories, as `kubectl create secret --from-file` would load them."""
        found = {}
        for kind in ("signing", "cookies"):
            folder = self.workdir / f"keys-{kind}"
            folder.mkdir()
            folder.chmod(0o777)
            podman("run", "--rm", "--network=none", "-v", f"{folder}:/out:Z", self.image,
                   "token-service", "keys", "generate", "--dir", "/out")
            found[kind] = {p.name: p.read_text() for p in sorted(folder.glob("*.pem"))}
            assert found[kind], f"token-service keys generate wrote no key in {folder}"
        return found

    def render(self) -> list[dict]:
        keys = self.signing_keys()
        name, tag, _ = split_image(self.image)
        if self.source == "kustomize":
            docs = [copy.deepcopy(doc) for _, doc in kustomize_build()]
            for doc in docs:
                if doc["kind"] == "Secret":
                    # What an overlay does: every placeholder replaced, the key directories loaded.
                    if doc["metadata"]["name"] == "tessera-secrets":
                        doc["stringData"] = dict(self.values)
                    elif doc["metadata"]["name"] == "tessera-signing-keys":
                        doc["stringData"] = keys["signing"]
                    elif doc["metadata"]["name"] == "tessera-session-cookie-keys":
                        doc["stringData"] = keys["cookies"]
                for container in pod_containers(doc):
                    if split_image(container["image"])[0] == "tessera":
                        container["image"] = self.image
        else:
            values = {
                "image": {"repository": name, "tag": tag or "latest", "pullPolicy": "Never"},
                "secrets": {"internalSecret": self.values["TESSERA_INTERNAL_SECRET"],
                            "adminToken": self.values["TESSERA_ADMIN_TOKEN"],
                            "apiKey": self.values["TESSERA_API_KEY"],
                            "mfaKeys": self.values["TESSERA_MFA_KEYS"],
                            "databaseUrl": self.values["DATABASE_URL"]},
                "signingKeys": {"files": keys["signing"]},
                "sessionCookieKeys": {"files": keys["cookies"]},
            }
            values_file = self.workdir / "values.yaml"
            values_file.write_text(yaml.safe_dump(values))
            docs = [copy.deepcopy(doc) for _, doc in helm_template("tessera", values_files=(str(values_file),))]
        return docs

    # ------------------------------------------------------------------------------------------
    # The changes podman 4.3 needs (the module's docstring)

    def adapt(self, docs: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
        """(ConfigMaps, the Jobs' pods, the Deployments' pods), with the Secrets made beforehand."""
        by_kind: dict[str, list[dict]] = {}
        for doc in docs:
            by_kind.setdefault(doc["kind"], []).append(doc)
        skipped = sorted(f"{doc['kind']}/{doc['metadata']['name']}" for doc in docs if doc["kind"] in NOT_RUN)
        log(f"{self.source}: not run by kube play: {', '.join(skipped)}")
        unknown = set(by_kind) - NOT_RUN - {"ConfigMap", "Secret", "Deployment", "Job"}
        assert not unknown, f"kinds this test does not know how to run: {unknown}"
        secrets_by_name = {doc["metadata"]["name"]: secret_data(doc) for doc in by_kind.get("Secret", [])}
        services = by_kind.get("Service", [])

        def pod(doc: dict, name: str) -> dict:
            template = copy.deepcopy(doc["spec"]["template"])
            spec = template["spec"]
            for container in spec["containers"]:
                for ref in env_secret_refs(container):
                    self.podman_secret(ref, secrets_by_name[ref])
            for volume in spec.get("volumes", []):
                if "secret" in volume:
                    folder = self.secret_folder(volume["secret"]["secretName"],
                                                secrets_by_name[volume["secret"]["secretName"]])
                    volume.pop("secret")
                    volume["hostPath"] = {"path": str(folder), "type": "Directory"}
            return {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "labels": template.get("metadata", {}).get("labels", {})},
                    "spec": spec}

        jobs = [pod(doc, doc["metadata"]["name"]) for doc in by_kind.get("Job", [])]
        for doc in by_kind.get("Job", []):
            log(f"{self.source}: Job/{doc['metadata']['name']} runs as Pod/{doc['metadata']['name']} (its template)")
        deployments = []
        for doc in by_kind.get("Deployment", []):
            labels = doc["spec"]["template"]["metadata"]["labels"]
            selecting = [s["metadata"]["name"] for s in services
                         if s["spec"].get("selector") and s["spec"]["selector"].items() <= labels.items()]
            assert len(selecting) == 1, f"Deployment {doc['metadata']['name']}: Services {selecting}"
            deployments.append(pod(doc, selecting[0]))
            log(f"{self.source}: Deployment/{doc['metadata']['name']} runs as Pod/{selecting[0]} (its template, "
                f"named as Service/{selecting[0]})")
        return by_kind.get("ConfigMap", []), jobs, deployments

    def podman_secret(self, name: str, data: dict[str, bytes]) -> None:
        if name in self.podman_secrets:
            return
        body = json.dumps({key: base64.b64encode(value).decode() for key, value in data.items()})
        podman("secret", "rm", name, check=False)
        podman("secret", "create", name, "-", stdin=body)
        self.podman_secrets.append(name)
        log(f"{self.source}: Secret/{name} (read through env) made as a podman secret, a JSON map of base64 values")

    def secret_folder(self, name: str, data: dict[str, bytes]) -> Path:
        folder = self.workdir / "secret-volumes" / name
        if not folder.exists():
            folder.mkdir(parents=True)
            for key, value in data.items():
                path = folder / key
                path.write_bytes(value)
                path.chmod(0o440)
                os.chown(path, 0, SERVICE_UID)
            os.chown(folder, 0, SERVICE_UID)
            folder.chmod(0o750)
            log(f"{self.source}: Secret/{name} (a volume) mounted as a hostPath directory of its {len(data)} files")
        return folder

    # ------------------------------------------------------------------------------------------
    # Running

    def play(self, name: str, docs: list[dict]) -> None:
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        self.yamls.append(path)
        self.pods += [doc["metadata"]["name"] for doc in docs if doc["kind"] == "Pod"]
        result = podman("kube", "play", "--network", self.network, str(path), check=False)
        if result.returncode != 0:
            raise SystemExit(f"kube-play: podman kube play {name}.yaml failed:\n{result.stderr[-3000:]}")

    def address(self, pod: str) -> str:
        infra = podman("pod", "inspect", pod, "--format", "{{.InfraContainerID}}").stdout.strip()
        template = "{{(index .NetworkSettings.Networks \"%s\").IPAddress}}" % self.network
        return podman("inspect", infra, "--format", template).stdout.strip()

    def wait_exited(self, pod: str, container: str, limit: float = 120) -> None:
        name = f"{pod}-{container}"
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            state = podman("inspect", name, "--format", "{{.State.Status}} {{.State.ExitCode}}").stdout.split()
            if state and state[0] == "exited" and state[1] == "0":
                log(f"{name}: exited 0")
                return
            time.sleep(1)
        raise SystemExit(f"kube-play: {name} did not exit 0 within {limit:.0f} s (state {state})")

    def probes(self, pod_doc: dict, address: str, limit: float = 120) -> None:
        """Every httpGet probe of every container answers 200 at the pod's address."""
        for container in pod_doc["spec"]["containers"]:
            ports = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
            for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
                probe = container.get(kind, {}).get("httpGet")
                if not probe:
                    continue
                port = ports.get(probe["port"], probe["port"])
                url = f"http://{address}:{port}{probe['path']}"
                deadline = time.monotonic() + limit
                while True:
                    try:
                        with urllib.request.urlopen(url, timeout=3) as response:
                            if response.status == 200:
                                break
                    except (urllib.error.URLError, OSError):
                        pass
                    if time.monotonic() > deadline:
                        raise SystemExit(f"kube-play: {pod_doc['metadata']['name']} {kind} {url} not 200")
                    time.sleep(1)
                log(f"{pod_doc['metadata']['name']}/{container['name']}: {kind} {probe['path']} on {port}: 200")

    def run(self) -> None:
        podman("network", "rm", "-f", self.network, check=False)
        podman("network", "create", self.network)
        config_maps, jobs, deployments = self.adapt(self.render())
        # The database the manifests' DATABASE_URL names (host `postgres`).
        self.play("postgres", [{
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "postgres"},
            "spec": {"containers": [{
                "name": "postgres", "image": POSTGRES_IMAGE,
                "env": [{"name": "POSTGRES_USER", "value": "tessera"}, {"name": "POSTGRES_DB", "value": "tessera"},
                        {"name": "POSTGRES_PASSWORD", "value": self.postgres_password},
                        {"name": "POSTGRES_INITDB_ARGS", "value": "--auth-host=scram-sha-256 --encoding=UTF8 --locale=C"}],
            }]}}])
        deadline = time.monotonic() + 60
        while podman("exec", "postgres-postgres", "pg_isready", "-h", "127.0.0.1", "-U", "tessera", "-d", "tessera",
                     check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise SystemExit("kube-play: PostgreSQL not ready within 60 s")
            time.sleep(1)
        log("postgres: ready")
        self.play("migrate", config_maps + jobs)
        for job in jobs:
            for container in job["spec"]["containers"]:
                self.wait_exited(job["metadata"]["name"], container["name"])
        self.play("services", config_maps + deployments)
        addresses = {}
        for doc in deployments:
            addresses[doc["metadata"]["name"]] = self.address(doc["metadata"]["name"])
            self.probes(doc, addresses[doc["metadata"]["name"]])

        def port_of(pod_name_suffix: str, port_name: str) -> tuple[str, int]:
            [doc] = [d for d in deployments if d["metadata"]["name"].endswith(pod_name_suffix)]
            [port] = [p["containerPort"] for c in doc["spec"]["containers"] for p in c.get("ports", [])
                      if p.get("name") == port_name]
            return addresses[doc["metadata"]["name"]], port

        public = "http://%s:%d" % port_of("token-service", "http")
        admin = "http://%s:%d" % port_of("user-directory", "http")
        privileged = "http://%s:%d" % port_of("token-service", "admin")
        project = next(d["data"]["TESSERA_PROJECT_ID"] for d in config_maps)
        env = {**os.environ, "TESSERA_API_KEY": self.values["TESSERA_API_KEY"],
               "TESSERA_ADMIN_TOKEN": self.values["TESSERA_ADMIN_TOKEN"], "TESSERA_PROJECT_ID": project}
        subprocess.run([sys.executable, str(HERE / "smoke.py"), public, admin, privileged], env=env, check=True,
                       timeout=120)
        log(f"{self.source}: the manifests' pods served the smoke test")

    def teardown(self) -> None:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        names = podman("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
        for pod in self.pods:
            for name in names:
                if name.startswith(f"{pod}-"):
                    logs = podman("logs", name, check=False)
                    (self.artifacts / f"{name}.log").write_text(logs.stdout + logs.stderr)
        for path in reversed(self.yamls):
            podman("kube", "down", str(path), check=False)
        for name in self.podman_secrets:
            podman("secret", "rm", name, check=False)
        podman("network", "rm", "-f", self.network, check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)


def pod_containers(doc: dict) -> list[dict]:
    spec = doc.get("spec", {}).get("template", {}).get("spec") if doc["kind"] in ("Deployment", "Job") else None
    return (spec or {}).get("containers", []) + (spec or {}).get("initContainers", [])


def secret_data(doc: dict) -> dict[str, bytes]:
    data = {key: base64.b64decode(value) for key, value in (doc.get("data") or {}).items()}
    data.update({key: str(value).encode() for key, value in (doc.get("stringData") or {}).items()})
    return data


def env_secret_refs(container: dict) -> set[str]:
    refs = {e["valueFrom"]["secretKeyRef"]["name"] for e in container.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})}
    refs |= {e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e}
    return refs


def main() -> None:
    source, image, artifacts = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    assert source in ("kustomize", "helm"), source
    deployment = Deployment(source, image, artifacts)
    try:
        deployment.run()
    finally:
        deployment.teardown()


if __name__ == "__main__":
    main()
