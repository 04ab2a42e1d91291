{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "agentmesh.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* A component's object name: <fullname>-<component>, lower case. */}}
{{- define "agentmesh.name" -}}
{{- printf "%s-%s" (include "agentmesh.fullname" .root) (lower .component) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* An agent entry's component: agent-<name>, and -v<version> ('.'
written '-') when the entry runs one version of it beside others. */}}
{{- define "agentmesh.agentComponent" -}}
{{- if .version -}}
{{- printf "agent-%s-v%s" .name (replace "." "-" (toString .version)) -}}
{{- else -}}
{{- printf "agent-%s" .name -}}
{{- end -}}
{{- end -}}

{{- define "agentmesh.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ lower .component }}
{{- end -}}

{{- define "agentmesh.labels" -}}
{{ include "agentmesh.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The credentials Secret of an identity. */}}
{{- define "agentmesh.credsSecret" -}}
{{- printf "%s-creds-%s" (include "agentmesh.fullname" .root) (lower .identity) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The environment of every process; .identity names its credentials. */}}
{{- define "agentmesh.env" -}}
- name: NATS_URL
  value: {{ .root.Values.nats.url | quote }}
- name: AGENTMESH_PREFIX
  value: {{ .root.Values.prefix | quote }}
- name: AGENTMESH_CONNECT_WAIT
  value: {{ .root.Values.nats.connectWait | quote }}
{{- if .root.Values.nats.jsReplicas }}
- name: AGENTMESH_JS_REPLICAS
  value: {{ .root.Values.nats.jsReplicas | quote }}
{{- end }}
{{- if .metrics }}
- name: AGENTMESH_METRICS_ADDR
  value: {{ printf ":%v" .root.Values.metrics.port | quote }}
{{- end }}
{{- if .root.Values.secure.enabled }}
- name: NATS_CREDS
  value: /var/run/agentmesh/creds/creds
- name: NATS_CA
  value: /var/run/agentmesh/tls/ca.pem
{{- end }}
{{- range $k, $v := .root.Values.env }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}

{{- define "agentmesh.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .root.Values.secure.enabled }}
- name: creds
  mountPath: /var/run/agentmesh/creds
  readOnly: true
- name: tls
  mountPath: /var/run/agentmesh/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "agentmesh.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if .root.Values.secure.enabled }}
- name: creds
  secret:
    secretName: {{ include "agentmesh.credsSecret" . }}
    defaultMode: 0400
- name: tls
  secret:
    secretName: {{ .root.Values.secure.caSecret }}
    defaultMode: 0444
{{- end }}
{{- end -}}

{{/* Pod annotations: Prometheus scraping of /metrics on the metrics port. */}}
{{- define "agentmesh.podAnnotations" -}}
{{- if .Values.metrics.scrape }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* Liveness on /healthz and readiness on /readyz of port .port. */}}
{{- define "agentmesh.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: {{ .port }}}
  periodSeconds: {{ .root.Values.probes.periodSeconds }}
  failureThreshold: {{ .root.Values.probes.failureThreshold }}
readinessProbe:
  httpGet: {path: /readyz, port: {{ .port }}}
  periodSeconds: {{ .root.Values.probes.periodSeconds }}
  failureThreshold: {{ .root.Values.probes.failureThreshold }}
{{- end -}}

{{/* The pod spec of a process: .component, .identity, .args, .replicas. */}}
{{- define "agentmesh.podSpec" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
{{- toYaml .root.Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ .root.Values.terminationGracePeriodSeconds }}
containers:
  - name: {{ lower .component }}
    image: {{ printf "%s:%s" .root.Values.image.repository .root.Values.image.tag | quote }}
    imagePullPolicy: {{ .root.Values.image.pullPolicy }}
    args:
    {{- toYaml .args | nindent 6 }}
    env:
    {{- include "agentmesh.env" . | nindent 6 }}
    {{- with .root.Values.envFrom }}
    envFrom:
    {{- toYaml . | nindent 6 }}
    {{- end }}
    ports:
      - name: {{ .portName }}
        containerPort: {{ .port }}
    {{- include "agentmesh.probes" . | nindent 4 }}
    securityContext:
    {{- toYaml .root.Values.securityContext | nindent 6 }}
    {{- with .resources }}
    resources:
    {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
    {{- include "agentmesh.volumeMounts" . | nindent 6 }}
volumes:
{{- include "agentmesh.volumes" . | nindent 2 }}
{{- end -}}
