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
{{- end -}}
