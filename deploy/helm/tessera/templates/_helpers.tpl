{{/* Names. The fullname prefixes every object, so two releases can share a namespace. */}}
{{- define "tessera.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tessera.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The object name of a part: (list $ "token-service"). */}}
{{- define "tessera.componentName" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "tessera.fullname" $root | trunc 40 | trimSuffix "-") (index . 1) }}
{{- end }}

{{/*
Labels: (list $ "token-service"). app.kubernetes.io/name is the part's name, as in the kustomize
base, so dashboards and alerts select the same pods whichever way Tessera was deployed.
*/}}
{{- define "tessera.selectorLabels" -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
{{- end }}

{{- define "tessera.labels" -}}
{{- $root := index . 0 }}
{{- include "tessera.selectorLabels" . }}
app.kubernetes.io/part-of: tessera
app.kubernetes.io/version: {{ include "tessera.tag" $root | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tessera.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "tessera.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "tessera.tag" .) }}
{{- end }}

{{/*
TESSERA_TRUSTED_PROXIES of the ConfigMap (and of the migration, inline): ingressController.addresses,
comma-separated. The ConfigMap takes it from there, not from config, where it must be absent or say
the same (values written for an older chart set it there).
*/}}
{{- define "tessera.trustedProxies" -}}
{{- $proxies := join "," .Values.ingressController.addresses }}
{{- if and (hasKey .Values.config "TESSERA_TRUSTED_PROXIES") (ne (toString .Values.config.TESSERA_TRUSTED_PROXIES) $proxies) }}
{{- fail "config.TESSERA_TRUSTED_PROXIES: set ingressController.addresses instead (a list of the ingress controller's addresses or CIDR blocks)" }}
{{- end }}
{{- $proxies }}
{{- end }}

{{/* Objects the parts refer to. */}}
{{- define "tessera.configName" -}}
{{- include "tessera.componentName" (list . "config") }}
{{- end }}

{{- define "tessera.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "tessera.componentName" (list . "secrets")) }}
{{- end }}

{{- define "tessera.signingKeysName" -}}
{{- .Values.signingKeys.existingSecret | default (include "tessera.componentName" (list . "signing-keys")) }}
{{- end }}

{{- define "tessera.sessionCookieKeysName" -}}
{{- .Values.sessionCookieKeys.existingSecret | default (include "tessera.componentName" (list . "session-cookie-keys")) }}
{{- end }}

{{- define "tessera.directoryURL" -}}
{{- printf "http://%s:8082" (include "tessera.componentName" (list . "user-directory")) }}
{{- end }}

{{/*
The chart's Secret as it is in the cluster (upgrades keep generated values), or an empty map when
there is none or no cluster to ask (helm template, helm lint).
*/}}
{{- define "tessera.liveSecretData" -}}
{{- $live := lookup "v1" "Secret" .Release.Namespace (include "tessera.componentName" (list . "secrets")) }}
{{- toJson (($live | default dict).data | default dict) }}
{{- end }}

{{/*
DATABASE_URL, base64-encoded, or "" when neither the values nor the live Secret have one:
secrets.databaseUrl, else the one the release's Secret already holds.
*/}}
{{- define "tessera.databaseURLData" -}}
{{- $live := include "tessera.liveSecretData" . | fromJson }}
{{- if .Values.secrets.databaseUrl }}
{{- .Values.secrets.databaseUrl | b64enc }}
{{- else if hasKey $live "DATABASE_URL" }}
{{- index $live "DATABASE_URL" }}
{{- end }}
{{- end }}

{{/* Pod and container hardening, as in the kustomize base: non-root, read-only root filesystem. */}}
{{- define "tessera.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
{{- end }}

{{- define "tessera.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
{{- end }}

{{/* Startup and liveness on /healthz, readiness on /readyz, on the container's port `http`. */}}
{{- define "tessera.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 1
  failureThreshold: 30
livenessProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 10
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 5
  failureThreshold: 2
{{- end }}

{{/*
Pod annotations: (list $ port partValues). Prometheus scraping, and a roll when the ConfigMap's values
change. (No checksum of the secrets: a pod's annotations are readable where Secrets are not, and a
hash of a weak password can be searched. After changing a secret, restart the Deployments.)
*/}}
{{- define "tessera.podAnnotations" -}}
{{- $root := index . 0 }}
{{- $config := printf "%s %s" (toJson $root.Values.config) (include "tessera.trustedProxies" $root) }}
{{- $annotations := dict "checksum/config" ($config | sha256sum) }}
{{- if $root.Values.metrics.podAnnotations }}
{{- $_ := set $annotations "prometheus.io/scrape" "true" }}
{{- $_ := set $annotations "prometheus.io/port" (index . 1 | toString) }}
{{- $_ := set $annotations "prometheus.io/path" "/metrics" }}
{{- end }}
{{- toYaml (merge (deepCopy ((index . 2).podAnnotations | default dict)) $annotations) }}
{{- end }}

{{/* Scheduling and pull secrets of a part: (list $ partValues). */}}
{{- define "tessera.podScheduling" -}}
{{- $root := index . 0 }}
{{- $part := index . 1 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* An env entry read from the release's Secret: (list $ "KEY"). */}}
{{- define "tessera.secretEnv" -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef: {name: {{ include "tessera.secretName" (index . 0) }}, key: {{ index . 1 }}}
{{- end }}

{{/* A part's PodDisruptionBudget, when enabled: (list $ "token-service" partValues). */}}
{{- define "tessera.disruptionBudget" -}}
{{- $root := index . 0 }}
{{- $part := index . 2 }}
{{- if $part.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "tessera.componentName" (list $root (index . 1)) }}
  labels:
    {{- include "tessera.labels" (list $root (index . 1)) | nindent 4 }}
spec:
  minAvailable: {{ $part.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels:
      {{- include "tessera.selectorLabels" (list $root (index . 1)) | nindent 6 }}
{{- end }}
{{- end }}

{{/* A part's CPU HorizontalPodAutoscaler, when enabled: (list $ "token-service" partValues). */}}
{{- define "tessera.autoscaler" -}}
{{- $root := index . 0 }}
{{- $part := index . 2 }}
{{- $name := include "tessera.componentName" (list $root (index . 1)) }}
{{- if $part.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $name }}
  labels:
    {{- include "tessera.labels" (list $root (index . 1)) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $name }}
  minReplicas: {{ $part.autoscaling.minReplicas }}
  maxReplicas: {{ $part.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: {{ $part.autoscaling.targetCPUUtilizationPercentage }}}
{{- end }}
{{- end }}

{{/*
One NetworkPolicy rule, as a YAML list of one: (list "from"|"to" peers ports protocols). Every port
for every protocol; no peers: any address (on those ports).
*/}}
{{- define "tessera.networkRule" -}}
{{- $ports := list }}
{{- range $port := index . 2 }}
{{- range $protocol := index $ 3 }}
{{- $ports = append $ports (dict "protocol" $protocol "port" $port) }}
{{- end }}
{{- end }}
{{- $rule := dict "ports" $ports }}
{{- with index . 1 }}
{{- $_ := set $rule (index $ 0) . }}
{{- end }}
{{- toYaml (list $rule) }}
{{- end }}
