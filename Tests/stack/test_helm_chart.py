"""The Helm chart (deploy/helm/tessera, issue 27), rendered with the venv's helm (no cluster): it lints
strictly; with the default values and with ci/existing-secrets-values.yaml (existing Secrets, a
certificate of one's own, autoscaling off) every object validates against the Kubernetes schemas; it
deploys what the kustomize base deploys (the same commands, ports, probes, resources, environment
keys, budgets and autoscalers, and the image compose runs); its Ingresses have the kustomize base's
paths and route every path as deploy/nginx does, plane by plane; the migration is a pre-install and
pre-upgrade hook Job; Secrets come from the values, are generated, or are someone else's; the
NetworkPolicies, the trusted proxies and the admin Ingress's source ranges follow ingressController,
networkPolicy and ingress.admin, and by default admit only the controller, trust no proxy and let no
admin in."""

from __future__ import annotations

import base64
import re

import pytest
import yaml

from k8s_render import HELM_CHART, Rendered, helm, helm_template, kustomize_build, pod_spec, split_image
from test_deploy_manifests import (COMPOSE, INGRESS_CONTROLLER, KINDS, NAMESPACE, PRIVATE, SECRET_KEYS, SERVICES,
                                   admits_nobody, admitted, check_backend_ports, check_ingress_annotations,
                                   check_ingress_planes, check_ingresses_route_as_nginx, check_network_policies,
                                   check_tls, ingress_routes, part_pods, pod, pod_environment, trusted_proxies,
                                   validate_against_the_schemas)

CUSTOM_VALUES = HELM_CHART / "ci" / "existing-secrets-values.yaml"
HOOK = "helm.sh/hook"
HOOK_POLICY = "helm.sh/hook-delete-policy"
HOOK_WEIGHT = "helm.sh/hook-weight"


def default() -> Rendered:
    return helm_template("tessera")


def custom() -> Rendered:
    return helm_template("auth", (CUSTOM_VALUES,))


def custom_values() -> dict:
    return yaml.safe_load(CUSTOM_VALUES.read_text())


def part_of(name: str) -> str:
    """The part a chart object is, from its name (<fullname>-token-service and so on)."""
    for part in ("token-service", "user-directory", "cleanup-worker"):
        if name.endswith("-" + part):
            return part
    return name


def deployment(docs: Rendered, part: str) -> dict:
    [found] = [d for d in docs.objects("Deployment") if part_of(d["metadata"]["name"]) == part]
    return found


def container(doc: dict) -> dict:
    [only] = pod_spec(doc)["containers"]
    return only


def ingresses(docs: Rendered) -> tuple[dict, dict]:
    """(public, admin): the admin Ingress is the one with the whitelist."""
    admin = [d for d in docs.objects("Ingress")
             if "nginx.ingress.kubernetes.io/whitelist-source-range" in d["metadata"].get("annotations", {})]
    public = [d for d in docs.objects("Ingress") if d not in admin]
    assert len(admin) == 1 and len(public) == 1, docs.objects("Ingress")
    return public[0], admin[0]


def is_hook(doc: dict) -> bool:
    return HOOK in doc["metadata"].get("annotations", {})


# ----------------------------------------------------------------------------------------------
# helm lint, schemas
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [None, CUSTOM_VALUES], ids=["default", "existing-secrets"])
def test_the_chart_lints_strictly(values):
    args = ["lint", "--strict", str(HELM_CHART)] + (["--values", str(values)] if values else [])
    result = helm(*args)
    assert "0 chart(s) failed" in result.stdout, result.stdout
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


