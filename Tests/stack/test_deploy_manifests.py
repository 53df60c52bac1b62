"""Container and orchestration files (issue #7), checked here since no container engine or cluster
runs on the build machines: the Kubernetes manifests (the kustomize base as kustomize renders it)
validate against the Kubernetes API schemas; the kustomization reaches every manifest; the nginx
config and the Ingresses route the same paths to the same services on the same planes, and those
services really serve them (asked directly on their own ports); both Ingresses have TLS; the migration
Job is named per release; compose and Kubernetes run the same commands on the same ports with the same
probes, and every setting they pass is a documented configuration key. Who may call the services
(issue 35): the NetworkPolicies, evaluated flow by flow, admit the ingress controller, the parts'
own calls and Prometheus and nothing else; no proxy is trusted and the admin Ingress admits nobody
until the overlay names them; compose.pg-ha.yaml verifies PostgreSQL's certificate (verify-full) with
a CA its pg-tls service makes. The Helm chart is held to the same checks in test_helm_chart.py,
through the helpers here."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl
from typing import Callable

import kubernetes_validate
import pytest
import requests
import yaml

from conftest import HTTP_TIMEOUT, REPO_ROOT, parse_duration
from k8s_render import KUBERNETES_VERSION, KUSTOMIZE_BASE as BASE, Rendered, kustomize_build, pod_spec, split_image

NGINX = REPO_ROOT / "deploy" / "nginx" / "tessera.conf.template"
COMPOSE_NGINX = REPO_ROOT / "deploy" / "nginx" / "compose.conf"
COMPOSE = REPO_ROOT / "deploy" / "compose.yaml"
COMPOSE_PG_HA = REPO_ROOT / "deploy" / "compose.pg-ha.yaml"
PGAF_ENTRYPOINT = REPO_ROOT / "deploy" / "pg-auto-failover" / "entrypoint.sh"
SERVICES = {"token-service": 8081, "user-directory": 8082, "cleanup-worker": 8083}
SECRET_KEYS = {"TESSERA_INTERNAL_SECRET", "TESSERA_ADMIN_TOKEN", "TESSERA_API_KEY", "TESSERA_MFA_KEYS", "DATABASE_URL"}


def manifests() -> Rendered:
    """The base as `kubectl apply -k` sends it: (file, object) pairs."""
    return kustomize_build(BASE)


KINDS = {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Job", "Ingress", "ConfigMap",
         "Secret", "NetworkPolicy"}


def validate_against_the_schemas(docs: Rendered, kinds: set[str] = KINDS) -> None:
    assert {d["kind"] for _, d in docs} == kinds
    for name, doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{name} {doc['kind']}/{doc['metadata']['name']}: {error}")


def test_manifests_validate_against_the_kubernetes_schemas():
    validate_against_the_schemas(manifests())


def test_the_kustomization_lists_every_manifest():
    files = {str(p.relative_to(BASE)) for p in BASE.rglob("*.yaml")} - {
        str(p.relative_to(BASE)) for p in BASE.rglob("kustomization.yaml")}
    assert {origin for origin, _ in manifests()} == files
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    assert [i["name"] for i in kustomization["images"]] == ["tessera"]
    images = {c["image"] for _, d in manifests() if d["kind"] in ("Deployment", "Job")
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {f"{kustomization['images'][0]['newName']}:{kustomization['images'][0]['newTag']}"}


def comparable(docs) -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs if d}


def test_the_python_kustomize_renders_the_base_as_kubectl_does():
    """k8s_render.kustomize_build stands in for kustomize where kubectl is missing (the CI machine);
    where kubectl is here, its built-in kustomize must render the base to the same objects."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the Python rendering is not compared with kustomize's")
    result = subprocess.run([kubectl, "kustomize", str(BASE)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    theirs = comparable(yaml.safe_load_all(result.stdout))
    ours = comparable(d for _, d in manifests())
    assert sorted(ours) == sorted(theirs)
    for key, doc in ours.items():
        assert doc == theirs[key], key


def test_the_migration_job_is_named_after_the_release():
    """A Job's pod template cannot change: applying a new image under the old Job's name is refused.
    The Job's name ends in the image tag (migrate/kustomization.yaml's nameSuffix, kept in step with
    the base's images), so each release applies a new Job; finished ones are removed after a day."""
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    tag = kustomization["images"][0]["newTag"]
    [job] = manifests().objects("Job")
    assert job["metadata"]["name"] == f"tessera-migrate-{tag}"
    assert 0 < job["spec"]["ttlSecondsAfterFinished"] <= 7 * 86400
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["user-directory", "migrate"]
    assert split_image(container["image"])[1] == tag
    # Nothing else is renamed: the services and the objects they refer to keep their names.
    assert {d["metadata"]["name"] for d in manifests().objects("Deployment")} == set(SERVICES)


def deployments() -> dict[str, dict]:
    return {d["metadata"]["name"]: d for _, d in manifests() if d["kind"] == "Deployment"}


def test_every_service_has_probes_resources_a_budget_and_the_http_services_an_autoscaler():
    docs = manifests()
    kinds = {(d["kind"], d["metadata"]["name"]) for _, d in docs}
    for name, port in SERVICES.items():
        [container] = deployments()[name]["spec"]["template"]["spec"]["containers"]
        assert container["command"] == [name, "serve"]
        assert container["ports"][0]["containerPort"] == port
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
        assert container["resources"]["requests"] and container["resources"]["limits"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["TESSERA_HTTP_PORT"] == str(port)
        assert ("PodDisruptionBudget", name) in kinds and ("Service", name) in kinds
    for name in ("token-service", "user-directory"):
        assert ("HorizontalPodAutoscaler", name) in kinds
    job = next(d for _, d in docs if d["kind"] == "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["user-directory", "migrate"]


def nginx_planes(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Per plane (public, admin): (regex or "/", upstream service or "404") in the order of the config."""
    text = path.read_text()
    public_at, admin_at = text.index("# The public plane"), text.index("# The admin plane")
    planes = {}
    for plane, block in (("public", text[public_at:admin_at]), ("admin", text[admin_at:])):
        routes = []
        for match in re.finditer(r'location\s+(~\s+"([^"]+)"|/)\s*\{(.*?)\n        \}', block, re.S):
            body = match.group(3)
            upstream = re.search(r"proxy_pass\s+http://(\w+);", body)
            routes.append((match.group(2) or "/", upstream.group(1).replace("_", "-") if upstream else "404"))
        planes[plane] = routes
    return planes


def test_the_local_and_compose_ingresses_have_the_same_planes():
    local, compose = nginx_planes(NGINX), nginx_planes(COMPOSE_NGINX)
    assert local == compose, "deploy/nginx/tessera.conf.template and compose.conf differ"
    assert local["public"][-1] == ("/", "token-service") and local["admin"][-1] == ("/", "404")


def ingress_routes(ingress: dict, service_of: Callable[[str], str] = str) -> list[tuple[str, str, int]]:
    """(regex, service, port) of the paths of an Ingress's one rule, in order; service_of names the
    part a backend Service is (the Helm chart prefixes its objects with the release)."""
    [rule] = ingress["spec"]["rules"]
    return [(p["path"], service_of(p["backend"]["service"]["name"]), p["backend"]["service"]["port"]["number"])
            for p in rule["http"]["paths"]]


def ingress_paths(name: str) -> list[tuple[str, str]]:
    return [(path, service) for path, service, _ in ingress_routes(manifests().get("Ingress", name))]


def ingress_target(routes: list[tuple[str, str, int]], path: str) -> str | None:
    """The service an Ingress sends `path` to, or None for the controller's 404."""
    # ingress-nginx tries the longest regex first; these never overlap on a route.
    found = {service for pattern, service, _ in routes if re.search(pattern, path)}
    assert len(found) <= 1, f"{path} matches paths to {found}"
    return found.pop() if found else None


def nginx_target(routes: list[tuple[str, str]], path: str) -> str | None:
    """The service an nginx plane sends `path` to, or None for its 404: the regex locations in the
    order of the config, first match wins; else `location /`."""
    for pattern, upstream in routes:
        if pattern != "/" and re.search(pattern, path):
            return None if upstream == "404" else upstream
    default = dict(routes).get("/")
    return None if default in (None, "404") else default


def served_paths(stack) -> dict[str, set[str]]:
    """Per HTTP service, a concrete path of each route it serves (its own route table)."""
    from test_planes import concrete, route_table
    return {service: {concrete(stack, template) for _, template in route_table(stack, url)}
            for service, url in (("token-service", stack.token_service_url), ("user-directory", stack.directory_url))}


def check_ingress_planes(stack, public: list, admin: list) -> None:
    """Walked from the services' own route tables (test_planes.py walks the local ingress the same way):
    every public route matches a path of the public Ingress to its service, every admin route a path of
    the admin Ingress and none of the public one, and the internal API and /metrics neither."""
    from test_planes import PRIVILEGED_FORM, plane_of, route_table

    for service, url in (("token-service", stack.token_service_url), ("user-directory", stack.directory_url)):
        for _, template in route_table(stack, url):
            path = template.replace("{project}", "p")
            plane = plane_of(template)
            if plane == "public" and service == "user-directory":
                continue  # its own /healthz and /readyz, for probes on its port
            expected = {"public": (service, None), "admin": (None, service), "neither": (None, None)}[plane]
            if PRIVILEGED_FORM.search(template):
                expected = (service, service)
            assert (ingress_target(public, path), ingress_target(admin, path)) == expected, f"{service} {template}"


# Paths no service serves, or that only one plane may pass: the two must refuse or pass them alike.
EDGE_PATHS = ["/", "/metrics", "/metrics/", "/internal/v1/routes", "/console", "/console/", "/consoles",
              "/v1/projects", "/v2/defaultSupportedIdps", "/v2/defaultSupportedIdps/x", "/no/such/path",
              "/identitytoolkit/v3/relyingparty/downloadAccount/x", "/v1/accounts:lookup/x"]


def check_ingresses_route_as_nginx(stack, public: list, admin: list) -> None:
    """The Ingresses and deploy/nginx agree, plane by plane, on every path a service serves and on
    the edge cases: each sends it to the same service, or neither reaches a service that serves it
    (nginx's public plane passes unknown paths to the token service, which answers 404 itself; the
    public Ingress lists the end-user paths and leaves the rest to the controller's 404)."""
    served = served_paths(stack)
    planes = nginx_planes(NGINX)
    for path in sorted(set().union(*served.values()) | set(EDGE_PATHS)):
        for plane, routes in (("public", public), ("admin", admin)):
            def serving(service: str | None) -> str | None:
                return service if service is not None and path in served.get(service, ()) else None
            assert serving(ingress_target(routes, path)) == serving(nginx_target(planes[plane], path)), \
                f"{plane} plane, {path}: Ingress {ingress_target(routes, path)}, nginx {nginx_target(planes[plane], path)}"


def check_backend_ports(public: list, admin: list) -> None:
    """The public Ingress reaches the token service's main port only; the admin Ingress its admin port
    (which believes an admin bearer) and the directory's port."""
    assert {(service, port) for _, service, port in public} == {("token-service", 8081)}
    assert {(service, port) for _, service, port in admin} == {("token-service", 8091), ("user-directory", 8082)}


def check_ingress_annotations(public: dict, admin: dict) -> None:
    assert admin["metadata"]["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"]
    for doc in (public, admin):
        annotations = doc["metadata"].get("annotations", {})
        assert annotations["nginx.ingress.kubernetes.io/use-regex"] == "true"
        # Current ingress-nginx refuses snippet annotations by default (allow-snippet-annotations).
        assert not any("snippet" in key for key in annotations), doc["metadata"]
        assert doc["spec"]["ingressClassName"] == "nginx"


def check_tls(ingress: dict, secret_name: str) -> None:
    """The Ingress has one TLS block, for its rule's host, with the certificate Secret."""
    [rule] = ingress["spec"]["rules"]
    assert ingress["spec"]["tls"] == [{"hosts": [rule["host"]], "secretName": secret_name}], ingress["spec"]


def test_the_kubernetes_ingresses_serve_each_route_on_its_plane(stack):
    docs = manifests()
    public, admin = docs.get("Ingress", "tessera"), docs.get("Ingress", "tessera-admin")
    check_ingress_planes(stack, ingress_routes(public), ingress_routes(admin))
    check_backend_ports(ingress_routes(public), ingress_routes(admin))
    check_ingress_annotations(public, admin)


def test_the_kubernetes_ingresses_route_as_the_nginx_config_does(stack):
    docs = manifests()
    check_ingresses_route_as_nginx(stack, ingress_routes(docs.get("Ingress", "tessera")),
                                   ingress_routes(docs.get("Ingress", "tessera-admin")))


def test_both_ingresses_have_tls_for_their_own_hosts():
    docs = manifests()
    public, admin = docs.get("Ingress", "tessera"), docs.get("Ingress", "tessera-admin")
    check_tls(public, "tessera-tls")
    check_tls(admin, "tessera-admin-tls")
    public_url = docs.get("ConfigMap", "tessera-config")["data"]["TESSERA_PUBLIC_URL"]
    assert public_url == "https://" + public["spec"]["rules"][0]["host"]
    assert admin["spec"]["rules"][0]["host"] != public["spec"]["rules"][0]["host"]


# --------------------------------------------------------------------------------------
# Who may call the services (issue 35): NetworkPolicies, the trusted proxies, the admin source ranges
# --------------------------------------------------------------------------------------

NAMESPACE = "tessera"  # where the manifests are applied (they name no namespace of their own)


def pod(namespace: str, labels: dict[str, str]) -> dict:
    """A pod, as a NetworkPolicy sees it: its namespace and labels (an outside address has an ip)."""
    return {"namespace": namespace, "labels": labels, "ip": None}


INGRESS_CONTROLLER = pod("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx",
                                           "app.kubernetes.io/component": "controller"})
PROMETHEUS = pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
CLUSTER_DNS = pod("kube-system", {"k8s-app": "kube-dns"})
# Pods that are not Tessera's or its controller's: in Tessera's namespace and in another one.
NEIGHBOUR = pod(NAMESPACE, {"app": "something-else"})
STRANGER = pod("default", {"app": "something-else"})
# Addresses outside the cluster: a public one (an identity provider), a private one (a database, an
# SMTP relay, or anything on the nodes' network) and the cloud metadata service.
PUBLIC = {"namespace": None, "labels": {}, "ip": "142.250.74.78"}
PRIVATE = {"namespace": None, "labels": {}, "ip": "10.20.30.40"}
METADATA = {"namespace": None, "labels": {}, "ip": "169.254.169.254"}


def selects(selector: dict | None, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, matchExpressions); {} selects everything."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        if not {"In": present and labels[key] in values, "NotIn": not present or labels[key] not in values,
                "Exists": present, "DoesNotExist": not present}[operator]:
            return False
    return True


def peer_matches(peer: dict, other: dict) -> bool:
    """A NetworkPolicyPeer against a pod or an outside address (ipBlock matches addresses only)."""
    if "ipBlock" in peer:
        if other["ip"] is None:
            return False
        address = ipaddress.ip_address(other["ip"])
        block = ipaddress.ip_network(peer["ipBlock"]["cidr"])
        return address.version == block.version and address in block and not any(
            address in ipaddress.ip_network(e) for e in peer["ipBlock"].get("except", [])
            if ipaddress.ip_network(e).version == address.version)
    if other["namespace"] is None:
        return False
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": other["namespace"]}):
            return False
    elif other["namespace"] != NAMESPACE:
        return False
    return "podSelector" not in peer or selects(peer["podSelector"], other["labels"])


def port_matches(ports: list[dict] | None, port: int, protocol: str) -> bool:
    return not ports or any(p.get("protocol", "TCP") == protocol and
                            p["port"] <= port <= p.get("endPort", p["port"]) for p in ports)


def admitted(policies: list[dict], direction: str, subject: dict, other: dict, port: int, protocol: str) -> bool:
    """Whether traffic from/to `subject` (a pod in NAMESPACE) to/from `other` on `port` is admitted, as
    the NetworkPolicy API defines it: a pod no policy of that direction selects is open; one that is
    selected admits what some rule of some selecting policy admits (a rule with no peers: any peer;
    with no ports: any port)."""
    kind, field, peers = {"ingress": ("Ingress", "ingress", "from"), "egress": ("Egress", "egress", "to")}[direction]
    selecting = [p["spec"] for p in policies if selects(p["spec"]["podSelector"], subject["labels"])
                 and kind in p["spec"].get("policyTypes", ["Ingress"])]
    if not selecting:
        return True
    return any((not rule.get(peers) or any(peer_matches(peer, other) for peer in rule[peers]))
               and port_matches(rule.get("ports"), port, protocol)
               for spec in selecting for rule in spec.get(field) or [])


def part_pods(docs: Rendered, part_of: Callable[[str], str] = str) -> dict[str, dict]:
    """The pods of each part as their templates label them: token-service, user-directory,
    cleanup-worker and migrate (the Job)."""
    found = {}
    for doc in docs.objects():
        spec = pod_spec(doc)
        if spec is not None:
            part = "migrate" if doc["kind"] == "Job" else part_of(doc["metadata"]["name"])
            found[part] = pod(NAMESPACE, doc["spec"]["template"]["metadata"]["labels"])
    assert set(found) == {*SERVICES, "migrate"}, found
    return found


def check_network_policies(docs: Rendered, part_of: Callable[[str], str] = str,
                           strangers: tuple[dict, ...] = (), controller: dict = INGRESS_CONTROLLER) -> None:
    """Flow by flow, as a network plugin that enforces NetworkPolicy would decide it: the ingress
    controller reaches the token service (main and admin port) and the directory; the token service and
    the worker reach the directory; Prometheus each /metrics port; nothing else reaches a Tessera pod
    (a pod beside them, a pod elsewhere, `strangers`). Outwards: DNS for every pod, PostgreSQL for the
    directory and the migration, SMTP for the directory, public addresses on 443 for the token
    service, and nothing else (no private address, no cloud metadata)."""
    policies = docs.objects("NetworkPolicy")
    pods = part_pods(docs, part_of)
    token, directory, worker, migrate = (pods[p] for p in ("token-service", "user-directory", "cleanup-worker",
                                                          "migrate"))
    outsiders = [NEIGHBOUR, STRANGER, *strangers]
    if controller is not INGRESS_CONTROLLER:
        outsiders.append(INGRESS_CONTROLLER)  # ingress-nginx's defaults are not this controller's

    def inbound(subject, other, port):
        return admitted(policies, "ingress", subject, other, port, "TCP")

    def outbound(subject, other, port, protocol="TCP"):
        return admitted(policies, "egress", subject, other, port, protocol)

    expected_in = [
        (token, 8081, [controller, PROMETHEUS]),
        (token, 8091, [controller]),
        (directory, 8082, [controller, PROMETHEUS, token, worker]),
        (worker, 8083, [PROMETHEUS]),
    ]
    candidates = [controller, PROMETHEUS, token, directory, worker, migrate, *outsiders]
    for subject, port, allowed in expected_in:
        for other in candidates:
            want = any(other is a for a in allowed)
            assert inbound(subject, other, port) == want, (subject["labels"], port, other)
    # Every Tessera pod is isolated: a port no rule names is closed to everyone.
    for subject in pods.values():
        assert not any(inbound(subject, other, 9999) for other in candidates), subject["labels"]

    for subject in pods.values():
        assert outbound(subject, CLUSTER_DNS, 53, "UDP") and outbound(subject, CLUSTER_DNS, 53, "TCP")
        assert not outbound(subject, METADATA, 80) and not outbound(subject, METADATA, 443)
        assert not any(outbound(subject, other, 8082) for other in outsiders), subject["labels"]
    for subject in (token, worker):
        assert outbound(subject, directory, 8082)
        assert not outbound(subject, PRIVATE, 5432) and not outbound(subject, PRIVATE, 587)
    assert outbound(token, PUBLIC, 443) and not outbound(token, PRIVATE, 443) and not outbound(token, PUBLIC, 80)
    assert not outbound(worker, PUBLIC, 443)
    for subject in (directory, migrate):
        assert outbound(subject, PRIVATE, 5432)
        assert not outbound(subject, PUBLIC, 443) and not outbound(subject, token, 8081)
    assert outbound(directory, PRIVATE, 587) and not outbound(migrate, PRIVATE, 587)
    assert not outbound(migrate, directory, 8082)
    # The policies select Tessera's pods only: the pod beside them is left as it is.
    assert not [p["metadata"]["name"] for p in policies if selects(p["spec"]["podSelector"], NEIGHBOUR["labels"])]


def trusted_proxies(docs: Rendered) -> list[str]:
    [config] = docs.objects("ConfigMap")
    return [item.strip() for item in config["data"]["TESSERA_TRUSTED_PROXIES"].split(",") if item.strip()]


def admits_nobody(source_ranges: str) -> bool:
    """A whitelist-source-range that no client's address is in: only the unspecified address."""
    blocks = [ipaddress.ip_network(item.strip()) for item in source_ranges.split(",")]
    return all(block.network_address.is_unspecified and block.num_addresses == 1 for block in blocks)


def test_network_policies_admit_only_the_flows_tessera_needs():
    check_network_policies(manifests())


def test_no_proxy_is_trusted_and_the_admin_plane_admits_nobody_until_the_overlay_says():
    """The base trusts no proxy (it used to trust every private range: any pod could then claim any
    client address) and its admin Ingress admits no address (it admitted 10.0.0.0/8, which is also
    where traffic comes from when a load balancer replaces the client's address with a node's)."""
    assert trusted_proxies(manifests()) == []
    admin = manifests().get("Ingress", "tessera-admin")
    assert admits_nobody(admin["metadata"]["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"])
    assert not admits_nobody("10.0.0.0/8") and not admits_nobody("0.0.0.0/32,10.1.0.0/16")


def route(path: str) -> str:
    """The service the ingress routes `path` to (the admin plane's rules, then the public plane's)."""
    planes = nginx_planes(NGINX)
    for pattern, service in planes["admin"] + planes["public"]:
        if service != "404" and (pattern == "/" or re.search(pattern, path)):
            return service
    raise AssertionError(f"no route for {path}")


# One request per kind of route each service serves; the expected owner answers anything but
# Not Found on its own port, and the other service does not know the route at all.
SAMPLES = [
    ("POST", "/v1/accounts:signUp", "token-service"),
    ("POST", "/identitytoolkit.googleapis.com/v1/accounts:signInWithIdp", "token-service"),
    ("POST", "/v1/accounts:signInWithCustomToken", "token-service"),
    ("POST", "/v1/token", "token-service"),
    ("POST", "/securetoken.googleapis.com/v1/token", "token-service"),
    ("GET", "/.well-known/jwks.json", "token-service"),
    ("GET", "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com", "token-service"),
    ("POST", "/v1/projects/{p}:createSessionCookie", "token-service"),
    ("POST", "/v1/projects/{p}/accounts:lookup", "user-directory"),
    ("POST", "/identitytoolkit.googleapis.com/v1/projects/{p}/tenants/t1/accounts:batchCreate", "user-directory"),
    ("GET", "/v2/projects/{p}/tenants", "user-directory"),
    ("GET", "/v2/projects/{p}/config", "user-directory"),
    ("GET", "/v2/projects/{p}/oauthIdpConfigs", "user-directory"),
    ("GET", "/v2/projects/{p}/tenants/t1/defaultSupportedIdpConfigs", "user-directory"),
    ("GET", "/v2/defaultSupportedIdps", "user-directory"),
    ("POST", "/v2/projects/{p}/serviceAccounts", "user-directory"),
    ("GET", "/v2/projects/{p}/anonymousCleanup:preview", "user-directory"),
    ("GET", "/v2/projects/{p}/auditLog", "user-directory"),
]


@pytest.mark.parametrize("method,path,owner", SAMPLES)
def test_routes_reach_the_service_that_serves_them(stack, method, path, owner):
    path = path.replace("{p}", stack.project_id)
    assert route(path) == owner
    urls = {"token-service": stack.token_service_url, "user-directory": stack.directory_url}
    for service, base in urls.items():
        resp = requests.request(method, base + path, timeout=HTTP_TIMEOUT)
        served = not (resp.status_code == 404 and resp.json().get("error", {}).get("message") == "Not Found")
        assert served == (service == owner), f"{method} {path} on {service}: {resp.status_code} {resp.text[:200]}"


def documented_keys() -> set[str]:
    text = (REPO_ROOT / "docs" / "configuration.md").read_text()
    return set(re.findall(r"`([A-Z][A-Z0-9_]+)`", text))


def pod_environment(docs: Rendered, deployment: dict) -> dict[str, object]:
    """The environment a Deployment's container gets: its env entries (a value, or ("secret", key) for
    a Secret's key) over the ConfigMaps it reads with envFrom."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env: dict[str, object] = {}
    for source in container.get("envFrom", []):
        env.update(docs.get("ConfigMap", source["configMapRef"]["name"])["data"])
    for entry in container.get("env", []):
        if "valueFrom" in entry:
            env[entry["name"]] = ("secret", entry["valueFrom"]["secretKeyRef"]["key"])
        else:
            env[entry["name"]] = entry["value"]
    return env


def test_compose_and_kubernetes_run_the_same_services_with_documented_keys():
    compose = yaml.safe_load(COMPOSE.read_text())
    documented = documented_keys()
    for name, port in SERVICES.items():
        service = compose["services"][name]
        assert service["command"] == [name, "serve"]
        assert service["environment"]["TESSERA_HTTP_PORT"] == str(port)
        assert f"http://127.0.0.1:{port}/readyz" in " ".join(service["healthcheck"]["test"])
        k8s_env = {e["name"] for e in deployments()[name]["spec"]["template"]["spec"]["containers"][0]["env"]}
        compose_env = set(service["environment"])
        for key in (k8s_env | compose_env) - {"POSTGRES_PASSWORD"}:
            assert key in documented, f"{name}: {key} is not in docs/configuration.md"
        # Every secret compose gives a service, Kubernetes gives it too.
        assert compose_env & SECRET_KEYS == k8s_env & SECRET_KEYS, name
        # Every setting compose makes for a service, Kubernetes makes too (the ConfigMap included).
        missing = compose_env - set(pod_environment(manifests(), deployments()[name]))
        assert not missing, f"{name}: compose sets {sorted(missing)}, Kubernetes does not"
    config = next(d for _, d in manifests() if d["kind"] == "ConfigMap")
    # Graceful shutdown: the service's own deadline (plus its 2 s cancellation allowance) ends
    # before the orchestrator's SIGKILL, in both.
    shutdown = parse_duration(config["data"]["TESSERA_SHUTDOWN_TIMEOUT"])
    assert compose["x-common-env"]["TESSERA_SHUTDOWN_TIMEOUT"] == "${TESSERA_SHUTDOWN_TIMEOUT:-25s}"
    for name in SERVICES:
        assert parse_duration(compose["services"][name]["stop_grace_period"]) >= shutdown + 2, name
        grace = deployments()[name]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace >= shutdown + 2, name
    for key in config["data"]:
        assert key in documented, f"ConfigMap key {key} is not in docs/configuration.md"
    assert compose["services"]["migrate"]["command"] == ["user-directory", "migrate"]
    # The one-shot migration gets the database and its log settings, no secret it does not use.
    migrate_env = compose["services"]["migrate"]["environment"]
    assert set(migrate_env) == {"DATABASE_URL", "LOG_LEVEL", "LOG_FORMAT"}, migrate_env
    assert migrate_env["DATABASE_URL"] == compose["services"]["user-directory"]["environment"]["DATABASE_URL"]


def test_the_dockerfile_builds_every_product_and_runs_them_as_the_stack_does():
    """The Dockerfile, read with a Dockerfile parser: a Swift 6.3 build stage with a static stdlib
    release build of the whole package, a runtime stage that runs as a non-root user with crash
    backtraces on, exposes the three service ports, ships the binaries and their resource bundles
    (the OpenAPI document), and defaults to a command compose and Kubernetes also use."""
    from dockerfile_parse import DockerfileParser

    parser = DockerfileParser(path=str(REPO_ROOT / "deploy" / "Dockerfile"))
    instructions = parser.structure
    stages = [i["value"] for i in instructions if i["instruction"] == "FROM"]
    # The first stage is `binaries`: a build may replace it with a named context of prebuilt binaries
    # (scripts/image --engine podman), so the runtime stage copies from that name.
    assert len(stages) == 2 and stages[0].endswith("AS binaries"), stages
    assert any(i["instruction"] == "COPY" and i["value"].startswith("--from=binaries ") for i in instructions)
    args = {i["value"].split("=", 1)[0]: i["value"].split("=", 1)[1] for i in instructions
            if i["instruction"] == "ARG" and "=" in i["value"]}
    assert args["SWIFT_IMAGE"].startswith("swift:6.3"), args
    runs = " ".join(i["value"] for i in instructions if i["instruction"] == "RUN")
    assert "swift build -c release --static-swift-stdlib" in runs
    for product in [*SERVICES, "tessera"]:
        assert f'"$bin/{product}"' in runs, f"{product} is not copied out of the build stage"
        assert product in (REPO_ROOT / "scripts" / "image").read_text(), f"scripts/image does not stage {product}"
    assert "*.resources" in runs, "resource bundles (the OpenAPI document) must ship with the binaries"
    # Every folder Package.swift names a target in is in the build context, or the package does not load.
    copies = {i["value"].split()[0] for i in instructions[:[n for n, i in enumerate(instructions)
                                                           if i["instruction"] == "FROM"][1]]
              if i["instruction"] == "COPY"}
    package = (REPO_ROOT / "Package.swift").read_text()
    for folder in {p.split("/")[0] for p in re.findall(r'path: "([^"]+)"', package)}:
        assert folder in copies, f"{folder} (a target path in Package.swift) is not copied into the build stage"
    froms = [n for n, i in enumerate(instructions) if i["instruction"] == "FROM"]
    runtime = instructions[froms[1]:]
    user = [i["value"] for i in runtime if i["instruction"] == "USER"]
    assert user and not user[-1].startswith(("root", "0")), user
    exposed = {int(p) for i in runtime if i["instruction"] == "EXPOSE" for p in i["value"].split()}
    assert exposed == set(SERVICES.values())
    env = " ".join(i["value"] for i in runtime if i["instruction"] == "ENV")
    assert "SWIFT_BACKTRACE=enable=yes" in env
    cmd = [i["value"] for i in runtime if i["instruction"] == "CMD"][-1]
    assert cmd == '["token-service", "serve"]'


# --------------------------------------------------------------------------------------
# compose.pg-ha.yaml: PostgreSQL's certificate is verified (issue 35)
# --------------------------------------------------------------------------------------

class ComposeLoader(yaml.SafeLoader):
    """YAML as Docker Compose reads it: the !override and !reset tags of a second compose file."""


def _compose_tag(loader: yaml.SafeLoader, node: yaml.Node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    return loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_scalar(node)


ComposeLoader.add_constructor("!override", _compose_tag)
ComposeLoader.add_constructor("!reset", _compose_tag)


def mounts(service: dict) -> dict[str, tuple[str, bool]]:
    """A service's short-syntax volumes: target -> (source, read-only)."""
    found = {}
    for volume in service.get("volumes", []):
        source, target, *mode = volume.split(":")
        found[target] = (source, mode == ["ro"])
    return found


def database_url_parts(url: str) -> tuple[list[str], dict[str, str]]:
    """(hosts, query parameters) of a libpq multi-host URL; compose's ${...} taken out first."""
    url = re.sub(r"\$\{[^}]*\}", "PW", url)
    match = re.fullmatch(r"postgres(?:ql)?://[^@/]*@([^/?]+)/[^?]*\?(.*)", url)
    assert match, url
    return [host.rsplit(":", 1)[0] for host in match.group(1).split(",")], dict(parse_qsl(match.group(2)))


def make_certificates(tmp_path: Path, environment: dict[str, str]) -> dict[str, Path]:
    """Runs the image's entrypoint as compose's pg-tls service does (PGAF_ROLE=certificates), with its
    three directories in tmp_path."""
    dirs = {key: tmp_path / key.lower() for key in ("PGAF_TLS_CA_DIR", "PGAF_TLS_DIR", "PGAF_TLS_CLIENT_DIR")}
    for path in dirs.values():
        path.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], **environment, **{key: str(path) for key, path in dirs.items()}}
    done = subprocess.run(["bash", str(PGAF_ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dirs


def verifies(ca: Path, certificate: Path, host: str) -> bool:
    """openssl's check of a server certificate for a host name, as libpq's verify-full makes it."""
    return subprocess.run(["openssl", "verify", "-CAfile", str(ca), "-purpose", "sslserver", "-verify_hostname", host,
                           str(certificate)], capture_output=True, timeout=30).returncode == 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_compose_ha_verifies_postgresqls_certificate_for_every_name(tmp_path):
    """compose.pg-ha.yaml connected with sslmode=require to pg_autoctl's self-signed certificates:
    encrypted, but whoever answered for pg-node1 was believed. Now the one-shot pg-tls makes a CA and a
    certificate for every name clients use; the directory and the migration verify it (verify-full,
    sslrootcert on a read-only mount of the CA's certificate alone), and so do pg_autoctl's own
    connections (PGAF_TLS_DIR on the monitor and both nodes). The CA's key is mounted nowhere else."""
    services = yaml.load(COMPOSE_PG_HA.read_text(), ComposeLoader)["services"]
    urls = {name: database_url_parts(services[name]["environment"]["DATABASE_URL"])
            for name in ("migrate", "user-directory")}
    for name, (_, query) in urls.items():
        assert query["sslmode"] == "verify-full" and query.get("sslrootcert"), (name, query)
    issuer = services["pg-tls"]
    tls_env = issuer["environment"]
    assert tls_env["PGAF_ROLE"] == "certificates" and issuer["restart"] == "no"
    names = tls_env["PGAF_TLS_HOSTNAMES"].split(",")
    written = {target: source for target, (source, _) in mounts(issuer).items()}
    ca_volume, server_volume = written[tls_env["PGAF_TLS_CA_DIR"]], written[tls_env["PGAF_TLS_DIR"]]
    client_volume = written[tls_env["PGAF_TLS_CLIENT_DIR"]]

    for name, (hosts, query) in urls.items():
        rootcert = Path(query["sslrootcert"])
        assert rootcert.name == "ca.crt" and mounts(services[name])[str(rootcert.parent)] == (client_volume, True)
        assert set(hosts) <= set(names), (name, hosts, names)
    for name in ("pg-monitor", "pg-node1", "pg-node2"):
        service, env = services[name], services[name]["environment"]
        assert env["PGAF_TLS_DIR"] == tls_env["PGAF_TLS_DIR"]
        assert mounts(service)[env["PGAF_TLS_DIR"]] == (server_volume, True), name
        assert service["depends_on"]["pg-tls"]["condition"] == "service_completed_successfully"
        assert env["PGAF_HOSTNAME"] in names and env.get("PGAF_MONITOR_HOST", "pg-monitor") in names
    assert [n for n, s in services.items() if any(src == ca_volume for src, _ in mounts(s).values())] == ["pg-tls"]

    # The files pg-tls makes: the certificate is valid for each name and no other, chained to the CA
    # the clients get; the CA's key is in the CA's directory only; the server's key is 0600.
    dirs = make_certificates(tmp_path, {k: v for k, v in tls_env.items() if not k.endswith("_DIR")})
    server, client_ca = dirs["PGAF_TLS_DIR"], dirs["PGAF_TLS_CLIENT_DIR"] / "ca.crt"
    for host in names:
        assert verifies(client_ca, server / "server.crt", host), host
    assert not verifies(client_ca, server / "server.crt", "pg-node3")
    assert sorted(p.name for p in server.iterdir()) == ["ca.crt", "server.crt", "server.key"]
    assert sorted(p.name for p in dirs["PGAF_TLS_CLIENT_DIR"].iterdir()) == ["ca.crt"]
    assert (server / "server.key").stat().st_mode & 0o777 == 0o600
    assert (dirs["PGAF_TLS_CA_DIR"] / "ca.key").is_file()

    # The next `up` keeps them; a name added is issued for, by the same CA.
    certificate = (server / "server.crt").read_bytes()
    make_certificates(tmp_path, {k: v for k, v in tls_env.items() if not k.endswith("_DIR")})
    assert (server / "server.crt").read_bytes() == certificate
    more = tls_env["PGAF_TLS_HOSTNAMES"] + ",pg-node3"
    make_certificates(tmp_path, {"PGAF_ROLE": "certificates", "PGAF_TLS_HOSTNAMES": more})
    assert (server / "server.crt").read_bytes() != certificate
    assert verifies(client_ca, server / "server.crt", "pg-node3")
