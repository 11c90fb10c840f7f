{{/* The release's base name: the release name when it already says noded, else <release>-noded. */}}
{{- define "noded.fullname" -}}
{{- if contains "noded" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-noded" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "noded.labels" -}}
app.kubernetes.io/name: noded
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: noded
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
noded.io/network: {{ .Values.chainId }}
{{- end -}}

{{/* Selector labels of one component: include "noded.selector" (dict "root" $ "component" "validator") */}}
{{- define "noded.selector" -}}
app.kubernetes.io/name: noded
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "noded.image" -}}
{{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end -}}

{{- define "noded.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "noded.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* The initContainer that prepares the home: include "noded.initHome" (dict "root" $ "keys" true) */}}
{{- define "noded.initHome" -}}
- name: init-home
  image: {{ include "noded.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command: ["/bin/sh", "/etc/noded/init/init-home.sh"]
  envFrom:
    - configMapRef:
        name: {{ include "noded.fullname" .root }}-env
  env:
    - name: NODED_HOME
      value: /data
    - name: NODED_CONFIG_DIR
      value: /etc/noded/config
    {{- if .keys }}
    - name: NODED_KEYS_DIR
      value: /etc/noded/keys
    {{- end }}
    - name: NODED_MONIKER
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
  volumeMounts:
    - { name: data, mountPath: /data }
    - { name: config, mountPath: /etc/noded/config, readOnly: true }
    - { name: init, mountPath: /etc/noded/init, readOnly: true }
    {{- if .keys }}
    - { name: keys, mountPath: /etc/noded/keys, readOnly: true }
    {{- end }}
    - { name: tmp, mountPath: /tmp }
  securityContext:
    {{- include "noded.containerSecurityContext" .root | nindent 4 }}
  resources:
    {{- toYaml .root.Values.initContainer.resources | nindent 4 }}
{{- end -}}

{{/* Pod-template annotations: a config change rolls the pods. */}}
{{- define "noded.checksums" -}}
checksum/config: {{ include "noded.configToml" . | sha256sum }}-{{ include "noded.appToml" . | sha256sum }}
{{- end -}}

{{- define "noded.configToml" -}}
{{ .Values.config.configToml | default (.Files.Get "files/config.toml") }}
{{- end -}}

{{- define "noded.appToml" -}}
{{ .Values.config.appToml | default (.Files.Get "files/app.toml") }}
{{- end -}}

{{/* Rules across values that values.schema.json cannot express. */}}
{{- define "noded.checkValues" -}}
{{- $a := .Values.rpcEdge.autoscaling -}}
{{- if and $a.enabled (gt $a.minReplicas $a.maxReplicas) -}}
{{- fail (printf "rpcEdge.autoscaling: minReplicas (%v) must not exceed maxReplicas (%v)" $a.minReplicas $a.maxReplicas) -}}
{{- end -}}
{{- $n := .Values.security.natsLogins -}}
{{- if and $n.enabled (or (eq $n.executorSecret $n.stateStoreSecret) (eq $n.executorSecret $n.rpcEdgeSecret) (eq $n.stateStoreSecret $n.rpcEdgeSecret)) -}}
{{- fail "security.natsLogins: executorSecret, stateStoreSecret and rpcEdgeSecret must be three different Secrets (each holds one service's password)" -}}
{{- end -}}
{{- end -}}

{{/* NATS login and gRPC mutual TLS of one service (docs/deploy.md "NATS logins and gRPC mutual TLS"):
     include "noded.securityEnv" (dict "root" $ "user" "executor"); "user" empty: no NATS login. */}}
{{- define "noded.securityEnv" -}}
{{- $s := .root.Values.security -}}
{{- if and .user $s.natsLogins.enabled }}
- { name: NODED_NATS_USER, value: {{ .user }} }
- { name: NODED_NATS_PASSWORD_FILE, value: /etc/noded/nats/password }
{{- end }}
{{- if $s.grpcTls.enabled }}
- { name: NODED_GRPC_TLS_CERT, value: /etc/noded/grpc-tls/tls.crt }
- { name: NODED_GRPC_TLS_KEY, value: /etc/noded/grpc-tls/tls.key }
- { name: NODED_GRPC_TLS_CA, value: /etc/noded/grpc-tls/ca.crt }
{{- end }}
{{- end -}}

{{/* Their read-only mounts: include "noded.securityMounts" (dict "root" $ "nats" true) */}}
{{- define "noded.securityMounts" -}}
{{- $s := .root.Values.security -}}
{{- if and .nats $s.natsLogins.enabled }}
- { name: nats-login, mountPath: /etc/noded/nats, readOnly: true }
{{- end }}
{{- if $s.grpcTls.enabled }}
- { name: grpc-tls, mountPath: /etc/noded/grpc-tls, readOnly: true }
{{- end }}
{{- end -}}

{{/* Their Secrets, the operator's (never rendered), 0440 for the pod's fsGroup:
     include "noded.securityVolumes" (dict "root" $ "nats" "<Secret>" "tls" "<Secret>") */}}
{{- define "noded.securityVolumes" -}}
{{- $s := .root.Values.security -}}
{{- if $s.natsLogins.enabled }}
- name: nats-login
  secret:
    secretName: {{ .nats }}
    defaultMode: 288
{{- end }}
{{- if $s.grpcTls.enabled }}
- name: grpc-tls
  secret:
    secretName: {{ .tls }}
    defaultMode: 288
{{- end }}
{{- end -}}

{{/* A gRPC server's probe: kubelet's gRPC probe, or with mutual TLS (which refuses a probe without a
     client certificate) its own metrics port's /healthz or /readyz:
     include "noded.grpcProbe" (dict "root" $ "port" 26670 "path" "/healthz") */}}
{{- define "noded.grpcProbe" -}}
{{- if .root.Values.security.grpcTls.enabled -}}
httpGet: { path: {{ .path }}, port: own-metrics }
{{- else -}}
grpc: { port: {{ .port }} }
{{- end -}}
{{- end -}}
