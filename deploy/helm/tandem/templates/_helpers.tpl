{{/* Names, labels and the pieces every role shares. */}}

{{- define "tandem.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tandem.labels" -}}
app.kubernetes.io/name: tandem
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tandem.selector" -}}
app.kubernetes.io/name: tandem
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tandem.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/* etcd's client URLs: the ones given, or the bundled StatefulSet's. */}}
{{- define "tandem.etcdEndpoints" -}}
{{- if .Values.etcd.endpoints -}}
{{ .Values.etcd.endpoints }}
{{- else -}}
http://{{ include "tandem.fullname" . }}-etcd:2379
{{- end -}}
{{- end -}}

{{/* Seconds Kubernetes waits after SIGTERM: the preStop sleep, the drain, and a margin. */}}
{{- define "tandem.gracePeriod" -}}
{{ add .Values.preStopSleepSeconds .Values.drainTimeoutSeconds 15 }}
{{- end -}}

{{- define "tandem.podAnnotations" -}}
checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- end -}}

{{- define "tandem.metricsAnnotations" -}}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{- define "tandem.preStop" -}}
{{- if gt (int .Values.preStopSleepSeconds) 0 }}
lifecycle:
  preStop:
    exec:
      command: ["sleep", "{{ .Values.preStopSleepSeconds }}"]
{{- end }}
{{- end -}}

{{/* The model's name as a label value: characters a label may not hold become _, at most 63, alphanumeric at both ends; empty without model.name. */}}
{{- define "tandem.modelLabel" -}}
{{- if .Values.model.name -}}
{{- regexReplaceAll "[^A-Za-z0-9_.-]" .Values.model.name "_" | trunc 63 | trimAll "_.-" -}}
{{- end -}}
{{- end -}}

{{/* Mutual TLS between frontends and workers (tls.secretName): the env var, mount and volume. */}}
{{- define "tandem.tlsEnv" -}}
{{- if .Values.tls.secretName }}
- name: TANDEM_TLS_DIR
  value: /etc/tandem/tls
{{- end }}
{{- end }}

{{- define "tandem.tlsMount" -}}
{{- if .Values.tls.secretName }}
- name: tls
  mountPath: /etc/tandem/tls
  readOnly: true
{{- end }}
{{- end }}

{{- define "tandem.tlsVolume" -}}
{{- if .Values.tls.secretName }}
- name: tls
  secret:
    secretName: {{ .Values.tls.secretName }}
    defaultMode: 0400
{{- end }}
{{- end }}

{{/* model.loraModules as --lora-modules reads them from TANDEM_LORA_MODULES: "name=path" entries separated by spaces. */}}
{{- define "tandem.loraModules" -}}
{{- $entries := list -}}
{{- range .Values.model.loraModules -}}
{{- $entries = append $entries (printf "%s=%s" .name .path) -}}
{{- end -}}
{{- join " " $entries -}}
{{- end -}}
