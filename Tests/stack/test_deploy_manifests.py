"""Container and orchestration files (issue #7), checked here since no container engine or cluster
runs on the build machines: the Kubernetes manifests (the kustomize base as kustomize renders it)
validate against the Kubernetes API schemas; the kustomization reaches every manifest; the nginx
config and the Ingresses route the same paths to the same services on the same planes, and those
services really serve them (asked directly on their own ports); both Ingresses have TLS; the migration
Job is named per release; compose and Kubernetes run the same commands on the same ports with the same
probes, and every setting they pass is a documented configuration key. The Helm chart is held to the
same checks in test_helm_chart.py, through the helpers here."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import kubernetes_validate
import pytest
import requests
import yaml

from conftest import HTTP_TIMEOUT, REPO_ROOT, parse_duration
from k8s_render import KUBERNETES_VERSION, KUSTOMIZE_BASE as BASE, Rendered, kustomize_build, split_image

NGINX = REPO_ROOT / "deploy" / "nginx" / "tessera.conf.template"
COMPOSE_NGINX = REPO_ROOT / "deploy" / "nginx" / "compose.conf"
COMPOSE = REPO_ROOT / "deploy" / "compose.yaml"
SERVICES = {"token-service": 8081, "user-directory": 8082, "cleanup-worker": 8083}
SECRET_KEYS = {"TESSERA_INTERNAL_SECRET", "TESSERA_ADMIN_TOKEN", "TESSERA_API_KEY", "DATABASE_URL"}


def manifests() -> Rendered:
    """The base as `kubectl apply -k` sends it: (file, object) pairs."""
    return kustomize_build(BASE)


KINDS = {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Job", "Ingress", "ConfigMap",
         "Secret"}


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
    assert len(stages) == 2 and stages[0].endswith("AS build"), stages
    args = {i["value"].split("=", 1)[0]: i["value"].split("=", 1)[1] for i in instructions
            if i["instruction"] == "ARG" and "=" in i["value"]}
    assert args["SWIFT_IMAGE"].startswith("swift:6.3"), args
    runs = " ".join(i["value"] for i in instructions if i["instruction"] == "RUN")
    assert "swift build -c release --static-swift-stdlib" in runs
    for product in [*SERVICES, "tessera"]:
        assert f'"$bin/{product}"' in runs, f"{product} is not copied out of the build stage"
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