@pytest.mark.parametrize("render", [default, custom], ids=["default", "existing-secrets"])
def test_rendered_manifests_validate_against_the_kubernetes_schemas(render):
    docs = render()
    # Autoscaling is off in the custom values and no Secret is the chart's there.
    kinds = KINDS - {"HorizontalPodAutoscaler", "Secret"} if render is custom else KINDS
    validate_against_the_schemas(docs, kinds)
    for origin, doc in render():
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "tessera", origin
        assert doc["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm", origin


# ----------------------------------------------------------------------------------------------
# the same deployment as the kustomize base (and compose)
# ----------------------------------------------------------------------------------------------

def comparable_environment(docs: Rendered, doc: dict) -> dict[str, object]:
    """pod_environment with the release's object names taken out of the values that name them."""
    env = pod_environment(docs, doc)
    if "TESSERA_DIRECTORY_URL" in env:
        env["TESSERA_DIRECTORY_URL"] = re.sub(r"//[a-z0-9-]*user-directory:", "//user-directory:",
                                              env["TESSERA_DIRECTORY_URL"])
    return env


def test_the_chart_deploys_what_the_kustomize_base_deploys():
    """Part by part, with the default values: the same command, ports, probes, resources, security
    contexts, grace period, rollout strategy, scrape annotations, environment (keys, values and
    which Secret keys), key volumes, Service ports, budget and autoscaler as deploy/k8s/base."""
    helm_docs, base = default(), kustomize_build()
    for part, port in SERVICES.items():
        ours, theirs = deployment(helm_docs, part), base.get("Deployment", part)
        mine, other = container(ours), container(theirs)
        for key in ("command", "ports", "startupProbe", "livenessProbe", "readinessProbe", "resources",
                    "securityContext", "volumeMounts"):
            assert mine.get(key) == other.get(key), f"{part}: {key}"
        for key in ("securityContext", "terminationGracePeriodSeconds"):
            assert pod_spec(ours)[key] == pod_spec(theirs)[key], f"{part}: {key}"
        assert ours["spec"]["strategy"] == theirs["spec"]["strategy"], part
        for key, value in theirs["spec"]["template"]["metadata"]["annotations"].items():
            assert ours["spec"]["template"]["metadata"]["annotations"][key] == value, f"{part}: {key}"
        assert comparable_environment(helm_docs, ours) == comparable_environment(base, theirs), part
        # The key volumes mount the chart's key Secrets, as the base's mount its own.
        assert [v["secret"]["defaultMode"] for v in pod_spec(ours).get("volumes", [])] == \
            [v["secret"]["defaultMode"] for v in pod_spec(theirs).get("volumes", [])], part
        [service] = [s for s in helm_docs.objects("Service") if part_of(s["metadata"]["name"]) == part]
        assert service["spec"]["ports"] == base.get("Service", part)["spec"]["ports"], part
        assert service["spec"]["selector"] == ours["spec"]["selector"]["matchLabels"], part
        [budget] = [b for b in helm_docs.objects("PodDisruptionBudget") if part_of(b["metadata"]["name"]) == part]
        assert budget["spec"]["minAvailable"] == base.get("PodDisruptionBudget", part)["spec"]["minAvailable"]
        assert budget["spec"]["selector"] == ours["spec"]["selector"], part
    for part in ("token-service", "user-directory"):
        [scaler] = [h for h in helm_docs.objects("HorizontalPodAutoscaler") if part_of(h["metadata"]["name"]) == part]
        theirs = base.get("HorizontalPodAutoscaler", part)["spec"]
        assert scaler["spec"]["scaleTargetRef"]["name"] == deployment(helm_docs, part)["metadata"]["name"]
        for key in ("minReplicas", "maxReplicas", "metrics"):
            assert scaler["spec"][key] == theirs[key], f"{part}: {key}"
        # With an autoscaler the Deployment leaves the replica count to it (an upgrade does not reset it).
        assert "replicas" not in deployment(helm_docs, part)["spec"]
    assert len(helm_docs.objects("HorizontalPodAutoscaler")) == 2
    [config] = helm_docs.objects("ConfigMap")
    assert config["data"] == base.get("ConfigMap", "tessera-config")["data"]


def test_compose_kustomize_and_helm_run_one_image_on_the_same_ports():
    """Every Tessera container of each (the migration included) runs one image, the same repository in
    all three, and each service listens on the same port."""
    compose = yaml.safe_load(COMPOSE.read_text())
    compose_images = {compose["services"][name]["image"] for name in (*SERVICES, "migrate", "keys")}
    assert compose_images == {"${TESSERA_IMAGE:-tessera:local}"}
    repositories = {"compose": "tessera"}
    for source, docs in (("kustomize", kustomize_build()), ("helm", default()), ("helm custom", custom())):
        images = {c["image"] for d in docs if pod_spec(d[1]) for c in pod_spec(d[1])["containers"]}
        assert len(images) == 1, (source, images)
        repositories[source] = split_image(images.pop())[0]
        for part, port in SERVICES.items():
            doc = (docs.get("Deployment", part) if source == "kustomize" else deployment(docs, part))
            assert container(doc)["ports"][0]["containerPort"] == port, (source, part)
            assert pod_environment(docs, doc)["TESSERA_HTTP_PORT"] == str(port), (source, part)
            assert str(port) == compose["services"][part]["environment"]["TESSERA_HTTP_PORT"]
    assert repositories == {"compose": "tessera", "kustomize": "tessera", "helm": "tessera",
                            "helm custom": custom_values()["image"]["repository"]}
    assert split_image(container(deployment(default(), "token-service"))["image"])[1] == \
        yaml.safe_load((HELM_CHART / "Chart.yaml").read_text())["appVersion"]


def test_compose_settings_reach_the_chart_too():
    """Every setting compose makes for a service, the chart makes (its env or its ConfigMap)."""
    compose = yaml.safe_load(COMPOSE.read_text())
    for part in SERVICES:
        env = pod_environment(default(), deployment(default(), part))
        missing = set(compose["services"][part]["environment"]) - set(env)
        assert not missing, f"{part}: compose sets {sorted(missing)}, the chart does not"


# ----------------------------------------------------------------------------------------------
# Ingresses
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("render", [default, custom], ids=["default", "existing-secrets"])
def test_the_ingresses_have_the_paths_of_the_kustomize_base(render):
    base = kustomize_build()
    public, admin = ingresses(render())
    assert ingress_routes(public, part_of) == ingress_routes(base.get("Ingress", "tessera"))
    assert ingress_routes(admin, part_of) == ingress_routes(base.get("Ingress", "tessera-admin"))
    services = {s["metadata"]["name"] for s in render().objects("Service")}
    for ingress in (public, admin):
        for path in ingress["spec"]["rules"][0]["http"]["paths"]:
            assert path["backend"]["service"]["name"] in services, path
            assert path["pathType"] == "ImplementationSpecific"
    check_backend_ports(ingress_routes(public, part_of), ingress_routes(admin, part_of))
    check_ingress_annotations(public, admin)
    assert public["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"] == "32m"


def test_the_ingresses_serve_each_route_on_its_plane_as_nginx_does(stack):
    """The services' own route tables and deploy/nginx, as for the kustomize base
    (test_deploy_manifests.py): every route on its plane only, every path as nginx routes it."""
    for render in (default, custom):
        public, admin = ingresses(render())
        check_ingress_planes(stack, ingress_routes(public, part_of), ingress_routes(admin, part_of))
        check_ingresses_route_as_nginx(stack, ingress_routes(public, part_of), ingress_routes(admin, part_of))


def test_tls_and_hosts_per_plane():
    public, admin = ingresses(default())
    check_tls(public, "tessera-tls")
    check_tls(admin, "tessera-admin-tls")
    assert public["spec"]["rules"][0]["host"] == "auth.example.com"
    assert admin["spec"]["rules"][0]["host"] == "admin.tessera.example"
    values = custom_values()["ingress"]
    public, admin = ingresses(custom())
    check_tls(public, values["public"]["tls"]["secretName"])
    assert "tls" not in admin["spec"], admin["spec"]
    assert admin["spec"]["rules"][0]["host"] == values["admin"]["host"]
    assert admin["metadata"]["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"] == \
        values["admin"]["allowedSourceRanges"]
    assert public["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "letsencrypt"
    # A public plane for any host: the TLS block then names no host either.
    public, _ = ingresses(helm_template("tessera", settings=("ingress.public.host=",)))
    assert "host" not in public["spec"]["rules"][0]
    assert public["spec"]["tls"] == [{"secretName": "tessera-tls"}]


@pytest.mark.parametrize("settings,message", [
    (("ingress.admin.host=",), "ingress.admin.host is required"),
    (("ingress.admin.host=auth.example.com",), "must differ from ingress.public.host"),
], ids=["no-admin-host", "shared-host"])
def test_the_admin_plane_needs_a_host_of_its_own(settings, message):
    args = ["template", "tessera", str(HELM_CHART)] + [a for s in settings for a in ("--set", s)]
    result = helm(*args, check=False)
    assert result.returncode != 0 and message in result.stderr, result.stderr


WHITELIST = "nginx.ingress.kubernetes.io/whitelist-source-range"


def test_the_admin_plane_admits_nobody_until_its_source_ranges_are_set():
    """The default used to be 10.0.0.0/8: also where every client comes from when the controller's
    load balancer replaces client addresses with a node's (externalTrafficPolicy: Cluster). Now no
    address is admitted until ingress.admin.allowedSourceRanges names the admins' networks."""
    _, admin = ingresses(default())
    assert admits_nobody(admin["metadata"]["annotations"][WHITELIST])
    assert yaml.safe_load((HELM_CHART / "values.yaml").read_text())["ingress"]["admin"]["allowedSourceRanges"] == ""
    ranges = "203.0.113.0/24,10.8.0.0/16"
    _, admin = ingresses(helm_template("tessera", settings=(
        "ingress.admin.allowedSourceRanges=" + ranges.replace(",", "\\,"),)))
    assert admin["metadata"]["annotations"][WHITELIST] == ranges and not admits_nobody(ranges)


# ----------------------------------------------------------------------------------------------
# who may call the services: NetworkPolicies and trusted proxies (issue 35)
# ----------------------------------------------------------------------------------------------

# Another release's token service in the same namespace is a stranger to this release's directory.
OTHER_RELEASE = pod(NAMESPACE, {"app.kubernetes.io/name": "token-service", "app.kubernetes.io/instance": "other"})


@pytest.mark.parametrize("render", [default, custom], ids=["default", "existing-secrets"])
def test_network_policies_admit_only_the_flows_tessera_needs(render):
    """The kustomize base's flows (test_deploy_manifests.check_network_policies), per release."""
    check_network_policies(render(), part_of, strangers=(OTHER_RELEASE,))


def values_file(tmp_path, name: str, text: str) -> tuple:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return (path,)


def test_the_network_policies_follow_the_values(tmp_path):
    """The controller's pods (namespace and labels, or addresses), Prometheus, PostgreSQL's address and
    more egress come from the values; without the controller's pods nothing renders (an empty `from`
    would admit everyone); networkPolicy.enabled=false renders no policy."""
    docs = helm_template("tessera", values_file(tmp_path, "controller", """
ingressController:
  peers:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: edge}}
      podSelector: {matchLabels: {app: haproxy}}
networkPolicy:
  database:
    to: [{ipBlock: {cidr: 10.20.0.0/16}}]
"""))
    check_network_policies(docs, part_of, strangers=(OTHER_RELEASE,), controller=pod("edge", {"app": "haproxy"}))
    policies, pods = docs.objects("NetworkPolicy"), part_pods(docs, part_of)
    assert admitted(policies, "egress", pods["user-directory"], PRIVATE, 5432, "TCP")
    elsewhere = {"namespace": None, "labels": {}, "ip": "192.168.1.1"}
    assert not admitted(policies, "egress", pods["user-directory"], elsewhere, 5432, "TCP")

    host_network = {"namespace": None, "labels": {}, "ip": "10.0.0.7"}
    prometheus = pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
    docs = helm_template("tessera", values_file(tmp_path, "peers", """
ingressController:
  peers: [{ipBlock: {cidr: 10.0.0.0/24}}]
networkPolicy:
  metricsFrom: []
"""))
    policies, pods = docs.objects("NetworkPolicy"), part_pods(docs, part_of)
    assert admitted(policies, "ingress", pods["token-service"], host_network, 8081, "TCP")
    assert not admitted(policies, "ingress", pods["token-service"], INGRESS_CONTROLLER, 8081, "TCP")
    assert not any(admitted(policies, "ingress", pods["cleanup-worker"], peer, 8083, "TCP")
                   for peer in (INGRESS_CONTROLLER, host_network, prometheus))

    collector = pod("observability", {"app": "otel-collector"})
    docs = helm_template("tessera", values_file(tmp_path, "egress", """
networkPolicy:
  extraEgress:
    - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: observability}}}]
      ports: [{port: 4318}]
"""))
    policies, pods = docs.objects("NetworkPolicy"), part_pods(docs, part_of)
    assert all(admitted(policies, "egress", p, collector, 4318, "TCP") for p in pods.values())
    validate_against_the_schemas(docs)

    assert not helm_template("tessera", settings=("networkPolicy.enabled=false",)).objects("NetworkPolicy")
    for setting in ("ingressController.peers=null", "ingressController.peers={}"):
        result = helm("template", "tessera", str(HELM_CHART), "--set", setting, check=False)
        assert result.returncode != 0 and "ingressController.peers is required" in result.stderr, result.stderr


def test_no_proxy_is_trusted_until_the_controllers_addresses_are_given():
    """TESSERA_TRUSTED_PROXIES used to be every private range: any pod could then claim any client
    address in X-Forwarded-For and get around the per-address and admin limits. Now it is
    ingressController.addresses, empty by default (no proxy believed), in the ConfigMap and the
    migration alike; the old place, config.TESSERA_TRUSTED_PROXIES, is refused when it disagrees."""
    assert trusted_proxies(default()) == []
    assert trusted_proxies(custom()) == custom_values()["ingressController"]["addresses"]
    docs = helm_template("tessera", settings=("ingressController.addresses={10.42.7.0/24,10.42.9.12}",))
    assert trusted_proxies(docs) == ["10.42.7.0/24", "10.42.9.12"]
    [job] = docs.objects("Job")
    env = {e["name"]: e.get("value") for e in container(job)["env"]}
    assert env["TESSERA_TRUSTED_PROXIES"] == "10.42.7.0/24,10.42.9.12"
    assert deployment(docs, "token-service")["spec"]["template"]["metadata"]["annotations"]["checksum/config"] != \
        deployment(default(), "token-service")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    result = helm("template", "tessera", str(HELM_CHART), "--set", "config.TESSERA_TRUSTED_PROXIES=10.0.0.0/8",
                  check=False)
    assert result.returncode != 0 and "set ingressController.addresses instead" in result.stderr, result.stderr


# ----------------------------------------------------------------------------------------------
# the migration hook
# ----------------------------------------------------------------------------------------------

def test_the_migration_is_a_pre_install_and_pre_upgrade_hook_job():
    """`user-directory migrate` runs before the release's objects are created or changed. Hooks run
    before the release's Secret exists, so the Job reads DATABASE_URL from a hook Secret created just
    before it (a lower weight); both are replaced by the next release and deleted on success. Nothing
    else is a hook."""
    docs = default()
    [job] = docs.objects("Job")
    annotations = job["metadata"]["annotations"]
    assert annotations[HOOK] == "pre-install,pre-upgrade"
    assert annotations[HOOK_POLICY] == "before-hook-creation,hook-succeeded"
    [migrate] = pod_spec(job)["containers"]
    assert migrate["command"] == ["user-directory", "migrate"]
    assert migrate["image"] == container(deployment(docs, "user-directory"))["image"]
    assert pod_spec(job)["restartPolicy"] == "OnFailure"
    assert job["spec"]["ttlSecondsAfterFinished"] > 0 and job["spec"]["backoffLimit"] > 0
    assert "envFrom" not in migrate, "a hook cannot read the release's ConfigMap on a first install"
    env = {e["name"]: e for e in migrate["env"]}
    [config] = docs.objects("ConfigMap")
    for key, value in config["data"].items():
        assert env[key]["value"] == value, key
    reference = env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    hook_secret = docs.get("Secret", reference["name"])
    assert is_hook(hook_secret) and hook_secret["metadata"]["annotations"][HOOK] == annotations[HOOK]
    assert hook_secret["metadata"]["annotations"][HOOK_POLICY] == annotations[HOOK_POLICY]
    assert int(hook_secret["metadata"]["annotations"][HOOK_WEIGHT]) < int(annotations[HOOK_WEIGHT])
    assert [d for d in docs.objects() if is_hook(d)] == [hook_secret, job]
    assert job["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    # With the release's secrets elsewhere, the Job reads them there, and the chart makes no Secret.
    [job] = custom().objects("Job")
    assert job["metadata"]["annotations"][HOOK] == "pre-install,pre-upgrade"
    [migrate] = pod_spec(job)["containers"]
    reference = next(e for e in migrate["env"] if e["name"] == "DATABASE_URL")["valueFrom"]["secretKeyRef"]
    assert reference == {"name": custom_values()["secrets"]["existingSecret"], "key": "DATABASE_URL"}
    # And it can be left to the operator.
    assert not helm_template("tessera", settings=("migration.enabled=false",)).objects("Job")


# ----------------------------------------------------------------------------------------------
# Secrets
# ----------------------------------------------------------------------------------------------

def decoded(secret: dict) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


def secret_references(docs: Rendered) -> set[str]:
    """The Secrets the pods read: env references and volumes."""
    names = set()
    for _, doc in docs:
        pod = pod_spec(doc)
        if not pod:
            continue
        for c in pod["containers"]:
            names |= {e["valueFrom"]["secretKeyRef"]["name"] for e in c.get("env", []) if "valueFrom" in e}
        names |= {v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v}
    return names


def test_the_chart_makes_the_secrets_from_the_values_or_generates_them():
    docs = default()
    chart_secrets = {d["metadata"]["name"] for d in docs.objects("Secret") if not is_hook(d)}
    assert chart_secrets == {"tessera-secrets", "tessera-signing-keys", "tessera-session-cookie-keys"}
    assert secret_references(docs) == chart_secrets | {"tessera-migrate"}
    generated = decoded(docs.get("Secret", "tessera-secrets"))
    # No database in the values: no DATABASE_URL (the pods name the missing key); the rest generated.
    assert set(generated) == SECRET_KEYS - {"DATABASE_URL"}
    for key, value in generated.items():
        if key == "TESSERA_MFA_KEYS":
            # One sealing key: 32 random bytes in base64, as the directory reads it.
            assert len(base64.b64decode(value, validate=True)) == 32, value
        else:
            assert re.fullmatch(r"[A-Za-z0-9]{64}", value), key
    assert len(set(generated.values())) == 4
    assert decoded(docs.get("Secret", "tessera-migrate")) == {}

    url = "postgres://tessera:pw@db.internal:5432/tessera?sslmode=verify-full"
    mfa_keys = base64.b64encode(b"n" * 32).decode() + "," + base64.b64encode(b"o" * 32).decode()
    pem = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
    docs = helm_template("tessera", settings=(
        "secrets.internalSecret=" + "a" * 64, "secrets.adminToken=" + "b" * 64, "secrets.apiKey=key-1",
        "secrets.mfaKeys=" + mfa_keys.replace(",", "\\,"),
        "secrets.databaseUrl=" + url.replace(",", "\\,"), "signingKeys.files.k1\\.pem=" + pem))
    assert decoded(docs.get("Secret", "tessera-secrets")) == {
        "TESSERA_INTERNAL_SECRET": "a" * 64, "TESSERA_ADMIN_TOKEN": "b" * 64, "TESSERA_API_KEY": "key-1",
        "TESSERA_MFA_KEYS": mfa_keys, "DATABASE_URL": url}
    assert decoded(docs.get("Secret", "tessera-migrate")) == {"DATABASE_URL": url}
    assert decoded(docs.get("Secret", "tessera-signing-keys")) == {"k1.pem": pem}
    assert decoded(docs.get("Secret", "tessera-session-cookie-keys")) == {}


def test_existing_secrets_are_used_and_none_is_made():
    values = custom_values()
    docs = custom()
    assert not docs.objects("Secret")
    assert secret_references(docs) == {values["secrets"]["existingSecret"], values["signingKeys"]["existingSecret"],
                                       values["sessionCookieKeys"]["existingSecret"]}
    for part in SERVICES:
        env = pod_environment(docs, deployment(docs, part))
        assert {k for k, v in env.items() if isinstance(v, tuple)} == \
            {k for k, v in pod_environment(default(), deployment(default(), part)).items() if isinstance(v, tuple)}
    volumes = {v["name"]: v["secret"]["secretName"] for v in pod_spec(deployment(docs, "token-service"))["volumes"]}
    assert volumes == {"signing-keys": values["signingKeys"]["existingSecret"],
                       "session-cookie-keys": values["sessionCookieKeys"]["existingSecret"]}


# ----------------------------------------------------------------------------------------------
# per-plane settings
# ----------------------------------------------------------------------------------------------

def test_replicas_budgets_resources_and_environment_follow_the_values():
    values = custom_values()
    docs = custom()
    assert not docs.objects("HorizontalPodAutoscaler")
    for part, key in (("token-service", "tokenService"), ("user-directory", "userDirectory"),
                      ("cleanup-worker", "cleanupWorker")):
        doc = deployment(docs, part)
        assert doc["spec"]["replicas"] == values[key]["replicaCount"], part
        assert pod_spec(doc)["imagePullSecrets"] == values["imagePullSecrets"], part
        assert container(doc)["image"] == f"{values['image']['repository']}:{values['image']['tag']}"
        assert pod_environment(docs, doc)["SMTP_URL"] == values["config"]["SMTP_URL"]
        assert doc["metadata"]["name"] == f"auth-tessera-{part}"
    assert {part_of(b["metadata"]["name"]) for b in docs.objects("PodDisruptionBudget")} == \
        {"token-service", "user-directory"}
    assert pod_environment(docs, deployment(docs, "user-directory"))["TESSERA_HASH_THREADS"] == "2"
    assert "TESSERA_HASH_THREADS" not in pod_environment(docs, deployment(docs, "token-service"))
    # The token service and the worker find the release's directory.
    for part in ("token-service", "cleanup-worker"):
        assert pod_environment(docs, deployment(docs, part))["TESSERA_DIRECTORY_URL"] == \
            "http://auth-tessera-user-directory:8082"
    # Per plane: an autoscaler of its own with its own bounds.
    docs = helm_template("tessera", settings=(
        "tokenService.autoscaling.maxReplicas=30", "tokenService.autoscaling.targetCPUUtilizationPercentage=60",
        "userDirectory.autoscaling.minReplicas=3", "userDirectory.resources.limits.memory=512Mi",
        "metrics.podAnnotations=false"))
    scalers = {part_of(h["metadata"]["name"]): h["spec"] for h in docs.objects("HorizontalPodAutoscaler")}
    assert (scalers["token-service"]["minReplicas"], scalers["token-service"]["maxReplicas"]) == (2, 30)
    assert scalers["token-service"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
    assert (scalers["user-directory"]["minReplicas"], scalers["user-directory"]["maxReplicas"]) == (3, 10)
    assert scalers["user-directory"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    assert container(deployment(docs, "user-directory"))["resources"]["limits"]["memory"] == "512Mi"
    for part in SERVICES:
        annotations = deployment(docs, part)["spec"]["template"]["metadata"]["annotations"]
        assert not any(key.startswith("prometheus.io/") for key in annotations), part


def test_the_directory_and_the_migration_can_mount_postgresqls_ca(tmp_path):
    """DATABASE_URL with sslmode=verify-full&sslrootcert=FILE (a managed database's CA, or a
    pg_auto_failover formation's own) needs FILE in both pods that connect: userDirectory.extraVolumes
    and extraVolumeMounts reach the directory and the migration Job, and no other part."""
    docs = helm_template("tessera", values_file(tmp_path, "ca", """
userDirectory:
  extraVolumes: [{name: pg-ca, secret: {secretName: pg-ca}}]
  extraVolumeMounts: [{name: pg-ca, mountPath: /etc/tessera/pg-tls, readOnly: true}]
"""))
    validate_against_the_schemas(docs)
    [job] = docs.objects("Job")
    mount = {"name": "pg-ca", "mountPath": "/etc/tessera/pg-tls", "readOnly": True}
    for doc in (deployment(docs, "user-directory"), job):
        assert pod_spec(doc)["volumes"] == [{"name": "pg-ca", "secret": {"secretName": "pg-ca"}}]
        assert container(doc)["volumeMounts"] == [mount]
    for part in ("token-service", "cleanup-worker"):
        assert "pg-ca" not in str(pod_spec(deployment(docs, part)))


def test_a_config_change_rolls_the_pods():
    """The pod template carries a checksum of the ConfigMap's values (envFrom is read at start only)."""
    def checksum(docs: Rendered) -> str:
        return deployment(docs, "token-service")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert checksum(default()) != checksum(helm_template("tessera", settings=("config.LOG_LEVEL=debug",)))
    assert checksum(default()) == checksum(helm_template("tessera"))


# ----------------------------------------------------------------------------------------------
# the chart's own documentation
# ----------------------------------------------------------------------------------------------

def leaf_keys(values: dict, prefix: str = "") -> list[str]:
    keys = []
    for key, value in values.items():
        if isinstance(value, dict) and value and key not in ("config", "resources"):
            keys += leaf_keys(value, f"{prefix}{key}.")
        else:
            keys.append(prefix + key)
    return keys


def test_the_chart_readme_lists_every_value():
    """Each value of values.yaml is in the README's table by its full name, or under a row for its
    whole section (`userDirectory.*`)."""
    readme = (HELM_CHART / "README.md").read_text()
    names = set()
    for line in readme.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([A-Za-z.*]+)`", line.split("|")[1]))
    values = yaml.safe_load((HELM_CHART / "values.yaml").read_text())
    for key in leaf_keys(values):
        sections = {".".join(key.split(".")[:n]) + ".*" for n in range(1, key.count(".") + 1)}
        assert key in names or sections & names, f"{key} is not in deploy/helm/tessera/README.md's table"
    assert (HELM_CHART / "templates" / "NOTES.txt").is_file()


def test_the_values_in_deploy_readme_render(tmp_path):
    """deploy/README.md's `tessera-values.yaml` (existing Secrets, hosts, TLS) renders as it says."""
    readme = (HELM_CHART.parents[1] / "README.md").read_text()
    section = readme[readme.index("## Helm\n"):]
    [block] = re.findall(r"`tessera-values.yaml`:\n\n```yaml\n(.*?)```", section, re.S)
    path = tmp_path / "tessera-values.yaml"
    path.write_text(block)
    values = yaml.safe_load(block)
    docs = helm_template("tessera", (path,))
    validate_against_the_schemas(docs, KINDS - {"Secret"})
    assert secret_references(docs) == {values["secrets"]["existingSecret"], values["signingKeys"]["existingSecret"],
                                       values["sessionCookieKeys"]["existingSecret"]}
    public, admin = ingresses(docs)
    check_tls(public, values["ingress"]["public"]["tls"]["secretName"])
    check_tls(admin, values["ingress"]["admin"]["tls"]["secretName"])
    assert "https://" + public["spec"]["rules"][0]["host"] == values["config"]["TESSERA_PUBLIC_URL"]
